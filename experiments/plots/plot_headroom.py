#!/usr/bin/env python3
"""The plot of an `isim headroom` headroom.json.

usage: plot_headroom.py HEADROOM.json OUT.png

Draws SLO attainment against the load knob (arrival.rate, or arrival.users for a closed loop),
one colour and marker per policy (plot_style.py): every probe of every seed, each seed's probes
joined in load order; a black ring marks a probe that failed. The attainment shown is the one
that binds: the lower of the session and turn attainments the spec's SLO gives. A thick grey line
marks the target; a vertical line per policy its headroom (mean over seeds), and the legend says
mean, worst seed and the limiting factor. A load axis that spans more than 8x is logarithmic
(base 2: the search doubles and halves).

The title names the GPU, model and workload from the plot_context.json beside the JSON, and how
long each probe's arrivals last when --duration set it.
Needs matplotlib (Debian: python3-matplotlib); no other packages. Exit status 2 on bad input.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)


def fail(msg):
    print("plot_headroom.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail("{}: cannot read: {}".format(path, e.strerror))
    except ValueError as e:
        fail("{}: not JSON: {}".format(path, e))
    for key in ("knob", "unit", "target", "policies"):
        if not isinstance(doc, dict) or key not in doc:
            fail("{}: missing key '{}'".format(path, key))
    if not doc["policies"]:
        fail(path + ": no policies")
    return doc


def binding(probe):
    """The lower of the attainments given (the one the pass rule binds on)."""
    shares = [probe[k] for k in ("attainment", "turn_attainment") if probe.get(k) is not None]
    return min(shares) if shares else 0.0


def rate_text(doc):
    """The title's rate: searched, and how long each probe's arrivals last (--duration)."""
    if doc.get("duration_s"):
        return "searched, {:g} s of arrivals per probe".format(doc["duration_s"])
    return "searched over the spec's sessions"


def main(argv):
    if len(argv) != 3:
        fail("usage: plot_headroom.py HEADROOM.json OUT.png")
    doc = read(argv[1])
    try:
        ctx = plot_style.load_context(plot_style.context_beside(argv[1]))
    except ValueError as e:
        fail(str(e))
    load = doc["knob"].split(".")[-1]
    plt = plot_style.setup()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    xs_all, ys_all = [], []
    for pol in doc["policies"]:
        style = plot_style.policy_style(pol["policy"])
        label = "{}: {:.4g} (worst seed {:.4g}), {}".format(
            pol["policy"], pol["mean"], pol["worst"], pol["limit"])
        for k, seed in enumerate(pol["seeds"]):
            pts = sorted((p[load], binding(p), p["pass"]) for p in seed["probes"])
            xs_all += [x for x, _, _ in pts]
            # Line and markers in one artist, so that a seed of one probe still shows (and
            # carries the policy's legend entry).
            ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts],
                    label=label if k == 0 else "_", **style)
            failed = [(x, y) for x, y, p in pts if not p]
            ax.plot([x for x, _ in failed], [y for _, y in failed], "o", ms=12,
                    markerfacecolor="none", markeredgecolor="black", markeredgewidth=0.8,
                    alpha=0.6, label="_")
            ys_all += [y for _, y, _ in pts]
        if pol["mean"] > 0:
            ax.axvline(pol["mean"], color=style["color"], linestyle=":", linewidth=1.2)
    ax.axhline(doc["target"], color="#999999", linestyle="-", linewidth=3, alpha=0.6, zorder=0,
               label="target {:g}".format(doc["target"]))
    if xs_all and max(xs_all) > 8 * min(xs_all):
        ax.set_xscale("log", base=2)
    ax.set_xlabel("{} ({}); ringed: failed probes; dotted: mean headroom".format(
        doc["knob"], doc["unit"]))
    ax.set_ylabel("SLO attainment (share within the SLO)")
    low = min(ys_all + [doc["target"]])
    ax.set_ylim(max(0.0, low - 0.05) - 0.01, 1.01)
    ax.set_title("SLO attainment against load, per policy (legend: headroom, limit)\n"
                 + plot_style.context_line(ctx, rate=rate_text(doc), width=80))
    ax.grid(alpha=0.3)
    plot_style.legend(ax, loc="lower left")
    fig.tight_layout()
    out = os.path.dirname(os.path.abspath(argv[2]))
    os.makedirs(out, exist_ok=True)
    plot_style.save(fig, argv[2], dpi=100)


if __name__ == "__main__":
    main(sys.argv)
