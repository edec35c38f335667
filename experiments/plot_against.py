#!/usr/bin/env python3
"""Draws a simulated replay against the real vLLM run for `isim validate --against vllm`.

usage: plot_against.py AGAINST_REQUESTS.csv SIM_TIMESERIES.csv REAL_TIMESERIES.csv|- OUT.png

AGAINST_REQUESTS.csv has one row per real request (real_ttft_s, sim_ttft_s, real_e2e_s,
sim_e2e_s, ...; a sim cell is empty when the request did not finish in the simulation).
SIM_TIMESERIES.csv is the simulated run's timeseries.csv (t_s, running, waiting, ...) and
REAL_TIMESERIES.csv the run's own (t, running, waiting, ...), or - when the run has none.
Three panels: the CDF of TTFT, the CDF of end-to-end latency, and running and waiting requests
over time, real against simulated.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def column(rows, name):
    return sorted(float(r[name]) for r in rows if r[name] != "")


def cdf(ax, real, sim, label):
    for values, name, style in ((real, "vLLM (real)", "-"), (sim, "simulated", "--")):
        n = len(values)
        if n:
            ax.step(values, [(i + 1) / n for i in range(n)], style, where="post", label=name)
    ax.set_xlabel(f"{label} (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")


def series(path, t_key):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return ([float(r[t_key]) for r in rows], [int(float(r["running"])) for r in rows],
            [int(float(r["waiting"])) for r in rows])


def main(argv):
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        rows = list(csv.DictReader(f))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    fig.suptitle(f"simulated replay against the real vLLM run ({len(rows)} requests)")
    cdf(axes[0], column(rows, "real_ttft_s"), column(rows, "sim_ttft_s"), "TTFT")
    cdf(axes[1], column(rows, "real_e2e_s"), column(rows, "sim_e2e_s"), "end-to-end latency")
    ax = axes[2]
    t, run, wait = series(argv[2], "t_s")
    ax.plot(t, run, "--", color="tab:blue", label="running (sim)")
    ax.plot(t, wait, "--", color="tab:orange", label="waiting (sim)")
    if argv[3] != "-":
        t, run, wait = series(argv[3], "t")
        ax.plot(t, run, "-", color="tab:blue", label="running (real)")
        ax.plot(t, wait, "-", color="tab:orange", label="waiting (real)")
    ax.set_xlabel("time since the first request (s)")
    ax.set_ylabel("requests")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(argv[4], dpi=110, format="png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
