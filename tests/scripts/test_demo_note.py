#!/usr/bin/env python3
"""scripts/demo-note: its line from hand-made summary.json files, and its bad-input messages.

usage: test_demo_note.py   (no arguments; runs the script beside the checkout's tests/)
Exit 0 when every case holds, 1 otherwise (each failure printed). Needs no data and no build.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTE = ROOT / "scripts" / "demo-note"
failures = []


def summary(preemptions, idle_evictions, share, per_s):
    # Only the keys demo-note reads, plus one it ignores.
    return {"policy": "x", "preemptions": preemptions, "idle_evictions": idle_evictions,
            "goodput": {"sessions": 1, "share": share, "per_s": per_s}}


def write(run, policy, content):
    d = run / policy
    d.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content)
    (d / "summary.json").write_text(text, encoding="utf-8")


def note(*args):
    p = subprocess.run([sys.executable, str(NOTE), *map(str, args)], capture_output=True,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def expect(name, got, want):
    if got != want:
        failures.append(f"{name}:\n  got  {got!r}\n  want {want!r}")


with tempfile.TemporaryDirectory() as tmp:
    run = Path(tmp) / "run"

    # Two policies ran out of KV: discard by 7 preemptions, preserve by 2 preemptions + 3 idle
    # evictions = 5; min-waste never did. Highest slo.met: min-waste, 0.9504 -> 95.0% (preserve's
    # 0.9 -> 90.0%); highest goodput: min-waste, 1.9 -> 1.90 sess/s (preserve 1.80).
    write(run, "discard", summary(7, 0, 0.5, 1.0))
    write(run, "preserve", summary(2, 3, 0.9, 1.8))
    write(run, "min-waste", summary(0, 0, 0.9504, 1.9))
    expect("three policies, one leader",
           note(run, "discard", "preserve", "min-waste"),
           (0, "What to look at: GPU KV ran out (sessions preempted or evicted) under discard 7, "
            "preserve 5, and never under min-waste; each policy pays for its pauses in recompute, "
            "presv or swapGiB; slo.met and goodput are highest under min-waste (95.0%, "
            "1.90 sess/s).\n", ""))

    # Nobody ran out; ties as printed: slo.met a 0.8 = b 0.8 -> 80.0% (c 0.7); goodput a 2.0 and
    # c 2.004 both print as 2.00 (b 1.5). Names follow the order given.
    write(run, "a", summary(0, 0, 0.8, 2.0))
    write(run, "b", summary(0, 0, 0.8, 1.5))
    write(run, "c", summary(0, 0, 0.7, 2.004))
    expect("no policy out of KV, tied leaders",
           note(run, "a", "b", "c"),
           (0, "What to look at: GPU KV never ran out (no session preempted or evicted), so pauses "
            "cost little; a higher -p arrival.rate makes memory bind; each policy pays for its "
            "pauses in recompute, presv or swapGiB; slo.met is highest under a and b (80.0%), "
            "goodput under a and c (2.00 sess/s).\n", ""))

    # Every policy ran out: no "never under" part.
    expect("all out of KV",
           note(run, "discard", "preserve"),
           (0, "What to look at: GPU KV ran out (sessions preempted or evicted) under discard 7, "
            "preserve 5; each policy pays for its pauses in recompute, presv or swapGiB; slo.met "
            "and goodput are highest under preserve (90.0%, 1.80 sess/s).\n", ""))

    # Bad input: exit 2, the file and key named on stderr, nothing on stdout.
    expect("no policy", note(run),
           (2, "", "demo-note: usage: scripts/demo-note RUN_DIR POLICY... (at least one POLICY)\n"))
    expect("missing summary", note(run, "swap"),
           (2, "", f"demo-note: {run}/swap/summary.json: cannot read it (No such file or "
            "directory); run scripts/demo first\n"))
    write(run, "broken", "{oops")
    expect("malformed summary", note(run, "broken"),
           (2, "", f"demo-note: {run}/broken/summary.json:1: not JSON (Expecting property name "
            "enclosed in double quotes)\n"))
    write(run, "nogoodput", {"preemptions": 0, "idle_evictions": 0, "goodput": {"share": 1}})
    expect("missing key", note(run, "nogoodput"),
           (2, "", f"demo-note: {run}/nogoodput/summary.json: goodput.per_s: missing\n"))
    write(run, "text", summary("7", 0, 0.5, 1.0))
    expect("not a number", note(run, "text"),
           (2, "", f"demo-note: {run}/text/summary.json: preemptions: expected a number\n"))

for f in failures:
    print(f)
print(f"test_demo_note: {'FAILED ' + str(len(failures)) if failures else 'all cases hold'}")
sys.exit(1 if failures else 0)
