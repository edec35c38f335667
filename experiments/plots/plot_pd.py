#!/usr/bin/env python3
"""Plots of the prefill/decode disaggregation sweep (experiments/specs/pd-adaptive.yaml).

usage: plot_pd.py SWEEP_OUT_DIR OUT_DIR [--phase-s S]

SWEEP_OUT_DIR is what `isim sweep experiments/specs/pd-adaptive.yaml --keep-runs --out DIR` wrote:
DIR/results.csv and, for each run, DIR/runs/<run_index>/roles.csv (disaggregated runs only;
DIR/runs/<run_index>/<policy>/roles.csv is read too). Writes two PNGs into OUT_DIR:
  pd-adaptive-latency.png  P95 time to first token and mean end-to-end latency, one group of bars
                           per concurrency level (trace.rate_scale), one bar per variant in the
                           order the sweep ran them; log y when the values span more than 30x;
  pd-adaptive-roles.png    for each variant with a planner (rows) at each concurrency level
                           (columns): the prefill replica count over time (step plot) and, on a
                           twin axis, the queued prefill tokens and the decode requests waiting;
                           the phase boundary (--phase-s, 600 s by default; 0 for none) is marked.
and prints a text table (variant, rate, TTFT p95, mean e2e, tokens/s, lost KV reuse tokens).

Runs of the same variant and rate (seeds) are averaged in the table and the bars; the roles plot
shows the first of them. With several policies, each series is "variant / policy".

Titles name the GPU, model, workload and rate from SWEEP_OUT_DIR/plot_context.json (isim sweep
writes it). Needs matplotlib (Debian: python3-matplotlib); no other packages. Exit status 2 on bad input
(a missing folder, file or column, non-numeric values), 3 without matplotlib.
"""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

PROG = "plot_pd.py"
RATE = "trace.rate_scale"
TTFT = "ttft_s.p95"
E2E = "e2e_s.mean"
TOKS = "throughput_tokens_per_s"
REQUIRED = ["run_index", "policy", "variant", RATE, TTFT, E2E, TOKS]
LOST = "lost_kv_reuse_tokens.total"  # optional: a fleet's KV reuse lost to every cause
ROLES = ["t_s", "mixed", "prefill", "decode", "switching", "prefill_queued_tokens",
         "decode_waiting"]
# Okabe & Ito's colour-blind-safe palette (black last: it is the prefill-count line below).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#999999"]
HATCHES = ["", "//", "..", "xx"]  # when there are more series than colours


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def read_csv(path, required, what):
    if not os.path.isfile(path):
        fail("{}: no such file ({})".format(path, what))
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = [(n, r) for n, r in enumerate(reader, start=2) if r]
    except OSError as e:
        fail("{}: cannot read: {}".format(path, e.strerror))
    except csv.Error as e:
        fail("{}: not CSV: {}".format(path, e))
    if not header:
        fail("{}: empty (expected a header with {})".format(path, ", ".join(required)))
    missing = [c for c in required if c not in header]
    if missing:
        fail("{}: missing column(s): {}".format(path, ", ".join(missing)))
    for n, r in rows:
        if len(r) != len(header):
            fail("{}:{}: expected {} fields, found {}".format(path, n, len(header), len(r)))
    col = {c: i for i, c in enumerate(header)}
    return col, rows


def number(path, line, col, row, column, allow_empty=False):
    text = row[col[column]]
    if allow_empty and text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        fail("{}:{}: {}: expected a number, got '{}'".format(path, line, column, text))


