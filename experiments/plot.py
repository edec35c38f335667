#!/usr/bin/env python3
"""Plots of an `isim sweep` results.csv.

usage: plot.py RESULTS.csv OUTDIR [--latency-target S]

Writes three PNGs into OUTDIR:
  latency.png     normalized latency (mean and p99, s/token) against arrival rate, one line per
                  policy label, averaged over the runs of each rate (seeds), with min/max error
                  bars when a rate has several runs;
  throughput.png  for each policy label, the highest throughput (tokens/s and sessions/s) among
                  the rates whose mean normalized latency is at most the target (every rate when
                  no target is given), each bar labelled with its rate;
  waste.png       the GPU block-time breakdown (waste_share.*) per policy label, averaged over the
                  runs at the highest arrival rate that every label ran.

A policy label is the policy, its estimator when set, and the value of any swept key other than
arrival.rate and seed (the columns between `policy` and `estimator`).

Needs matplotlib (Debian: python3-matplotlib); no other packages. Exit status 2 on bad input
(missing file or columns, non-numeric values).
"""

import argparse
import csv
import math
import os
import sys

WASTE = ["active", "preserved", "recompute", "swap_stall", "free"]
THINK = "trace.think_time_s"  # a multi-turn sweep's other x axis
REQUIRED = [
    "policy",
    "normalized_latency_s.mean",
    "normalized_latency_s.p99",
    "throughput_tokens_per_s",
    "throughput_sessions_per_s",
] + ["waste_share." + w for w in WASTE]


