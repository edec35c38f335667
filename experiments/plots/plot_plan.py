#!/usr/bin/env python3
"""Plots of an `isim plan` plan.csv.

usage: plot_plan.py PLAN.csv OUTDIR

Writes two PNGs into OUTDIR:
  cost_capacity.png  each feasible candidate's fleet cost per hour at the peak rate (the simulated
                     fleet) against the capacity of one replica (sessions/s; the bar spans the
                     seeds' lowest to highest capacity), colour by policy, marker by deployment,
                     fill by router (when the plan compares several); the Pareto front (no other
                     candidate is both cheaper and of higher capacity) is joined by a dashed line
                     (ringed when it is one candidate) and labelled;
  slo_headroom.png   for each feasible deployment and policy, in rank order, how far below each SLO
                     limit one replica runs at its capacity: (limit - value) / limit, worst seed
                     (the same for every router, so shown once).

Titles name the GPUs, models, workload and peak rate from the plot_context.json that isim plan
writes beside plan.csv. The legend lists only what is drawn; fonts are >= 9 pt (plot_style.py).

Needs matplotlib (Debian: python3-matplotlib); no other packages. Exit status 2 on bad input.
"""

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

REQUIRED = ["rank", "deployment", "policy", "capacity_rps", "capacity_max_rps", "gpus",
            "cost_per_hour"]


def fail(msg):
    print("plot_plan.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def read_plan(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail("{}: cannot read: {}".format(path, e.strerror))
    except csv.Error as e:
        fail("{}: not CSV: {}".format(path, e))
    if not rows:
        fail(path + ": no candidates")
    missing = [c for c in REQUIRED if c not in rows[0]]
    if missing:
        fail("{}: missing column(s): {}".format(path, ", ".join(missing)))
    return rows


def number(row, key):
    try:
        return float(row[key])
    except ValueError:
        fail("{}: expected a number, got '{}'".format(key, row[key]))


def pareto(points):
    """Indices of points (capacity, cost) that no other point beats on both."""
    front = []
    for i, (ci, ki) in enumerate(points):
        dominated = any((cj >= ci and kj <= ki) and (cj > ci or kj < ki)
                        for j, (cj, kj) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: points[i][0])


FILLS = ["full", "none", "left", "bottom", "right", "top"]


def fill_style(k):
    """Marker fill of the k-th router: full, hollow, then half-filled; the rest white, so that
    the seeds' bar does not show through."""
    fill = FILLS[k % len(FILLS)]
    if fill == "none":
        return {"markerfacecolor": "white"}
    return {"fillstyle": fill, "markerfacecoloralt": "white"}


def plot_cost(plt, rows, out, ctx):
    policies = sorted({r["policy"] for r in rows})
    deployments = list(dict.fromkeys(r["deployment"] for r in rows))
    routers = list(dict.fromkeys(r.get("router", "") for r in rows))
    markers = "osD^vP*Xh<>"
    fig, ax = plt.subplots(figsize=(9, 6))
    points = []
    for r in rows:
        cap, hi, cost = number(r, "capacity_rps"), number(r, "capacity_max_rps"), number(r, "cost_per_hour")
        points.append((cap, cost))
        c = plot_style.policy_colour(r["policy"])
        m = markers[deployments.index(r["deployment"]) % len(markers)]
        # Later routers are drawn larger and behind, so equal points show as rings.
        k = routers.index(r.get("router", ""))
        ax.errorbar([cap], [cost], xerr=[[0], [hi - cap]], fmt=m, color=c, ms=8 + 4 * k,
                    capsize=3, markeredgewidth=1.5, zorder=3 + len(routers) - k, **fill_style(k))
    front = pareto(points)
    xs, ys = [points[i][0] for i in front], [points[i][1] for i in front]
    if len(front) > 1:
        ax.plot(xs, ys, "k--", lw=1, label="Pareto front")
    else:  # one candidate beats every other: no line to draw, so it is ringed
        ax.plot(xs, ys, "o", ms=22, markerfacecolor="none", markeredgecolor="k", lw=0,
                label="Pareto front (one candidate)")
    for i in front:
        r = rows[i]
        via = "\n" + r["router"] if len(routers) > 1 else ""
        ax.annotate("{} {}{}\n{} GPUs".format(r["deployment"], r["policy"], via, r["gpus"]),
                    points[i], textcoords="offset points", xytext=(8, 8), fontsize=9)
    keys = [plot_style.key_entry(ax, p, colour=plot_style.policy_colour(p)) for p in policies]
    keys += [plot_style.key_entry(ax, d, marker=markers[deployments.index(d) % len(markers)])
             for d in deployments]
    if len(routers) > 1:
        for k, name in enumerate(routers):
            fs = dict(fill_style(k))
            keys.append(plot_style.key_entry(ax, "router " + name,
                                             fillstyle=fs.pop("fillstyle", "full"),
                                             markeredgewidth=1.5, **fs))
    ax.set_xlabel("capacity of one replica (sessions/s; bar: seeds' low to high)")
    ax.set_ylabel("fleet cost at the peak rate ($/hour)")
    ax.set_title("Cost against capacity\n" + plot_style.context_line(ctx, width=80))
    ax.grid(alpha=0.3)
    plot_style.legend(ax, keys=keys, loc="best")
    fig.tight_layout()
    plot_style.save(fig, os.path.join(out, "cost_capacity.png"), dpi=100)


def plot_headroom(plt, rows, out, ctx):
    slos = [k[len("headroom_pct."):] for k in rows[0] if k.startswith("headroom_pct.")]
    if not slos:
        fail("no headroom_pct.* columns")
    # Headroom is one replica's at its capacity: every router of a policy shares it.
    seen = set()
    rows = [r for r in rows if (r["deployment"], r["policy"]) not in seen
            and not seen.add((r["deployment"], r["policy"]))]
    labels = ["{}. {} {}".format(r["rank"], r["deployment"], r["policy"]) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) * max(1, len(slos)) / 2 + 2))
    height = 0.8 / len(slos)
    colours = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
    for k, slo in enumerate(slos):
        ys = [i + (k - (len(slos) - 1) / 2) * height for i in range(len(rows))]
        ax.barh(ys, [number(r, "headroom_pct." + slo) for r in rows], height=height,
                color=colours[k % len(colours)], label=slo)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel("headroom at capacity: (limit - value) / limit (%)")
    ax.set_title("SLO headroom per candidate (worst seed)\n" + plot_style.context_line(ctx, width=80))
    ax.grid(axis="x", alpha=0.3)
    plot_style.legend(ax, loc="lower right")
    fig.tight_layout()
    plot_style.save(fig, os.path.join(out, "slo_headroom.png"), dpi=100)


def main(argv):
    if len(argv) != 3:
        fail("usage: plot_plan.py PLAN.csv OUTDIR")
    rows = [r for r in read_plan(argv[1]) if r["gpus"] != ""]  # feasible candidates only
    if not rows:
        fail(argv[1] + ": no feasible candidate to plot")
    try:
        ctx = plot_style.load_context(plot_style.context_beside(argv[1]))
    except ValueError as e:
        fail(str(e))
    os.makedirs(argv[2], exist_ok=True)
    plt = plot_style.setup()
    plot_cost(plt, rows, argv[2], ctx)
    plot_headroom(plt, rows, argv[2], ctx)


if __name__ == "__main__":
    main(sys.argv)