class Results:
    """results.csv grouped by series (variant, or variant / policy) and rate, in run order."""

    def __init__(self, sweep_dir):
        self.dir = sweep_dir
        self.path = os.path.join(sweep_dir, "results.csv")
        col, rows = read_csv(self.path, REQUIRED, "written by isim sweep --out " + sweep_dir)
        if not rows:
            fail(self.path + ": no runs (only a header)")
        self.lost = LOST if LOST in col else None
        policies = []
        for _, r in rows:
            if r[col["policy"]] not in policies:
                policies.append(r[col["policy"]])
        self.series = []   # in order of first appearance: the sweep's variant order
        self.rates = set()
        self.runs = {}     # (series, rate) -> [run dict]
        for n, r in sorted(rows, key=lambda nr: number(self.path, nr[0], col, nr[1], "run_index")):
            variant, policy = r[col["variant"]], r[col["policy"]]
            name = variant if len(policies) == 1 else "{} / {}".format(variant, policy)
            rate = number(self.path, n, col, r, RATE)
            run = {
                "index": r[col["run_index"]], "variant": variant, "policy": policy,
                "ttft": number(self.path, n, col, r, TTFT, allow_empty=True),
                "e2e": number(self.path, n, col, r, E2E, allow_empty=True),
                "toks": number(self.path, n, col, r, TOKS, allow_empty=True),
                "lost": (number(self.path, n, col, r, self.lost, allow_empty=True)
                         if self.lost else math.nan),
            }
            if name not in self.series:
                self.series.append(name)
            self.rates.add(rate)
            self.runs.setdefault((name, rate), []).append(run)
        self.rates = sorted(self.rates)

    def mean(self, name, rate, key):
        vals = [r[key] for r in self.runs.get((name, rate), []) if not math.isnan(r[key])]
        return sum(vals) / len(vals) if vals else math.nan


def read_roles(path):
    col, rows = read_csv(path, ROLES, "a disaggregated run's replica roles over time")
    out = {c: [] for c in ROLES}
    for n, r in rows:
        for c in ROLES:
            out[c].append(number(path, n, col, r, c))
    return out


def planned(name, roles):
    """A variant with a planner: its prefill count changes, or it is neither mixed nor static."""
    variant = name.split(" / ")[0]
    if len(set(roles["prefill"])) > 1:
        return True
    return variant != "mixed" and not variant.startswith("static")


def load_roles(res):
    """{(series, rate): roles} for the first run of each that has roles.csv, and the series
    to draw (those with a planner, in order)."""
    runs_dir = os.path.join(res.dir, "runs")
    if not os.path.isdir(runs_dir):
        fail("{}: no such folder (run the sweep with --keep-runs)".format(runs_dir))
    roles = {}
    for (name, rate), runs in res.runs.items():
        run = runs[0]
        path = os.path.join(runs_dir, run["index"], "roles.csv")
        nested = os.path.join(runs_dir, run["index"], run["policy"], "roles.csv")
        if not os.path.isfile(path) and os.path.isfile(nested):
            path = nested
        variant = run["variant"]
        if os.path.isfile(path):
            roles[(name, rate)] = (path, read_roles(path))
        elif variant != "mixed" and not variant.startswith("static"):
            # A variant named for a planner must have been disaggregated.
            fail("{}: no such file (variant {} at {}={:g} has no roles over time)".format(
                path, variant, RATE, rate))
    rows = [s for s in res.series
            if any((s, r) in roles and planned(s, roles[(s, r)][1]) for r in res.rates)]
    return roles, rows


def fmt_value(v):
    if math.isnan(v):
        return "n/a"
    if v >= 100:
        return "{:.0f}".format(v)
    if v >= 10:
        return "{:.1f}".format(v)
    if v >= 1:
        return "{:.2f}".format(v)
    return "{:.3g}".format(v)


