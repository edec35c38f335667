#!/usr/bin/env python3
"""Plots of an `isim sweep` results.csv.

usage: plot.py RESULTS.csv OUTDIR [--latency-target S] [--waste-rate R] [--context FILE]

Writes into OUTDIR:
  latency.png     normalized latency (mean and p99, s/token) against arrival rate, one line per
                  policy label, averaged over the runs of each rate (seeds), with min/max error
                  bars when a rate has several runs;
  throughput.png  for each policy label, the highest throughput (tokens/s and sessions/s) among
                  the rates whose mean normalized latency is at most the target (every rate when
                  no target is given); each bar is labelled with its value, and its tick with the
                  policy and the arrival rate it was reached at;
  waste.png       the GPU block-time breakdown (waste_share.*) per policy label, averaged over the
                  runs at one arrival rate: --waste-rate R (one of the swept rates), or by default
                  the highest rate that every label ran and kept up with: no run `overloaded`
                  (when results.csv has that column), else every run's mean TTFT within 10x of
                  the label's at its lowest rate (see plot_results.keeps_up);
  ttft.png        mean TTFT (and turn TTFT or p99) against arrival rate, when results.csv has them;
  recompute.png   recomputed tokens, and the GPU time they took (recompute_gpu_s), against the
                  think time for a multi-turn sweep over trace.think_time_s, else against the
                  arrival rate when some run recomputed.

A policy label is the policy, its estimator when set, and the value of any swept key other than
arrival.rate and seed (the columns between `policy` and `estimator`). Each policy has the same
colour, marker and line style in every plot (plot_style.POLICY_STYLES).

Every figure's title names the GPU, model and workload, from the plot_context.json that isim
writes beside results.csv (or --context FILE), and the rate or rates it shows.

Needs matplotlib (Debian: python3-matplotlib); no other packages. Exit status 2 on bad input
(missing file or columns, non-numeric values, a --waste-rate that was not swept). Reading
results.csv and choosing rates is plot_results.py, beside this file.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)
from plot_results import (THINK, WASTE, Table, choose_waste_rate, fail, fmt_rate,  # noqa: E402
                          read_results)

def suptitle(fig, what, ctx, rate):
    fig.suptitle("{}\n{}".format(what, plot_style.context_line(ctx, rate)))


def plot_latency(t, plt, out, target, ctx):
    from matplotlib.ticker import NullLocator

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    for ax, stat in ((axes[0], "mean"), (axes[1], "p99")):
        column = "normalized_latency_s." + stat
        for label in t.labels:
            rates = t.rates(label)
            means = [t.mean(label, r, column) for r in rates]
            lo = [m - min(t.values(label, r, column)) for r, m in zip(rates, means)]
            hi = [max(t.values(label, r, column)) - m for r, m in zip(rates, means)]
            several = any(len(t.groups[(label, r)]) > 1 for r in rates)
            ax.errorbar(rates, means, yerr=[lo, hi] if several else None, capsize=3, label=label,
                        **t.style(label))
        if target and stat == "mean":
            ax.axhline(target, color="grey", linestyle="--", linewidth=1,
                       label="target {:g} s/token".format(target))
        rates = t.all_rates()
        if rates[0] > 0 and rates[-1] / rates[0] >= 8:  # doubling rates read best on log2
            ax.set_xscale("log", base=2)
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(rates)
        ax.set_xticklabels([fmt_rate(r) for r in rates])
        ax.set_xlabel("arrival rate (sessions/s)")
        ax.set_ylabel("normalized latency, {} (s/token)".format(stat))
        ax.set_title("Normalized latency ({})".format(stat))
        if all(v > 0 for lab in t.labels for r in t.rates(lab)
               for v in t.values(lab, r, column)):
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    plot_style.legend(axes[0])
    suptitle(fig, "Normalized latency against arrival rate", ctx,
             plot_style.rate_range(t.all_rates()))
    fig.tight_layout()
    path = os.path.join(out, "latency.png")
    plot_style.save(fig, path)
    plt.close(fig)
    return path


def best_throughput(t, label, column, target):
    """(value, rate) of the highest mean `column` among the rates within `target`, or (None,
    None) when no rate is."""
    best, best_rate = None, None
    for r in t.rates(label):
        if target and t.mean(label, r, "normalized_latency_s.mean") > target:
            continue
        v = t.mean(label, r, column)
        if best is None or v > best:
            best, best_rate = v, r
    return best, best_rate


def plot_throughput(t, plt, out, target, ctx):
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.2))
    metrics = (("throughput_tokens_per_s", "tokens/s", "{:,.0f}"),
               ("throughput_sessions_per_s", "sessions/s", "{:.3g}"))
    for ax, (column, unit, fmt) in zip(axes, metrics):
        best = [best_throughput(t, label, column, target) for label in t.labels]
        heights = [v if v is not None else 0.0 for v, _ in best]
        x = list(range(len(t.labels)))
        bars = ax.bar(x, heights, color=[plot_style.policy_colour(t.base[lab]) for lab in t.labels])
        for b, (v, _) in zip(bars, best):
            text = fmt.format(v) if v is not None else "none within\ntarget"
            ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=9)
        ax.set_xticks(x)
        ax.set_xticklabels(["{} at {} sessions/s".format(lab, fmt_rate(r)) if r is not None
                            else lab for lab, (_, r) in zip(t.labels, best)],
                           rotation=30, ha="right", rotation_mode="anchor")
        ax.set_ylabel("throughput ({})".format(unit))
        ax.set_title("Highest throughput ({})".format(unit))
        if heights and max(heights) > 0:
            ax.set_ylim(0, max(heights) * 1.15)
        ax.grid(True, axis="y", alpha=0.3)
    if target:
        what = "Highest throughput with mean normalized latency <= {:g} s/token".format(target)
    else:
        what = "Highest throughput over the swept rates (no latency target)"
    suptitle(fig, what, ctx, plot_style.rate_range(t.all_rates()) + " swept")
    fig.tight_layout()
    path = os.path.join(out, "throughput.png")
    plot_style.save(fig, path)
    plt.close(fig)
    return path


def plot_waste(t, plt, out, ctx, rate, why):
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(t.labels) + 4), 5.6))
    x = list(range(len(t.labels)))
    bottom = [0.0] * len(t.labels)
    colours = ["#0072B2", "#E69F00", "#D55E00", "#CC79A7", "#BBBBBB"]
    for i, w in enumerate(WASTE):
        shares = [100 * t.mean(label, rate, "waste_share." + w) for label in t.labels]
        if not any(shares):
            continue  # a share that is 0 for every policy has no bar, so no legend entry
        ax.bar(x, shares, bottom=bottom, label=w.replace("_", " "), color=colours[i])
        bottom = [b + s for b, s in zip(bottom, shares)]
    ax.set_xticks(x)
    ax.set_xticklabels(t.labels, rotation=20, ha="right")
    ax.set_ylabel("share of GPU block-time (%)")
    ax.set_ylim(0, 100)
    ax.set_title("at {} sessions/s: {}".format(fmt_rate(rate), why))
    plot_style.legend(ax, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    suptitle(fig, "GPU memory-time breakdown", ctx, fmt_rate(rate) + " sessions/s")
    fig.tight_layout()
    path = os.path.join(out, "waste.png")
    plot_style.save(fig, path)
    plt.close(fig)
    return path


def plot_ttft(t, plt, out, ctx):
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    panels = [(axes[0], "ttft_s.mean", "first token of a session (mean)")]
    turn = "turn_ttft_s.mean" in t.col
    panels.append((axes[1], "turn_ttft_s.mean" if turn else "ttft_s.p99",
                   "first token after each resume (mean)" if turn else "first token (p99)"))
    for ax, column, title in panels:
        for label in t.labels:
            rates = t.rates(label)
            ax.plot(rates, [t.mean(label, r, column) for r in rates], label=label,
                    **t.style(label))
        ax.set_xlabel("arrival rate (sessions/s)")
        ax.set_ylabel("TTFT (s)")
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    plot_style.legend(axes[0])
    suptitle(fig, "Time to first token against arrival rate", ctx,
             plot_style.rate_range(t.all_rates()))
    fig.tight_layout()
    path = os.path.join(out, "ttft.png")
    plot_style.save(fig, path)
    plt.close(fig)
    return path


def plot_recompute(t, plt, out, ctx, rates, think):
    """Recomputed tokens, and their GPU time when results.csv has it, against the sweep's x:
    the think time (log axis) or the arrival rate."""
    from matplotlib.ticker import NullLocator
    panels = [("recomputed_tokens", "recomputed tokens")]
    if "recompute_gpu_s" in t.col:
        panels.append(("recompute_gpu_s", "GPU time recomputing (s)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(8 * len(panels) ** 0.75, 5.4), squeeze=False)
    xs_of = t.all_rates()
    for ax, (column, unit) in zip(axes[0], panels):
        for label in t.labels:
            xs = t.rates(label)
            ax.plot(xs, [t.mean(label, x, column) for x in xs], label=label, **t.style(label))
        if think:
            ax.set_xscale("log")
            # A tick at each swept think time: a log axis alone labels only the powers of ten.
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(xs_of)
        ax.set_xticklabels([fmt_rate(x) for x in xs_of])
        ax.set_xlabel("mean think time between turns (s)" if think
                      else "arrival rate (sessions/s)")
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
    plot_style.legend(axes[0][0])
    what = "think time" if think else "arrival rate"
    suptitle(fig, "Recomputation against " + what, ctx, plot_style.rate_range(rates))
    fig.tight_layout()
    path = os.path.join(out, "recompute.png")
    plot_style.save(fig, path)
    plt.close(fig)
    return path


def main(argv):
    ap = argparse.ArgumentParser(description="Plots of an isim sweep's results.csv.")
    ap.add_argument("results", help="results.csv written by isim sweep (or isim sweep merge)")
    ap.add_argument("outdir", help="folder for latency.png, throughput.png and waste.png")
    ap.add_argument("--latency-target", type=float, default=None, metavar="S",
                    help="normalized-latency target (s/token) for the throughput plot")
    ap.add_argument("--waste-rate", type=float, default=None, metavar="R",
                    help="arrival rate of waste.png (one of the swept rates); default: the "
                         "highest rate where every policy keeps up")
    ap.add_argument("--context", default=None, metavar="FILE",
                    help="GPU, model, workload and rate of the titles (default: "
                         "plot_context.json beside RESULTS.csv)")
    args = ap.parse_args(argv)
    target = args.latency_target
    if target is not None and not (target > 0 and math.isfinite(target)):
        fail("--latency-target: must be a number > 0 (s/token)")
    if args.waste_rate is not None and not math.isfinite(args.waste_rate):
        fail("--waste-rate: must be a number (one of the swept arrival rates)")
    if args.context is not None and not os.path.isfile(args.context):
        fail("--context: {}: no such file".format(args.context))
    try:
        ctx = plot_style.load_context(args.context or plot_style.context_beside(args.results))
    except ValueError as e:
        fail(str(e))

    header, rows = read_results(args.results)
    if args.waste_rate is not None and "arrival.rate" not in header:
        fail("--waste-rate: {} has no arrival.rate column".format(args.results))
    try:
        plt = plot_style.setup()
    except ImportError:
        fail("matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    os.makedirs(args.outdir, exist_ok=True)
    paths = []
    if "arrival.rate" in header:
        table = Table(args.results, header, rows)
        waste_rate, why = choose_waste_rate(table, args.waste_rate)  # fails before any PNG
        paths += [plot_latency(table, plt, args.outdir, target, ctx),
                  plot_throughput(table, plt, args.outdir, target, ctx),
                  plot_waste(table, plt, args.outdir, ctx, waste_rate, why)]
        if "ttft_s.mean" in header and ("turn_ttft_s.mean" in header or "ttft_s.p99" in header):
            paths.append(plot_ttft(table, plt, args.outdir, ctx))
    if THINK in header and "recomputed_tokens" in header:
        rates = table.all_rates() if "arrival.rate" in header else []
        paths.append(plot_recompute(Table(args.results, header, rows, x=THINK), plt, args.outdir,
                                    ctx, rates, think=True))
    elif "recompute_gpu_s" in header and "arrival.rate" in header and \
            any(table.number(n, r, "recompute_gpu_s") > 0 for n, r in enumerate(rows, start=2)):
        paths.append(plot_recompute(table, plt, args.outdir, ctx, table.all_rates(), think=False))
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
