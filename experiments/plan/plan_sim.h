// The simulations of a plan (experiments/plan/plan.h): the workload of one run, and one judged run
// of a candidate on one replica (a capacity probe) or on a fleet behind a router (a fleet check).
//
// Contract:
// - `make_workload` gives the trace of one run at `rate` with `seed`: ceil(rate x window_s)
//   sessions with Poisson arrivals, or the trace's own arrivals scaled so that the mean gap is
//   1/rate; plus the measured span of arrivals and the drain deadline. A poisson probe of more
//   than trace::kMaxSessions sessions is an InputError naming search.window_s, before drawing.
// - `run_judged` simulates `replicas` units of the candidate's deployment, each engine core with
//   its own executor and policy instance, behind a fresh instance of the layout's router
//   (nullptr: a cluster of one, where nothing is routed; dp-lb, vLLM's DP balancer, over one
//   group's cores when dp > 1), stops a run still busy at the drain deadline, and judges it
//   with judge_run. Equal arguments give equal verdicts. `out` (null: none) receives the run's
//   result when it was not cut.
// - A unit is one replica, or with dp > 1 or ep one group of dp consecutive cores: on a MoE
//   model a lockstep group (exp::dp_spec over the plan's cluster links, group k numbered k),
//   on a dense one dp independent cores.
// - With a P:D split the fleet is disaggregated: roles by pd_ratio_roles, the plan's links,
//   split rule and switching, and a fresh instance of the layout's planner (static when none).
//   Fewer than 2 replicas fail ("a P:D split needs at least 2 replicas"). Such a run goes to
//   its end (cluster::simulate has no horizon): a fleet that falls behind fails by the queue
//   divergence rule or its SLOs rather than by the drain deadline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/plan/plan.h"
#include "experiments/run/run.h"

namespace isim::exp {

struct Workload {
  Inputs in;
  double from_s = 0, to_s = 0;  // the measured span of arrivals
  double deadline_s = 0;        // a run still busy after this is cut
};

Workload make_workload(Experiment e, const SearchSpec& s, double rate, uint64_t seed);

// How a judged run's replicas are arranged (every part optional, see above).
struct FleetLayout {
  const RouterChoice* router = nullptr;
  const SplitChoice* split = nullptr;
  const PlannerChoice* planner = nullptr;
};

Verdict run_judged(const PlanSpec& p, const Candidate& c, const FleetLayout& f, int64_t replicas,
                   double rate, uint64_t seed, cluster::RunResult* out = nullptr);

// The cluster group a deployment's dp, ep, ep_overlap and expert_skew describe (for dp_spec).
ReplicaGroup deployment_group(const Deployment& d);

// Mean decoded tokens per session of the workload at the peak rate, first seed; `notes` gets
// what the trace importers reported.
double output_tokens_per_session(const PlanSpec& p, std::vector<std::string>& notes);

}  // namespace isim::exp
