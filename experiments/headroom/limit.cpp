// The limiting factor of a failing run (experiments/headroom/limit.h).
#include "experiments/headroom/limit.h"

#include <algorithm>

#include <fmt/format.h>

#include "experiments/run/turn_metrics.h"

namespace isim::exp {

std::string limit_name(Limit l) {
  switch (l) {
    case Limit::kNone:
      return "none";
    case Limit::kMemory:
      return "memory";
    case Limit::kQueue:
      return "queue";
    case Limit::kTtft:
      return "ttft";
    case Limit::kTpot:
      return "tpot";
    case Limit::kLatency:
      return "latency";
  }
  return "none";
}

std::string limit_why(Limit l, const LimitFacts& f) {
  switch (l) {
    case Limit::kMemory:
      return fmt::format("memory (KV peak {:.0f}%, {} preemptions{})", 100 * f.kv_peak,
                         f.preemptions,
                         f.skipped > 0 ? fmt::format(", {} never fit", f.skipped) : "");
    case Limit::kQueue:
      return fmt::format("queue growth ({:.2f} sessions/s)", f.queue_growth_per_s);
    case Limit::kTtft:
      return fmt::format("TTFT ({:.0f}% over)", 100 * f.ttft_miss);
    case Limit::kTpot:
      return fmt::format("TPOT/ITL ({:.0f}% over)", 100 * f.tpot_miss);
    case Limit::kLatency:
      return fmt::format("latency ({:.0f}% over)", 100 * f.other_miss);
    case Limit::kNone:
      break;
  }
  return "-";
}

namespace {

double share(int64_t part, size_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

// The share of sessions with a metric among `names` over its limit in `slo`.
double session_miss(const std::vector<sim::SessionRecord>& sessions, const RunSlo& slo,
                    std::initializer_list<const char*> names) {
  int64_t over = 0;
  for (const auto& s : sessions) {
    bool miss = false;
    for (const auto& [name, limit] : slo) {
      const std::string& key = name;  // clang before 16 cannot capture a structured binding
      if (std::find_if(names.begin(), names.end(), [&](const char* n) { return key == n; }) ==
          names.end())
        continue;
      const double x = find_metric(name)->value(s);
      if (x >= 0 && x > limit) miss = true;
    }
    over += miss ? 1 : 0;
  }
  return share(over, sessions.size());
}

double kv_peak(const cluster::RunResult& r) {
  double peak = 0;
  if (r.replica_timeseries.empty()) {
    if (r.summary.gpu_blocks > 0)
      for (const auto& s : r.timeseries)
        peak = std::max(peak, share(s.gpu_blocks_used, static_cast<size_t>(r.summary.gpu_blocks)));
    return peak;
  }
  for (const auto& rs : r.replica_timeseries) {
    const auto k = static_cast<size_t>(rs.replica);
    if (k >= r.replicas.size() || r.replicas[k].blocks.gpu <= 0) continue;
    peak =
        std::max(peak, share(rs.s.gpu_blocks_used, static_cast<size_t>(r.replicas[k].blocks.gpu)));
  }
  return peak;
}

}  // namespace

LimitFacts limit_facts(const cluster::RunResult& r, const RunSlo& slo, const TurnSlo& turn_slo) {
  LimitFacts f;
  f.kv_peak = kv_peak(r);
  f.preemptions = r.summary.counters.preemptions + r.summary.counters.idle_evictions;
  f.skipped = r.summary.skipped;
  f.overloaded = r.summary.overloaded;
  f.queue_growth_per_s = r.summary.queue_growth_per_s;
  f.ttft_miss = session_miss(r.sessions, slo, {"ttft_s", "resume_ttft_s"});
  f.tpot_miss = session_miss(r.sessions, slo, {"tpot_s"});
  f.other_miss = session_miss(r.sessions, slo, {"normalized_latency_s", "e2e_s"});
  if (!turn_slo.empty()) {
    int64_t ttft_over = 0, itl_over = 0;
    for (const auto& t : r.turns) {
      if (turn_slo.request_ttft_s > 0 && t.ttft_s > turn_slo.request_ttft_s) ++ttft_over;
      if (turn_slo.itl_max_s > 0 && t.itl_max_s >= 0 && t.itl_max_s > turn_slo.itl_max_s)
        ++itl_over;
    }
    f.ttft_miss = std::max(f.ttft_miss, share(ttft_over, r.turns.size()));
    f.tpot_miss = std::max(f.tpot_miss, share(itl_over, r.turns.size()));
  }
  return f;
}

Limit classify_limit(const LimitFacts& f) {
  if (f.skipped > 0 || f.preemptions > 0 || f.kv_peak >= kKvFullShare) return Limit::kMemory;
  if (f.overloaded) return Limit::kQueue;
  if (f.ttft_miss > 0 && f.ttft_miss >= f.tpot_miss) return Limit::kTtft;
  if (f.tpot_miss > 0) return Limit::kTpot;
  if (f.other_miss > 0) return Limit::kLatency;
  return Limit::kNone;
}

}  // namespace isim::exp
