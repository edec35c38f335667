#!/usr/bin/env python3
"""Every shipped fleet spec (experiments/specs/*.yaml with a `cluster:` section), scaled down,
run with --threads 1, 2 and 4: the run folders must be byte-identical (diff of every file).

usage: threads_specs.py ISIM

A run spec goes through `isim run`, a sweep through `isim sweep --shard 1/12 --jobs 1` (results.csv,
the journal); plan specs are left out (isim plan runs each point on one thread). A spec whose
data is missing here (../shared/data) is skipped with its error; when every spec is skipped the
script exits 77 (CTest's skip code). Exit 1 on the first difference, naming the file.
"""
import filecmp
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Each spec's scale: small enough for a sanitizer build, large enough that windows hold several
# replicas' iteration ends.
SCALE = {
    "bench-cluster": ["-p", "trace.draw=1500"],
    "bench-fleet": ["-p", "trace.draw=3000", "-p", "cluster.replicas=16", "-p", "arrival.rate=32"],
}
SWEEP_SCALE = ["-p", "trace.limit=20"]


def fleet_specs():
    d = os.path.join(ROOT, "experiments", "specs")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".yaml"):
            continue
        text = open(os.path.join(d, name)).read()
        lines = text.splitlines()
        if not any(l.startswith("cluster:") for l in lines):
            continue
        if any(l.startswith("plan:") or l.startswith("deployments:") for l in lines):
            continue
        sweep = any(l.startswith("sweep:") for l in lines)
        yield name[:-5], os.path.join(d, name), sweep


def run(isim, spec, name, sweep, threads, out):
    if sweep:
        cmd = [isim, "sweep", spec, *SWEEP_SCALE, "--shard", "1/12", "--jobs", "1", "--out", out]
    else:
        cmd = [isim, "run", spec, *SCALE.get(name, []), "--no-progress", "--out", out]
    cmd += ["--threads", str(threads)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return p.returncode, p.stderr


def differences(a, b):
    """Files that differ or exist on one side only, relative to a and b."""
    out = []
    c = filecmp.dircmp(a, b)
    out += [os.path.join(a, f) for f in c.left_only + c.right_only + c.funny_files]
    for f in c.common_files:
        if not filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False):
            out.append(os.path.join(a, f))
    for sub in c.common_dirs:
        out += differences(os.path.join(a, sub), os.path.join(b, sub))
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    isim = os.path.abspath(sys.argv[1])
    ran = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec, sweep in fleet_specs():
            outs = {}
            for t in (1, 2, 4):
                out = os.path.join(tmp, f"{name}-{t}")
                rc, err = run(isim, spec, name, sweep, t, out)
                if rc != 0 and t == 1 and ("cannot open" in err or "is a directory" in err):
                    print(f"skip {name}: {err.strip().splitlines()[-1]}")
                    break
                if rc not in (0,):
                    print(f"FAIL {name} --threads {t}: exit {rc}\n{err}", file=sys.stderr)
                    return 1
                outs[t] = out
            else:
                # The journal (sweeps) names the spec's folder; results and runs must match.
                for t in (2, 4):
                    diff = differences(outs[1], outs[t])
                    if diff:
                        print(f"FAIL {name}: --threads {t} differs from 1: {diff[:5]}",
                              file=sys.stderr)
                        return 1
                print(f"ok {name}: --threads 1, 2, 4 identical")
                ran += 1
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main())
