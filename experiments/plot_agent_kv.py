#!/usr/bin/env python3
"""Plots of the agent-aware KV manager sweep (experiments/agent-kv.yaml).

usage: plot_agent_kv.py RESULTS_CSV OUT_PNG [--axis KEY]

RESULTS_CSV is the results.csv that `isim sweep experiments/agent-kv.yaml --out DIR` wrote: one
row per run, with the columns variant (the KV manager), the swept KEY (default
cluster.replicas), ttft_s.p95 and the lost_kv_reuse_tokens.* causes. Writes OUT_PNG with two
panels, one group of bars per value of KEY and one bar per variant in the sweep's order: lost KV
reuse in millions of tokens, stacked by cause, and P95 time to first token (log y when the
values span more than 30x). Prints the table it drew (runs of the same variant and KEY are
averaged). Needs matplotlib (Debian: python3-matplotlib); exit 2 on bad input (a missing file
or column, a value that is not a number), 3 without matplotlib.
"""

import argparse
import csv
import os
import sys

PROG = "plot_agent_kv.py"
CAUSES = ["intercept", "preemption", "idle_eviction", "migration", "role_switch",
          "prefix_eviction"]
TTFT = "ttft_s.p95"
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
HATCHES = ["", "//", "..", "xx", "\\\\", "++"]


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path, axis):
    if not os.path.isfile(path):
        fail("{}: no such file (the results.csv of isim sweep experiments/agent-kv.yaml)".format(path))
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None) or []
        rows = [(n, r) for n, r in enumerate(reader, start=2) if r]
    need = ["run_index", "variant", axis, TTFT] + ["lost_kv_reuse_tokens." + c for c in CAUSES]
    missing = [c for c in need if c not in header]
    if missing:
        fail("{}: missing column(s): {}".format(path, ", ".join(missing)))
    if not rows:
        fail(path + ": no runs (only a header)")
    col = {c: i for i, c in enumerate(header)}

    def num(n, r, c):
        try:
            return float(r[col[c]])
        except (ValueError, IndexError):
            fail("{}:{}: {}: expected a number, got '{}'".format(path, n, c, r[col[c]] if col[c] < len(r) else ""))

    series, keys, acc = [], set(), {}
    for n, r in sorted(rows, key=lambda nr: num(nr[0], nr[1], "run_index")):
        v, k = r[col["variant"]], num(n, r, axis)
        if v not in series:
            series.append(v)
        keys.add(k)
        runs = acc.setdefault((v, k), [])
        runs.append([num(n, r, TTFT)] + [num(n, r, "lost_kv_reuse_tokens." + c) for c in CAUSES])
    mean = {vk: [sum(x) / len(runs) for x in zip(*runs)] for vk, runs in acc.items()}
    return series, sorted(keys), mean


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Plots of the agent-kv sweep.")
    ap.add_argument("results")
    ap.add_argument("out_png")
    ap.add_argument("--axis", default="cluster.replicas", help="the swept column on the x axis")
    a = ap.parse_args()
    series, keys, mean = load(a.results, a.axis)
    out_dir = os.path.dirname(os.path.abspath(a.out_png))
    if not os.path.isdir(out_dir):
        fail("{}: no such folder (for {})".format(out_dir, a.out_png))
    print("{:<14} {:>8} {:>12} {:>12}".format("variant", a.axis.split(".")[-1], "ttft p95 (s)",
                                               "lost reuse (M)"))
    for k in keys:
        for s in series:
            if (s, k) in mean:
                m = mean[(s, k)]
                print("{:<14} {:>8g} {:>12.1f} {:>12.1f}".format(s, k, m[0], sum(m[1:]) / 1e6))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(PROG + ": error: needs matplotlib (Debian: python3-matplotlib)", file=sys.stderr)
        sys.exit(3)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8))
    width = 0.8 / len(series)
    tallest = 0.0
    for i, s in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(keys))]
        base = [0.0] * len(keys)
        for c, cause in enumerate(CAUSES):
            vals = [mean.get((s, k), [0] * 7)[1 + c] / 1e6 for k in keys]
            if not any(vals):
                continue
            top.bar(xs, vals, width * 0.9, bottom=base, color=PALETTE[c], hatch=HATCHES[i % 4],
                    edgecolor="white", label=cause if i == 0 else None)
            base = [b + v for b, v in zip(base, vals)]
        for x, b in zip(xs, base):
            top.text(x, b, " " + s, rotation=90, ha="center", va="bottom", fontsize="x-small")
        tallest = max([tallest] + base)
        ttft = [mean.get((s, k), [float("nan")])[0] for k in keys]
        bottom.bar(xs, ttft, width * 0.9, color=PALETTE[i % len(PALETTE)], label=s)
    for ax in (top, bottom):
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(["{:g}".format(k) for k in keys])
        ax.set_xlabel(a.axis)
        ax.grid(axis="y", alpha=0.3)
    top.set_ylim(0, tallest * 1.3 if tallest > 0 else 1)  # room for the labels
    top.set_ylabel("lost KV reuse (M tokens)")
    top.set_title("Lost KV reuse by cause (bars labelled by KV manager)")
    top.legend(title="cause", fontsize="small")
    vals = [v[0] for v in mean.values() if v[0] > 0]
    if vals and max(vals) / min(vals) > 30:
        bottom.set_yscale("log")
    bottom.set_ylabel("TTFT p95 (s)")
    bottom.set_title("P95 time to first token")
    bottom.legend(title="KV manager", fontsize="small")
    fig.tight_layout()
    # Written under a temporary name first: an interrupted run leaves no partial PNG behind.
    tmp = a.out_png + ".partial.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, a.out_png)
    print("wrote " + a.out_png)


if __name__ == "__main__":
    main()
