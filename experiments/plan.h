// Capacity planning (`isim plan`): for each candidate deployment, KV policy and router, the
// highest arrival rate one replica sustains within every SLO, the smallest simulated fleet that
// serves a peak rate within them, and what that fleet costs.
//
// Contract:
// - A plan spec names a workload (`trace:` and `arrival:` as in an experiment, without a rate),
//   `peak_rate`, `slo:` (METRIC.STAT -> upper limit), `search:` settings, `seeds:`, default
//   `engine:` and `policies:`, `routers:` (default [session-affinity]) and `deployments:` (name
//   -> gpu, profile, tp, price_per_gpu_hour, optional engine and policies). A candidate is one
//   deployment with one policy behind one router, in file order (routers innermost). Every key
//   is checked; errors are InputError("FILE:LINE: key: reason").
// - Disaggregation axes (experiments/cluster_spec.h has the cluster side):
//     pd_splits: [mixed, "1:3", "1:1"]        # default [mixed]
//     planners: [static, dynamo-load, {name: online, PARAM: VALUE}]   # default [static]
//     cluster: {links: ..., split: ..., switching: ...}   # as in an experiment's cluster:
//   A split "P:D" is a ratio, since the plan sizes the fleet: a fleet of n replicas has
//   round(n x P / (P + D)) prefill replicas, at least 1 and at most n - 1, prefill first, the
//   rest decode (pd_ratio_roles); a fleet of one with a split fails. P and D are whole numbers
//   >= 1; two entries of one ratio (1:3, 2:6) are one listed twice. A fleet layout is one split
//   with one planner, splits outer: a mixed fleet takes only `static`, a planner other than
//   static needs a P:D split in the list. The capacity search (one replica, mixed) is shared by
//   every router and layout; the fleet search runs per router and layout. The report names
//   each result's split, planner and the sized fleet's prefill:decode counts.
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
// - `run_plan` gives identical results (and so a byte-identical plan.csv) for any number of jobs.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cluster/disagg.h"
#include "cluster/run_result.h"
#include "core/params.h"
#include "experiments/experiment.h"
#include "sim/metrics.h"

namespace isim::exp {

// SLO metrics: per-session latencies an SLO may bound, each with a one-line description.
struct SloMetric {
  std::string name;  // e.g. ttft_s
  std::string description;
  double (*value)(const sim::SessionRecord&);  // < 0: undefined for this session
};
const std::vector<SloMetric>& slo_metrics();
const std::vector<std::string>& slo_stats();  // mean, p50, p90, p99, max

struct Slo {
  std::string key;    // METRIC.STAT, e.g. ttft_s.p99
  size_t metric = 0;  // index into slo_metrics()
  std::string stat;
  double limit = 0;
};
// The statistic `slo.stat` of `st`.
double slo_stat(const sim::Stat& st, const std::string& stat);

struct SearchSpec {
  double start_rate = 1.0;      // sessions/s of the first probe
  double min_rate = 0;          // below it a candidate is infeasible (0 = start_rate / 64)
  double max_rate = 10000;      // a candidate passing here is reported as at least this
  double tolerance = 0.05;      // stop when (fail - pass) <= tolerance x pass
  double window_s = 300;        // poisson: sessions arrive over this long (ceil(rate x window))
  double warmup = 0.2;          // leading fraction of the arrival window not measured
  double drain_s = 120;         // slack past the last session's unqueued finish before a cut
  double divergence = 0.05;     // queue growth rate, as a fraction of the arrival rate
  double max_fleet_factor = 2;  // simulated fleets up to max(ceil(f x guess), guess + 4)
};

struct Deployment {
  std::string name;            // its key under deployments:
  std::string gpu;             // what the table calls the GPU, e.g. H100-SXM
  std::string profile;         // absolute path
  std::string profile_source;  // the profile's provenance source: measured, imported, ...
  int tp = 1;
  double price_per_gpu_hour = 0;
};

struct Candidate {
  size_t deployment = 0;  // index into PlanSpec::deployments
  std::string policy;     // label: name, with parameters as name(k=v,...)
  Experiment experiment;  // one policy; trace size, rate and seed are set per run
};

// One entry of `routers:`.
struct RouterChoice {
  std::string name;  // a registered router (policies/routers.h)
  Params params;
  std::string label;  // name, with parameters as name(k=v,...)
};

// One entry of `pd_splits:`: mixed, or prefill:decode replicas in the ratio P:D.
struct SplitChoice {
  std::string label = "mixed";      // "mixed" or "P:D" as given
  int32_t prefill = 0, decode = 0;  // 0:0 when mixed
  bool mixed() const { return prefill == 0; }
};

// One entry of `planners:`.
struct PlannerChoice {
  std::string name = "static";  // a registered planner (policies/planners.h)
  Params params;
  std::string label = "static";  // name, with parameters as name(k=v,...)
};

// A fleet layout: indices into PlanSpec::pd_splits and PlanSpec::planners.
struct Layout {
  size_t split = 0, planner = 0;
};

struct PlanSpec {
  std::string name = "plan";
  std::string origin;
  std::vector<uint64_t> seeds = {1, 2, 3};
  double peak_rate = 0;
  std::vector<Slo> slos;
  SearchSpec search;
  std::vector<Deployment> deployments;
  std::vector<Candidate> candidates;  // deployment x policy: what a capacity search runs
  std::vector<RouterChoice> routers = {{"session-affinity", Params{}, "session-affinity"}};
  std::vector<SplitChoice> pd_splits = {SplitChoice{}};
  std::vector<PlannerChoice> planners = {PlannerChoice{}};
  std::vector<Layout> layouts = {Layout{}};  // the valid (split, planner) pairs, splits outer
  cluster::DisaggConfig disagg;  // `cluster:` links, split and switching of the P:D fleets
};

PlanSpec parse_plan(const YAML::Node& root, const std::string& file, const std::string& base_dir);
// Loads a plan file and applies `-p key=value` overrides first (dotted paths, e.g.
// peak_rate=80, deployments.h100.price_per_gpu_hour=2.5, slo.ttft_s.p99=1).
PlanSpec load_plan(const std::string& path, const std::vector<std::string>& overrides);

// --- Judging one run -----------------------------------------------------------------------

// The growth of the queue (waiting + swapped sessions), in sessions per second: the
// least-squares slope over the samples in [from_s, to_s]; 0 with fewer than 3 samples there.
double queue_growth(const std::vector<sim::TimeSample>& ts, double from_s, double to_s);
// True when queue_growth is faster than `fraction` x `rate` sessions per second.
bool queue_diverges(const std::vector<sim::TimeSample>& ts, double from_s, double to_s, double rate,
                    double fraction);

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
// The cost of `replicas` replicas (infeasible when replicas <= 0).
Sizing fleet_cost(int64_t replicas, double peak_rate, int tp, double price_per_gpu_hour,
                  double output_tokens_per_session);
// The arithmetic guess: ceil(peak / capacity) replicas (infeasible when capacity is 0).
Sizing size_fleet(double peak_rate, double capacity, int tp, double price_per_gpu_hour,
                  double output_tokens_per_session);

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

  std::string csv() const;    // plan.csv
  std::string table() const;  // the terminal table
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

}  // namespace isim::exp
