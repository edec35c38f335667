#!/usr/bin/env python3
"""Draws a simulated replay against the real vLLM run for `isim validate --against vllm`.

usage: plot_against.py AGAINST_REQUESTS.csv SIM_TIMESERIES.csv REAL_TIMESERIES.csv|- OUT.png

AGAINST_REQUESTS.csv has one row per real request (real_ttft_s, sim_ttft_s, real_e2e_s,
sim_e2e_s, ...; a sim cell is empty when the request did not finish in the simulation).
SIM_TIMESERIES.csv is the simulated run's timeseries.csv (t_s, running, waiting, ...) and
REAL_TIMESERIES.csv the run's own (t, running, waiting, ...), or - when the run has none.
Three panels: the CDF of TTFT, the CDF of end-to-end latency, and running and waiting requests
over time, real against simulated. The title names the GPU, model, workload and rate from the
plot_context.json beside AGAINST_REQUESTS.csv, when there is one.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_style  # noqa: E402  (beside this file, whatever the working directory)

plt = plot_style.setup()


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
    plot_style.legend(ax, loc="lower right")


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
    ctx = plot_style.load_context(plot_style.context_beside(argv[1]))
    fig.suptitle(f"simulated replay against the real vLLM run ({len(rows)} requests)\n"
                 + plot_style.context_line(ctx))
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
    plot_style.legend(ax, loc="upper right")
    fig.tight_layout()
    plot_style.save(fig, argv[4], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
