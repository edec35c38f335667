#!/usr/bin/env python3
"""Coalesced decode steps change nothing (issue 38, sim/decode_run.h): every shipped spec
(experiments/specs/*.yaml), scaled down with -p overrides, runs with engine.coalesce_decode
true and false, and the two output folders must be byte-identical, file for file.

Usage: coalesce_identity.py ISIM [SPEC_DIR [SPEC]] (SPEC: that one alone). Exits 0 when every pair matches, 1 naming the first
differing files, 77 (CTest's skip) when the shared data a spec reads is absent. A spec this table
does not know fails the test, so a new spec gets a row here.
"""
import filecmp
import os
import subprocess
import sys
import tempfile

import yaml

# spec -> (command, overrides): small enough that all of them, twice, take well under a minute.
SMALL = ["-p", "trace.limit=40"]
DRAW = ["-p", "trace.draw=60"]
SPECS = {
    # `isim sweep` refuses a folder trace (trace.path) at 3b458da too: these run their base
    # spec, the sweep taken out ("unswept"), with `isim run`.
    "agent-kv-ablation.yaml": ("unswept", ["-p", "arrival.users=2", "-p", "trace.limit=4"]),
    "agent-kv.yaml": ("unswept", ["-p", "arrival.users=2", "-p", "trace.limit=4"]),
    "bench-100k.yaml": ("run", ["-p", "trace.draw=3000"]),
    "bench-cluster.yaml": ("run", ["-p", "trace.draw=3000", "-p", "cluster.replicas=4"]),
    "bench-fleet.yaml": ("run", ["-p", "trace.draw=3000", "-p", "cluster.replicas=4",
                                 "-p", "arrival.rate=8"]),
    "bench-peer.yaml": ("run", ["-p", "trace.sessions=3000"]),
    "cluster-agents.yaml": ("run", DRAW),
    "demo.yaml": ("run", DRAW),
    "evolving-infra-classes.yaml": ("unswept", ["-p", "arrival.users=2", "-p", "trace.limit=4"]),
    "evolving-infra-plan.yaml": ("plan", ["-p", "pd_splits=[mixed]", "-p", "search.window_s=60",
                                          "-p", "search.tolerance=0.5", "-p", "peak_rate=0.5",
                                          "--no-plot"]),
    "evolving-infra.yaml": ("sweep", ["-p", "sweep.variants=[{name: mixed, set: {cluster.roles: "
                                      "mixed}}, {name: split, set: {cluster.roles: '2:6'}}]",
                                      "-p", "sweep.seed=[1]", "-p", "arrival.phases=[{duration_s: "
                                      "60, users: {coding: 4}}, {duration_s: 60, users: {math: 4}}]",
                                      "-p", "arrival.cycles=1", "-p", "arrival.sessions_per_user=2",
                                      "-p", "metrics.shifts_s=[60]", "-p", "trace.sessions=40"]),
    "imported-profiles.yaml": ("sweep", SMALL),
    "infercept-mix.yaml": ("sweep", ["-p", "sweep.seed=[1]", "-p", "sweep.arrival.rate=[2, 8]",
                                     "-p", "trace.draw=60"]),
    "moe-fleet-plan.yaml": ("plan", ["-p", "search.window_s=20", "-p", "search.tolerance=0.9",
                                     "-p", "peak_rate=0.05", "-p", "search.max_fleet_factor=1",
                                     "--no-plot"]),
    "moe-fleet-sweep.yaml": ("unswept", ["-p", "arrival.users=8", "-p", "trace.limit=4"]),
    "moe-fleet.yaml": ("run", ["-p", "arrival.users=8", "-p", "trace.limit=4"]),
    "mooncake-prefix.yaml": ("run", ["-p", "trace.limit=200"]),
    "multiturn-think.yaml": ("sweep", ["-p", "sweep.seed=[1]", "-p", "trace.sessions=30"]),
    "multiturn.yaml": ("sweep", ["-p", "sweep.seed=[1]", "-p", "trace.sessions=30"]),
    "pensieve-mooncake.yaml": ("sweep", ["-p", "sweep.seed=[1]", "-p", "sweep.arrival.rate=[2]",
                                         "-p", "trace.limit=300"]),
    "pensieve-mooncake-rtxpro.yaml": ("sweep", ["-p", "sweep.seed=[1]",
                                                "-p", "sweep.arrival.rate=[0.4]",
                                                "-p", "trace.limit=300"]),
    "pd-adaptive.yaml": ("sweep", ["-p", "sweep.variants=[{name: mixed, set: {cluster.roles: "
                                   "mixed}}, {name: split, set: {cluster.roles: '4:12'}}]",
                                   "-p", "sweep.seed=[1]", "-p", "trace.sessions=50"]),
    # At 3b458da this spec stops with "trace (generator): no sessions to run" (both ways).
    "plan-agents.yaml": ("plan", ["-p", "policies=[preserve]", "-p", "search.window_s=60",
                                  "-p", "search.tolerance=0.5", "--no-plot"]),
    "quickstart.yaml": ("run", SMALL),
    "sharegpt-vllm-v1.yaml": ("sweep", ["-p", "trace.limit=60"]),
    # Live executors: the simulator's side of the comparison, on the sim executor.
    "validate-cpu.yaml": ("run", ["-p", "executor=sim", "-p", "trace.sessions=20"]),
    "validate-h200.yaml": ("run", ["-p", "executor=sim", "-p", "trace.sessions=20"]),
}


