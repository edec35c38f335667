#!/usr/bin/env python3
"""Prints the figures behind traces/generators/agents.yaml that come from ../shared/data.

- weka-claude-code (58 Claude Code sessions): the shared prefix (system + tool tokens), the
  first prompt (all, and beyond the prefix for sessions that start fresh), per tool step the tokens the context grows by (the tool result), tokens out per
  call, the tool wait (think_time after a tool_use call), steps per task (calls up to end_turn),
  and the bare tool calls (output_types == ['tool_use']) as the size of a short action.
- tracelab (19 coding-agent rounds): the same growth / output / tool-wait figures, as a check.

A pair of calls (a, b) continues a's context when b's hash_ids repeat at least half of a's
(the rule of traces/weka.cpp); only such pairs measure growth. Each line ends with the p50, p90
and p99 of a lognormal with the line's mean and sd, the way agents.yaml uses these figures.
Usage: measure_agents.py [SHARED_DATA_DIR]   (default ../shared/data)
"""
import glob
import json
import math
import os
import statistics as st
import sys
from datetime import datetime


# A first call with this many tokens beyond the shared prefix or more resumes an earlier, long
# conversation (the 58 files: 39 start below 15,200, the other 19 at 55,000 or more).
FRESH_BELOW = 32768


def pct(values, p):
    s = sorted(values)
    return s[max(1, math.ceil(p / 100 * len(s))) - 1]


def fig(name, values):
    """n, mean, sd and percentiles; then the p50/p90/p99 of the lognormal with that mean and sd
    (traces/dist.h's parameters), to show how well it fits (only for positive data)."""
    m, sd = st.mean(values), st.pstdev(values)
    line = (f"{name:<34} n {len(values):5d}  mean {m:8.6g}  sd {sd:8.6g}  "
            f"p50 {pct(values, 50):7.5g}  p90 {pct(values, 90):7.5g}  p99 {pct(values, 99):7.5g}")
    if m > 0 and sd > 0:
        s2 = math.log1p((sd / m) ** 2)
        med = m / math.sqrt(1 + (sd / m) ** 2)
        q = [med * math.exp(z * math.sqrt(s2)) for z in (0, 1.2816, 2.3263)]
        line += "  lognormal p50/p90/p99 " + "/".join(f"{v:.5g}" for v in q)
    print(line)


def shared_blocks(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def calls_of(requests):
    """The agent's own calls, and its subagents' request lists."""
    own, subs = [], []
    for r in requests:
        (subs if r.get("type") == "subagent" else own).append(r)
    return own, [s["requests"] for s in subs]


def measure_agent(calls, acc):
    acc["first_in"].append(calls[0]["in"])
    steps = 0
    for k, c in enumerate(calls):
        acc["out"].append(c["out"])
        if c["output_types"] == ["tool_use"]:
            acc["bare_tool_call_out"].append(c["out"])
        steps += 1
        if c["stop"] == "end_turn" or k + 1 == len(calls):
            acc["steps_per_task"].append(steps)
            steps = 0
        if k + 1 == len(calls):
            break
        n = calls[k + 1]
        continued = 2 * shared_blocks(c["hash_ids"], n["hash_ids"]) >= len(c["hash_ids"])
        if c["stop"] == "tool_use" and continued:
            acc["tool_result_growth"].append(n["in"] - c["in"] - c["out"])
        if "api_time" in c and "think_time" in n:
            acc["tool_wait_s" if c["stop"] == "tool_use" else "user_wait_s"].append(n["think_time"])


def weka(root):
    files = sorted(glob.glob(os.path.join(root, "weka-claude-code", "traces", "trace_*.json")))
    top = {k: [] for k in ("first_in", "out", "bare_tool_call_out", "steps_per_task",
                           "tool_result_growth", "tool_wait_s", "user_wait_s")}
    sub = {k: [] for k in top}
    prefix, fresh = [], []
    for path in files:
        f = json.load(open(path))
        prefix.append(f["system_tokens"] + f["tool_tokens"])
        own, subs = calls_of(f["requests"])
        own_prompt = own[0]["in"] - prefix[-1]
        if own_prompt < FRESH_BELOW:
            fresh.append(own_prompt)
        measure_agent(own, top)
        while subs:
            own2, more = calls_of(subs.pop())
            measure_agent(own2, sub)
            subs += more
    print(f"weka-claude-code: {len(files)} files")
    fig("shared prefix (system+tool tokens)", prefix)
    fig(f"first prompt - prefix, < {FRESH_BELOW}", fresh)
    for k, v in top.items():
        fig(k, v)
    print("subagents:")
    for k, v in sub.items():
        if v:
            fig(k, v)


def tracelab(root):
    rows = [json.loads(l) for l in open(os.path.join(root, "tracelab", "round_trace.jsonl"))]
    ts = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    growth, out, wait = [], [], []
    for a, b in zip(rows, rows[1:]):
        out.append(a["output_tokens"])
        if a["session_id"] != b["session_id"] or not a["tools"]:
            continue
        growth.append(b["input_tokens_total"] - a["input_tokens_total"] - a["output_tokens"])
        wait.append(max(t["tool_wall_latency_ms"] or 0 for t in a["tools"]) / 1000)
    print(f"tracelab: {len(rows)} rounds")
    fig("tool_result_growth", growth)
    fig("out", out)
    fig("tool_wait_s (longest tool)", wait)


if __name__ == "__main__":
    data = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
    weka(data)
    tracelab(data)