def fail(msg):
    print("plot.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def read_results(path):
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = [r for r in reader if r]
    except OSError as e:
        fail("{}: cannot read: {}".format(path, e.strerror))
    except csv.Error as e:
        fail("{}: not CSV: {}".format(path, e))
    if not header:
        fail(path + ": empty (expected a results.csv header)")
    missing = [c for c in REQUIRED if c not in header]
    if "arrival.rate" not in header and THINK not in header:
        missing.append("arrival.rate")
    if missing:
        hint = ""
        if "arrival.rate" in missing:
            hint = " (the plots are against arrival rate: sweep arrival.rate, or " + THINK + ")"
        fail("{}: missing column(s): {}{}".format(path, ", ".join(missing), hint))
    if not rows:
        fail(path + ": no runs (only a header)")
    for n, r in enumerate(rows, start=2):
        if len(r) != len(header):
            fail("{}:{}: expected {} fields, found {}".format(path, n, len(header), len(r)))
    return header, rows


def label_columns(header):
    """Swept columns that tell policies apart, beyond the policy and its estimator."""
    p = header.index("policy")
    end = header.index("estimator") if "estimator" in header else p + 1
    return [c for c in header[p + 1:end] if c not in ("arrival.rate", "seed", THINK)]


class Table:
    def __init__(self, path, header, rows, x="arrival.rate"):
        self.path = path
        self.col = {c: i for i, c in enumerate(header)}
        extra = label_columns(header)
        has_est = "estimator" in self.col
        self.labels = []  # in order of first appearance (run order)
        self.groups = {}  # (label, rate) -> list of (line, row)
        for n, r in enumerate(rows, start=2):
            label = r[self.col["policy"]]
            if has_est and r[self.col["estimator"]]:
                label += " (" + r[self.col["estimator"]] + ")"
            for c in extra:
                label += " {}={}".format(c, r[self.col[c]])
            if label not in self.labels:
                self.labels.append(label)
            rate = self.number(n, r, x)
            self.groups.setdefault((label, rate), []).append((n, r))

    def number(self, line, row, column):
        text = row[self.col[column]]
        try:
            return float(text)
        except ValueError:
            fail("{}:{}: {}: expected a number, got '{}'".format(self.path, line, column, text))

    def rates(self, label):
        return sorted(rate for (lab, rate) in self.groups if lab == label)

    def values(self, label, rate, column):
        return [self.number(n, r, column) for n, r in self.groups[(label, rate)]]

    def mean(self, label, rate, column):
        v = self.values(label, rate, column)
        return sum(v) / len(v)


def fmt_rate(r):
    return "{:g}".format(r)


def plot_latency(t, plt, out, target):
    from matplotlib.ticker import NullLocator

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, stat, title in ((axes[0], "mean", "mean"), (axes[1], "p99", "p99")):
        column = "normalized_latency_s." + stat
        for label in t.labels:
            rates = t.rates(label)
            means = [t.mean(label, r, column) for r in rates]
            lo = [m - min(t.values(label, r, column)) for r, m in zip(rates, means)]
            hi = [max(t.values(label, r, column)) - m for r, m in zip(rates, means)]
            several = any(len(t.groups[(label, r)]) > 1 for r in rates)
            ax.errorbar(rates, means, yerr=[lo, hi] if several else None, marker="o",
                        capsize=3, label=label)
        if target and stat == "mean":
            ax.axhline(target, color="grey", linestyle="--", linewidth=1,
                       label="target {:g} s/token".format(target))
        rates = sorted({rate for (_, rate) in t.groups})
        if rates[0] > 0 and rates[-1] / rates[0] >= 8:  # doubling rates read best on log2
            ax.set_xscale("log", base=2)
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(rates)
        ax.set_xticklabels([fmt_rate(r) for r in rates])
        ax.set_xlabel("arrival rate (sessions/s)")
        ax.set_ylabel("normalized latency, {} (s/token)".format(title))
        ax.set_title("Normalized latency ({})".format(title))
        if all(v > 0 for lab in t.labels for r in t.rates(lab)
               for v in t.values(lab, r, column)):
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    path = os.path.join(out, "latency.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_throughput(t, plt, out, target):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    metrics = (("throughput_tokens_per_s", "tokens/s"), ("throughput_sessions_per_s", "sessions/s"))
    for ax, (column, unit) in zip(axes, metrics):
        heights, notes = [], []
        for label in t.labels:
            best, best_rate = None, None
            for r in t.rates(label):
                if target and t.mean(label, r, "normalized_latency_s.mean") > target:
                    continue
                v = t.mean(label, r, column)
                if best is None or v > best:
                    best, best_rate = v, r
            heights.append(best if best is not None else 0.0)
            notes.append("at {}/s".format(fmt_rate(best_rate)) if best is not None
                         else "none within target")
        x = range(len(t.labels))
        bars = ax.bar(x, heights, color=["C{}".format(i % 10) for i in x])
        for b, note in zip(bars, notes):
            ax.annotate(note, (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize="small")
        ax.set_xticks(list(x))
        ax.set_xticklabels(t.labels, rotation=20, ha="right", fontsize="small")
        ax.set_ylabel("throughput ({})".format(unit))
        if heights and max(heights) > 0:
            ax.set_ylim(0, max(heights) * 1.15)
        ax.grid(True, axis="y", alpha=0.3)
    if target:
        fig.suptitle("Highest throughput with mean normalized latency <= {:g} s/token".format(target))
    else:
        fig.suptitle("Highest throughput over the swept rates (no latency target)")
    fig.tight_layout()
    path = os.path.join(out, "throughput.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_waste(t, plt, out):
    common = None
    for label in t.labels:
        rs = set(t.rates(label))
        common = rs if common is None else common & rs
    if not common:
        fail(t.path + ": no arrival rate was run by every policy; waste.png compares one rate")
    rate = max(common)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(t.labels) + 3), 4.8))
    x = list(range(len(t.labels)))
    bottom = [0.0] * len(t.labels)
    for i, w in enumerate(WASTE):
        shares = [100 * t.mean(label, rate, "waste_share." + w) for label in t.labels]
        ax.bar(x, shares, bottom=bottom, label=w.replace("_", " "), color="C{}".format(i))
        bottom = [b + s for b, s in zip(bottom, shares)]
    ax.set_xticks(x)
    ax.set_xticklabels(t.labels, rotation=20, ha="right", fontsize="small")
    ax.set_ylabel("share of GPU block-time (%)")
    ax.set_ylim(0, 100)
    ax.set_title("GPU memory-time breakdown at {} sessions/s".format(fmt_rate(rate)))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.tight_layout()
    path = os.path.join(out, "waste.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_ttft(t, plt, out):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    panels = [(axes[0], "ttft_s.mean", "first token of a session (mean)")]
    turn = "turn_ttft_s.mean" in t.col
    panels.append((axes[1], "turn_ttft_s.mean" if turn else "ttft_s.p99",
                   "first token after each resume (mean)" if turn else "first token (p99)"))
    for ax, column, title in panels:
        for label in t.labels:
            rates = t.rates(label)
            ax.plot(rates, [t.mean(label, r, column) for r in rates], marker="o", label=label)
        ax.set_xlabel("arrival rate (sessions/s)")
        ax.set_ylabel("TTFT (s)")
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    path = os.path.join(out, "ttft.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_recompute(t, plt, out):
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for label in t.labels:
        xs = t.rates(label)  # think times here
        ax.plot(xs, [t.mean(label, x, "recomputed_tokens") for x in xs], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("mean think time between turns (s)")
    ax.set_ylabel("recomputed tokens")
    ax.set_title("Recomputation against think time")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = os.path.join(out, "recompute.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv):
    ap = argparse.ArgumentParser(description="Plots of an isim sweep's results.csv.")
    ap.add_argument("results", help="results.csv written by isim sweep (or isim sweep merge)")
    ap.add_argument("outdir", help="folder for latency.png, throughput.png and waste.png")
    ap.add_argument("--latency-target", type=float, default=None, metavar="S",
                    help="normalized-latency target (s/token) for the throughput plot")
    args = ap.parse_args(argv)
    target = args.latency_target
    if target is not None and not (target > 0 and math.isfinite(target)):
        fail("--latency-target: must be a number > 0 (s/token)")

    header, rows = read_results(args.results)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    os.makedirs(args.outdir, exist_ok=True)
    paths = []
    if "arrival.rate" in header:
        table = Table(args.results, header, rows)
        paths += [plot_latency(table, plt, args.outdir, target),
                  plot_throughput(table, plt, args.outdir, target),
                  plot_waste(table, plt, args.outdir)]
        if "ttft_s.mean" in header:
            paths.append(plot_ttft(table, plt, args.outdir))
    if THINK in header and "recomputed_tokens" in header:
        paths.append(plot_recompute(Table(args.results, header, rows, x=THINK), plt, args.outdir))
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
