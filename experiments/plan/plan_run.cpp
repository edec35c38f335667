// Running a plan (experiments/plan/plan.h): the capacity searches, then the fleet searches (one per
// candidate, router and layout), each on the thread pool; results land by index, so they do not
// depend on the number of jobs.
#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/parallel.h"
#include "experiments/plan/plan.h"
#include "experiments/plan/plan_shards.h"
#include "experiments/plan/plan_sim.h"

namespace isim::exp {

namespace {

void summarize_candidate(const PlanSpec& p, CandidateResult& cr) {
  const auto& ss = cr.seeds;
  cr.capacity = ss.front().capacity;
  size_t low = 0;
  double sum = 0;
  for (size_t i = 0; i < ss.size(); ++i) {
    if (ss[i].capacity < cr.capacity) {
      cr.capacity = ss[i].capacity;
      low = i;
    }
    cr.capacity_max = std::max(cr.capacity_max, ss[i].capacity);
    sum += ss[i].capacity;
    cr.capped = cr.capped || ss[i].capped;
    cr.runs += ss[i].probes.size();
  }
  cr.capacity_mean = sum / static_cast<double>(ss.size());
  // The reason of the lowest failing probe of the seed with the lowest capacity.
  for (const auto& pr : ss[low].probes)
    if (!pr.verdict.pass && pr.rate == ss[low].failed_at) cr.limited_by = pr.verdict.reason;
  if (ss[low].capped) cr.limited_by = fmt::format("none up to max_rate {}", p.search.max_rate);
  cr.slo_values.assign(p.slos.size(), 0.0);
  for (const auto& sr : ss)
    for (const auto& pr : sr.probes)
      if (pr.verdict.pass && pr.rate == sr.capacity) {
        for (size_t i = 0; i < p.slos.size(); ++i)
          cr.slo_values[i] = std::max(cr.slo_values[i], pr.verdict.values[i]);
        cr.extrapolations += pr.verdict.extrapolations;
      }
}

// Counts runs and finished searches, and reports them one call at a time.
class Progress {
 public:
  Progress(const PlanOptions& o, size_t searches, size_t fleets) : o_(o) {
    p_ = PlanProgress{0, searches, 0, fleets, 0};
  }
  void run() { bump(p_.runs_done); }
  void search() { bump(p_.searches_done); }
  void fleet() { bump(p_.fleets_done); }

 private:
  void bump(size_t& n) {
    std::lock_guard<std::mutex> lock(mu_);
    ++n;
    if (o_.on_progress) o_.on_progress(p_);
  }
  const PlanOptions& o_;
  std::mutex mu_;
  PlanProgress p_{};
};

// Every (candidate, seed) capacity search of `cands`, candidate-major.
std::vector<SearchResult> search_capacities(const PlanSpec& spec, const PlanOptions& o,
                                            const std::vector<size_t>& cands, Progress& progress) {
  const size_t nseeds = spec.seeds.size();
  std::vector<SearchResult> searches(cands.size() * nseeds);
  run_indexed(searches.size(), o.jobs, [&](size_t i) {
    const Candidate& c = spec.candidates[cands[i / nseeds]];
    const uint64_t seed = spec.seeds[i % nseeds];
    searches[i] = find_capacity(
        [&](double rate) {
          Verdict v = run_judged(spec, c, FleetLayout{}, 1, rate, seed);
          progress.run();
          return v;
        },
        spec.search);
    progress.search();
  });
  return searches;
}

// The fleet a candidate's capacity asks for (ceil(peak_rate / capacity) groups of dp cores), at
// most kMaxEngines engine cores, before any fleet is built.
void check_fleet_size(const PlanSpec& spec, const CandidateResult& cr, const Deployment& d) {
  if (!(cr.capacity > 0)) return;
  const double groups = std::ceil(spec.peak_rate / cr.capacity);
  if (groups * d.par.dp <= static_cast<double>(kMaxEngines)) return;
  throw InputError(fmt::format(
      "{}: peak_rate: {} sessions/s at the capacity {} sessions/s per replica of {} ({}) needs "
      "{} replicas of {} engine core(s), more than the {} engine cores a fleet may hold ({})",
      spec.origin, spec.peak_rate, cr.capacity, d.name, cr.candidate->policy, groups, d.par.dp,
      kMaxEngines, kEnginesWhy));
}

// n replicas at the peak rate pass when every seed passes; the first failing seed ends it.
Verdict check_fleet(const PlanSpec& spec, CandidateResult& cr, int64_t n, Progress& progress) {
  Verdict v;
  for (const uint64_t seed : spec.seeds) {
    v = run_judged(spec, *cr.candidate, FleetLayout{cr.router, cr.split, cr.planner}, n,
                   spec.peak_rate, seed);
    ++cr.fleet_runs;
    progress.run();
    if (!v.pass) {
      v.reason = fmt::format("seed {}: {}", seed, v.reason);
      break;
    }
  }
  return v;
}

// The fleet search of every candidate with a guess, the largest guesses first (they take
// longest, so the pool's last items are short).
void search_fleets(const PlanSpec& spec, const PlanOptions& o, std::vector<CandidateResult>& rs,
                   Progress& progress) {
  std::vector<size_t> order;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].guess > 0) {
      order.push_back(i);
    } else {
      progress.fleet();  // no rate passed: nothing to simulate
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rs[a].guess > rs[b].guess; });
  run_indexed(order.size(), o.jobs, [&](size_t k) {
    CandidateResult& cr = rs[order[k]];
    cr.fleet = search_fleet(
        cr.guess,
        [&](int64_t n) {
          const int64_t dp = spec.deployments[cr.candidate->deployment].par.dp;
          if (n * dp > kMaxEngines) {  // not built: more than a fleet may hold
            Verdict v;
            v.reason = fmt::format("more than the {} engine cores a fleet may hold", kMaxEngines);
            return v;
          }
          return check_fleet(spec, cr, n, progress);
        },
        spec.search.max_fleet_factor);
    progress.fleet();
  });
}

}  // namespace

