// Importer for TraceLab round traces (../shared/data/tracelab/round_trace.jsonl): coding-agent
// sessions logged one model round per line.
//
// Format: JSONL; the fields read are session_id, round_index, input_tokens_total, prefix_tokens,
// newly_append_tokens, output_tokens, timing_events[] {event_type, timestamp (ISO 8601 UTC,
// e.g. "2026-06-01T05:40:20.151Z")} and tools[] {tool_name}. The format carries many more
// analytic fields (provider cache counters, character counts, ids); they are ignored. A round's
// timing events start with its inputs (user_message, tool_result), followed by the model's
// output (reasoning, text, tool_call, usage).
//
// Conversion: the rows of one session_id (contiguous, round_index 0, 1, 2, ...) become one
// Session with id = session_id and one segment per round:
// - input: round 0 prefills its whole prompt, prefix_tokens + newly_append_tokens (which must
//   equal input_tokens_total). For round k > 0 it depends on `TraceLabInput`:
//   - `growth` (default): input_tokens_total[k] - input_tokens_total[k-1] - output_tokens[k-1],
//     the tokens the context actually grew by, so that the simulated context before each round
//     equals the real input_tokens_total. newly_append_tokens is the provider's *uncached* part
//     and also re-counts earlier context that its prompt cache did not hold (Claude caches up to
//     a breakpoint, so prefix_tokens[k+1] is well below the previous context). A growth below 1
//     (the agent dropped earlier reasoning from its context) is raised to 1 and counted.
//   - `appended`: newly_append_tokens[k], the provider's view; the simulated context then
//     overshoots the real one by the re-counted tokens.
// - output: output_tokens (0 is raised to 1 and counted: the engine decodes at least one token).
// - intercept between round k and round k+1, where round k+1's "resume run" is its leading
//   user_message/tool_result events (it must have one):
//   - kind: `user` when the resume run holds a user_message (a human turn); otherwise the
//     distinct tool names of round k's tools[], lowercased, in call order, joined by `+`
//     (e.g. `bash+websearch`); round k must then have called a tool;
//   - duration_s: from the end of round k (its latest timing event) to the end of the resume run
//     (the last input event before round k+1's model output starts). The tool results are events
//     of round k+1, so this spans all of the round's tool calls, parallel ones included (it
//     equals the longest tool_wall_latency_ms when the calls were emitted last). A negative span
//     (clock skew) is clamped to 0 and counted.
// - arrival_s: the session's first timing event, relative to the earliest first event of any
//   session in the file. Sessions logged on different days keep those real offsets (the shared
//   file's two are 71 days apart); an arrival process (traces/arrival.h) can pack them instead.
//   Sessions stay in file order.
// Cross-check, reported and never an error: prefix_tokens[k+1] against prefix_tokens[k] +
// newly_append_tokens[k] + output_tokens[k], the whole context after round k.
//
// Errors: InputError `FILE:LINE: FIELD: reason` (e.g. `timing_events[2].timestamp`), for
// missing or mistyped fields, negative tokens, bad timestamps, round_index out of sequence,
// a session's rows not contiguous, and the rules above.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "traces/session.h"

namespace isim::trace {

enum class TraceLabInput { growth, appended };

struct TraceLabReport {
  int64_t sessions = 0;
  int64_t rounds = 0;
  int64_t intercepts = 0;
  std::map<std::string, int64_t> intercepts_by_kind;
  std::map<std::string, double> intercept_s_by_kind;  // summed durations
  int64_t appended_tokens = 0;  // sum of newly_append_tokens over rounds k > 0
  int64_t growth_tokens = 0;    // sum of the context growth over rounds k > 0 (before raising)
  int64_t inputs_raised = 0;    // `growth` inputs below 1 raised to 1
  int64_t zero_outputs_raised = 0;
  int64_t negative_waits_clamped = 0;
  // Per consecutive round pair: prefix_tokens[k+1] - (prefix_tokens[k] + newly_append_tokens[k]
  // + output_tokens[k]). 0 means the provider reused the whole previous context.
  std::vector<int64_t> prefix_discrepancy;
};

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
Trace import_tracelab(const std::string& path, TraceLabReport* report = nullptr,
                      TraceLabInput input = TraceLabInput::growth);
Trace parse_tracelab(std::istream& in, const std::string& origin, TraceLabReport* report = nullptr,
                     TraceLabInput input = TraceLabInput::growth);

// Nanoseconds since 1970-01-01T00:00:00Z of an ISO 8601 time `YYYY-MM-DDTHH:MM:SS[.f...]` ending
// in `Z` or `+HH:MM`/`-HH:MM` (at most 9 fraction digits). Throws InputError `WHERE: reason`.
int64_t parse_iso8601_ns(const std::string& text, const std::string& where);

}  // namespace isim::trace
