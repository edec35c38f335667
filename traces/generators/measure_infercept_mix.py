#!/usr/bin/env python3
"""Measures the token figures in infercept-mix.yaml from InferCept's workload file.

Mirrors traces/infercept.cpp (cumulative prompt_tokens -> new tokens; text -> llround(4/3 x
words); kinds by first prompt / api_token prefix) and prints mean and sd per kind of: the
prompt, output tokens per segment, tokens returned per intercept, intercepts per session and
intercept duration. Usage: measure_infercept_mix.py [../shared/data/infercept-mix/merged_exp_uniform.json]
"""
import json
import math
import re
import statistics as st
import sys
from collections import defaultdict

WS = re.compile(r"[ \t\n\v\f\r]+")


def tokens(text):
    words = len([w for w in WS.split(text) if w])
    return math.floor(4 * words / 3 + 0.5)  # llround; 4w/3 is never a tie


def convert(segs):
    """Returns (session kind, [(input, output, intercept kind or None, duration)])."""
    out = []
    if "prompt_tokens" in segs[0]:
        p0 = segs[0]["prompt_tokens"]
        kind = "ve" if p0 >= 1500 else "qa" if p0 >= 700 else "math"
        for k, s in enumerate(segs):
            inp = p0 if k == 0 else (s["prompt_tokens"] - segs[k - 1]["prompt_tokens"]
                                     - segs[k - 1]["completion_tokens"])
            last = k + 1 == len(segs)
            out.append((inp, s["completion_tokens"], None if last else kind, s.get("api_time")))
        return kind, out
    kind = None
    for k, s in enumerate(segs):
        inp = tokens(s["prompt"]) if k == 0 else tokens(segs[k - 1]["api_token"])
        ik = None
        if k + 1 < len(segs):
            a = s["api_token"]
            ik = ("tts" if a.startswith("Convert this to text to speech") else
                  "image" if a.startswith("Generate an image about this") else "chat")
            if kind is None and ik != "chat":
                kind = ik
        out.append((inp, tokens(s["completion"]), ik, s.get("api_time")))
    return kind or "chat", out


def fig(values):
    return f"mean {st.mean(values):.4g} sd {st.pstdev(values):.4g} (n {len(values)})"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/infercept-mix/merged_exp_uniform.json"
    data = json.load(open(path))
    by_kind = defaultdict(list)
    for segs in data.values():
        kind, conv = convert(segs)
        by_kind[kind].append(conv)
    for kind, sessions in by_kind.items():
        print(f"{kind}: {len(sessions)} sessions")
        print("  prompt  ", fig([s[0][0] for s in sessions]))
        print("  output  ", fig([g[1] for s in sessions for g in s]))
        print("  intercepts/session", fig([len(s) - 1 for s in sessions]))
        calls, dur, ret = defaultdict(list), defaultdict(list), defaultdict(list)
        for s in sessions:
            per = defaultdict(int)
            for k, g in enumerate(s):
                if g[2]:
                    per[g[2]] += 1
                    dur[g[2]].append(g[3])
                    ret[g[2]].append(s[k + 1][0])
            for ik in per:
                calls[ik].append(per[ik])
        for ik in dur:
            print(f"  {ik:6} calls/session {fig(calls[ik])}")
            print(f"  {ik:6} duration_s    {fig(dur[ik])}")
            print(f"  {ik:6} returned      {fig(ret[ik])}")


if __name__ == "__main__":
    main()
