// Importer for the weka-claude-code traces (../shared/data/weka-claude-code/traces; format in
// kv-cache-tester's docs/trace_replay_tester.md): real Claude Code sessions, one JSON file each.
//
// Format read: {block_size, hash_id_scope ("local" (default): ids are unique within a file
// only, or "global"), requests[]}. A request is either a model call {t, in, out, hash_ids[],
// stop, input_types[], think_time?, api_time?} or a subagent {type: "subagent", agent_id, t,
// duration_ms?, requests[]} (which may nest further). system_tokens and tool_tokens (optional
// counts) set the file's own session's Session::shared_prompt to their sum, capped by its first
// prompt (both given; else 0). Everything else (model, type s/n, output_types, ttft, totals, ...)
// is ignored.
//
// Conversion, per agent (its calls in file order):
// - Call 0 starts a session: input = in, output = out, prefix = its hash_ids with block_tokens =
//   block_size, arrival = the agent's start + t. An `out` of 0 decodes 1 token (counted).
// - Call k continues the context of call k-1 when its hash_ids repeat at least half of call
//   k-1's. Its segment's input is in - (the session's context so far: all inputs and outputs
//   since the last reset, plus that reset's tokens), so the simulated context before each call
//   equals the real `in`. Below 1 (the context grew
//   less than the last output, e.g. thinking was dropped) it is 1 and counted: the simulated
//   context then runs ahead until later growth absorbs the excess. A divergent tail of call
//   k-1's blocks is counted with its tokens (a real server re-prefills them; here they are kept).
// - Otherwise the context was compacted (in < call k-1's in) or rewritten: call k's segment
//   carries a context_event reset (traces/session.h), and both are counted as resets. shared =
//   the leading tokens call k has in common with call k-1 (the blocks whose hash_ids agree from
//   the start, block_size each, capped by both calls' `in`: a last block may be partial). The
//   rule for the split of call k's `in` into the reset context and new input: the new input is
//   what remains after those shared tokens, input = in - shared, and tokens = shared (the reset
//   keeps the surviving prefix and adds nothing of its own). The data cannot tell a summary from
//   the message that follows it, and this split is the one that needs no guess: every unshared
//   token is prefilled either way, and the simulated context before call k is exactly its `in`.
//   When call k shares all of its `in` (input would be 0), input = 1 and tokens = shared =
//   in - 1. The wait before call k is kept as the intercept after call k-1.
// - The intercept after call k-1: kind "tool" when it stopped with tool_use, "user" for
//   end_turn, otherwise (e.g. stop "") "tool" if call k's input_types hold "tool_result", else
//   "user" (counted). Duration: call k's think_time when call k-1 has an api_time. think_time
//   counts from the end of the last response whose api_time is known, so after a call without
//   api_time the wait is t_k - t_{k-1} (an upper bound that includes that call's response time),
//   and without a think_time it is max(0, t_k - t_{k-1} - api_time_{k-1}); both are counted.
// - A subagent becomes a session "<parent id>/<agent_id>" arriving at the parent's start + t -
//   duration_ms / 1000 (its `t` is when it finished; without duration_ms, at start + t), which
//   must be no earlier than the parent's first call. It runs concurrently with the parent, whose
//   wait for it is the parent's tool intercept. Its segment 0 carries a context_event fork
//   {parent: the parent's id, tokens: the leading tokens its first call has in common with the
//   spawning call (the parent's last call starting no later than the subagent), counted as for
//   a reset}; its last segment carries context_event end, unless that segment already carries
//   an event (a one-call subagent's fork, or a reset), which is counted. Ids are mapped to
//   64-bit hashes per scope (local: the file's name; global: one scope for all files), so
//   subagents share every block that the data gives them in common with the parent and with
//   each other.
// - The file's own session ("<file stem>") arrives at its first call's t (0 in the shared data):
//   sessions of different files all start at 0 unless an arrival process assigns times.
//   `poisson` re-times the files' own sessions and keeps each subagent's offset from its
//   parent; `replay` keeps the offsets within a file.
// - Order: files by name; within a file the agent's session, then each subagent's (depth first,
//   in file order). Every session made passes validate_session, and a file's forks
//   validate_forks.
//
// Input: one file, or a directory, whose *.json files are read in name order.
// Errors: InputError `FILE: PATH: reason`, PATH a JSON path such as `requests[3].in` or
// `requests[1].requests[0].hash_ids[7]`, for missing or mistyped fields, negative or
// non-integer counts, counts and times past the limits of traces/limits.h, times that are
// negative, not finite or going back, more hash ids than ceil(in / block_size), an agent without
// model calls, a subagent starting before its parent's first call, subagents nested more than 64
// deep, and duplicate agent ids; `FILE: cannot open: <reason>` and `DIR: no *.json files`.
#pragma once

#include <cstdint>
#include <string>

#include "traces/session.h"

namespace isim::trace {

struct WekaReport {
  int64_t files = 0;
  int64_t sessions = 0;  // all sessions made: one per file and one per subagent
  int64_t subagents = 0;
  int64_t calls = 0;
  int64_t resets = 0;            // calls whose context was compacted or rewritten
  int64_t resets_shrunk = 0;     // of those, the compactions (`in` shrank)
  int64_t forks = 0;             // subagent sessions starting with a fork (all of them)
  int64_t fork_tokens = 0;       // the tokens those forks share with their parents
  int64_t ends = 0;              // subagents whose last segment carries an end
  int64_t ends_unmarked = 0;     // subagents whose last segment carries another event instead
  int64_t divergent_tails = 0;   // calls that continued although the last blocks changed
  int64_t tail_tokens = 0;       // block_size per changed block of those
  int64_t inputs_raised = 0;     // new-token counts below 1 raised to 1
  int64_t max_ahead_tokens = 0;  // the most the simulated context ran ahead of a call's `in`
  int64_t zero_outputs_raised = 0;
  int64_t waits_from_gap = 0;       // after a call without api_time
  int64_t waits_without_think = 0;  // a call without think_time
  int64_t kinds_from_input = 0;     // stop neither tool_use nor end_turn
};

Trace import_weka(const std::string& path, WekaReport* report = nullptr);

}  // namespace isim::trace
