#!/usr/bin/env python3
"""Plots of the agent-aware KV manager sweep (experiments/specs/agent-kv.yaml).

usage: plot_agent_kv.py RESULTS_CSV OUT_PNG [--axis KEY] [--series COL]

RESULTS_CSV is the results.csv that `isim sweep experiments/specs/agent-kv.yaml --out DIR` wrote: one
row per run, with the columns COL (default variant: one series per KV manager), the swept KEY
(default cluster.replicas; numbers are sorted, other values kept in run order), ttft_s.p95 and
the lost_kv_reuse_tokens.* causes, and optionally e2e_s.mean. Writes OUT_PNG with a panel each,
one group of bars per value of KEY and one bar per series in run order: lost KV reuse in
millions of tokens, stacked by cause, P95 time to first token and, when the column is there,
mean end-to-end time (log y when the values span more than 30x). Prints the table it drew
(runs of the same series and KEY are averaged). The title names the GPU, model, workload and
rate from the plot_context.json that isim sweep writes beside RESULTS_CSV. Needs matplotlib (Debian: python3-matplotlib); exit 2 on bad input (a missing file
or column, a value that is not a number), 3 without matplotlib.
"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

PROG = "plot_agent_kv.py"
CAUSES = ["intercept", "preemption", "idle_eviction", "migration", "role_switch",
          "prefix_eviction"]
TTFT = "ttft_s.p95"
E2E = "e2e_s.mean"
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
HATCHES = ["", "//", "..", "xx", "\\\\", "++"]


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path, axis, series_col):
    if not os.path.isfile(path):
        fail("{}: no such file (the results.csv of isim sweep experiments/specs/agent-kv.yaml)".format(path))
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None) or []
        rows = [(n, r) for n, r in enumerate(reader, start=2) if r]
    need = ["run_index", series_col, axis, TTFT] + ["lost_kv_reuse_tokens." + c for c in CAUSES]
    missing = [c for c in need if c not in header]
    if missing:
        fail("{}: missing column(s): {}".format(path, ", ".join(missing)))
    if not rows:
        fail(path + ": no runs (only a header)")
    col = {c: i for i, c in enumerate(header)}
    has_e2e = E2E in col

    def cell(r, c):
        return r[col[c]] if col[c] < len(r) else ""

    def num(n, r, c):
        try:
            return float(cell(r, c))
        except ValueError:
            fail("{}:{}: {}: expected a number, got '{}'".format(path, n, c, cell(r, c)))

    series, keys, acc = [], [], {}
    for n, r in sorted(rows, key=lambda nr: num(nr[0], nr[1], "run_index")):
        v, k = cell(r, series_col), cell(r, axis)
        if v not in series:
            series.append(v)
        if k not in keys:
            keys.append(k)
        runs = acc.setdefault((v, k), [])
        runs.append([num(n, r, TTFT), num(n, r, E2E) if has_e2e else float("nan")] +
                    [num(n, r, "lost_kv_reuse_tokens." + c) for c in CAUSES])
    try:
        keys.sort(key=float)
    except ValueError:
        pass  # categories, in run order
    mean = {vk: [sum(x) / len(runs) for x in zip(*runs)] for vk, runs in acc.items()}
    return series, keys, mean, has_e2e


def label(k):
    try:
        return "{:g}".format(float(k))
    except ValueError:
        return k


def bars(ax, series, keys, mean, index, title, ylabel):
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(keys))]
        ax.bar(xs, [mean.get((s, k), [float("nan")] * 2)[index] for k in keys], width * 0.9,
               color=PALETTE[i % len(PALETTE)], label=s)
    vals = [v[index] for v in mean.values() if v[index] > 0]
    if vals and max(vals) / min(vals) > 30:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    plot_style.legend(ax)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Plots of the agent-kv sweep.")
    ap.add_argument("results")
    ap.add_argument("out_png")
    ap.add_argument("--axis", default="cluster.replicas", help="the swept column on the x axis")
    ap.add_argument("--series", default="variant", help="the column with one bar per value")
    a = ap.parse_args()
    series, keys, mean, has_e2e = load(a.results, a.axis, a.series)
    out_dir = os.path.dirname(os.path.abspath(a.out_png))
    if not os.path.isdir(out_dir):
        fail("{}: no such folder (for {})".format(out_dir, a.out_png))
    print("{:<14} {:>10} {:>12} {:>12} {:>14}".format(
        a.series.split(".")[-1], a.axis.split(".")[-1], "ttft p95 (s)", "e2e mean (s)",
        "lost reuse (M)"))
    for k in keys:
        for s in series:
            if (s, k) in mean:
                m = mean[(s, k)]
                print("{:<14} {:>10} {:>12.1f} {:>12.1f} {:>14.1f}".format(
                    s, label(k), m[0], m[1], sum(m[2:]) / 1e6))
    try:
        ctx = plot_style.load_context(plot_style.context_beside(a.results))
    except ValueError as e:
        fail(str(e))
    try:
        plt = plot_style.setup()
    except ImportError:
        print(PROG + ": error: needs matplotlib (Debian: python3-matplotlib)", file=sys.stderr)
        sys.exit(3)
    panels = 3 if has_e2e else 2
    fig, axes = plt.subplots(panels, 1, figsize=(max(10, 1.6 * len(keys)), 4 * panels))
    top = axes[0]
    width = 0.8 / len(series)
    tallest = 0.0
    labelled = set()  # each cause named once, at its first drawn bar
    for i, s in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(keys))]
        base = [0.0] * len(keys)
        for c, cause in enumerate(CAUSES):
            vals = [mean.get((s, k), [0] * (2 + len(CAUSES)))[2 + c] / 1e6 for k in keys]
            if not any(vals):
                continue
            top.bar(xs, vals, width * 0.9, bottom=base, color=PALETTE[c], hatch=HATCHES[i % 4],
                    edgecolor="white", label=None if cause in labelled else cause)
            labelled.add(cause)
            base = [b + v for b, v in zip(base, vals)]
        for x, b in zip(xs, base):
            top.text(x, b, " {} {:.3g}".format(s, b), rotation=90, ha="center", va="bottom",
                     fontsize=9)
        tallest = max([tallest] + base)
    top.set_ylim(0, tallest * 1.5 if tallest > 0 else 1)  # room for the labels
    top.set_ylabel("lost KV reuse (M tokens)")
    top.set_title("Lost KV reuse by cause (bars labelled by {} and total)".format(a.series))
    plot_style.legend(top, title="cause")
    bars(axes[1], series, keys, mean, 0, "P95 time to first token", "TTFT p95 (s)")
    if has_e2e:
        bars(axes[2], series, keys, mean, 1, "Mean end-to-end time per session", "e2e mean (s)")
    for ax in axes:
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([label(k) for k in keys])
        ax.set_xlabel(a.axis)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("KV managers by {}\n{}".format(a.axis, plot_style.context_line(ctx)))
    fig.tight_layout()
    # Written under a temporary name first: an interrupted run leaves no partial PNG behind.
    plot_style.save(fig, a.out_png, dpi=110)
    print("wrote " + a.out_png)


if __name__ == "__main__":
    main()
