#include "experiments/run/run.h"

#include <algorithm>
#include <ostream>
#include <streambuf>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/run/goodput.h"
#include "experiments/run/turn_metrics.h"
#include "experiments/spec/engine_spec.h"
#include "live/live_executor.h"
#include "policies/kv_managers.h"
#include "policies/routers.h"
#include "traces/jsonl.h"
#include "traces/workload.h"

namespace isim::exp {

namespace {
// FNV-1a over the trace's JSONL. Its offset basis, 1469598103934665603, is not FNV's
// (14695981039346656037, core/hash.h): a digit was lost when it was written. It is kept
// because the trace fingerprints in every written config.resolved.yaml depend on it.
// It hashes the text as write_jsonl writes it: a drawn trace's JSONL (GBs at 10 million
// sessions) is never held in memory.
class Fnv1aSink final : public std::streambuf {
 public:
  uint64_t hash() const { return h_; }

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) add(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) add(s[i]);
    return n;
  }

 private:
  void add(char c) {
    h_ ^= static_cast<unsigned char>(c);
    h_ *= 1099511628211ull;
  }
  uint64_t h_ = 1469598103934665603ull;
};
// At least how many samples the time series takes: the run lasts at least until the last
// session has arrived and sat out its intercepts.
void check_time_series(const Experiment& e, const trace::Trace& t) {
  const double dt = e.engine.timeseries_interval_s;
  double last = 0;
  for (const auto& s : t) last = std::max(last, s.arrival_s + s.total_intercept_s());
  const double samples = last / dt;
  if (samples <= static_cast<double>(kMaxTimeSamples)) return;
  double suggest = 1;  // a power of ten that fits
  while (last / suggest > static_cast<double>(kMaxTimeSamples)) suggest *= 10;
  throw InputError(fmt::format(
      "{}: metrics.timeseries_interval_s: {} s takes more than {:.0f} samples over this run "
      "(at least {:.1f} s: its last arrival and intercepts), more than the {} a run may take; "
      "raise it, e.g. -p metrics.timeseries_interval_s={}",
      e.origin, dt, samples, last, kMaxTimeSamples, suggest));
}

}  // namespace

Inputs prepare(const Experiment& e, bool with_profile) {
  Inputs in;
  trace::Workload w = trace::make_workload(e.trace, e.arrival, e.seed, e.origin);
  in.trace = std::move(w.trace);
  in.notes = std::move(w.notes);
  in.warnings = std::move(w.warnings);
  check_time_series(e, in.trace);
  Fnv1aSink sink;
  std::ostream os(&sink);
  trace::write_jsonl(os, in.trace);
  in.trace_fingerprint = fmt::format("{:016x}", sink.hash());
  if (!with_profile) return in;
  in.profile = sim::load_profile(e.profile);
  in.group_profiles = load_group_profiles(e, in.profile);
  return in;
}

void check_kv_capacity(const Experiment& e, const Inputs& in) {
  if (!e.cluster.given) (void)sim::derive_block_counts(in.profile, e.engine);
  for (size_t g = 0; g < e.cluster.groups.size(); ++g)
    (void)sim::derive_block_counts(in.group_profiles[g], e.cluster.groups[g].engine);
}

namespace {

cluster::RunResult simulate_policy(const Experiment& e, const Inputs& in, const PolicySpec& p,
                                   cluster::Checks checks, sim::RunObserver* observer,
                                   const cluster::ProgressFn& progress, bool gaps,
                                   int32_t threads) {
  std::vector<std::unique_ptr<sim::Policy>> policies;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::KvManager>> managers;
  std::vector<cluster::ReplicaSpec> specs;
  auto add = [&](const sim::EngineConfig& engine, const sim::Profile& profile,
                 const std::string& group, const cluster::DpSpec& dp) {
    policies.push_back(policy::policy_registry().create(p.name, p.params.where, p.params));
    managers.push_back(make_kv_manager(engine));
    executors.push_back(
        live::executor_registry().create(e.executor, "executor", profile, e.executor_params));
    sim::EngineConfig cfg = engine;
    cfg.check_invariants = checks.engines;
    specs.push_back({cfg, executors.back().get(), policies.back().get(), group,
                     managers.back().get(), observer, dp});
  };
  if (!e.cluster.given) {
    add(e.engine, in.profile, "", {});
    cluster::SingleReplica single;
    return cluster::simulate(in.trace, std::move(specs), single, cluster::DisaggConfig{}, nullptr,
                             checks, nullptr, progress, gaps, threads);
  }
  int32_t lockstep_groups = 0;
  for (size_t g = 0; g < e.cluster.groups.size(); ++g) {
    const auto& grp = e.cluster.groups[g];
    const sim::Profile& profile = in.group_profiles.at(g);
    for (int32_t k = 0; k < grp.count; ++k) {
      const cluster::DpSpec dp = dp_spec(grp, profile, e.cluster.disagg.links, lockstep_groups);
      if (dp.group >= 0) ++lockstep_groups;
      for (int32_t core = 0; core < grp.par.dp; ++core) add(grp.engine, profile, grp.name, dp);
    }
  }
  auto router =
      policy::router_registry().create(e.cluster.router, "cluster.router", e.cluster.router_params);
  const cluster::DisaggConfig& d = e.cluster.disagg;
  if (!d.enabled)
    return cluster::simulate(in.trace, std::move(specs), *router, d, nullptr, checks, nullptr,
                             progress, gaps, threads);
  // One planner per run: it keeps what it observed.
  auto planner = make_planner(d.planner, d.planner_params, "cluster.planner");
  return cluster::simulate(in.trace, std::move(specs), *router, d, planner.get(), checks, nullptr,
                           progress, gaps, threads);
}

}  // namespace

