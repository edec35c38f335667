// Capacity planning (`isim plan`): for each candidate deployment, KV policy and router, the
// highest arrival rate one replica sustains within every SLO, the smallest simulated fleet that
// serves a peak rate within them, and what that fleet costs.
//
// Contract:
// - The plan spec (its keys, disaggregation axes): experiments/spec/plan_spec.h.
// - A run at rate r (`judge_run`) fails when sessions never fit, when the run diverges (the
//   queue of sessions waiting for the GPU grows faster than `divergence` x r over the measured
//   span, or the run is still busy at the drain deadline, where it is cut short), or when an
//   SLO statistic over the measured sessions exceeds its limit.
// - `find_capacity` searches each (deployment, policy, seed) alone, on one replica, so once for
//   every router: doubling (or halving) from start_rate to bracket the capacity, then bisection
//   until (fail - pass) <= tolerance x pass. The capacity is the highest passing rate probed; it
//   assumes pass/fail is monotone in rate.
// - The first guess of the fleet uses the lowest capacity across seeds: ceil(peak / capacity)
//   replicas. `search_fleet` then simulates fleets of that candidate at the peak rate (every
//   seed, stopping at the first failing one): from the guess down while sizes pass, or up while
//   they fail, to at most `fleet_bound` replicas. The sized fleet is the smallest passing size
//   simulated; GPUs = replicas x tp, cost = GPUs x price. None passing: infeasible at that bound.
// - A deployment with dp > 1 or ep (plan_spec.h) is planned in groups: "replica" above is one
//   group of dp engine cores (the capacity search simulates one group, its cores behind dp-lb;
//   a fleet of n groups is n x dp cores behind the router), and GPUs = groups x dp x tp.
// - `run_plan` gives identical results (and so a byte-identical plan.csv) for any number of jobs.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cluster/run_result.h"
#include "experiments/run/goodput.h"
#include "experiments/spec/plan_spec.h"
#include "sim/metrics.h"