def rewritten(spec_dir, spec, tmp, keep_sweep):
    """The spec without its plot (and, unless keep_sweep, its sweep), its relative paths made
    absolute: plots are not the engine's (and need matplotlib)."""
    with open(os.path.join(spec_dir, spec)) as f:
        d = yaml.safe_load(f)
    if not keep_sweep:
        d.pop("sweep", None)
    d.pop("plot", None)
    here = os.path.abspath(spec_dir)

    def absolute(v):  # every relative path, wherever it is (trace, profile, swept profiles)
        if isinstance(v, dict):
            return {k: absolute(x) for k, x in v.items()}
        if isinstance(v, list):
            return [absolute(x) for x in v]
        if isinstance(v, str) and v.startswith("../"):
            return os.path.normpath(os.path.join(here, v))
        return v

    d = absolute(d)
    out = os.path.join(tmp, "rewritten-" + spec)
    with open(out, "w") as f:
        yaml.safe_dump(d, f)
    return out


def differs(a, b):
    """The first path under a or b whose bytes (or presence) differ, or None."""
    for root, dirs, files in os.walk(a):
        rel = os.path.relpath(root, a)
        other = os.path.join(b, rel)
        if not os.path.isdir(other):
            return rel
        theirs = set(os.listdir(other))
        mine = set(dirs) | set(files)
        if theirs != mine:
            return os.path.join(rel, sorted(theirs ^ mine)[0])
        for f in files:
            if not filecmp.cmp(os.path.join(root, f), os.path.join(other, f), shallow=False):
                return os.path.join(rel, f)
    return None


def main():
    isim = sys.argv[1]
    spec_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments", "specs")
    specs = sorted(f for f in os.listdir(spec_dir) if f.endswith(".yaml"))
    if len(sys.argv) > 3:  # one spec only (when adjusting its row)
        specs = [sys.argv[3]]
    unknown = [s for s in specs if s not in SPECS]
    if unknown:
        print(f"coalesce_identity: no row for {', '.join(unknown)}: add one to {__file__}")
        return 1
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            command, overrides = SPECS[spec]
            path = os.path.join(spec_dir, spec)
            if command == "unswept":
                command, path = "run", rewritten(spec_dir, spec, tmp, keep_sweep=False)
            elif command == "sweep":
                path = rewritten(spec_dir, spec, tmp, keep_sweep=True)
            outs, results = [], []
            for on in ("true", "false"):
                out = os.path.join(tmp, f"{spec}-{on}")
                args = [isim, command, path, "--out", out, *overrides,
                        "-p", f"engine.coalesce_decode={on}"]
                if command != "run":
                    args += ["--jobs", "1"]
                r = subprocess.run(args, capture_output=True, text=True, env=env)
                if r.returncode != 0 and "shared/data" in r.stderr and "No such" in r.stderr:
                    print(f"coalesce_identity: {spec}: shared data absent: skip\n{r.stderr}")
                    return 77
                # Refusals compare by message; progress on stderr may differ (fewer instants).
                results.append((r.returncode, r.stderr.replace(out, "OUT") if r.returncode else ""))
                outs.append(out)
            if results[0] != results[1]:
                print(f"coalesce_identity: {spec}: on and off end differently:\n{results}")
                return 1
            if results[0][0] != 0:
                # The same refusal both ways (a spec this build cannot run): say so, compare on.
                print(f"{spec}: both runs exit {results[0][0]} alike: {results[0][1].strip()}")
                continue
            diff = differs(*outs) or differs(outs[1], outs[0])
            if diff:
                print(f"coalesce_identity: {spec}: {diff} differs with coalescing on and off")
                return 1
            print(f"{spec}: identical ({command} {' '.join(overrides)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
