// isim headroom's search over policies and seeds (experiments/headroom/headroom.h).
#include "experiments/headroom/headroom.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/parallel.h"
#include "experiments/run/run.h"
#include "experiments/spec/plan_spec_parts.h"
#include "traces/limits.h"
#include "traces/sources.h"

namespace isim::exp {

const HeadroomProbe* SeedSearch::first_fail() const {
  if (hi == 0) return nullptr;
  for (const auto& p : probes)
    if (!p.pass && p.x == hi) return &p;
  return nullptr;
}

size_t PolicyHeadroom::runs() const {
  size_t n = 0;
  for (const auto& s : seeds) n += s.probes.size();
  return n;
}

std::string headroom_knob(const Experiment& e) {
  return e.arrival.process == "users" ? "arrival.users" : "arrival.rate";
}

bool headroom_pass(double share, double turn_share, double target) {
  return (share < 0 || share >= target) && (turn_share < 0 || turn_share >= target);
}

namespace {

// ceil(rate x duration_s), at most trace::kMaxSessions (else InputError naming --duration).
double duration_sessions(double rate, double duration_s) {
  const double n = std::ceil(rate * duration_s);
  if (!(n <= static_cast<double>(trace::kMaxSessions)))  // before the draw allocates them
    throw InputError(fmt::format(
        "--duration: a probe at {} sessions/s over {} s runs {} sessions, more than the {} a run "
        "holds; lower --duration",
        rate, duration_s, n, trace::kMaxSessions));
  return n;
}

}  // namespace

void check_headroom_spec(const Experiment& e, const HeadroomKnobs& k) {
  if (e.slo.empty() && e.turn_slo.empty())
    throw InputError(fmt::format(
        "{}: slo: headroom needs the spec's SLO, the per-session (or turn) limits a load must "
        "meet; add e.g. `slo: {{ttft_s: 2, tpot_s: 0.05}}` (docs/headroom.md)",
        e.origin));
  const std::string& p = e.arrival.process;
  if (p != "poisson" && p != "users")
    throw InputError(fmt::format(
        "{}: arrival.process: headroom varies arrival.rate (poisson) or arrival.users (users), "
        "got {}; run it with -p arrival.process=poisson -p arrival.rate=R",
        e.origin, p));
  if (k.duration_s > 0 && p != "poisson")
    throw InputError(
        fmt::format("--duration: sets how long a poisson probe's arrivals last; a closed loop ({}: "
                    "arrival.process {}) runs users x sessions_per_user sessions",
                    e.origin, p));
  if (k.duration_s > 0) (void)duration_sessions(e.arrival.rate, k.duration_s);  // the first probe
  for (size_t i = 0; i < e.policies.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (component_label(e.policies[i].name, e.policies[i].params) ==
          component_label(e.policies[j].name, e.policies[j].params))
        throw InputError(
            fmt::format("{}: policies[{}]: {} is listed twice; headroom answers once per policy",
                        e.origin, i, component_label(e.policies[i].name, e.policies[i].params)));
}

namespace {

// The spec at knob value x and seed s (with `duration_s` > 0: ceil(x x duration_s) sessions).
Experiment at(Experiment e, double x, uint64_t seed, double duration_s) {
  if (e.arrival.process == "users") {
    e.arrival.users = static_cast<int64_t>(x);
  } else {
    e.arrival.rate = x;
  }
  if (duration_s > 0) {
    const double n = duration_sessions(x, duration_s);
    if (trace::trace_source_registry().create(e.trace.from, "trace.from")->generated) {
      e.trace.sessions = static_cast<int64_t>(n);
    } else {
      e.trace.draw = static_cast<int64_t>(n);
    }
  }
  e.seed = seed;
  e.arrival.seed = seed;
  return e;
}

HeadroomProbe probe(const Experiment& base, const PolicySpec& p, double x, uint64_t seed,
                    const HeadroomKnobs& k) {
  const Experiment e = at(base, x, seed, k.duration_s);
  const Inputs in = prepare(e);
  const cluster::RunResult r = run_policy(e, in, p);
  HeadroomProbe h;
  h.x = x;
  h.seed = seed;
  h.sessions = static_cast<int64_t>(in.trace.size());
  if (!in.trace.empty()) {
    double first = in.trace.front().arrival_s, last = first;
    for (const auto& s : in.trace) {
      first = std::min(first, s.arrival_s);
      last = std::max(last, s.arrival_s);
    }
    h.arrivals_s = last - first;
  }
  if (!e.slo.empty()) h.share = r.summary.slo.share;
  if (r.summary.turn_goodput.set) h.turn_share = r.summary.turn_goodput.share;
  h.pass = headroom_pass(h.share, h.turn_share, k.target);
  h.facts = limit_facts(r, e.slo, e.turn_slo);
  h.limit = h.pass ? Limit::kNone : classify_limit(h.facts);
  return h;
}

SeedSearch search(const Experiment& e, const PolicySpec& p, uint64_t seed, double start,
                  const HeadroomKnobs& k) {
  SeedSearch s;
  s.seed = seed;
  const BisectResult b = bisect(start, k.tolerance, e.arrival.process == "users", [&](double x) {
    s.probes.push_back(probe(e, p, x, seed, k));
    return s.probes.back().pass;
  });
  s.outcome = b.outcome;
  s.lo = b.lo;
  s.hi = b.hi;
  return s;
}

void summarize(PolicyHeadroom& ph) {
  double sum = 0;
  for (size_t i = 0; i < ph.seeds.size(); ++i) {
    sum += ph.seeds[i].lo;
    if (ph.seeds[i].lo < ph.seeds[ph.worst_seed].lo) ph.worst_seed = i;
  }
  ph.mean = sum / static_cast<double>(ph.seeds.size());
  ph.worst = ph.seeds[ph.worst_seed].lo;
  const HeadroomProbe* f = ph.seeds[ph.worst_seed].first_fail();
  ph.limit = f ? f->limit : Limit::kNone;
}

}  // namespace

HeadroomResult run_headroom(const Experiment& e, const HeadroomKnobs& k, size_t jobs,
                            const std::function<void(const HeadroomProgress&)>& on_search) {
  check_headroom_spec(e, k);
  HeadroomResult res;
  res.name = e.name;
  res.knob = headroom_knob(e);
  res.unit = e.arrival.process == "users" ? "users" : "sessions/s";
  res.start = e.arrival.process == "users" ? static_cast<double>(e.arrival.users) : e.arrival.rate;
  res.knobs = k;
  const auto seeds = static_cast<size_t>(k.seeds);
  res.policies.resize(e.policies.size());
  for (size_t i = 0; i < e.policies.size(); ++i) {
    res.policies[i].policy = component_label(e.policies[i].name, e.policies[i].params);
    res.policies[i].seeds.resize(seeds);
  }
  std::mutex mu;
  HeadroomProgress prog{0, e.policies.size() * seeds, 0};
  run_indexed(prog.searches_total, jobs, [&](size_t i) {
    const size_t pi = i / seeds, si = i % seeds;
    SeedSearch s = search(e, e.policies[pi], e.seed + si, res.start, k);
    std::lock_guard<std::mutex> lock(mu);
    prog.searches_done += 1;
    prog.runs_done += s.probes.size();
    res.policies[pi].seeds[si] = std::move(s);
    if (on_search) on_search(prog);
  });
  for (auto& ph : res.policies) summarize(ph);
  return res;
}

}  // namespace isim::exp
