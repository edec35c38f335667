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
// - output tokens per session, mean.
// Percentiles are nearest-rank: pP of n sorted values is the value at rank ceil(P/100 * n)
// (1-based, at least 1), so every percentile is a value that occurs in the data.
#pragma once

#include <string>
#include <vector>

#include "traces/session.h"

namespace isim::trace {

std::string trace_stats(const Trace& t);

// Nearest-rank percentile of `sorted` (ascending, non-empty), p in [0, 100].
double percentile_nearest_rank(const std::vector<double>& sorted, double p);

}  // namespace isim::trace
