#!/usr/bin/env python3
"""Prints the compaction and subagent figures of traces/generators/agents-context.yaml, from the
58 Claude Code sessions in ../shared/data/weka-claude-code/traces.

- Compaction: a call that keeps less than half of the previous call's hash_ids and whose `in`
  shrank (traces/weka.cpp's rule). Printed: the context before it (the previous call's in +
  out), the tokens the new context keeps from the old one (shared leading blocks x block_size),
  and the new context beyond those (the summary and the next message).
- Subagents: `type: "subagent"` entries spawned by a top-level agent. Printed: how many of the
  agent's tool_use calls spawn one (the entry starts, at t - duration_ms, within the wait after
  the call), how long the parent waits (duration_ms), how many start in the same wait, and how
  many leading blocks a subagent's first call shares with the call that spawned it, and the
  subagent's own system prompt (system_tokens + tool_tokens), first prompt beyond it and largest
  context (in + out). Its other figures (calls, out, tool results and waits) are the
  "subagents:" lines of measure_agents.py.
Usage: measure_agent_context.py [SHARED_DATA_DIR]   (default ../shared/data)
"""
import glob
import json
import os
import sys

from measure_agents import calls_of, fig, shared_blocks


def compactions(calls, block, acc):
    for a, b in zip(calls, calls[1:]):
        kept = shared_blocks(a["hash_ids"], b["hash_ids"])
        if 2 * kept < len(a["hash_ids"]) and b["in"] < a["in"]:
            acc["context_before"].append(a["in"] + a["out"])
            acc["kept"].append(min(kept * block, b["in"]))
            acc["new_beyond_kept"].append(b["in"] - min(kept * block, b["in"]))


def spawner(calls, start):
    """The last call that started at or before `start` (the subagent's start)."""
    best = None
    for c in calls:
        if c["t"] <= start + 1e-9:
            best = c
    return best


def subagents(f, acc):
    own, _ = calls_of(f["requests"])
    subs = [r for r in f["requests"] if r.get("type") == "subagent"]
    acc["tool_use_calls"] += sum(1 for c in own if c["stop"] == "tool_use")
    per_call = {}
    for s in subs:
        start = s["t"] - s.get("duration_ms", 0) / 1000
        c = spawner(own, start)
        if c is None:
            continue
        per_call[id(c)] = per_call.get(id(c), 0) + 1
        acc["wait_s"].append(s.get("duration_ms", 0) / 1000)
        calls = calls_of(s["requests"])[0]
        acc["shared_blocks"].append(shared_blocks(c["hash_ids"], calls[0]["hash_ids"]))
        acc["system_prompt"].append(s["system_tokens"] + s["tool_tokens"])
        acc["own_prompt"].append(calls[0]["in"] - acc["system_prompt"][-1])
        acc["largest_context"].append(max(k["in"] + k["out"] for k in calls))
    acc["spawning_calls"] += len(per_call)
    acc["per_spawning_call"] += list(per_call.values())


def main(root):
    files = sorted(glob.glob(os.path.join(root, "weka-claude-code", "traces", "trace_*.json")))
    comp = {"context_before": [], "kept": [], "new_beyond_kept": []}
    sub = {"tool_use_calls": 0, "spawning_calls": 0, "per_spawning_call": [], "wait_s": [],
           "shared_blocks": [], "system_prompt": [], "own_prompt": [], "largest_context": []}
    for path in files:
        f = json.load(open(path))
        own, nested = calls_of(f["requests"])
        compactions(own, f["block_size"], comp)
        for reqs in nested:
            compactions(calls_of(reqs)[0], f["block_size"], comp)
        subagents(f, sub)
    print(f"weka-claude-code: {len(files)} files, {len(comp['kept'])} compactions")
    for k, v in comp.items():
        fig(k, v)
    n = sub["spawning_calls"]
    print(f"subagents: {len(sub['wait_s'])} from {n} of {sub['tool_use_calls']} top-level "
          f"tool_use calls (p = {n / sub['tool_use_calls']:.4f})")
    fig("subagents per spawning call", sub["per_spawning_call"])
    fig("parent wait (duration_ms / 1000)", sub["wait_s"])
    fig("leading blocks shared with spawner", sub["shared_blocks"])
    fig("subagent system + tool tokens", sub["system_prompt"])
    fig("subagent first in - that", sub["own_prompt"])
    fig("subagent largest context", sub["largest_context"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
