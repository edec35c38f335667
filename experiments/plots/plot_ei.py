#!/usr/bin/env python3
"""Plots and tables of the Evolving Infra experiments (docs/evolving-infra.md) from a sweep run
over seeds: experiments/specs/evolving-infra*.yaml, pd-adaptive.yaml, agent-kv.yaml.

usage: plot_ei.py SWEEP_OUT_DIR OUT_PREFIX [--group COLUMN] [--series COLUMN] [--phase-s S]
                  [--phases N] [--timeline VARIANT ...] [--table-only]

SWEEP_OUT_DIR is what `isim sweep SPEC --keep-runs --out DIR` wrote for a spec that sweeps `seed`:
DIR/aggregate.csv (mean and 95% interval over the seeds, experiments/sweep/sweep_aggregate.h),
DIR/results.csv, and per run DIR/runs/<run_index>[/<policy>]/{roles.csv,windows.csv}. Writes:
  OUT_PREFIX-latency.png   four panels (mean per-request latency, P95 per-turn TTFT, P99 of each
                           turn's longest inter-token gap, turn goodput share), one bar per series
                           (the --series column, default `variant`) in sweep order, grouped by the
                           --group column when given (e.g. a load level); error bars are the 95%
                           intervals over the seeds; log y when a panel spans more than 30x;
  OUT_PREFIX-timeline.png  (when the runs kept windows.csv) for each --timeline variant (default:
                           every variant with a roles.csv, at most 6), first seed, first group:
                           P95 per-turn TTFT per window and, on a twin axis, the prefill replica
                           count over time (roles.csv); phase boundaries every --phase-s seconds
                           (0: none) between the --phases phases (0: to the end);
and prints a Markdown table of the aggregate (mean ± interval) to stdout.

Needs matplotlib (Debian: python3-matplotlib) for the plots, not for --table-only. Exit status 2
on bad input (a missing folder, file or column, a value that is not a number), 3 without
matplotlib.
"""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

PROG = "plot_ei.py"
# (column, label, unit) of the four headline metrics; a missing column is an error.
METRICS = [
    ("request_latency_s.mean", "mean per-request latency", "s"),
    ("request_ttft_s.p95", "P95 per-turn TTFT", "s"),
    ("itl_max_s.p99", "P99 longest inter-token gap", "s"),
    ("turn_goodput.share", "turn goodput (share)", ""),
]
# Extra columns printed in the table when present.
EXTRA = [
    ("lost_kv_reuse_tokens.total", "lost reuse (M tok)", 1e-6),
    ("cluster.role_switches", "switches", 1),
    ("cluster.link_bytes.total", "link (GB)", 1e-9),
    ("recovery_max_s", "recovery max (s)", 1),
]


def fail(msg):
    print(PROG + ": error: " + msg, file=sys.stderr)
    sys.exit(2)


