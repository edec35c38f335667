// The demand forecast from the paused-agent population (policies/planners/forecast.h).
#include "policies/planners/forecast.h"

#include <algorithm>

namespace isim::policy::planners {

using cluster::Role;

namespace {

// What the decode and prefill pools hold now.
struct PoolsNow {
  double backlog = 0, decoding = 0, waiting = 0, kv_used = 0;
};

PoolsNow pools_now(const cluster::FleetSnapshot& s, const std::vector<int64_t>& kv_capacity) {
  PoolsNow p;
  for (size_t r = 0; r < s.replicas.size(); ++r) {
    const cluster::ReplicaMetrics& m = s.replicas[r];
    if (m.role == Role::kPrefill) p.backlog += static_cast<double>(m.queued_prefill_tokens);
    if (m.role != Role::kDecode) continue;
    p.decoding += m.decoding_sessions;
    p.waiting += m.waiting_sessions;
    if (r < kv_capacity.size()) p.kv_used += m.kv_utilization * static_cast<double>(kv_capacity[r]);
  }
  return p;
}

bool decodes(const cluster::FleetSnapshot& s, int32_t r) {
  if (r < 0 || static_cast<size_t>(r) >= s.replicas.size()) return false;
  return s.replicas[static_cast<size_t>(r)].role != Role::kPrefill;
}

}  // namespace

Demand forecast(const cluster::FleetSnapshot& s, const std::vector<int64_t>& kv_capacity,
                const ToolWaits& waits, const DemandRates& r, double horizon_s, double itl_s) {
  const PoolsNow now = pools_now(s, kv_capacity);
  const double h = horizon_s;
  Demand d;
  d.backlog_tokens = now.backlog;
  d.kv_tokens = now.kv_used;
  for (const cluster::PausedSession& p : s.paused) {
    const double pr = waits.p_return(p.kind, p.elapsed_s, h);
    const double ret = waits.returned_tokens(p.kind);
    const double learned = waits.next_output(p.kind);
    const double out = learned > 0 ? learned : r.output_per_turn;
    const double held = decodes(s, p.replica) ? static_cast<double>(p.held_kv_tokens) : 0;
    const double uncached = ret + std::max(0.0, static_cast<double>(p.context_tokens) - held);
    d.prefill_tokens += pr * uncached;
    d.prefill_requests += pr;
    d.decode_tokens += pr * out;
    d.kv_tokens += pr * (uncached + out);
  }
  d.prefill_tokens += r.new_input_tokens * h;
  d.prefill_requests += r.new_sessions * h;
  d.decode_tokens += r.new_sessions * h * r.output_per_turn + now.decoding * r.output_per_turn / 2;
  d.kv_tokens += r.new_input_tokens * h + r.new_sessions * h * r.output_per_turn;
  d.decoders = d.decode_tokens * itl_s / h;
  return d;
}

Demand observed(const cluster::FleetSnapshot& s, const std::vector<int64_t>& kv_capacity,
                const DemandRates& r, double horizon_s, double itl_s) {
  const PoolsNow now = pools_now(s, kv_capacity);
  Demand d;
  d.backlog_tokens = now.backlog;
  d.kv_tokens = now.kv_used;
  d.prefill_tokens = r.routed_tokens * horizon_s;
  d.prefill_requests = r.routed_requests * horizon_s;
  d.decode_tokens = (now.decoding + now.waiting) * horizon_s / itl_s;
  d.decoders = d.decode_tokens * itl_s / horizon_s;
  return d;
}

}  // namespace isim::policy::planners