def print_table(res):
    head = ["variant", "rate", "ttft p95 (s)", "e2e mean (s)", "tokens/s"]
    if res.lost:
        head.append("lost reuse (tok)")
    lines = [head]
    for name in res.series:
        for rate in res.rates:
            if (name, rate) not in res.runs:
                continue
            line = [name, "{:g}".format(rate), fmt_value(res.mean(name, rate, "ttft")),
                    fmt_value(res.mean(name, rate, "e2e")),
                    "{:.0f}".format(res.mean(name, rate, "toks"))]
            if res.lost:
                lost = res.mean(name, rate, "lost")
                line.append("n/a" if math.isnan(lost) else "{:.0f}".format(lost))
            lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for k, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:])]
        print("  ".join(cells).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def save(fig, plt, path):
    """Writes the PNG under a temporary name beside it, then renames it into place."""
    try:
        plot_style.save(fig, path, dpi=120)
    finally:
        plt.close(fig)
    return path


def style(i):
    return PALETTE[i % len(PALETTE)], HATCHES[(i // len(PALETTE)) % len(HATCHES)]


def plot_latency(res, plt, out, ctx):
    panels = (("ttft", "P95 time to first token", "TTFT p95 (s)"),
              ("e2e", "Mean end-to-end latency", "e2e latency, mean (s)"))
    n = len(res.series)
    width = 0.8 / n
    fig, axes = plt.subplots(2, 1, figsize=(min(16, max(9, 0.45 * n * len(res.rates) + 4)), 8.6))
    for ax, (key, title, ylabel) in zip(axes, panels):
        vals = {(s, r): res.mean(s, r, key) for s in res.series for r in res.rates}
        pos = [v for v in vals.values() if not math.isnan(v) and v > 0]
        log = bool(pos) and max(pos) / min(pos) > 30
        for i, s in enumerate(res.series):
            colour, hatch = style(i)
            xs = [g + (i - (n - 1) / 2) * width for g in range(len(res.rates))]
            hs = [vals[(s, r)] for r in res.rates]
            ax.bar(xs, [0 if math.isnan(h) else h for h in hs], width * 0.92, color=colour,
                   hatch=hatch, edgecolor="white" if not hatch else "black", linewidth=0.5,
                   label=s)
        # Sparingly: the lowest and the highest bar of each group.
        for g, r in enumerate(res.rates):
            group = [(vals[(s, r)], i) for i, s in enumerate(res.series)
                     if not math.isnan(vals[(s, r)])]
            if not group:
                continue
            lo, hi = min(group), max(group)
            # Bars within 5% of each other: one label says it.
            marks = {hi} if lo[0] > 0 and hi[0] / lo[0] < 1.05 else {lo, hi}
            for v, i in marks:
                x = g + (i - (n - 1) / 2) * width
                ax.annotate(fmt_value(v), (x, v), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=9, rotation=90 if n > 4 else 0)
        if log:
            ax.set_yscale("log")
            ax.set_ylim(min(pos) / 2, max(pos) * 3)
            # Labels at 1-2-5 steps: bars between two powers of ten still have a tick to read.
            from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
            lo_e = math.floor(math.log10(min(pos) / 2))
            hi_e = math.ceil(math.log10(max(pos) * 3))
            ticks = [m * 10.0 ** e for e in range(lo_e, hi_e + 1) for m in (1, 2, 5)]
            ax.yaxis.set_major_locator(FixedLocator(ticks))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "{:g}".format(v)))
        elif pos:
            ax.set_ylim(0, max(pos) * 1.18)
        ax.set_xticks(range(len(res.rates)))
        ax.set_xticklabels(["x{:g}".format(r) for r in res.rates])
        ax.set_xlabel("concurrency: {} (multiplier of the schedule's arrival rate)".format(RATE))
        ax.set_ylabel(ylabel + (" (log scale)" if log else ""))
        ax.set_title(title)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.set_axisbelow(True)
    plot_style.legend(axes[0], title="variant", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Prefill/decode disaggregation: latency by fleet split (the lowest and the "
                 "highest bar of each concurrency level are labelled)\n"
                 + plot_style.context_line(ctx))
    fig.tight_layout()
    return save(fig, plt, os.path.join(out, "pd-adaptive-latency.png"))


def plot_roles(res, roles, rows, plt, out, phase_s, ctx):
    shown = rows
    note = ""
    if not shown:  # no planner: show what was disaggregated rather than nothing
        shown = [s for s in res.series if any((s, r) in roles for r in res.rates)]
        note = " (no variant with a planner: fixed splits shown)"
    cols = res.rates
    fig, axes = plt.subplots(max(1, len(shown)), len(cols), squeeze=False, sharex=True,
                             sharey=True, figsize=(4.6 * len(cols) + 1.2, 3.0 * max(1, len(shown)) + 1.2))
    if not shown:
        axes[0][0].text(0.5, 0.5, "no run has roles.csv (no disaggregated variant)",
                        ha="center", va="center", transform=axes[0][0].transAxes)
    top = 0
    for _, d in roles.values():
        total = [a + b + c + e for a, b, c, e in
                 zip(d["mixed"], d["prefill"], d["decode"], d["switching"])]
        top = max([top] + total)
    twins = []
    handles = None
    for ri, s in enumerate(shown):
        for ci, r in enumerate(cols):
            ax = axes[ri][ci]
            ax.set_title("{} at {} x{:g}".format(s, RATE, r))
            if phase_s > 0:
                ax.axvspan(phase_s, max(phase_s, max((d["t_s"][-1] for _, d in roles.values()
                                                      if d["t_s"]), default=phase_s)),
                           color="#999999", alpha=0.12, linewidth=0)
                ax.axvline(phase_s, color="#555555", linestyle="--", linewidth=1)
            if (s, r) not in roles:
                ax.text(0.5, 0.5, "no roles.csv", ha="center", va="center",
                        transform=ax.transAxes)
                continue
            _, d = roles[(s, r)]
            t = d["t_s"]
            h1 = ax.step(t, d["prefill"], where="post", color="black", linewidth=1.6,
                         label="prefill replicas")
            hs = []
            if any(v > 0 for v in d["switching"]):
                hs = ax.step(t, d["switching"], where="post", color=PALETTE[5], linewidth=1,
                             linestyle=":", label="switching replicas")
            tw = ax.twinx()
            twins.append(tw)
            # The replica count is drawn above the queues, which sit on the twin axis.
            ax.set_zorder(tw.get_zorder() + 1)
            ax.patch.set_visible(False)
            h2 = tw.plot(t, [v / 1000 for v in d["prefill_queued_tokens"]], color=PALETTE[0],
                         linewidth=0.9, alpha=0.75, label="queued prefill (k tokens)")
            h3 = tw.plot(t, d["decode_waiting"], color=PALETTE[1], linewidth=0.9, alpha=0.75,
                         label="decode waiting (requests)")
            tw.set_ylim(bottom=0)
            if ci == len(cols) - 1:
                tw.set_ylabel("queue: k tokens / requests")
            if handles is None:
                handles = h1 + hs + h2 + h3
            elif hs and len(handles) == 3:
                handles = h1 + hs + h2 + h3
            ax.grid(True, alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("prefill replicas")
    for ax in axes[-1, :]:
        ax.set_xlabel("simulated time (s)")
    if top:
        axes[0][0].set_ylim(0, top + 0.5)
    for ax in axes.flat:
        ax.yaxis.get_major_locator().set_params(integer=True)
    if handles:
        if phase_s > 0:
            import matplotlib.lines as mlines
            handles = handles + [mlines.Line2D([], [], color="#555555", linestyle="--",
                                               label="phase boundary ({:g} s)".format(phase_s))]
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    fig.suptitle("Replica roles and queues over time" + note + "\n" + plot_style.context_line(ctx))
    fig.tight_layout(rect=(0, 0.05 if handles else 0, 1, 1))
    return save(fig, plt, os.path.join(out, "pd-adaptive-roles.png"))


def main(argv):
    ap = argparse.ArgumentParser(prog=PROG, description="Plots of the pd-adaptive sweep.")
    ap.add_argument("sweep_dir", help="the --out folder of isim sweep ... --keep-runs")
    ap.add_argument("outdir", help="folder for pd-adaptive-latency.png and pd-adaptive-roles.png")
    ap.add_argument("--phase-s", type=float, default=600.0, metavar="S",
                    help="time of the workload's phase change to mark (s; 0: none)")
    args = ap.parse_args(argv)
    if not (args.phase_s >= 0 and math.isfinite(args.phase_s)):
        fail("--phase-s: must be a number >= 0 (seconds)")
    if not os.path.isdir(args.sweep_dir):
        fail("{}: no such folder (expected isim sweep's --out folder)".format(args.sweep_dir))

    res = Results(args.sweep_dir)
    roles, rows = load_roles(res)
    try:
        ctx = plot_style.load_context(os.path.join(args.sweep_dir, "plot_context.json"))
    except ValueError as e:
        fail(str(e))
    try:
        plt = plot_style.setup()
    except ImportError:
        print(PROG + ": error: matplotlib is not installed (Debian: apt-get install "
              "python3-matplotlib)", file=sys.stderr)
        return 3
    print_table(res)
    os.makedirs(args.outdir, exist_ok=True)
    for path in (plot_latency(res, plt, args.outdir, ctx),
                 plot_roles(res, roles, rows, plt, args.outdir, args.phase_s, ctx)):
        print("wrote " + path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