def read_csv(path, what):
    if not os.path.isfile(path):
        fail("{}: no such file ({})".format(path, what))
    try:
        with open(path, newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = [(n, r) for n, r in enumerate(reader, start=2) if r]
    except (OSError, csv.Error) as e:
        fail("{}: cannot read: {}".format(path, e))
    if not header:
        fail("{}: empty".format(path))
    for n, r in rows:
        if len(r) != len(header):
            fail("{}:{}: expected {} fields, found {}".format(path, n, len(header), len(r)))
    return header, rows


def num(path, n, text, column):
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        fail("{}:{}: {}: expected a number, got '{}'".format(path, n, column, text))


class Aggregate:
    """aggregate.csv: one point per (group, series), in file order."""

    def __init__(self, sweep_dir, group, series):
        self.path = os.path.join(sweep_dir, "aggregate.csv")
        header, rows = read_csv(self.path, "written by isim sweep when `seed` is swept")
        need = [series] + ([group] if group else []) + [m for m, _, _ in METRICS]
        missing = [c for c in need if c not in header]
        if missing:
            fail("{}: missing column(s): {}".format(self.path, ", ".join(missing)))
        col = {c: i for i, c in enumerate(header)}
        self.groups, self.series, self.points = [], [], {}
        self.extra = [e for e in EXTRA if e[0] in col]
        for n, r in rows:
            g = r[col[group]] if group else ""
            s = r[col[series]]
            if g not in self.groups:
                self.groups.append(g)
            if s not in self.series:
                self.series.append(s)
            p = {"seeds": r[col["seeds"]] if "seeds" in col else ""}
            for m, _, _ in METRICS + [(e[0], None, None) for e in self.extra]:
                p[m] = num(self.path, n, r[col[m]], m)
                ci = m + ".ci95"
                p[ci] = num(self.path, n, r[col[ci]], ci) if ci in col else math.nan
            self.points[(g, s)] = p


def fmt_ci(v, ci, scale=1.0):
    if math.isnan(v):
        return "–"
    digits = 3 if abs(v * scale) < 100 else 0
    text = "{:.{d}f}".format(v * scale, d=digits)
    if not math.isnan(ci):
        text += " ± {:.{d}f}".format(ci * scale, d=digits)
    return text


def print_table(agg, group, series):
    head = ([group] if group else []) + [series, "seeds"] + [l for _, l, _ in METRICS] + \
        [l for _, l, _ in agg.extra]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for g in agg.groups:
        for s in agg.series:
            p = agg.points.get((g, s))
            if p is None:
                continue
            cells = ([g] if group else []) + [s, p["seeds"]]
            cells += [fmt_ci(p[m], p[m + ".ci95"]) for m, _, _ in METRICS]
            cells += [fmt_ci(p[m], p[m + ".ci95"], k) for m, _, k in agg.extra]
            print("| " + " | ".join(cells) + " |")


def plot_bars(plt, agg, group, out, title):
    fig, axes = plt.subplots(2, 2, figsize=(max(9, 0.45 * len(agg.series) * len(agg.groups) + 4),
                                            8))
    palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#999999", "#000000"]
    hatches = ["", "//", "..", "xx", "\\\\"]
    width = 0.8 / max(1, len(agg.series))
    for ax, (m, label, unit) in zip(axes.flat, METRICS):
        values = []
        for j, s in enumerate(agg.series):
            xs, ys, es = [], [], []
            for i, g in enumerate(agg.groups):
                p = agg.points.get((g, s))
                if p is None or math.isnan(p[m]):
                    continue
                xs.append(i + (j - (len(agg.series) - 1) / 2) * width)
                ys.append(p[m])
                es.append(0 if math.isnan(p[m + ".ci95"]) else p[m + ".ci95"])
                values.append(p[m])
            # Intervals are clipped at 0 (and at 1 for a share): a mean over 3 seeds with a wide
            # interval would otherwise draw below what the metric can take.
            top = 1.0 if m == "turn_goodput.share" else math.inf
            err = [[min(e, y) for e, y in zip(es, ys)], [min(e, top - y) for e, y in zip(es, ys)]]
            ax.bar(xs, ys, width, yerr=err, capsize=2, label=s,
                   color=palette[j % len(palette)],
                   hatch=hatches[(j // len(palette)) % len(hatches)], edgecolor="white")
        positive = [v for v in values if v > 0]
        if positive and max(positive) / min(positive) > 30 and m != "turn_goodput.share":
            ax.set_yscale("log")
        ax.set_title(label)
        ax.set_ylabel(unit or "share")
        ax.set_xticks(range(len(agg.groups)))
        ax.set_xticklabels([g or "" for g in agg.groups])
        if group:
            ax.set_xlabel(group)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8)
    fig.suptitle(title + "mean over seeds, bars: 95% interval")
    fig.tight_layout(rect=(0, 0.06 + 0.03 * ((len(labels) - 1) // 5), 1, 1))
    plot_style.save(fig, out, dpi=110)
    plt.close(fig)


def first_runs(sweep_dir, group, series):
    """(group, series) -> the folder of its first-seed run (results.csv order)."""
    path = os.path.join(sweep_dir, "results.csv")
    header, rows = read_csv(path, "written by isim sweep")
    col = {c: i for i, c in enumerate(header)}
    for c in ["run_index", "policy", series] + ([group] if group else []):
        if c not in col:
            fail("{}: missing column {}".format(path, c))
    out = {}
    for _, r in rows:
        key = (r[col[group]] if group else "", r[col[series]])
        if key not in out:
            run = os.path.join(sweep_dir, "runs", r[col["run_index"]])
            sub = os.path.join(run, r[col["policy"]])  # a run folder of several policies
            out[key] = sub if os.path.isdir(sub) else run
    return out


def read_series(path, xcol, ycol):
    header, rows = read_csv(path, "a run's output")
    col = {c: i for i, c in enumerate(header)}
    if xcol not in col or ycol not in col:
        fail("{}: missing column {} or {}".format(path, xcol, ycol))
    xs, ys = [], []
    for n, r in rows:
        xs.append(num(path, n, r[col[xcol]], xcol))
        ys.append(num(path, n, r[col[ycol]], ycol))
    return xs, ys


def plot_timeline(plt, agg, runs, variants, phase_s, phases, out, title):
    g0 = agg.groups[0]
    picked = []
    for s in agg.series:
        d = runs.get((g0, s))
        if d is None or not os.path.isfile(os.path.join(d, "windows.csv")):
            continue
        if variants and s not in variants:
            continue
        if not variants and not os.path.isfile(os.path.join(d, "roles.csv")):
            continue
        picked.append((s, d))
    if not picked:
        return False
    picked = picked[:6] if not variants else picked
    fig, axes = plt.subplots(len(picked), 1, figsize=(10, 2.2 * len(picked) + 0.6), sharex=True,
                             squeeze=False)
    for ax, (s, d) in zip(axes[:, 0], picked):
        wx, wy = read_series(os.path.join(d, "windows.csv"), "start_s", "request_ttft_s.p95")
        ax.step(wx, wy, where="post", color="#0072B2", label="P95 per-turn TTFT")
        ax.set_yscale("log")
        ax.set_ylabel("TTFT p95 (s)")
        ax.set_title(s, fontsize=9)
        roles = os.path.join(d, "roles.csv")
        if os.path.isfile(roles):
            rx, ry = read_series(roles, "t_s", "prefill")
            tw = ax.twinx()
            tw.step(rx, ry, where="post", color="#000000", linewidth=1, label="prefill replicas")
            tw.set_ylabel("prefill replicas")
        if phase_s > 0 and wx:
            t = phase_s
            while t < max(wx) and (phases <= 0 or t < phases * phase_s - 1e-9):
                ax.axvline(t, color="#999999", linestyle=":", linewidth=1)
                t += phase_s
    axes[-1, 0].set_xlabel("simulated time (s)")
    fig.suptitle(title + "first seed: P95 per-turn TTFT per window, prefill replicas")
    fig.tight_layout()
    plot_style.save(fig, out, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("sweep_dir")
    ap.add_argument("out_prefix")
    ap.add_argument("--group", default="")
    ap.add_argument("--series", default="variant")
    ap.add_argument("--phase-s", type=float, default=0)
    ap.add_argument("--phases", type=int, default=0)
    ap.add_argument("--timeline", nargs="*", default=[])
    ap.add_argument("--table-only", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.sweep_dir):
        fail("{}: no such folder".format(a.sweep_dir))
    agg = Aggregate(a.sweep_dir, a.group, a.series)
    print_table(agg, a.group, a.series)
    if a.table_only:
        return
    runs = first_runs(a.sweep_dir, a.group, a.series)
    try:
        ctx = plot_style.load_context(os.path.join(a.sweep_dir, "plot_context.json"))
    except ValueError as e:
        fail(str(e))
    line = plot_style.context_line(ctx, width=110) if ctx else ""
    title = line + "\n" if line else ""
    try:
        plt = plot_style.setup()
    except ImportError:
        print(PROG + ": error: matplotlib is not installed (Debian: python3-matplotlib)",
              file=sys.stderr)
        sys.exit(3)
    plot_bars(plt, agg, a.group, a.out_prefix + "-latency.png", title)
    print("wrote " + a.out_prefix + "-latency.png")
    if plot_timeline(plt, agg, runs, a.timeline, a.phase_s, a.phases, a.out_prefix + "-timeline.png",
                     title):
        print("wrote " + a.out_prefix + "-timeline.png")


if __name__ == "__main__":
    main()