namespace isim::exp {

// --- Judging one run -----------------------------------------------------------------------

struct Verdict {
  bool pass = false;
  std::string reason;          // why it failed: "diverged ...", "ttft_s.p99 2.4 > 2", ...
  std::vector<double> values;  // each SLO's statistic (empty when the run was cut)
  int64_t extrapolations = 0;
};
// Judges a finished run at `rate`; sessions arriving in [from_s, to_s] are measured.
Verdict judge_run(const cluster::RunResult& r, const std::vector<Slo>& slos, double rate,
                  double from_s, double to_s, double divergence);

// --- The search ----------------------------------------------------------------------------

struct Probe {
  double rate = 0;
  Verdict verdict;
};
struct SearchResult {
  double capacity = 0;  // highest passing rate probed; 0 when none passed
  double failed_at = std::numeric_limits<double>::infinity();  // lowest failing rate probed
  bool capped = false;        // passed at max_rate: the capacity is at least that
  std::vector<Probe> probes;  // in probe order
};
SearchResult find_capacity(const std::function<Verdict(double)>& probe, const SearchSpec& s);

// --- Sizing --------------------------------------------------------------------------------

struct Sizing {
  bool feasible = false;  // replicas > 0
  int64_t replicas = 0, gpus = 0;
  double cost_per_hour = 0;
  double cost_per_million_output_tokens = 0;  // at the peak rate
};
// The cost of `replicas` replicas (or groups) of `gpus_per_replica` GPUs each (tp, or dp x tp
// for a DP/EP group); infeasible when replicas <= 0.
Sizing fleet_cost(int64_t replicas, double peak_rate, int64_t gpus_per_replica,
                  double price_per_gpu_hour, double output_tokens_per_session);
// The arithmetic guess: ceil(peak / capacity) replicas (infeasible when capacity is 0).
Sizing size_fleet(double peak_rate, double capacity, int64_t gpus_per_replica,
                  double price_per_gpu_hour, double output_tokens_per_session);

// The largest fleet the upward search simulates: max(ceil(factor x guess), guess + 4).
int64_t fleet_bound(int64_t guess, double factor);

struct FleetCheck {
  int64_t replicas = 0;
  Verdict verdict;  // a failure's reason starts with the seed: "seed 2: ttft_s.p99 3.1 > 2"
};
struct FleetSearch {
  int64_t guess = 0;  // where the search started
  int64_t bound = 0;  // fleet_bound(guess, factor)
  int64_t sized = 0;  // smallest passing size simulated; 0 when none passed up to bound
  std::vector<FleetCheck> checks;  // in simulation order
  std::string simulated() const;   // "5:pass 4:fail"
  std::string limited_by() const;  // why the largest failing size below `sized` failed
};
// From guess >= 1: while `check(n)` passes, n - 1 (not below 1); if the guess fails, n + 1
// until a size passes or n exceeds the bound.
FleetSearch search_fleet(int64_t guess, const std::function<Verdict(int64_t)>& check,
                         double max_fleet_factor);

// --- Running a plan ------------------------------------------------------------------------

struct CandidateResult {
  const Candidate* candidate = nullptr;
  const RouterChoice* router = nullptr;    // set by run_plan (nullptr: none named)
  const SplitChoice* split = nullptr;      // set by run_plan (nullptr: mixed)
  const PlannerChoice* planner = nullptr;  // set by run_plan (nullptr: static)
  std::vector<SearchResult> seeds;         // in PlanSpec::seeds order
  double capacity = 0;                     // lowest over seeds (what sizing uses)
  double capacity_mean = 0, capacity_max = 0;
  bool capped = false;
  std::string limited_by;          // the failure that bounded the lowest seed's capacity
  std::vector<double> slo_values;  // worst over seeds, at each seed's capacity
  int64_t extrapolations = 0;      // summed over the seeds' capacity runs
  int64_t guess = 0;               // ceil(peak / capacity); 0 when no rate passed
  FleetSearch fleet;               // the simulated sizes (none when guess is 0)
  Sizing sizing;                   // of fleet.sized
  std::vector<std::string> warnings;
  size_t runs = 0;        // capacity probes, all seeds (shared by the candidate's routers)
  size_t fleet_runs = 0;  // fleet simulations, all sizes and seeds
};

struct PlanResult {
  const PlanSpec* spec = nullptr;
  double output_tokens_per_session = 0;  // mean of the workload drawn at the peak rate
  std::vector<CandidateResult> ranked;   // cheapest first; infeasible last
  std::vector<std::string> savings;      // "min-waste needs 6 H100-SXM GPUs where discard needs 9"
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // what the trace importers reported (deduplicated)

  std::string csv() const;  // plan.csv
  // The terminal table; with DP/EP groups (has_groups) a `layout` column ("4 x DP16/EP16") and
  // a line per sized fleet: "kimi/preserve: 64 GB300 GPUs as 4 groups of DP16/EP16".
  std::string table() const;
};

struct PlanProgress {
  size_t searches_done, searches_total;  // capacity searches: deployment x policy x seed
  size_t fleets_done, fleets_total;      // fleet searches: one per feasible candidate
  size_t runs_done;                      // simulations of either kind
};
struct PlanOptions {
  size_t jobs = 1;
  // Called after every run, one call at a time.
  std::function<void(const PlanProgress&)> on_progress;
};
PlanResult run_plan(const PlanSpec& spec, const PlanOptions& o);

// Orders candidates and writes the savings lines and warnings (run_plan calls it).
void rank_plan(PlanResult& r);

// A deployment's unit as the report names it: "DP16/EP16" (dp 16 with ep, tp 1), "DP8/TP2/EP16",
// "DP4" (dp 4 without ep), "TP2" (one replica of tp 2). EP = dp x tp ranks.
std::string group_layout(const Deployment& d);
// Whether any deployment of `p` is planned in DP/EP groups (then the table, plan.csv and the
// shard journals name each result's layout; otherwise they are as without these keys).
bool has_groups(const PlanSpec& p);

}  // namespace isim::exp
