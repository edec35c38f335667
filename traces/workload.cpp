// Workload shaping (workload.h): what run.cpp's prepare did to a trace before a run.
#include "traces/workload.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/input_error.h"
#include "traces/generator.h"
#include "traces/jsonl.h"
#include "traces/limits.h"
#include "traces/sources.h"

namespace isim::trace {

namespace {

// A session's arrival plus its intercepts must stay within the limit on a time (limits.h) after
// trace.intercept_scale and the arrival process moved them: the readers check what the file
// said, this checks what the spec made of it.
void check_time_range(const WorkloadSpec& ts, const ArrivalSpec& arrival, const std::string& origin,
                      const Trace& t) {
  for (const Session& s : t) {
    double end = s.arrival_s;
    for (const auto& seg : s.segments)
      if (seg.intercept) end += seg.intercept->duration_s;
    if (end <= kMaxSeconds) continue;  // false for NaN too
    const std::string rate =
        arrival.process == "poisson" ? fmt::format(", arrival.rate={}", arrival.rate) : "";
    throw InputError(fmt::format(
        "{}: session {}: arrives at {} s and its intercepts last {} s in all, past the {:.0f} s "
        "(about 126 years) limit on a time; from trace.intercept_scale={}, arrival.process={}{}: "
        "use a larger rate or a smaller scale",
        origin, s.id, s.arrival_s, end - s.arrival_s, kMaxSeconds, ts.intercept_scale,
        arrival.process, rate));
  }
}

// trace.kinds: the sessions of the listed classes, in trace order.
void keep_kinds(Workload& w, const std::vector<std::string>& kinds) {
  std::set<std::string> all;
  Trace kept;
  for (Session& s : w.trace) {
    std::string c = session_class(s.id);
    if (std::find(kinds.begin(), kinds.end(), c) != kinds.end()) kept.push_back(std::move(s));
    all.insert(std::move(c));
  }
  if (kept.empty()) {
    std::string list;
    for (const auto& c : all) list += (list.empty() ? "" : ", ") + c;
    throw InputError(fmt::format("trace.kinds: no session of the classes [{}]; the trace's: {}",
                                 fmt::join(kinds, ", "), list));
  }
  w.notes.push_back(fmt::format("trace.kinds=[{}]: {} of {} sessions kept", fmt::join(kinds, ", "),
                                kept.size(), w.trace.size()));
  w.trace = std::move(kept);
}

// trace.draw: the memory the draws take, estimated from the sessions drawn from, before drawing.
void check_draw_memory(const Trace& t, int64_t draw, const std::string& origin) {
  if (t.empty()) return;
  double total = 0;
  for (const Session& s : t) total += static_cast<double>(draw_bytes(s));
  const double mean = total / static_cast<double>(t.size());
  const double need = mean * static_cast<double>(draw);
  if (need <= kMaxDrawBytes) return;
  throw InputError(fmt::format(
      "{}: trace.draw: {} draws need ~{:.1f} GB ({:.0f} B per session of this trace), more than "
      "the {:.0f} GB a run's drawn sessions may take; draw at most {}",
      origin, draw, need / 1e9, mean, kMaxDrawBytes / 1e9,
      static_cast<int64_t>(kMaxDrawBytes / mean)));
}

}  // namespace

Workload make_workload(const WorkloadSpec& ts, const ArrivalSpec& arrival, uint64_t seed,
                       const std::string& origin) {
  Workload w;
  LoadedTrace loaded =
      trace_source_registry()
          .create(ts.from, "trace.from")
          ->load({ts.path, ts.sessions, seed, ts.think_time_s, ts.rate_scale, ts.block_tokens});
  w.trace = std::move(loaded.trace);
  w.notes = std::move(loaded.notes);
  if (!ts.kinds.empty()) keep_kinds(w, ts.kinds);
  if (ts.limit > 0 && static_cast<size_t>(ts.limit) < w.trace.size())
    w.trace.resize(static_cast<size_t>(ts.limit));
  if (ts.max_context > 0) {
    int64_t cut = 0;
    for (auto& s : w.trace) {
      if (s.max_context() <= ts.max_context) continue;
      truncate_to_context(s, ts.max_context);
      ++cut;
    }
    if (cut > 0)
      w.notes.push_back(fmt::format("trace.max_context={}: {} of {} sessions were cut to fit",
                                    ts.max_context, cut, w.trace.size()));
  }
  // Scaled before drawing (the same products) so that drawn copies share their segments.
  if (ts.intercept_scale != 1) {
    for (auto& s : w.trace)
      for (auto& seg : s.segments)
        if (seg.intercept) seg.intercept->duration_s *= ts.intercept_scale;
    w.notes.push_back(fmt::format("trace.intercept_scale={}: every intercept's duration scaled",
                                  ts.intercept_scale));
  }
  if (ts.draw > 0) {
    check_draw_memory(w.trace, ts.draw, origin);
    w.trace = bootstrap(w.trace, ts.draw, seed);
  }
  if (w.trace.empty())  // the readers refuse an empty file; this guards every other source
    throw InputError(fmt::format("{}: trace ({}): no sessions to run",
                                 ts.path.empty() ? origin : ts.path, ts.from));
  apply_arrivals(w.trace, arrival);
  if (arrival.process == "replay" && w.trace.size() > 1 &&
      std::all_of(w.trace.begin(), w.trace.end(),
                  [&](const Session& s) { return s.arrival_s == w.trace.front().arrival_s; }))
    w.warnings.push_back(fmt::format(
        "{}: all {} sessions arrive at t = {} s (arrival.process: replay of a trace without "
        "arrival times): one burst, not a steady load; give a rate: --rate R, or -p "
        "arrival.process=poisson -p arrival.rate=R",
        ts.path.empty() ? ts.from : ts.path, w.trace.size(), w.trace.front().arrival_s));
  if (const int64_t n = drop_broken_forks(w.trace); n > 0)
    w.notes.push_back(fmt::format(
        "{} forked session(s) lost their parent (cut by trace.limit or trace.draw, or re-timed "
        "by arrival.process {} to arrive before it) and start unforked",
        n, arrival.process));
  check_time_range(ts, arrival, origin, w.trace);
  return w;
}

}  // namespace isim::trace
