// Simulation: owns the event queue and runs one engine (a cluster later holds several) to the
// end of the trace.
//
// Contract:
// - The loop pops every event at the earliest time, dispatches each to its engine, then lets
//   idle engines start an iteration. Equal inputs give identical results.
// - Time-series samples are taken every `timeseries_interval_s` of simulated time, each showing
//   the state in force at that instant.
// - `run` returns when no events remain. Sessions that never fit are skipped and listed in
//   `RunResult::skipped`.
#pragma once

#include <string>
#include <vector>

#include "sim/engine.h"

namespace isim::sim {

struct RunResult {
  std::vector<SessionRecord> sessions;
  Summary summary;
  std::vector<TimeSample> timeseries;
  std::vector<std::string> skipped;
  std::vector<std::pair<std::string, std::string>> policy_facts;  // e.g. the estimator
  ExecutorReport executor;  // live executors: measured seconds, integrity, token streams
};

// `observer`, when set, sees every iteration as it starts.
RunResult simulate(const trace::Trace& trace, const EngineConfig& config, Executor& executor,
                   Policy& policy, std::function<void(const IterationRecord&)> observer = nullptr);

}  // namespace isim::sim
