#!/usr/bin/env python3
"""Draws a fleet's per-replica load over time for `isim run` on a cluster.

usage: plot_replicas.py REPLICAS.csv OUT.png

REPLICAS.csv is a run's replicas.csv (one row per replica per sample time). Three panels share
the time axis: queued prefill tokens (the load routers see), GPU KV blocks in use, and the
share of each sample interval the replica was busy. With more than 16 replicas, the panels show
the fleet's min, median and max at each time instead of one line per replica.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.setdefault(int(r["replica"]), []).append(
                (float(r["t_s"]), int(r["queued_tokens"]), int(r["gpu_blocks_used"]),
                 float(r["busy_s"])))
    return rows


def busy_share(series):
    out = []
    for (t0, _, _, b0), (t1, _, _, b1) in zip(series, series[1:]):
        out.append((t1, (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0))
    return out


def spread(per_replica):
    """min, median, max at each time of per-replica [(t, v)] lists of equal length."""
    n = min(len(s) for s in per_replica)
    ts, lo, mid, hi = [], [], [], []
    for i in range(n):
        vals = sorted(s[i][1] for s in per_replica)
        ts.append(per_replica[0][i][0])
        lo.append(vals[0])
        mid.append(vals[len(vals) // 2])
        hi.append(vals[-1])
    return ts, lo, mid, hi


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    rows = read(argv[1])
    if not rows:
        sys.stderr.write(f"{argv[1]}: no samples\n")
        return 2
    panels = [
        ("queued prefill tokens", [[(t, q) for t, q, _, _ in s] for s in rows.values()]),
        ("GPU KV blocks used", [[(t, g) for t, _, g, _ in s] for s in rows.values()]),
        ("busy share of interval", [busy_share(s) for s in rows.values()]),
    ]
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    fig.suptitle(f"per-replica load over time ({len(rows)} replicas)")
    many = len(rows) > 16
    for ax, (label, series) in zip(axes, panels):
        if many:
            ts, lo, mid, hi = spread(series)
            ax.fill_between(ts, lo, hi, color="tab:blue", alpha=0.25, label="min to max")
            ax.plot(ts, mid, color="tab:blue", label="median replica")
        else:
            for rep, s in zip(rows.keys(), series):
                ax.plot([t for t, _ in s], [v for _, v in s], linewidth=1, label=f"replica {rep}")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper right", fontsize="small", ncol=4 if not many else 1)
    axes[-1].set_xlabel("simulated time (s)")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
