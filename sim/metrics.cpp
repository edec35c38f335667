#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/sort_doubles.h"
#include "sim/session_state.h"

namespace isim::sim {

static_assert(sizeof(Counters::lost_reuse) / sizeof(int64_t) == kLostCauses,
              "one lost-reuse counter per LostCause");

namespace {
double rank(const std::vector<double>& sorted, double p) {
  auto n = static_cast<double>(sorted.size());
  auto k = static_cast<size_t>(std::max(1.0, std::ceil(p / 100.0 * n)));
  return sorted[std::min(k, sorted.size()) - 1];
}
}  // namespace

Stat make_stat(std::vector<double> v) {
  Stat s;
  s.n = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  sort_doubles(v);  // linear time; std::sort's order
  // Sorted summation: the mean does not depend on session order.
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = rank(v, 50);
  s.p90 = rank(v, 90);
  s.p95 = rank(v, 95);
  s.p99 = rank(v, 99);
  s.max = v.back();
  return s;
}

double union_seconds(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  Nanos total = 0, open_start = 0, open_end = 0;
  bool open = false;
  for (const Span& s : spans) {
    if (s.end <= s.start) continue;
    if (open && s.start <= open_end) {
      open_end = std::max(open_end, s.end);
      continue;
    }
    if (open) total += open_end - open_start;
    open = true;
    open_start = s.start;
    open_end = s.end;
  }
  if (open) total += open_end - open_start;
  return to_seconds(total);
}

void WasteBreakdown::merge(const WasteBreakdown& o) {
  active += o.active;
  recompute += o.recompute;
  preserved += o.preserved;
  swap_stall += o.swap_stall;
  free += o.free;
}

void TimeSample::merge(const TimeSample& o) {
  running += o.running;
  waiting += o.waiting;
  paused += o.paused;
  swapped += o.swapped;
  gpu_blocks_used += o.gpu_blocks_used;
  cpu_blocks_used += o.cpu_blocks_used;
  queued_tokens += o.queued_tokens;
  busy_s += o.busy_s;
  batch_tokens += o.batch_tokens;
  preemptions += o.preemptions;
}

// A new field in Counters must be merged below: this fails to compile until the size is
// updated with it.
static_assert(sizeof(Counters) == 34 * sizeof(int64_t), "Counters::merge must add every field");

void Counters::merge(const Counters& o) {
  iterations += o.iterations;
  recomputed_tokens += o.recomputed_tokens;
  recompute_time += o.recompute_time;
  swapped_out_bytes += o.swapped_out_bytes;
  swapped_in_bytes += o.swapped_in_bytes;
  preemptions += o.preemptions;
  idle_evictions += o.idle_evictions;
  swap_fallback_discards += o.swap_fallback_discards;
  pauses += o.pauses;
  discards += o.discards;
  swaps += o.swaps;
  preserves += o.preserves;
  prefill_tokens += o.prefill_tokens;
  decode_tokens += o.decode_tokens;
  prefix_lookup_tokens += o.prefix_lookup_tokens;
  prefix_hit_tokens += o.prefix_hit_tokens;
  dropped_blocks += o.dropped_blocks;
  oversized_restores += o.oversized_restores;
  turns += o.turns;
  turn_gpu_hit_tokens += o.turn_gpu_hit_tokens;
  turn_cpu_hit_tokens += o.turn_cpu_hit_tokens;
  turn_recompute_tokens += o.turn_recompute_tokens;
  busy_time += o.busy_time;
  stall_time += o.stall_time;
  for (size_t c = 0; c < lost_reuse.size(); ++c) lost_reuse[c] += o.lost_reuse[c];
  prefix_evicted_tokens += o.prefix_evicted_tokens;
  resets += o.resets;
  reset_released_tokens += o.reset_released_tokens;
  forks += o.forks;
  worthless_freed_blocks += o.worthless_freed_blocks;
}

int64_t Counters::lost_reuse_total() const {
  int64_t t = prefix_evicted_tokens;
  for (int64_t x : lost_reuse) t += x;
  return t;
}

namespace {

constexpr double kLeftOut = std::numeric_limits<double>::quiet_NaN();

// The statistics of pick(x) over `items`, leaving out those it gives NaN for: one figure's list
// at a time, so that a run of millions of sessions and turns holds one copy, not eight.
template <class T, class Pick>
Stat stat_of(const std::vector<T>& items, Pick pick) {
  std::vector<double> v;
  v.reserve(items.size());
  for (const T& x : items)
    if (const double y = pick(x); !std::isnan(y)) v.push_back(y);
  return make_stat(std::move(v));
}

// The same over the finished sessions.
template <class Pick>
Stat finished_stat(const std::vector<SessionRecord>& sessions, Pick pick) {
  return stat_of(sessions, [&pick](const SessionRecord& r) {
    return r.status == "finished" ? pick(r) : kLeftOut;
  });
}

double if_set(double x) {
  return x >= 0 ? x : kLeftOut;
}

}  // namespace

Summary summarize(const std::vector<SessionRecord>& sessions, const Counters& c,
                  const WasteBreakdown& w, int64_t gpu_blocks, int64_t cpu_blocks,
                  int64_t extrapolations, double busy_window_s, std::vector<double> turn_ttfts) {
  Summary s;
  s.sessions = static_cast<int64_t>(sessions.size());
  double first_arrival = 0, last_finish = 0;
  bool any = false;
  int64_t tokens = 0;
  for (const auto& r : sessions) {
    if (r.status != "finished") {
      ++s.skipped;
      continue;
    }
    ++s.finished;
    if (!any || r.arrival_s < first_arrival) first_arrival = r.arrival_s;
    last_finish = any ? std::max(last_finish, r.finish_s) : r.finish_s;
    any = true;
    tokens += r.output_tokens;
  }
  s.makespan_s = any ? last_finish - first_arrival : 0;
  s.busy_window_s = busy_window_s;
  if (busy_window_s > 0) {
    s.throughput_sessions_s = static_cast<double>(s.finished) / busy_window_s;
    s.throughput_tokens_s = static_cast<double>(tokens) / busy_window_s;
  }
  s.ttft = finished_stat(sessions, [](const SessionRecord& r) { return if_set(r.ttft_s); });
  s.tpot = finished_stat(sessions, [](const SessionRecord& r) { return if_set(r.tpot_s); });
  s.e2e = finished_stat(sessions, [](const SessionRecord& r) { return r.e2e_s; });
  s.normalized_latency = finished_stat(
      sessions, [](const SessionRecord& r) { return if_set(r.normalized_latency_s); });
  s.resume_ttft =
      finished_stat(sessions, [](const SessionRecord& r) { return if_set(r.resume_ttft_s); });
  s.turn_ttft = make_stat(std::move(turn_ttfts));
  s.request_latency =
      finished_stat(sessions, [](const SessionRecord& r) { return if_set(request_latency(r)); });
  s.counters = c;
  s.waste = w;
  s.gpu_blocks = gpu_blocks;
  s.cpu_blocks = cpu_blocks;
  s.extrapolations = extrapolations;
  return s;
}

double request_latency(const SessionRecord& r) {
  if (r.status != "finished" || r.segments <= 0 || r.e2e_s < 0) return -1;
  return (r.e2e_s - r.intercept_s) / static_cast<double>(r.segments);
}

void add_turn_stats(Summary& s, const std::vector<TurnRecord>& turns) {
  s.request_ttft = stat_of(turns, [](const TurnRecord& t) { return t.ttft_s; });
  s.itl_max = stat_of(turns, [](const TurnRecord& t) { return if_set(t.itl_max_s); });
}

}  // namespace isim::sim
