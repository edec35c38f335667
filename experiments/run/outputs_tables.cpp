// The terminal tables of `isim run` (experiments/run/outputs.h): one row per policy, and for fleets
// the router's and the disaggregation's figures.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "experiments/run/outputs.h"

namespace isim::exp {

std::string summary_table(const std::vector<TableRow>& rows) {
  bool slo = false;
  for (const auto& r : rows) slo = slo || !r.summary.slo.limits.empty();
  // The goodput columns only when an SLO is set.
  auto goodput = [slo](const std::string& a, const std::string& b) {
    return slo ? fmt::format(" {:>7} {:>7}", a, b) : std::string();
  };
  std::string out = fmt::format(
      "{:<17} {:>9} {:>9} {:>8} {:>8}{} {:>8} {:>9} {:>8} {:>9} {:>10} {:>8}  {:>6} {:>6} {:>6} "
      "{:>6} {:>6}\n",
      "policy", "norm.mean", "norm.p99", "ttft.avg", "ttft.p99", goodput("slo.met", "goodput"),
      "sess/s", "tok/s", "busy", "makespan", "recompute", "swapGiB", "active", "presv", "recomp",
      "stall", "free");
  out += fmt::format("{:<17} {:>9} {:>9} {:>8} {:>8}{} {:>18} {:>8} {:>9} {:>10} {:>8}  {:>34}\n",
                     "", "s/token", "s/token", "s", "s", goodput("%", "sess/s"), "over busy", "s",
                     "s", "tokens", "", "waste share (%)");
  const double gib = 1024.0 * 1024.0 * 1024.0;
  for (const auto& r : rows) {
    const auto& s = r.summary;
    const auto& w = s.waste;
    double tot = w.total();
    const bool has = !s.slo.limits.empty();
    out += fmt::format(
        "{:<17} {:>9.4f} {:>9.4f} {:>8.3f} {:>8.3f}{} {:>8.3f} {:>9.1f} {:>8.1f} {:>9.1f} {:>10} "
        "{:>8.2f}  {:>6.1f} {:>6.1f} {:>6.1f} {:>6.1f} {:>6.1f}\n",
        r.policy, s.normalized_latency.mean, s.normalized_latency.p99, s.ttft.mean, s.ttft.p99,
        goodput(has ? fmt::format("{:.1f}", 100 * s.slo.share) : "-",
                has ? fmt::format("{:.3f}", s.slo.per_s) : "-"),
        s.throughput_sessions_s, s.throughput_tokens_s, s.busy_window_s, s.makespan_s,
        s.counters.recomputed_tokens,
        static_cast<double>(s.counters.swapped_out_bytes + s.counters.swapped_in_bytes) / gib,
        100 * share_of(w.active, tot), 100 * share_of(w.preserved, tot),
        100 * share_of(w.recompute, tot), 100 * share_of(w.swap_stall, tot),
        100 * share_of(w.free, tot));
  }
  return out;
}

std::string fleet_table(const std::vector<FleetRow>& rows) {
  if (rows.empty()) return "";
  const auto& f0 = rows.front().fleet;
  std::string out = fmt::format("fleet: {} replicas behind {}\n", f0.replicas, f0.router);
  out +=
      fmt::format("{:<17} {:>8} {:>8} {:>10}  {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                  "policy", "busy", "queued", "migrations", "intercept", "preemption", "idle-evict",
                  "migration", "role-switch", "prefix-evict", "total");
  out += fmt::format("{:<17} {:>8} {:>8} {:>10}  {:>83}\n", "", "max/mean", "max/mean", "",
                     "lost KV reuse: tokens recomputed that had been computed before");
  for (const auto& r : rows) {
    const auto& c = r.summary.counters;
    out += fmt::format(
        "{:<17} {:>8.3f} {:>8.3f} {:>10}  {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
        r.policy, r.fleet.busy_imbalance, r.fleet.queued_imbalance, r.fleet.migrations,
        c.lost_reuse[0], c.lost_reuse[1], c.lost_reuse[2], c.lost_reuse[3], c.lost_reuse[4],
        c.prefix_evicted_tokens, c.lost_reuse_total());
  }
  return out;
}

std::string disagg_table(const std::vector<FleetRow>& rows) {
  std::string out = fmt::format("{:<17} {:<12} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>12}\n",
                                "policy", "planner", "ttft.p95", "e2e.avg", "tok/s", "transfers",
                                "xfer.ms", "switches", "lost-reuse");
  for (const auto& r : rows) {
    const auto& s = r.summary;
    out += fmt::format("{:<17} {:<12} {:>9.3f} {:>9.3f} {:>9.1f} {:>9} {:>10.3f} {:>9} {:>12}\n",
                       r.policy, r.disagg.planner, s.ttft.p95, s.e2e.mean, s.throughput_tokens_s,
                       r.disagg.transfers, r.disagg.transfer_s_mean * 1e3, r.disagg.role_switches,
                       s.counters.lost_reuse_total());
  }
  return out;
}

}  // namespace isim::exp
