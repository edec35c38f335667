// Capacity planning: judging a run, the capacity search, fleet sizing, and running a plan's
// searches on a thread pool (experiments/plan.h).
#include "experiments/plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "experiments/parallel.h"
#include "experiments/run.h"
#include "traces/input_error.h"
#include "traces/sources.h"

namespace isim::exp {

const std::vector<SloMetric>& slo_metrics() {
  static const std::vector<SloMetric> v = {
      {"e2e_s", "end-to-end: finish - arrival, intercepts included (s)",
       [](const sim::SessionRecord& r) { return r.e2e_s; }},
      {"normalized_latency_s",
       "(finish - arrival - intercept time) / (decoded + returned tokens) (s/token)",
       [](const sim::SessionRecord& r) { return r.normalized_latency_s; }},
      {"resume_ttft_s", "first token after each resume - intercept end, mean per session (s)",
       [](const sim::SessionRecord& r) { return r.resume_ttft_s; }},
      {"tpot_s", "time per output token after the first (s)",
       [](const sim::SessionRecord& r) { return r.tpot_s; }},
      {"ttft_s", "time to first token: first output - arrival (s)",
       [](const sim::SessionRecord& r) { return r.ttft_s; }},
  };
  return v;
}

const std::vector<std::string>& slo_stats() {
  static const std::vector<std::string> v = {"mean", "p50", "p90", "p99", "max"};
  return v;
}

double slo_stat(const sim::Stat& st, const std::string& stat) {
  if (stat == "mean") return st.mean;
  if (stat == "p50") return st.p50;
  if (stat == "p90") return st.p90;
  if (stat == "p99") return st.p99;
  return st.max;
}

bool queue_diverges(const std::vector<sim::TimeSample>& ts, double from_s, double to_s, double rate,
                    double fraction) {
  double n = 0, st = 0, sq = 0, stt = 0, stq = 0;
  for (const auto& s : ts) {
    if (s.t_s < from_s || s.t_s > to_s) continue;
    const double q = static_cast<double>(s.waiting + s.swapped);
    n += 1;
    st += s.t_s;
    sq += q;
    stt += s.t_s * s.t_s;
    stq += s.t_s * q;
  }
  const double var = n * stt - st * st;
  if (n < 3 || var <= 0) return false;
  const double slope = (n * stq - st * sq) / var;  // sessions per second
  return slope > fraction * rate;
}

Verdict judge_run(const cluster::RunResult& r, const std::vector<Slo>& slos, double rate, double from_s,
                  double to_s, double divergence) {
  Verdict v;
  v.extrapolations = r.summary.extrapolations;
  if (!r.skipped.empty()) {
    v.reason = fmt::format("{} session(s) never fit, e.g. {}", r.skipped.size(), r.skipped.front());
    return v;
  }
  for (const auto& s : slos) {
    std::vector<double> xs;
    for (const auto& rec : r.sessions) {
      if (rec.arrival_s < from_s || rec.arrival_s > to_s) continue;
      double x = slo_metrics()[s.metric].value(rec);
      if (x >= 0) xs.push_back(x);
    }
    v.values.push_back(xs.empty() ? 0.0 : slo_stat(sim::make_stat(std::move(xs)), s.stat));
  }
  if (queue_diverges(r.timeseries, from_s, to_s, rate, divergence)) {
    v.reason = "diverged (queue grows)";
    return v;
  }
  for (size_t i = 0; i < slos.size(); ++i)
    if (v.values[i] > slos[i].limit) {
      v.reason = fmt::format("{} {:.4g} > {:.4g}", slos[i].key, v.values[i], slos[i].limit);
      return v;
    }
  v.pass = true;
  return v;
}

SearchResult find_capacity(const std::function<Verdict(double)>& probe, const SearchSpec& s) {
  SearchResult res;
  auto test = [&](double rate) {
    res.probes.push_back(Probe{rate, probe(rate)});
    const bool pass = res.probes.back().verdict.pass;
    if (pass) {
      res.capacity = std::max(res.capacity, rate);
    } else {
      res.failed_at = std::min(res.failed_at, rate);
    }
    return pass;
  };
  double rate = s.start_rate;
  if (test(rate)) {
    while (true) {
      if (rate >= s.max_rate) {
        res.capped = true;
        return res;
      }
      rate = std::min(rate * 2, s.max_rate);
      if (!test(rate)) break;
    }
  } else {
    while (true) {
      rate /= 2;
      if (rate < s.min_rate) return res;  // infeasible: capacity 0
      if (test(rate)) break;
    }
  }
  while (res.failed_at - res.capacity > s.tolerance * res.capacity)
    test((res.capacity + res.failed_at) / 2);
  return res;
}

Sizing size_fleet(double peak_rate, double capacity, int tp, double price_per_gpu_hour,
                  double output_tokens_per_session) {
  Sizing z;
  if (!(capacity > 0)) return z;
  z.feasible = true;
  z.replicas = static_cast<int64_t>(std::ceil(peak_rate / capacity));
  z.gpus = z.replicas * tp;
  z.cost_per_hour = static_cast<double>(z.gpus) * price_per_gpu_hour;
  const double tokens_per_hour = peak_rate * 3600.0 * output_tokens_per_session;
  z.cost_per_million_output_tokens =
      tokens_per_hour > 0 ? z.cost_per_hour / (tokens_per_hour / 1e6) : 0;
  return z;
}

namespace {

struct Workload {
  Inputs in;
  double from_s = 0, to_s = 0;  // the measured span of arrivals
  double deadline_s = 0;        // a run still busy after this is cut
};

// The trace of one run: ceil(rate x window) sessions with Poisson arrivals, or the trace's own
// arrivals scaled so that the mean gap is 1/rate.
Workload make_workload(Experiment e, const SearchSpec& s, double rate, uint64_t seed) {
  e.seed = seed;
  e.arrival.seed = seed;
  e.arrival.rate = rate;
  const bool replay = e.arrival.process == "replay";
  if (!replay) {
    const auto n = static_cast<int64_t>(std::ceil(rate * s.window_s));
    if (trace::trace_source_registry().create(e.trace.from, "trace.from")->generated) {
      e.trace.sessions = n;
    } else {
      e.trace.draw = n;
    }
  }
  Workload w;
  w.in = prepare(e);
  auto& t = w.in.trace;
  double window = s.window_s;
  if (replay) {
    if (t.size() < 2) throw InputError(e.origin + ": trace: replay needs at least two sessions");
    double t0 = t.front().arrival_s, t1 = t0;
    for (const auto& x : t) {
      t0 = std::min(t0, x.arrival_s);
      t1 = std::max(t1, x.arrival_s);
    }
    if (!(t1 > t0))
      throw InputError(e.origin + ": trace: replay needs sessions that arrive at different times");
    const double scale = (1.0 / rate) / ((t1 - t0) / static_cast<double>(t.size() - 1));
    for (auto& x : t) x.arrival_s = (x.arrival_s - t0) * scale;
    window = (t1 - t0) * scale;
  }
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

Verdict run_at(const PlanSpec& p, const Candidate& c, double rate, uint64_t seed) {
  Workload w = make_workload(c.experiment, p.search, rate, seed);
  const auto& pol = c.experiment.policies.front();
  auto policy = policy::policy_registry().create(pol.name, pol.params.where, pol.params);
  auto executor =
      sim::executor_registry().create("sim", "executor", w.in.profile, sim::ExecutorParams{});
  cluster::SingleReplica router;
  cluster::Cluster sim(w.in.trace,
                       {cluster::ReplicaSpec{c.experiment.engine, executor.get(), policy.get(), ""}},
                       router);
  sim.load();
  // A run still busy at its drain deadline is cut: it has not kept up with the rate.
  if (sim.run_until(sim::from_seconds(w.deadline_s)))
    return judge_run(sim.result(), p.slos, rate, w.from_s, w.to_s, p.search.divergence);
  Verdict v;
  v.reason = fmt::format("diverged (still busy at {:.0f} s)", w.deadline_s);
  v.extrapolations = executor->cost_model().extrapolations();
  return v;
}

// Mean decoded tokens per session of the workload at the peak rate, first seed.
double output_tokens_per_session(const PlanSpec& p, std::vector<std::string>& notes) {
  const auto& c = p.candidates.front();
  Workload w = make_workload(c.experiment, p.search, p.peak_rate, p.seeds.front());
  notes = w.in.notes;
  double tokens = 0;
  for (const auto& s : w.in.trace)
    for (const auto& seg : s.segments) tokens += static_cast<double>(seg.output);
  return w.in.trace.empty() ? 0 : tokens / static_cast<double>(w.in.trace.size());
}

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

}  // namespace

PlanResult run_plan(const PlanSpec& spec, const PlanOptions& o) {
  PlanResult res;
  res.spec = &spec;
  res.output_tokens_per_session = output_tokens_per_session(spec, res.notes);

  const size_t nseeds = spec.seeds.size();
  const size_t total = spec.candidates.size() * nseeds;
  std::vector<SearchResult> searches(total);
  std::mutex mu;  // guards progress
  size_t done = 0, runs = 0;
  run_indexed(total, o.jobs, [&](size_t i) {
    const Candidate& c = spec.candidates[i / nseeds];
    const uint64_t seed = spec.seeds[i % nseeds];
    searches[i] = find_capacity(
        [&](double rate) {
          Verdict v = run_at(spec, c, rate, seed);
          std::lock_guard<std::mutex> lock(mu);
          ++runs;
          if (o.on_progress) o.on_progress(PlanProgress{done, total, runs});
          return v;
        },
        spec.search);
    std::lock_guard<std::mutex> lock(mu);
    ++done;
    if (o.on_progress) o.on_progress(PlanProgress{done, total, runs});
  });

  for (size_t ci = 0; ci < spec.candidates.size(); ++ci) {
    CandidateResult cr;
    cr.candidate = &spec.candidates[ci];
    cr.seeds.assign(searches.begin() + static_cast<std::ptrdiff_t>(ci * nseeds),
                    searches.begin() + static_cast<std::ptrdiff_t>((ci + 1) * nseeds));
    summarize_candidate(spec, cr);
    const auto& d = spec.deployments[cr.candidate->deployment];
    cr.sizing = size_fleet(spec.peak_rate, cr.capacity, d.tp, d.price_per_gpu_hour,
                           res.output_tokens_per_session);
    res.ranked.push_back(std::move(cr));
  }
  rank_plan(res);
  return res;
}

}  // namespace isim::exp
