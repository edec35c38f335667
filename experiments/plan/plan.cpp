// Capacity planning: judging a run, the capacity search, and sizing a fleet by arithmetic and by
// searching simulated sizes (experiments/plan/plan.h).
#include "experiments/plan/plan.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace isim::exp {

namespace {

// Turn metric `metric` (turn_slo_metrics() order: itl_max_s, request_ttft_s) of the turns that
// start in [from_s, to_s]; turns where it is undefined are left out.
std::vector<double> turn_values(const std::vector<sim::TurnRecord>& turns, size_t metric,
                                double from_s, double to_s) {
  const bool itl = turn_slo_metrics()[metric] == "itl_max_s";
  std::vector<double> xs;
  for (const auto& t : turns) {
    if (t.start_s < from_s || t.start_s > to_s) continue;
    const double x = itl ? t.itl_max_s : t.ttft_s;
    if (x >= 0) xs.push_back(x);
  }
  return xs;
}

}  // namespace

Verdict judge_run(const cluster::RunResult& r, const std::vector<Slo>& slos, double rate,
                  double from_s, double to_s, double divergence) {
  Verdict v;
  v.extrapolations = r.summary.extrapolations;
  if (!r.skipped.empty()) {
    v.reason = fmt::format("{} session(s) never fit, e.g. {}", r.skipped.size(), r.skipped.front());
    return v;
  }
  for (const auto& s : slos) {
    std::vector<double> xs;
    if (s.turn) {
      xs = turn_values(r.turns, s.metric, from_s, to_s);
    } else {
      for (const auto& rec : r.sessions) {
        if (rec.arrival_s < from_s || rec.arrival_s > to_s) continue;
        double x = slo_metrics()[s.metric].value(rec);
        if (x >= 0) xs.push_back(x);
      }
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

Sizing fleet_cost(int64_t replicas, double peak_rate, int64_t gpus_per_replica,
                  double price_per_gpu_hour, double output_tokens_per_session) {
  Sizing z;
  if (replicas <= 0) return z;
  z.feasible = true;
  z.replicas = replicas;
  z.gpus = z.replicas * gpus_per_replica;
  z.cost_per_hour = static_cast<double>(z.gpus) * price_per_gpu_hour;
  const double tokens_per_hour = peak_rate * 3600.0 * output_tokens_per_session;
  z.cost_per_million_output_tokens =
      tokens_per_hour > 0 ? z.cost_per_hour / (tokens_per_hour / 1e6) : 0;
  return z;
}

Sizing size_fleet(double peak_rate, double capacity, int64_t gpus_per_replica,
                  double price_per_gpu_hour, double output_tokens_per_session) {
  if (!(capacity > 0)) return Sizing{};
  return fleet_cost(static_cast<int64_t>(std::ceil(peak_rate / capacity)), peak_rate,
                    gpus_per_replica, price_per_gpu_hour, output_tokens_per_session);
}

int64_t fleet_bound(int64_t guess, double factor) {
  // At most kMaxEngines (a guess is at most that: plan_run.cpp checks it; factor <= 64).
  const double scaled = std::ceil(factor * static_cast<double>(guess));
  return std::min(std::max(static_cast<int64_t>(std::min(scaled, 1e15)), guess + 4), kMaxEngines);
}

std::string FleetSearch::simulated() const {
  std::string s;
  for (const auto& c : checks)
    s += fmt::format("{}{}:{}", s.empty() ? "" : " ", c.replicas, c.verdict.pass ? "pass" : "fail");
  return s;
}

std::string FleetSearch::limited_by() const {
  const FleetCheck* best = nullptr;
  for (const auto& c : checks)
    if (!c.verdict.pass && (sized == 0 || c.replicas < sized) &&
        (!best || c.replicas > best->replicas))
      best = &c;
  return best ? fmt::format("{}: {}", best->replicas, best->verdict.reason) : "";
}

FleetSearch search_fleet(int64_t guess, const std::function<Verdict(int64_t)>& check,
                         double max_fleet_factor) {
  FleetSearch fs;
  fs.guess = std::max<int64_t>(guess, 1);
  fs.bound = fleet_bound(fs.guess, max_fleet_factor);
  auto test = [&](int64_t n) {
    fs.checks.push_back(FleetCheck{n, check(n)});
    if (fs.checks.back().verdict.pass) fs.sized = n;
    return fs.checks.back().verdict.pass;
  };
  if (test(fs.guess)) {
    for (int64_t n = fs.guess - 1; n >= 1 && test(n);) --n;
  } else {
    for (int64_t n = fs.guess + 1; n <= fs.bound && !test(n);) ++n;
  }
  return fs;
}

}  // namespace isim::exp
