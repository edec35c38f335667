#!/usr/bin/env python3
"""Goodput against arrival rate, per policy, from an `isim sweep` results.csv.

usage: plot_goodput.py RESULTS.csv OUT.png [--context "GPU · MODEL · workload NAME"]

Goodput follows DistServe (Zhong et al., "DistServe: Disaggregating Prefill and Decoding for
Goodput-optimized Large Language Model Serving", OSDI 2024): the rate of requests served within
their SLOs. Here the unit is the session (experiments/run/goodput.h): the left panel is the SLO
attainment (goodput.share, % of sessions meeting every per-session limit of the spec's slo:),
the right one the goodput (goodput.per_s, such sessions per second of the busy window). One line
per policy (with its estimator, and the variant when the sweep has variants), the mean over the
runs at each rate (seeds); a hollow marker where any of those runs was overloaded (its queue grew
without bound). isim sweep runs it when the spec has plot: and slo:.
"""
import argparse
import csv
import math
import os
import sys

PROG = "plot_goodput.py"
RATE = "arrival.rate"
SHARE = "goodput.share"
PER_S = "goodput.per_s"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file: each policy looks the same in every plot)


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        fail("{}: {}".format(path, e.strerror))
    except csv.Error as e:
        fail("{}: not CSV: {}".format(path, e))
    if not rows:
        fail(path + ": empty (expected a results.csv header)")
    col = {name: i for i, name in enumerate(rows[0])}
    for need in ("policy", SHARE, PER_S):
        if need not in col:
            fail("{}: no column {} (written by isim sweep of a spec with slo:)".format(path, need))
    return col, rows[1:]


def number(path, line, col, row, name):
    text = row[col[name]] if col[name] < len(row) else ""
    if text == "":
        return math.nan  # not applicable (no SLO in this run)
    try:
        return float(text)
    except ValueError:
        fail("{}:{}: {}: expected a number, got '{}'".format(path, line, name, text))


def series(path, col, rows):
    """{label: {rate: [(share, per_s, overloaded), ...]}} in first-seen label order."""
    out = {}
    for n, r in enumerate(rows, start=2):
        label = r[col["policy"]]
        if "estimator" in col and r[col["estimator"]]:
            label += " (" + r[col["estimator"]] + ")"
        if "variant" in col:
            label += " / " + r[col["variant"]]
        rate = number(path, n, col, r, RATE)
        over = "overloaded" in col and r[col["overloaded"]] == "1"
        point = (number(path, n, col, r, SHARE), number(path, n, col, r, PER_S), over)
        out.setdefault(label, {}).setdefault(rate, []).append(point)
    return out


def mean(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return sum(xs) / len(xs) if xs else math.nan


def plot(data, out_png, context):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "legend.fontsize": 9,
                         "xtick.labelsize": 9, "ytick.labelsize": 9})
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 5.4))
    panels = ((0, 100.0, "SLO attainment (% of sessions)", "Sessions meeting every SLO limit"),
              (1, 1.0, "goodput (sessions/s within SLO)", "Goodput over the busy window"))
    for i, (label, by_rate) in enumerate(data.items()):
        rates = sorted(by_rate)
        style = plot_style.policy_style(label)
        for ax, (k, scale, _, _) in zip(axes, panels):
            ys = [scale * mean([p[k] for p in by_rate[r]]) for r in rates]
            ax.plot(rates, ys, label=label if k == 0 else None, **style)
            over = [(r, y) for r, y in zip(rates, ys) if any(p[2] for p in by_rate[r])]
            if over:
                ax.plot([r for r, _ in over], [y for _, y in over], linestyle="none",
                        marker=style["marker"], markersize=10, markerfacecolor="white",
                        markeredgecolor=style["color"], zorder=3)
    for ax, (_, _, ylabel, title) in zip(axes, panels):
        ax.set_xlabel("arrival rate (sessions/s)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].set_ylim(0, 105)
    handles, labels = axes[0].get_legend_handles_labels()
    if any(p[2] for s in data.values() for ps in s.values() for p in ps):
        from matplotlib.lines import Line2D
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=10,
                              markerfacecolor="white", markeredgecolor="black"))
        labels.append("overloaded (queue grows)")
    # Below the panels, where it hides no line.
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), frameon=False)
    what = "Goodput against arrival rate (DistServe's definition, per session)"
    fig.suptitle(what + ("\n" + context if context else ""), fontsize=11)
    rows = (len(labels) + 3) // 4
    fig.tight_layout(rect=(0, 0.05 + 0.045 * rows, 1, 1))
    tmp = out_png + ".partial.png"  # whole or not at all: an interrupt leaves no partial PNG
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, out_png)


def main():
    ap = argparse.ArgumentParser(description="Goodput against arrival rate of an isim sweep.")
    ap.add_argument("results", help="results.csv written by isim sweep")
    ap.add_argument("out_png", help="the PNG to write")
    ap.add_argument("--context", default="", help="GPU, model and workload for the title")
    a = ap.parse_args()
    col, rows = read(a.results)
    if RATE not in col:
        print(PROG + ": note: no arrival.rate column: goodput.png not drawn", file=sys.stderr)
        return 0
    data = series(a.results, col, rows)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(PROG + ": error: matplotlib is not installed (Debian: python3-matplotlib)",
              file=sys.stderr)
        return 2
    tmp = a.out_png + ".tmp-{}.png".format(os.getpid())
    plot(data, tmp, a.context)
    os.replace(tmp, a.out_png)  # appears whole or not at all
    print("wrote " + a.out_png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
