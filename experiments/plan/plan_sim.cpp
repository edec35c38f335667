// The simulations of a plan: workloads and judged runs (experiments/plan/plan_sim.h).
#include "experiments/plan/plan_sim.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "cluster/simulation.h"
#include "core/input_error.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "sim/executor.h"
#include "traces/limits.h"
#include "traces/sources.h"

namespace isim::exp {

namespace {

// Replay: the trace's arrivals scaled so that the mean gap is 1/rate; returns the scaled span.
double scale_replay(trace::Trace& t, double rate, const std::string& origin) {
  if (t.size() < 2) throw InputError(origin + ": trace: replay needs at least two sessions");
  double t0 = t.front().arrival_s, t1 = t0;
  for (const auto& x : t) {
    t0 = std::min(t0, x.arrival_s);
    t1 = std::max(t1, x.arrival_s);
  }
  if (!(t1 > t0))
    throw InputError(origin + ": trace: replay needs sessions that arrive at different times");
  const double scale = (1.0 / rate) / ((t1 - t0) / static_cast<double>(t.size() - 1));
  for (auto& x : t) x.arrival_s = (x.arrival_s - t0) * scale;
  return (t1 - t0) * scale;
}

}  // namespace

Workload make_workload(Experiment e, const SearchSpec& s, double rate, uint64_t seed) {
  e.seed = seed;
  e.arrival.seed = seed;
  e.arrival.rate = rate;
  const bool replay = e.arrival.process == "replay";
  if (!replay) {
    const double want = std::ceil(rate * s.window_s);
    if (!(want <= static_cast<double>(trace::kMaxSessions)))  // before the draw allocates them
      throw InputError(fmt::format(
          "{}: search.window_s: a probe at {} sessions/s over {} s draws {} sessions, more than "
          "the {} a run holds; lower search.window_s or search.max_rate",
          e.origin, rate, s.window_s, want, trace::kMaxSessions));
    const auto n = static_cast<int64_t>(want);
    if (trace::trace_source_registry().create(e.trace.from, "trace.from")->generated) {
      e.trace.sessions = n;
    } else {
      e.trace.draw = n;
    }
  }
  Workload w;
  w.in = prepare(e);
  auto& t = w.in.trace;
  const double window = replay ? scale_replay(t, rate, e.origin) : s.window_s;
  w.from_s = s.warmup * window;
  w.to_s = window;
  double unqueued = 0;  // when every session would finish if it never waited for the GPU
  for (const auto& x : t) {
    double end = x.arrival_s;
    for (const auto& seg : x.segments)
      if (seg.intercept) end += seg.intercept->duration_s;
    unqueued = std::max(unqueued, end);
  }
  w.deadline_s = std::max(unqueued, window) + s.drain_s;
  return w;
}

namespace {

// A disaggregated fleet's run to its end (see plan_sim.h), judged.
Verdict run_disaggregated(const PlanSpec& p, const FleetLayout& f, const Workload& w,
                          std::vector<cluster::ReplicaSpec> specs, cluster::Router& router,
                          double rate) {
  const auto n = static_cast<int32_t>(specs.size());
  if (n < 2) {
    Verdict v;
    v.reason = "a P:D split needs at least 2 replicas";
    return v;
  }
  cluster::DisaggConfig d = p.disagg;
  d.enabled = true;
  d.roles = pd_ratio_roles(f.split->prefill, f.split->decode, n);
  const PlannerChoice planner = f.planner ? *f.planner : PlannerChoice{};
  d.planner = planner.name;
  d.planner_params = planner.params;
  auto made = make_planner(planner.name, planner.params, "planner");
  const auto r = cluster::simulate(w.in.trace, std::move(specs), router, d, made.get());
  return judge_run(r, p.slos, rate, w.from_s, w.to_s, p.search.divergence);
}

}  // namespace

ReplicaGroup deployment_group(const Deployment& d) {
  ReplicaGroup g;
  g.par = d.par;
  return g;
}

Verdict run_judged(const PlanSpec& p, const Candidate& c, const FleetLayout& f, int64_t replicas,
                   double rate, uint64_t seed, cluster::RunResult* out) {
  Workload w = make_workload(c.experiment, p.search, rate, seed);
  const auto& pol = c.experiment.policies.front();
  const Deployment& d = p.deployments.at(c.deployment);
  const ReplicaGroup grp = deployment_group(d);
  const sim::Profile prof = group_profile(grp, w.in.profile, "deployments." + d.name + ".ep");
  std::vector<std::unique_ptr<sim::Policy>> policies;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<cluster::ReplicaSpec> specs;
  for (int64_t k = 0; k < replicas; ++k) {
    // Group k's cores, consecutive, numbered as experiments/run/run.cpp numbers them.
    const cluster::DpSpec dp = dp_spec(grp, prof, p.disagg.links, static_cast<int32_t>(k));
    for (int32_t core = 0; core < d.par.dp; ++core) {
      policies.push_back(policy::policy_registry().create(pol.name, pol.params.where, pol.params));
      executors.push_back(
          sim::executor_registry().create("sim", "executor", prof, sim::ExecutorParams{}));
      specs.push_back({c.experiment.engine, executors.back().get(), policies.back().get(), "",
                       nullptr, nullptr, dp});
    }
  }
  cluster::SingleReplica single;
  std::unique_ptr<cluster::Router> routed;
  if (f.router) {
    routed = policy::router_registry().create(f.router->name, "router", f.router->params);
  } else if (d.par.dp > 1) {  // one group's cores: vLLM's DP load balancer places the sessions
    routed = policy::router_registry().create("dp-lb", "router", Params{});
  }
  cluster::Router& router = routed ? *routed : single;
  if (f.split && !f.split->mixed())
    return run_disaggregated(p, f, w, std::move(specs), router, rate);
  cluster::Cluster sim(w.in.trace, std::move(specs), router);
  sim.drop_replica_series();  // judged on the fleet's series only
  sim.load();
  // A run still busy at its drain deadline is cut: it has not kept up with the rate.
  if (sim.run_until(sim::from_seconds(w.deadline_s))) {
    cluster::RunResult r = sim.result();
    Verdict v = judge_run(r, p.slos, rate, w.from_s, w.to_s, p.search.divergence);
    if (out) *out = std::move(r);
    return v;
  }
  Verdict v;
  v.reason = fmt::format("diverged (still busy at {:.0f} s)", w.deadline_s);
  for (const auto& ex : executors) v.extrapolations += ex->cost_model().extrapolations();
  return v;
}

double output_tokens_per_session(const PlanSpec& p, std::vector<std::string>& notes) {
  const auto& c = p.candidates.front();
  Workload w = make_workload(c.experiment, p.search, p.peak_rate, p.seeds.front());
  notes = w.in.notes;
  double tokens = 0;
  for (const auto& s : w.in.trace)
    for (const auto& seg : s.segments) tokens += static_cast<double>(seg.output);
  return w.in.trace.empty() ? 0 : tokens / static_cast<double>(w.in.trace.size());
}

}  // namespace isim::exp
