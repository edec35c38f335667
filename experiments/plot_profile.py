#!/usr/bin/env python3
"""Draws a profile for `isim profile show P --plot OUT.png`.

usage: plot_profile.py DATA.json OUT.png

DATA.json is written by isim: T(x) in ms by batched tokens with the saturation point, and the
H2D/D2H bandwidth curves (GB/s) by bytes per copy, sampled and at their grid points.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        d = json.load(f)
    fig, (left, zoom, right) = plt.subplots(1, 3, figsize=(17, 4.5))
    fig.suptitle(d["title"])

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

    for key, color, style in (("h2d", "tab:green", "-"), ("d2h", "tab:purple", "--")):
        c = d[key]
        right.plot(c["bytes"], c["gbps"], style, color=color, label=key.upper())
        right.plot(c["grid_bytes"], c["grid_gbps"], ".", color=color)
    right.set_xscale("log", base=2)
    right.set_xlabel("bytes per copy")
    right.set_ylabel("bandwidth (GB/s)")
    right.set_ylim(bottom=0)
    right.grid(True, alpha=0.3)
    right.legend(loc="upper left", title=f"duplex factor {d['duplex_factor']:g}")
    right.set_title("PCIe copy bandwidth by size")

    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
