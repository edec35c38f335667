#!/usr/bin/env python3
"""Draws one run's time series (`isim run --plot`).

usage: plot_run.py TIMESERIES.csv OUT.png [--title TEXT]

TIMESERIES.csv is a run folder's timeseries.csv: one row per metrics.timeseries_interval_s of
simulated time, the state in force at that instant (summed over the replicas of a fleet).
Three panels share the time axis:
  sessions     running, waiting, paused (in an intercept) and swapped (intercept over, KV on
               the CPU waiting to come back);
  KV blocks    GPU and CPU blocks in use;
  batch tokens tokens of the iteration in flight (prefill + decode), and the queued prefill
               tokens (waiting and swapped sessions' prompts and rebuilds).
A series that is 0 throughout is not drawn (the panel says which); the legend lists only the
lines drawn. The PNG is written under a temporary name and renamed into place.

Needs matplotlib (Debian: python3-matplotlib); no other packages. Exit status 2 on bad input
(a missing file or column, a non-numeric value, no rows), 3 without matplotlib.
"""

import argparse
import csv
import math
import os
import sys

PROG = "plot_run.py"
COLUMNS = ["t_s", "running", "waiting", "paused", "swapped", "gpu_blocks_used",
           "cpu_blocks_used", "queued_tokens", "batch_tokens"]
# (column, label, colour, line style, marker): Okabe & Ito's colour-blind-safe palette, and
# distinct styles and markers so overlapping lines stay apart in grey too.
PANELS = [
    ("sessions", [
        ("running", "running", "#0072B2", "-", "o"),
        ("waiting", "waiting", "#D55E00", "--", "s"),
        ("paused", "paused (intercept)", "#009E73", "-.", "^"),
        ("swapped", "swapped (waiting for swap-in)", "#CC79A7", ":", "D"),
    ]),
    ("KV blocks in use", [
        ("gpu_blocks_used", "GPU", "#0072B2", "-", "o"),
        ("cpu_blocks_used", "CPU", "#E69F00", "--", "s"),
    ]),
    ("tokens", [
        ("batch_tokens", "in the iteration in flight", "#000000", "-", "o"),
        ("queued_tokens", "queued prefill", "#56B4E9", "--", "v"),
    ]),
]


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path):
    if not os.path.isfile(path):
        fail(path + ": no such file")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            fail("{}: missing column(s) {} (needs {})".format(path, ", ".join(missing),
                                                              ",".join(COLUMNS)))
        cols = {c: [] for c in COLUMNS}
        for line, row in enumerate(reader, start=2):
            for c in COLUMNS:
                try:
                    v = float(row[c])
                except (TypeError, ValueError):
                    fail("{}:{}: column {}: expected a number, got '{}'".format(
                        path, line, c, row[c]))
                if not math.isfinite(v):
                    fail("{}:{}: column {}: expected a finite number, got '{}'".format(
                        path, line, c, row[c]))
                cols[c].append(v)
    if not cols["t_s"]:
        fail(path + ": no samples (the run lasted less than one metrics.timeseries_interval_s; "
             "a smaller interval gives some)")
    return cols


def save(fig, plt, path):
    tmp = "{}.tmp-{}".format(path, os.getpid())
    try:
        fig.savefig(tmp, dpi=110, format="png")
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)


def draw(cols, title, out, plt):
    t = cols["t_s"]
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(8, 7.5), sharex=True)
    every = max(1, len(t) // 12)  # about a dozen markers per line
    for ax, (ylabel, series) in zip(axes, PANELS):
        idle = []
        for col, label, colour, style, marker in series:
            if not any(cols[col]):
                idle.append(label)
                continue
            ax.step(t, cols[col], where="post", color=colour, linestyle=style, linewidth=1.4,
                    marker=marker, markersize=4, markevery=every, label=label)
        if len(idle) < len(series):
            ax.legend(loc="best", fontsize=9, frameon=False)
        if idle:
            ax.text(0.99, 0.95, "always 0: " + ", ".join(idle), transform=ax.transAxes,
                    ha="right", va="top", fontsize=9, color="#555555")
        ax.set_ylabel(ylabel, fontsize=10)
        ax.tick_params(labelsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(True, color="#dddddd", linewidth=0.6)
    axes[-1].set_xlabel("simulated time (s)", fontsize=10)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    save(fig, plt, out)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="One run's time series as a PNG.")
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default="isim run: time series")
    args = ap.parse_args()
    cols = read(args.csv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(PROG + ": error: matplotlib is not installed (Debian: apt-get install "
              "python3-matplotlib)", file=sys.stderr)
        return 3
    draw(cols, args.title, args.png, plt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
