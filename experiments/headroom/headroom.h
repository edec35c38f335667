// isim headroom: per policy of a spec, the highest load at which the spec meets its SLO, found
// by bisection (experiments/headroom/bisect.h) over simulated runs of the spec as `isim run`
// runs it (experiments/run/run.h run_policy), over several seeds.
//
// Contract:
// - The load knob: arrival.rate (sessions/s) for arrival.process poisson; arrival.users (an
//   integer) for the closed loop `users`. check_headroom_spec refuses, as InputError "ORIGIN:
//   KEY: ...", a spec without `slo:` (key slo) and any other arrival process (key
//   arrival.process: replay keeps the trace's own times, user-phases sets users per phase).
// - A probe at value x with seed s: the spec with the knob at x, `seed` and arrival.seed at s,
//   prepared (trace, arrivals) and run for one policy. It passes when the share of sessions
//   that meet the per-session limits is >= target (when the spec has per-session limits) and
//   the share of turns that meet the turn limits is >= target (when it has turn limits); both
//   shares as `isim run` reports them (summary.json slo.share, turn_goodput.share).
// - Seeds: the spec's seed, seed + 1, ..., seed + seeds - 1. Each (policy, seed) is its own
//   bisection from the spec's value of the knob. A policy is named name(k=v,...) with its
//   parameters (min-waste(estimator=history)); one listed twice is refused. Per policy: mean = the
//   mean of the seeds' highest passing values (lo); worst = their minimum (the highest value at
//   which every seed passed, when passing is monotone); the limiting factor
//   (experiments/headroom/limit.h) is that of the worst seed's first failing probe above its answer
//   (hi), "none" when it never failed. A seed whose every probe failed counts 0.
// - Sessions: by default the spec's, as `isim run` runs them, so at a higher rate the same
//   sessions arrive over a shorter time. With duration_s > 0 (poisson only) each probe at rate
//   r runs ceil(r x duration_s) sessions: drawn with replacement from the trace (trace.draw), or
//   generated (trace.sessions) for a generator source; more than trace::kMaxSessions is an
//   InputError naming --duration. Each probe records its arrivals' span (first to last).
// - HeadroomKnobs: target in (0, 1], tolerance in [0.001, 0.5] (relative: the bisection stops
//   when hi - lo <= tolerance x lo), seeds in [1, 100], duration in [0, 86400] s; the flags
//   --target, --tolerance, --seeds and --duration are read by its table, named once.
// - run_headroom is deterministic: the (policy, seed) searches run on `jobs` threads, each
//   alone, and land in index order, so the result does not depend on jobs. `on_search` (may be
//   null) is told after each search ends, from the thread that ran it, under a lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "experiments/headroom/bisect.h"
#include "experiments/headroom/limit.h"
#include "experiments/spec/experiment.h"

namespace isim::exp {

struct HeadroomKnobs {
  double target = 0.9;
  double tolerance = 0.05;
  int64_t seeds = 3;
  double duration_s = 0;
  template <class Visit>
  void knobs(Visit&& k) {
    k("target", target, above_upto(0, 1), "a share in (0, 1]",
      "SLO attainment a load must reach to pass (share of sessions within every limit)");
    k("tolerance", tolerance, in(0.001, 0.5), "a fraction",
      "bisection stops when hi - lo <= tolerance x lo (relative)");
    k("seeds", seeds, in(1, 100).because("each seed is a whole search"), "an integer",
      "searches per policy, seeds SEED .. SEED+N-1 (the band)");
    k("duration", duration_s, in(0, 86400).because("a day of arrivals"), "a number of seconds",
      "poisson: each probe draws ceil(rate x S) sessions, so arrivals last S s at any rate "
      "(0: the spec's sessions as they are)");
  }
};

// One simulated run of the search.
struct HeadroomProbe {
  double x = 0;
  uint64_t seed = 0;
  double share = -1;       // sessions within the per-session limits (< 0: none given)
  double turn_share = -1;  // turns within the turn limits (< 0: none given)
  bool pass = false;
  Limit limit = Limit::kNone;  // classify_limit of the run (kNone for a passing one)
  LimitFacts facts;
  int64_t sessions = 0;   // sessions of the run
  double arrivals_s = 0;  // the last arrival - the first
};

struct SeedSearch {
  uint64_t seed = 0;
  BisectResult::Outcome outcome = BisectResult::kFound;
  double lo = 0, hi = 0;                    // bisect.h
  std::vector<HeadroomProbe> probes;        // in the order made
  const HeadroomProbe* first_fail() const;  // the probe at hi (nullptr when hi == 0)
};

struct PolicyHeadroom {
  std::string policy;             // name, with parameters as name(k=v,...)
  std::vector<SeedSearch> seeds;  // in seed order
  double mean = 0, worst = 0;
  size_t worst_seed = 0;  // index into seeds of the worst (the first one on a tie)
  Limit limit = Limit::kNone;
  size_t runs() const;
};

struct HeadroomResult {
  std::string name;
  std::string knob;  // "arrival.rate" or "arrival.users"
  std::string unit;  // "sessions/s" or "users"
  double start = 0;  // the spec's value of the knob
  HeadroomKnobs knobs;
  std::vector<PolicyHeadroom> policies;  // in the spec's order
};

// Also refuses duration_s > 0 with a closed loop ("--duration: ..."), and a policy listed
// twice with the same parameters ("ORIGIN: policies[i]: LABEL is listed twice; ...").
void check_headroom_spec(const Experiment& e, const HeadroomKnobs& k = {});
// The knob's name for `e` ("arrival.rate" or "arrival.users"); check_headroom_spec first.
std::string headroom_knob(const Experiment& e);

struct HeadroomProgress {
  size_t searches_done = 0, searches_total = 0, runs_done = 0;
};

HeadroomResult run_headroom(const Experiment& e, const HeadroomKnobs& k, size_t jobs,
                            const std::function<void(const HeadroomProgress&)>& on_search);

// Whether a run with these shares passes `target` (the probe rule above).
bool headroom_pass(double share, double turn_share, double target);

}  // namespace isim::exp
