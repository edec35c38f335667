// Importer for NVIDIA Dynamo's agentic trace ("agentic Mooncake" JSONL, the row format of
// `python -m dynamo.replay --trace-format agentic_mooncake`); trace source `dynamo-agentic`.
//
// Schema (read from ai-dynamo/dynamo; nothing is copied): docs/dynosim/trace-formats.md
// ("Agentic Mooncake"), the row type AgenticMooncakeRow in lib/data-gen/src/mooncake.rs and
// lib/mocker/src/loadgen/types.rs, its reader AgenticTrace::from_agentic_mooncake in
// lib/mocker/src/loadgen/trace.rs, its producer lib/data-gen/src/request_trace/agentic.rs
// (request_trace_to_mooncake --agentic), and PR ai-dynamo/dynamo#9728. One JSON object per line,
// one LLM request each: request_id (unique), session_id (a trajectory; absent: "request_<LINE>"),
// input_length (the whole prompt; absent: hash ids x block), output_length, hash_ids (one id per
// block of the prompt, equal leading ids = a shared prefix, across the file), timestamp (ms, the
// start of a row without dependencies), wait_for (request ids that must complete first), then
// delay + tool_wait_ms (ms) before it starts, branches (child requests spawned), prefix_reset
// (a trajectory boundary). Aliases: input_tokens, output_tokens, created_time, delay_ms. The file
// has no block size: the replayer takes --trace-block-size (default 512, dynamo/replay/main.py),
// and so does this importer (`block_tokens`).
//
// Conversion, rows in file order ("block" = block_tokens; a piece = one Session of a session_id):
// - A row continues a session piece when its wait_for names the last row of a piece with its
//   session_id (the first such entry); otherwise it starts a new piece: a Session with id
//   session_id (later pieces "<session_id>#<n>", n = 1, 2, ...) arriving at timestamp / 1000,
//   segment 0 = {input_length, output_length}, prefix = {block_tokens, hash_ids}.
// - A piece-starting row that waits for others forks: segment 0 carries kFork {parent = the
//   session of its first wait_for entry, tokens = min(c * block, that row's input_length, this
//   row's input_length)}, c the leading hash ids the two rows share. Its other wait_for entries,
//   and its delay/tool_wait_ms (already inside its timestamp), are dropped and counted. The
//   last segment of a forked session carries kEnd, unless another session forks from it or
//   that segment already carries an event (one event per segment: a one-segment subagent keeps
//   its kFork, a last segment its kReset).
// - A continuing row r after row q adds a segment; q's segment gets the intercept. With
//   context = q.input_length + q's output: when r is not prefix_reset, repeats q's
//   floor(q.input_length / block) full blocks and input_length >= context + 1, the segment's
//   input is input_length - context (the context only grew). Otherwise the context was reset
//   (prefix_reset, hashes diverged, or it shrank; counted apart): kReset {tokens = shared = S},
//   S = min(c * block, q.input_length, r.input_length - 1), c the leading hash ids r and q
//   share, and input = input_length - S.
// - Intercept after q: kind "tool" when r's tool_wait_ms > 0, else "delay", lasting (delay +
//   tool_wait_ms) / 1000 s. When r also waits for other pieces' rows (a join, e.g. on a
//   subagent), kind "join", lasting max(that, (r.timestamp - end(q)) / 1000): end(q) is
//   s.timestamp - s.delay - s.tool_wait_ms of the first row s whose wait_for is exactly [q],
//   else q.timestamp (an upper bound on the wait; counted); without both timestamps, delay +
//   tool_wait_ms alone (counted).
// - output_length 0 decodes 1 token (counted). hash_ids beyond ceil(input_length / block) are
//   dropped (counted; the replayer ignores them too). Sessions are in file order of first rows.
// Dropped: request_kind, priority, strict_priority, policy_class, output_token_ids,
// tool_events (their types are checked), branches (checked: each names a row), timestamps of
// continuing rows except in join waits. Arrivals are the recorded starts: a forked or joined
// session does not wait for its simulated parent (the session model has no dependencies).
//
// Errors: InputError `FILE:LINE: FIELD: reason`, FIELD as written (`input_tokens`,
// `wait_for[1]`, `hash_ids[3]`, `<json>`). Checked: unknown fields (listing the valid ones), a
// field given under both names, request_id a non-empty unique string, session_id a non-empty
// string, lengths integers (input >= 1, output >= 0), hash ids integers in [0, 2^64) and at
// least ceil(input_length / block) of them, times finite numbers >= 0 (ms), wait_for/branches
// arrays of request ids that exist (wait_for: on an earlier line, not the row itself), a
// session-starting row without timestamp, a fork child arriving before its parent, duplicate
// session ids, and an empty file (`FILE: no requests`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "traces/session.h"

namespace isim::trace {

inline constexpr int64_t kDynamoBlockTokens = 512;  // dynamo.replay's --trace-block-size default

struct DynamoAgenticReport {
  int64_t rows = 0, sessions = 0;
  int64_t splits = 0;  // pieces after a session's first (a row not waiting for its last)
  int64_t forks = 0, ends = 0;
  int64_t start_waits_dropped = 0;  // session-starting rows' extra wait_for, delay, tool wait
  int64_t joins = 0;
  int64_t join_waits_from_start = 0;     // end(q) unknown: q's start used (an upper bound)
  int64_t join_waits_without_times = 0;  // no timestamps: delay + tool_wait_ms only
  int64_t resets_flagged = 0, resets_diverged = 0, resets_shrunk = 0;
  int64_t zero_outputs_raised = 0;
  int64_t extra_hash_rows = 0;     // rows with more hash ids than blocks (the extra dropped)
  int64_t dropped_field_rows = 0;  // rows with request_kind, priority, tool_events, ...

  bool operator==(const DynamoAgenticReport&) const = default;
};

// block_tokens: tokens per hash id (>= 1; an InputError otherwise). Throws InputError
// `FILE: cannot open: <reason>` when the file cannot be read.
Trace import_dynamo_agentic(const std::string& path, int64_t block_tokens = kDynamoBlockTokens,
                            DynamoAgenticReport* report = nullptr);
// `origin` names the stream in messages (usually the file name).
Trace parse_dynamo_agentic(std::istream& in, const std::string& origin, int64_t block_tokens,
                           DynamoAgenticReport* report = nullptr);

}  // namespace isim::trace