cluster::RunResult run_policy(const Experiment& e, const Inputs& in, const PolicySpec& p,
                              cluster::Checks checks, sim::RunObserver* observer,
                              const cluster::ProgressFn& progress, bool every_token,
                              int32_t threads) {
  cluster::RunResult r =
      simulate_policy(e, in, p, checks, observer, progress, keeps_gaps(e, every_token), threads);
  r.summary.slo = slo_attainment(r.sessions, e.slo, r.summary.busy_window_s);
  add_turn_metrics(r.summary, r.turns, r.sessions, e.turn_slo, e.run_metrics);
  const Overload o = judge_overload(r.sessions, r.timeseries);
  r.summary.overloaded = o.overloaded;
  r.summary.queue_growth_per_s = o.growth_per_s;
  return r;
}

bool keeps_gaps(const Experiment& e, bool every_token) {
  return every_token || e.run_metrics.bench_json == "detailed";
}

cluster::DpSpec dp_spec(const ReplicaGroup& g, const sim::Profile& p,
                        const cluster::LinksConfig& links, int32_t number) {
  cluster::DpSpec dp;
  if (!g.parallel() || !p.model.moe.given()) return dp;  // dense: independent cores
  dp.group = number;
  sim::EpGroupShape& s = dp.shape;
  s.cores = g.par.dp;
  s.tp = p.model.tp;
  s.ep = g.par.ep;
  s.gpus_per_domain = links.replicas_per_node * p.model.tp;
  s.overlap = g.par.ep_overlap;
  s.skew = g.par.expert_skew;
  s.intra = {links.intra_node.gbps, links.intra_node.latency_s * 1e6};
  s.inter = {links.inter_node.gbps, links.inter_node.latency_s * 1e6};
  return dp;
}

bool uses_tiers(const Experiment& e) {
  return e.cluster.given ? uses_tiers(e.cluster) : make_kv_manager(e.engine)->uses_tiers();
}

void check_parallel(const Experiment& e, size_t g, const sim::Profile& p) {
  const std::string key = fmt::format("{}: cluster.replicas[{}]", e.origin, g);
  check_parallel_profile(e.cluster.groups[g], p, key + ".dp", key + ".ep");
}

std::vector<sim::Profile> load_group_profiles(const Experiment& e, const sim::Profile& base) {
  std::vector<sim::Profile> out;
  for (size_t g = 0; g < e.cluster.groups.size(); ++g) {
    const auto& grp = e.cluster.groups[g];
    out.push_back(grp.profile.empty() || grp.profile == e.profile ? base
                                                                  : sim::load_profile(grp.profile));
    check_parallel(e, g, out.back());
    out.back() = group_profile(grp, std::move(out.back()),
                               fmt::format("{}: cluster.replicas[{}].ep", e.origin, g));
    if (grp.tp > 0 && grp.tp != out.back().model.tp)
      throw InputError(fmt::format(
          "{}: cluster.replicas[{}].tp: {} GPUs per replica, but the profile {} was measured at "
          "tp {}; give a profile measured at that TP",
          e.origin, g, grp.tp, out.back().path.empty() ? e.profile : out.back().path,
          out.back().model.tp));
  }
  return out;
}

}  // namespace isim::exp
