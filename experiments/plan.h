// Capacity planning (`isim plan`): for each candidate deployment and KV policy, the highest
// arrival rate one replica sustains within every SLO, and what serving a peak rate then costs.
//
// Contract:
// - A plan spec names a workload (`trace:` and `arrival:` as in an experiment, without a rate),
//   `peak_rate`, `slo:` (METRIC.STAT -> upper limit), `search:` settings, `seeds:`, default
//   `engine:` and `policies:`, and `deployments:` (name -> gpu, profile, tp, price_per_gpu_hour,
//   optional engine and policies). A candidate is one deployment with one policy, in file order.
//   Every key is checked; errors are InputError("FILE:LINE: key: reason").
// - A run at rate r (`judge_run`) fails when sessions never fit, when the run diverges (the
//   queue of sessions waiting for the GPU grows faster than `divergence` x r over the measured
//   span, or the run is still busy at the drain deadline, where it is cut short), or when an
//   SLO statistic over the measured sessions exceeds its limit.
// - `find_capacity` searches each (candidate, seed) alone: doubling (or halving) from
//   start_rate to bracket the capacity, then bisection until (fail - pass) <= tolerance x pass.
//   The capacity is the highest passing rate probed; it assumes pass/fail is monotone in rate.
// - The sizing uses the lowest capacity across seeds: replicas = ceil(peak / capacity),
//   GPUs = replicas x tp, cost = GPUs x price.
// - `run_plan` gives identical results (and so a byte-identical plan.csv) for any number of jobs.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "sim/metrics.h"
#include "cluster/simulation.h"

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
  double start_rate = 1.0;   // sessions/s of the first probe
  double min_rate = 0;       // below it a candidate is infeasible (0 = start_rate / 64)
  double max_rate = 10000;   // a candidate passing here is reported as at least this
  double tolerance = 0.05;   // stop when (fail - pass) <= tolerance x pass
  double window_s = 300;     // poisson: sessions arrive over this long (ceil(rate x window))
  double warmup = 0.2;       // leading fraction of the arrival window not measured
  double drain_s = 120;      // slack past the last session's unqueued finish before a cut
  double divergence = 0.05;  // queue growth rate, as a fraction of the arrival rate
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

struct PlanSpec {
  std::string name = "plan";
  std::string origin;
  std::vector<uint64_t> seeds = {1, 2, 3};
  double peak_rate = 0;
  std::vector<Slo> slos;
  SearchSpec search;
  std::vector<Deployment> deployments;
  std::vector<Candidate> candidates;
};

PlanSpec parse_plan(const YAML::Node& root, const std::string& file, const std::string& base_dir);
// Loads a plan file and applies `-p key=value` overrides first (dotted paths, e.g.
// peak_rate=80, deployments.h100.price_per_gpu_hour=2.5, slo.ttft_s.p99=1).
PlanSpec load_plan(const std::string& path, const std::vector<std::string>& overrides);

// --- Judging one run -----------------------------------------------------------------------

// True when the queue (waiting + swapped sessions) grows, by least squares over the samples in
// [from_s, to_s], faster than `fraction` x `rate` sessions per second.
bool queue_diverges(const std::vector<sim::TimeSample>& ts, double from_s, double to_s, double rate,
                    double fraction);

struct Verdict {
  bool pass = false;
  std::string reason;          // why it failed: "diverged ...", "ttft_s.p99 2.4 > 2", ...
  std::vector<double> values;  // each SLO's statistic (empty when the run was cut)
  int64_t extrapolations = 0;
};
// Judges a finished run at `rate`; sessions arriving in [from_s, to_s] are measured.
Verdict judge_run(const cluster::RunResult& r, const std::vector<Slo>& slos, double rate, double from_s,
                  double to_s, double divergence);

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
  bool feasible = false;  // capacity > 0
  int64_t replicas = 0, gpus = 0;
  double cost_per_hour = 0;
  double cost_per_million_output_tokens = 0;  // at the peak rate
};
Sizing size_fleet(double peak_rate, double capacity, int tp, double price_per_gpu_hour,
                  double output_tokens_per_session);

// --- Running a plan ------------------------------------------------------------------------

struct CandidateResult {
  const Candidate* candidate = nullptr;
  std::vector<SearchResult> seeds;  // in PlanSpec::seeds order
  double capacity = 0;              // lowest over seeds (what sizing uses)
  double capacity_mean = 0, capacity_max = 0;
  bool capped = false;
  std::string limited_by;          // the failure that bounded the lowest seed's capacity
  std::vector<double> slo_values;  // worst over seeds, at each seed's capacity
  int64_t extrapolations = 0;      // summed over the seeds' capacity runs
  Sizing sizing;
  std::vector<std::string> warnings;
  size_t runs = 0;
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
  size_t searches_done, searches_total, runs_done;
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
