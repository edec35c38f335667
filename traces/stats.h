// trace_stats: the plain-text report of `isim trace stats`.
//
// Contract: deterministic text (same trace, same bytes), aligned columns, intercept kinds sorted
// by name. It reports:
// - sessions, segments, arrival span (first to last arrival) and mean rate = (sessions - 1) /
//   span, i.e. the inverse of the mean gap between arrivals (n/a for a span of 0);
// - per intercept kind: count, calls per session among the sessions having that kind, duration
//   mean/p50/p99/max in seconds, and the mean tokens it returned (the next segment's input);
// - context lengths: prompt (segment 0's input) and final context (Session::max_context), each
//   mean/p50/p99/max;
// - output tokens per session, mean;
// - only when some session has prefix hashes, one `prefix` line: sessions with hashes, the block
//   sizes used, blocks (hashes), distinct hashes, and the repeated-block fraction (prefix_stats);
// - then the agent figures (agent_stats), one line each: model calls (segments) per session
//   mean/p50/p90/max; subagents (sessions whose segment 0 forks), their distinct parents and per
//   parent mean/max; resets and the sessions having them; context growth per call after the
//   first (the tokens the call adds: its input and output, plus a reset's tokens - shared)
//   mean/p50/p90/max, n/a without such calls; the max context (Session::max_context, resets
//   counted); and a `think time` table of intercept durations, count/mean/p50/p90/p99/max in
//   seconds, for all intercepts then per kind (`none` without intercepts).
// Percentiles are nearest-rank: pP of n sorted values is the value at rank ceil(P/100 * n)
// (1-based, at least 1), so every percentile is a value that occurs in the data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/session.h"

namespace isim::trace {

std::string trace_stats(const Trace& t);

// The agent figures' counts (what `trace stats` prints besides distributions).
struct AgentStats {
  int64_t calls = 0;           // segments over all sessions
  int64_t subagents = 0;       // sessions whose segment 0 carries a fork
  int64_t parents = 0;         // distinct parents of those
  int64_t most_subagents = 0;  // the most subagents of one parent
  int64_t resets = 0;          // segments carrying a reset
  int64_t reset_sessions = 0;  // sessions with at least one
  int64_t max_context = 0;     // the largest Session::max_context
  int64_t intercepts = 0;      // think times
  double max_think_s = 0;      // the longest (0 without intercepts)
};
AgentStats agent_stats(const Trace& t);

// Prefix-hash statistics over a trace in its order. A hash is identified by (block_tokens, value).
// A block is repeated when its hash already occurred earlier in the trace (in an earlier session,
// or earlier in the same session's chain). repeated / blocks is an upper bound on the prefix-cache
// hit rate over hashed blocks: an unbounded cache that never evicts would hit exactly those.
struct PrefixStats {
  int64_t sessions = 0;  // sessions with at least one hash
  int64_t blocks = 0;    // hashes over all sessions
  int64_t distinct = 0;
  int64_t repeated = 0;
  std::vector<int64_t> block_tokens;  // distinct block sizes, ascending

  // repeated / blocks; 0 when there are no blocks.
  double repeated_fraction() const {
    return blocks ? static_cast<double>(repeated) / static_cast<double>(blocks) : 0.0;
  }
};
PrefixStats prefix_stats(const Trace& t);

// Nearest-rank percentile of `sorted` (ascending, non-empty), p in [0, 100].
double percentile_nearest_rank(const std::vector<double>& sorted, double p);

}  // namespace isim::trace
