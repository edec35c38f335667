#!/usr/bin/env python3
"""Draws a fleet's per-replica load over time for `isim run` on a cluster.

usage: plot_replicas.py REPLICAS.csv OUT.png

REPLICAS.csv is a run's replicas.csv (one row per replica per sample time). Three panels share
the time axis: queued prefill tokens (the load routers see), GPU KV blocks in use, and the
share of each sample interval the replica was busy. With more than 16 replicas, the panels show
the fleet's min, median and max at each time instead of one line per replica. The title names the
GPU, model, workload and rate from the plot_context.json beside REPLICAS.csv (isim run writes it).
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

plt = plot_style.setup()


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
    ctx = plot_style.load_context(plot_style.context_beside(argv[1]))
    fig.suptitle(f"per-replica load over time ({len(rows)} replicas)\n"
                 + plot_style.context_line(ctx))
    many = len(rows) > 16
    for ax, (label, series) in zip(axes, panels):
        if many:
            ts, lo, mid, hi = spread(series)
            ax.fill_between(ts, lo, hi, color="tab:blue", alpha=0.25, label="min to max")
            ax.plot(ts, mid, color="tab:blue", label="median replica")
        else:
            for i, (rep, s) in enumerate(zip(rows.keys(), series)):
                # Ten colours, then the next line style: no two replicas look alike.
                ax.plot([t for t, _ in s], [v for _, v in s], linewidth=1, color=f"C{i % 10}",
                        linestyle=["-", "--", ":", "-."][i // 10 % 4], label=f"replica {rep}")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    plot_style.legend(axes[0], loc="upper right", ncol=4 if not many else 1)
    axes[-1].set_xlabel("simulated time (s)")
    fig.tight_layout()
    plot_style.save(fig, argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
