#!/usr/bin/env python3
"""Cost against SLO attainment for the DP/EP groups of experiments/specs/moe-fleet.yaml.

usage: plot_moe_fleet.py RESULTS_CSV OUT_PNG [--price DOLLARS_PER_GPU_HOUR] [--tp N]

RESULTS_CSV is the results.csv `isim sweep experiments/specs/moe-fleet.yaml --out DIR` wrote: one
row per run, with the columns variant (named GPUS-dpD), cluster.replicas (engine cores),
goodput.share (the share of sessions within every SLO), resume_ttft_s.p95 and tpot_s.p95. The
fleet's cost is cores x tp GPUs x the price per GPU-hour (an assumption: pass your own). Writes
OUT_PNG with two panels, one line per group size D: SLO attainment against dollars per hour,
and P95 inter-token latency against dollars per hour. Prints the table it drew. The title names
the GPU, model and workload from the plot_context.json isim sweep writes beside RESULTS_CSV.
Needs matplotlib (Debian: python3-matplotlib); exit 2 on bad input (a missing file or column, a
value that is not a number, a variant not named GPUS-dpD), 3 without matplotlib.
"""

import argparse
import csv
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

PROG = "plot_moe_fleet.py"
COLS = ["variant", "cluster.replicas", "goodput.share", "resume_ttft_s.p95", "tpot_s.p95"]
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if not rows:
        fail(f"{path}: no runs")
    for c in COLS:
        if c not in rows[0]:
            fail(f"{path}: no column {c}")
    out = []
    for i, r in enumerate(rows, start=2):
        m = re.fullmatch(r"(\d+)-dp(\d+)", r["variant"])
        if not m:
            fail(f"{path}:{i}: variant '{r['variant']}' is not named GPUS-dpD")
        rec = {"dp": int(m.group(2))}
        for c in COLS[1:]:
            try:
                rec[c] = float(r[c]) if r[c] != "" else float("nan")
            except ValueError:
                fail(f"{path}:{i}: {c}: '{r[c]}' is not a number")
        out.append(rec)
    return out


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Cost against SLO attainment.")
    ap.add_argument("results")
    ap.add_argument("out_png")
    ap.add_argument("--price", type=float, default=6.0, help="dollars per GPU-hour (assumed)")
    ap.add_argument("--tp", type=int, default=1, help="GPUs per engine core")
    a = ap.parse_args()
    if not (a.price > 0) or a.tp < 1:
        fail("--price must be > 0 and --tp >= 1")
    rows = load(a.results)
    out_dir = os.path.dirname(os.path.abspath(a.out_png))
    if not os.path.isdir(out_dir):
        fail("{}: no such folder (for {})".format(out_dir, a.out_png))
    try:
        ctx = plot_style.load_context(plot_style.context_beside(a.results))
    except ValueError as e:
        fail(str(e))
    try:
        plt = plot_style.setup()
    except ImportError:
        print(PROG + ": error: needs matplotlib (Debian: python3-matplotlib)", file=sys.stderr)
        sys.exit(3)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    print(f"{'group':>6} {'GPUs':>5} {'$/hour':>8} {'SLO met %':>9} {'resume TTFT p95 s':>17} "
          f"{'ITL p95 ms':>10}")
    for k, dp in enumerate(sorted({r["dp"] for r in rows})):
        pts = sorted((r["cluster.replicas"] * a.tp * a.price, r) for r in rows if r["dp"] == dp)
        xs = [p[0] for p in pts]
        color = PALETTE[k % len(PALETTE)]
        label = f"DP{dp}/EP{dp * a.tp}"
        left.plot(xs, [100 * p[1]["goodput.share"] for p in pts], "o-", color=color, label=label)
        right.plot(xs, [1000 * p[1]["tpot_s.p95"] for p in pts], "o-", color=color, label=label)
        for x, r in pts:
            print(f"{label:>10} {int(r['cluster.replicas'] * a.tp):>5} {x:>8.0f} "
                  f"{100 * r['goodput.share']:>9.1f} {r['resume_ttft_s.p95']:>17.2f} "
                  f"{1000 * r['tpot_s.p95']:>10.1f}")
    cost = f"fleet cost (\\$/hour at \\${a.price:g} per GPU-hour, assumed)"  # \$: not mathtext
    left.set_xlabel(cost)
    left.set_ylabel("sessions within every SLO (%)")
    left.set_ylim(0, 105)
    right.set_xlabel(cost)
    right.set_ylabel("P95 inter-token latency (ms)")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.legend(title="group", fontsize=8)
    fig.suptitle("DP/EP groups: cost against SLO attainment (analytic GPU figures)\n" +
                 plot_style.context_line(ctx, width=110))
    fig.tight_layout()
    plot_style.save(fig, a.out_png, dpi=110)


if __name__ == "__main__":
    main()
