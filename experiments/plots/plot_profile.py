#!/usr/bin/env python3
"""Draws a profile for `isim profile show P --plot OUT.png`.

usage: plot_profile.py DATA.json OUT.png

DATA.json is written by isim: T(x) in ms by batched tokens with the saturation point, decode
attention (ms, all layers) by total KV tokens for a few batch sizes (null for a linear profile),
and the H2D/D2H bandwidth curves (GB/s) by bytes per copy as the cost model uses them, sampled
and at their grid points, titled by what they measured (copy_path: PCIe or host memcpy).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def draw_forward(left, zoom, d):
    s, ts = d["saturation_tokens"], d["t_saturation_ms"]
    for ax, limit in ((left, None), (zoom, 4 * s)):
        xs = [x for x in d["tokens"] if limit is None or x <= limit]
        ys = d["t_ms"][: len(xs)]
        ax.plot(xs, ys, color="tab:blue", label="T(x)")
        ax.axvline(s, color="tab:red", linestyle="--", linewidth=1)
        ax.plot([s], [ts], "o", color="tab:red", label=f"saturation: {s:g} tokens, {ts:.3g} ms")
        ax.set_xlabel("batched tokens x")
        ax.set_ylabel("iteration time T(x) (ms)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left")
    left.set_title("forward time by batched tokens (prefill, kv 0)")
    zoom.set_title(f"the same, up to 4 x saturation ({4 * s:g} tokens)")


def draw_decode(ax, d):
    lines = d.get("decode")
    ax.set_title("decode attention (all layers) by the batch's KV tokens")
    if not lines:
        ax.text(0.5, 0.5, "linear profile: decode attention is inside T(x)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    markers = "os^Dv"
    for i, ln in enumerate(lines):
        n = ln["sequences"]
        ax.plot(ln["kv_tokens"], ln["ms"], marker=markers[i % len(markers)], markevery=8,
                label=f"{n:g} sequence{'s' if n != 1 else ''}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("total KV tokens of the decoding sequences")
    ax.set_ylabel("decode attention (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", title="batch")


def draw_copies(ax, d):
    for key, color, style in (("h2d", "tab:green", "-"), ("d2h", "tab:purple", "--")):
        c = d[key]
        ax.plot(c["bytes"], c["gbps"], style, color=color, label=key.upper())
        ax.plot(c["grid_bytes"], c["grid_gbps"], ".", color=color)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per copy")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", title=f"duplex factor {d['duplex_factor']:g}")
    ax.set_title(f"{d['copy_path']} copy bandwidth by size (as the cost model uses it)")


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        d = json.load(f)
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "legend.fontsize": 9,
                         "legend.title_fontsize": 9})
    fig, axes = plt.subplots(2, 2, figsize=(14, 9.5))
    fig.suptitle(d["title"], fontsize=13)
    draw_forward(axes[0][0], axes[0][1], d)
    draw_decode(axes[1][0], d)
    draw_copies(axes[1][1], d)
    fig.tight_layout()
    tmp = argv[2] + ".partial.png"  # whole or not at all: an interrupt leaves no partial PNG
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
