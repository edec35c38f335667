// Cluster::result: the fleet's records, summary, per-replica results and imbalance.
#include <algorithm>

#include "cluster/arrivals.h"
#include "cluster/cluster.h"
#include "cluster/lockstep.h"
#include "cluster/roles.h"
#include "cluster/tiers.h"
#include "cluster/transfers.h"

namespace isim::cluster {

namespace {

// max / mean of `v` (0 when the mean is 0).
double imbalance(const std::vector<double>& v) {
  double sum = 0, mx = 0;
  for (double x : v) {
    sum += x;
    mx = std::max(mx, x);
  }
  const double mean = v.empty() ? 0 : sum / static_cast<double>(v.size());
  return mean > 0 ? mx / mean : 0;
}

}  // namespace

RunResult Cluster::result() {
  sampler_.close(end_);
  for (int32_t i = 0; i < size(); ++i) fleet_.replica(i).meter().close(end_);
  RunResult r;
  r.sessions =
      fleet_.ledger().take_records([this](int32_t rep, int32_t h) -> const sim::SessionMetrics& {
        return engine(rep).view().session(h).m;
      });
  r.not_started = arrivals_->not_started();
  if (r.not_started > 0)  // never started is not a failure: out of every metric
    std::erase_if(r.sessions,
                  [](const sim::SessionRecord& s) { return s.status == "not_started"; });
  sim::Counters c;
  sim::WasteBreakdown w;
  int64_t gpu = 0, cpu = 0, extrapolations = 0;
  std::vector<double> busy, queued;
  std::vector<sim::Span> busy_spans;  // every replica's, for the fleet's busy window
  const auto n = static_cast<size_t>(size());
  std::vector<double> queued_sum(n, 0);
  std::vector<int64_t> samples(n, 0);
  for (const auto& s : sampler_.replicas()) {
    queued_sum[static_cast<size_t>(s.replica)] += static_cast<double>(s.s.queued_tokens);
    ++samples[static_cast<size_t>(s.replica)];
  }
  for (size_t i = 0; i < n; ++i) {
    const sim::Engine& e = engine(static_cast<int32_t>(i));
    const ReplicaSpec& spec = fleet_.spec(static_cast<int32_t>(i));
    c.merge(e.counters());
    w.merge(e.meter().waste());
    gpu += e.view().blocks().gpu;
    cpu += e.view().blocks().cpu;
    extrapolations += spec.executor->cost_model().extrapolations();
    busy_spans.insert(busy_spans.end(), e.meter().busy_spans().begin(),
                      e.meter().busy_spans().end());
    ReplicaResult rr;
    rr.replica = e.view().replica();
    rr.group = spec.group;
    rr.role = role_name(role(static_cast<int32_t>(i)));
    rr.counters = e.counters();
    rr.waste = e.meter().waste();
    rr.blocks = e.view().blocks();
    rr.admitted = fleet_.counts().admitted[i];
    rr.resumed_here = fleet_.counts().resumed[i];
    rr.mean_queued_tokens = samples[i] > 0 ? queued_sum[i] / static_cast<double>(samples[i]) : 0;
    busy.push_back(sim::to_seconds(e.counters().busy_time));
    queued.push_back(rr.mean_queued_tokens);
    r.replicas.push_back(std::move(rr));
  }
  r.summary =
      sim::summarize(r.sessions, c, w, gpu, cpu, extrapolations,
                     sim::union_seconds(std::move(busy_spans)), fleet_.ledger().take_turn_ttfts());
  r.turns = fleet_.ledger().take_turns();
  r.gaps_kept = fleet_.ledger().keeps_gaps();
  r.gaps = fleet_.ledger().take_gaps();
  r.tallies = fleet_.ledger().take_tallies();
  std::sort(r.turns.begin(), r.turns.end(), [](const sim::TurnRecord& a, const sim::TurnRecord& b) {
    if (a.start_s != b.start_s) return a.start_s < b.start_s;
    return a.session != b.session ? a.session < b.session : a.seg < b.seg;
  });
  sim::add_turn_stats(r.summary, r.turns);
  r.fleet.router = fleet_.router().name();
  r.fleet.replicas = size();
  r.fleet.busy_imbalance = imbalance(busy);
  r.fleet.queued_imbalance = imbalance(queued);
  r.fleet.migrations = fleet_.counts().migrations;
  r.timeseries = sampler_.fleet();
  r.replica_timeseries = sampler_.replicas();
  r.skipped = arrivals_->skipped();
  r.policy_facts = fleet_.spec(0).policy->describe();
  r.router_facts = fleet_.router().describe();
  r.executor = fleet_.spec(0).executor->report();
  if (roles_) roles_->fill(r);
  if (tiers_) tiers_->fill(r);
  if (lockstep_) r.lockstep = lockstep_->stats();
  if (transfers_)
    for (const auto& [kind, bytes] : transfers_->bytes_by_kind())
      r.link_bytes.emplace_back(kind, bytes);
  return r;
}

}  // namespace isim::cluster

namespace isim::cluster {

const char* tier_hit_name(int h) {
  static const char* const names[] = {"gpu", "peer_gpu", "node_cpu", "pool", "miss"};
  return names[h];
}
const char* tier_loss_name(int l) {
  static const char* const names[] = {"gpu", "node_cpu", "pool", "declined"};
  return names[l];
}
const char* tier_link_name(int l) {
  static const char* const names[] = {"pcie", "nvlink", "network", "node_to_pool"};
  return names[l];
}

}  // namespace isim::cluster