std::vector<CandidateResult> run_candidates(const PlanSpec& spec, const PlanOptions& o,
                                            const std::vector<size_t>& cands,
                                            double output_tokens_per_session) {
  const size_t nseeds = spec.seeds.size();
  Progress progress(o, cands.size() * nseeds,
                    cands.size() * spec.routers.size() * spec.layouts.size());
  const std::vector<SearchResult> searches = search_capacities(spec, o, cands, progress);

  std::vector<CandidateResult> rs;
  for (size_t k = 0; k < cands.size(); ++k) {
    CandidateResult cr;
    cr.candidate = &spec.candidates[cands[k]];
    cr.seeds.assign(searches.begin() + static_cast<std::ptrdiff_t>(k * nseeds),
                    searches.begin() + static_cast<std::ptrdiff_t>((k + 1) * nseeds));
    summarize_candidate(spec, cr);
    const auto& d = spec.deployments[cr.candidate->deployment];
    check_fleet_size(spec, cr, d);
    cr.guess = size_fleet(spec.peak_rate, cr.capacity, d.gpus_per_group(), d.price_per_gpu_hour,
                          output_tokens_per_session)
                   .replicas;
    for (const auto& router : spec.routers)
      for (const auto& l : spec.layouts) {
        rs.push_back(cr);
        rs.back().router = &router;
        rs.back().split = &spec.pd_splits[l.split];
        rs.back().planner = &spec.planners[l.planner];
      }
  }
  search_fleets(spec, o, rs, progress);
  for (auto& cr : rs) {
    const auto& d = spec.deployments[cr.candidate->deployment];
    cr.sizing = fleet_cost(cr.fleet.sized, spec.peak_rate, d.gpus_per_group(), d.price_per_gpu_hour,
                           output_tokens_per_session);
  }
  return rs;
}

PlanResult run_plan(const PlanSpec& spec, const PlanOptions& o) {
  PlanResult res;
  res.spec = &spec;
  res.output_tokens_per_session = output_tokens_per_session(spec, res.notes);
  std::vector<size_t> all(spec.candidates.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  res.ranked = run_candidates(spec, o, all, res.output_tokens_per_session);
  rank_plan(res);
  return res;
}

PlanResult assemble_plan(const PlanSpec& spec,
                         const std::map<size_t, std::vector<CandidateResult>>& results) {
  PlanResult res;
  res.spec = &spec;
  res.output_tokens_per_session = output_tokens_per_session(spec, res.notes);
  for (const auto& [c, rs] : results) res.ranked.insert(res.ranked.end(), rs.begin(), rs.end());
  rank_plan(res);
  return res;
}

}  // namespace isim::exp
