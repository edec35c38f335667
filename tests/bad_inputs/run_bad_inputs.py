#!/usr/bin/env python3
"""Runs the bad-input table (issue 36): every case of cases.tsv must exit with its code and print
its message substring, within 10 s, leaving no new file in its scratch folder.

Usage: run_bad_inputs.py ISIM [--survey] [--only NAME]

cases.tsv: one case a line, tab-separated: NAME, EXIT, MESSAGE (a substring of stderr+stdout),
COMMAND, and an optional SETUP run first. Placeholders: {isim} (the binary), {in} (this folder's
inputs/), {data} (tests/data), {repo} (the checkout). Each case runs in a fresh empty folder,
which is its working directory; a refusal (exit 2) must leave it as SETUP left it (no new
file, no file changed).
expected_to_fail.tsv lists cases (NAME, the issue-36 class that owns the fix) that fail until
another part of issue 36 is merged: they run and are reported, but do not fail the test.
--survey prints every case's exit code and first message line (for writing the table).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TIMEOUT_S = 10


def read_table(name, width):
    rows = []
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < width:
                sys.exit(f"{name}:{n}: expected at least {width} tab-separated columns")
            rows.append(cols)
    return rows


def files_under(d):
    """Every path under D with its bytes (None for a folder)."""
    out = {}
    for root, dirs, names in os.walk(d):
        for x in dirs:
            out[os.path.relpath(os.path.join(root, x), d)] = None
        for x in names:
            with open(os.path.join(root, x), "rb") as f:
                out[os.path.relpath(os.path.join(root, x), d)] = f.read()
    return out


def run_case(isim, cols):
    name, want_rc, want_msg, command = cols[0], int(cols[1]), cols[2], cols[3]
    setup = cols[4] if len(cols) > 4 else ""
    subst = {"isim": isim, "in": os.path.join(HERE, "inputs"),
             "data": os.path.join(REPO, "tests", "data"), "repo": REPO}
    work = tempfile.mkdtemp(prefix=f"isim-bad-{name}-")
    try:
        if setup:
            subprocess.run(setup.format(**subst), shell=True, cwd=work, check=True)
        before = files_under(work)
        try:
            p = subprocess.run(command.format(**subst), shell=True, cwd=work, timeout=TIMEOUT_S,
                               capture_output=True, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "hang", None, ""
        text = (p.stderr + p.stdout).decode("utf-8", "replace")
        after = files_under(work)
        left = sorted(k for k in after if k not in before or after[k] != before[k])
        if p.returncode < 0 or p.returncode == 3:
            verdict = "crash"
        elif p.returncode != want_rc:
            verdict = "wrong exit"
        elif want_rc == 2 and left:
            verdict = "partial output (new or changed): " + ", ".join(left[:3])
        elif not want_msg or want_msg not in text:
            verdict = "unclear message"
        else:
            verdict = "ok"
        return verdict, p.returncode, text
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    isim = os.path.abspath(sys.argv[1])
    survey = "--survey" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    cases = read_table("cases.tsv", 4)
    xfail = {row[0]: row[1] for row in read_table("expected_to_fail.tsv", 2)}
    names = [c[0] for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup or set(xfail) - set(names):
        sys.exit(f"duplicate cases {sorted(dup)} or unknown xfail {sorted(set(xfail) - set(names))}")
    failed, ok, xfailed = [], 0, []
    for cols in cases:
        if only and cols[0] != only:
            continue
        verdict, rc, text = run_case(isim, cols)
        first = text.strip().splitlines()[0] if text.strip() else ""
        if survey:
            print(f"{cols[0]}\t{rc}\t{verdict}\t{first[:300]}")
            continue
        if verdict == "ok":
            ok += 1
            if cols[0] in xfail:
                print(f"XPASS {cols[0]} ({xfail[cols[0]]}): passes now; move it out of "
                      "expected_to_fail.tsv")
        elif cols[0] in xfail:
            xfailed.append(cols[0])
            print(f"expected to fail until merged ({xfail[cols[0]]}): {cols[0]}: {verdict}")
        else:
            failed.append(cols[0])
            print(f"FAIL {cols[0]}: {verdict} (exit {rc}, wanted {cols[1]} and "
                  f"'{cols[2]}')\n  command: {cols[3]}\n  output: {text.strip()[:600]}")
    if not survey:
        print(f"{ok} ok, {len(xfailed)} expected to fail until merged, {len(failed)} failed, "
              f"of {len(cases)} cases")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
