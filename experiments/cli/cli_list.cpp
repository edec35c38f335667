#include <fmt/format.h>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "experiments/cli/cli.h"
#include "experiments/plan/plan.h"
#include "experiments/spec/arrival_spec.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/spec/component_params.h"
#include "experiments/spec/experiment.h"
#include "experiments/spec/plan_spec.h"
#include "live/live_executor.h"
#include "policies/builtin.h"
#include "policies/estimator.h"
#include "policies/kv_managers.h"
#include "policies/planners.h"
#include "policies/routers.h"
#include "sim/engine.h"
#include "sim/executor.h"
#include "traces/arrival.h"
#include "traces/sources.h"
#include "traces/workload.h"

namespace isim::exp {

namespace {
// Each entry, then (for a component `kind`) its numeric parameters: key, default, bound, help.
template <class R>
void section(const char* title, const R& reg, const char* kind = nullptr,
             const std::vector<ComponentParams>* params = nullptr) {
  fmt::print("{}:\n", title);
  for (const auto* e : reg.entries()) {
    fmt::print("  {:<18} {}\n", e->name, e->description);
    if (!params) continue;
    for (const auto& c : *params)
      if (c.kind == kind && c.name == e->name)
        for (const auto& r : c.rows)
          fmt::print("    {:<30} {:<9} {:<20} {}\n", r.key, r.def,
                     r.bound.text().empty() ? "-" : r.bound.text(), r.help);
  }
}

const Help kListHelp{"usage: isim list\n",
                     "Prints every registered component by kind (policies, schedulers, routers,\n"
                     "trace sources, ...) with a one-line description, the SLO metrics `isim\n"
                     "plan` accepts and the profile forms.\n",
                     "  isim list\n"
                     "  isim list | grep -A12 '^policies'\n"};

// A knob table as rows: key, default, bound, help.
void knob_section(const char* title, const std::vector<KnobRow>& rows) {
  fmt::print("{}:\n", title);
  for (const auto& r : rows)
    fmt::print("  {:<30} {:<9} {:<20} {}\n", r.key, r.def, r.bound.empty() ? "-" : r.bound, r.help);
}

}  // namespace

int cmd_list(const Args& args) {
  boost::program_options::options_description opts;
  opts.add_options()("help,h", "show this help");
  const auto vm = parse_args(args, opts, boost::program_options::positional_options_description{});
  if (vm.count("help")) return print_help(kListHelp, opts);
  const std::vector<ComponentParams> params = component_params();
  section("policies (-p policy.KEY=VALUE under each: key, default, bound, help)",
          policy::policy_registry(), "policy", &params);
  section("estimators (min-waste: -p policy.estimator=NAME)", policy::estimator_registry());
  section("schedulers", sim::scheduler_registry());
  section("routers (cluster.router: NAME)", policy::router_registry(), "router", &params);
  section("planners (cluster.planner: NAME)", policy::planner_registry(), "planner", &params);
  section("kv managers (engine.kv_manager: NAME)", policy::kv_manager_registry(), "kv manager",
          &params);
  section("executors", live::executor_registry(), "executor", &params);
  KnobRows engine;
  sim::EngineConfig{}.knobs(engine);
  sim::EngineConfig{}.feature_knobs(engine);
  sim::EngineConfig{}.speed_knobs(engine);
  knob_section("engine knobs (engine: KEY: VALUE; key, default, bound, help)", engine.rows);
  KnobRows budget;
  sim::EngineConfig{}.scheduler_knobs(budget);
  knob_section("token-budget scheduler knobs (vllm-v1; engine: KEY: VALUE)", budget.rows);
  knob_section("cluster keys (cluster: KEY: VALUE)", knob_rows<FleetKnobs>());
  knob_section("cluster group keys (cluster.replicas: [{count, KEY: VALUE, ...}])",
               knob_rows<ParallelKnobs>());
  knob_section("arrival keys (arrival: KEY: VALUE)", knob_rows<ArrivalKnobs>());
  knob_section("users and user-phases arrival keys (arrival: KEY: VALUE)",
               trace::users_knob_rows());
  knob_section("metrics keys (metrics: KEY: VALUE)", knob_rows<MetricsKnobs>());
  fmt::print("  {:<30} {:<9} {:<20} {}\n", "shifts_s", "-", "[0, ...] s",
             "load-shift times whose recovery the summary gives (needs slo.request_ttft_s)");
  fmt::print("  {:<30} {:<9} {:<20} {}\n", "bench_json", "detailed", "detailed|summary|off",
             "what bench.json holds: every field and the per-request lists (vllm bench "
             "--save-detailed), no lists (--save-result), or no file");
  knob_section("trace keys (trace: KEY: VALUE; 0 = off for limit, draw, max_context)",
               knob_rows<trace::WorkloadSpec>());
  knob_section("plan keys (isim plan: KEY: VALUE)", knob_rows<PlanKnobs>());
  knob_section("plan search keys (isim plan, search: KEY: VALUE)", knob_rows<SearchSpec>());
  section("trace sources", trace::trace_source_registry());
  section("arrival processes", trace::arrival_registry());
  std::string stats;
  for (const auto& st : slo_stats()) stats += (stats.empty() ? "" : ", ") + st;
  fmt::print(
      "SLO metrics (isim plan, slo: METRIC.STAT: limit; STAT one of {}; every limit, a "
      "run's too, in (0, {}]):\n",
      stats, kMaxSloLimit);
  for (const auto& m : slo_metrics()) fmt::print("  {:<18} {}\n", m.name, m.description);
  fmt::print("turn SLO keys (a run's slo: KEY: limit, per turn; docs/observability.md):\n");
  fmt::print("  {:<18} {}\n", "request_ttft_s", "a turn's first token - its start (s)");
  fmt::print("  {:<18} {}\n", "itl_max_s", "a turn's longest gap between output tokens (s)");
  fmt::print("profile forms:\n");
  fmt::print("  {:<18} {}\n", "linear", "T(x) = base + slope * batched tokens (InferCept's form)");
  fmt::print("  {:<18} {}\n", "tables",
             "per-layer dense, decode/prefill attention, lm_head and overhead tables");
  return 0;
}

}  // namespace isim::exp
