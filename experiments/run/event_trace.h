// EventTrace: one run's events as a Chrome Trace Event Format file (`isim run --trace-events`),
// which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Contract:
// - It is the sim::RunObserver (sim/run_observer.h) the engines of one run share; `text()`
//   gives the file: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}, one
//   event per line. Times are the simulated clock: ts and dur in microseconds (exact: the
//   simulator's nanoseconds with three decimals), never the wall clock, so the same run gives
//   the same bytes.
// - Processes (pid): replica r is pid r + 1, named by `replica_names[r]`, with one thread
//   (tid 1, "iterations") holding one "X" event per engine iteration (name: what its batch
//   held: "prefill", "decode", "prefill+decode" or "swap only"; args batch_size,
//   prefill_tokens, decode_tokens, recompute_tokens, swap_out_tokens, swap_in_tokens,
//   stall_ms, duration_ms) and two counters ("C"): "KV GPU blocks" and "KV CPU blocks"
//   (args {"used": n}), one event at each change. The sessions are pid (replicas + 1),
//   "sessions": session idx is tid idx + 1, named by its id, with one "X" span per activity
//   (names: queued, prefill, recomputing, decode, "paused: KIND" with the KV on the GPU or
//   dropped, "swapped: KIND" paused with KV on the CPU, "swapped: waiting for swap-in",
//   "exporting KV", "importing KV"; KIND is the trace's intercept kind), args replica and
//   session (and intercept for paused). An activity that lasts no simulated time gets no span.
//   A session that resumes on another replica than the one it last ran on gets an instant
//   event ("i") "moved to replica N". Metadata ("M"): process_name, process_sort_index,
//   thread_name, thread_sort_index.
// - `limit` bounds the events recorded (X, C and i events; the metadata comes on top, one
//   per process and per session track). When one more would pass it, recording stops: the
//   file stays valid, its otherData has "truncated": true, and `truncated()` says so.
// - Spans still open when `text()` is called (none after a complete run) are closed at the
//   last time the trace saw, unless it was truncated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine.h"
#include "sim/run_observer.h"

namespace isim::exp {

struct Experiment;

inline constexpr int64_t kDefaultTraceEventsLimit = 1'000'000;
inline constexpr int64_t kMaxTraceEventsLimit = 20'000'000;

class EventTrace final : public sim::RunObserver {
 public:
  EventTrace(std::vector<std::string> replica_names, int64_t limit);

  bool recording() const override { return !truncated_; }
  void iteration(const sim::IterationRecord& r) override;
  void session(int32_t replica, const sim::SessionState& s, sim::Activity a,
               sim::Nanos t) override;
  void kv_use(int32_t replica, sim::Nanos t, int64_t gpu_blocks, int64_t cpu_blocks) override;

  // The file's text; `other` goes into otherData, followed by "events", "limit", "truncated".
  std::string text(nlohmann::ordered_json other);
  bool truncated() const { return truncated_; }
  int64_t events() const { return count_; }
  int64_t limit() const { return limit_; }

 private:
  struct Span {
    sim::Activity a = sim::Activity::kGone;
    int32_t replica = -1;
    sim::Nanos start = 0;
    std::string kind;  // the intercept kind of a paused span
    bool importing = false;  // its KV is landing on `replica` (held on another one too)
  };
  struct Track {
    std::string id;
    Span open;
    int32_t last_replica = -1;  // where it was last held
    bool named = false;         // has a span (gets a thread_name)
  };
  bool add(const std::string& event);
  void close(int32_t idx, sim::Nanos t);
  Track& track(int32_t idx);
  int32_t sessions_pid() const { return static_cast<int32_t>(replica_names_.size()) + 1; }

  std::vector<std::string> replica_names_;
  int64_t limit_;
  int64_t count_ = 0;
  bool truncated_ = false;
  sim::Nanos last_t_ = 0;
  std::string body_;  // the events recorded, each "\n{...}," (the last comma dropped in text())
  std::vector<Track> tracks_;                           // by session idx
  std::vector<std::pair<int64_t, int64_t>> kv_;         // last (gpu, cpu) told, by replica
};

// "replica R" for each replica of the experiment's fleet (one without `cluster:`); with groups,
// "replica R (GROUP)".
std::vector<std::string> replica_names(const Experiment& e);

// Where the trace of policy `policy` goes: `file` itself when the run has one policy; with
// several, `file` with ".POLICY" inserted before a final ".json" (appended when there is none).
std::string event_trace_path(const std::string& file, const std::string& policy, size_t policies);

}  // namespace isim::exp
