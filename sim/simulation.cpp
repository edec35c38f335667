#include "sim/simulation.h"

#include <algorithm>

namespace isim::sim {

RunResult simulate(const trace::Trace& trace, const EngineConfig& config, Executor& executor,
                   Policy& policy, std::function<void(const IterationRecord&)> observer) {
  EventQueue queue;
  Engine engine(0, queue, config, executor, policy, trace);
  if (observer) engine.set_observer(std::move(observer));
  if (executor.live()) executor.begin(trace, engine.blocks().gpu, engine.blocks().cpu);
  engine.load();
  const Nanos dt =
      config.timeseries_interval_s > 0 ? from_seconds(config.timeseries_interval_s) : 0;
  Nanos next_sample = 0;
  Nanos end = 0;
  while (!queue.empty()) {
    const Nanos t = queue.top().time;
    // Samples strictly before t see the state left by the events before t.
    while (dt > 0 && next_sample < t) {
      engine.sample(next_sample);
      next_sample += dt;
    }
    while (!queue.empty() && queue.top().time == t) engine.handle(queue.pop());
    engine.maybe_start();
    end = t;
  }
  if (dt > 0 && next_sample <= end) engine.sample(end);
  engine.close(end);
  RunResult r;
  r.sessions = engine.records();
  r.summary =
      summarize(r.sessions, engine.counters(), engine.waste(), engine.blocks().gpu,
                engine.blocks().cpu, executor.cost_model().extrapolations(), engine.turn_ttfts());
  r.timeseries = engine.timeseries();
  r.skipped = engine.skipped();
  r.policy_facts = policy.describe();
  r.executor = executor.report();
  return r;
}

}  // namespace isim::sim
