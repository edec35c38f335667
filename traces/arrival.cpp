#include "traces/arrival.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/input_error.h"
#include "core/rng.h"

namespace isim::trace {

namespace {

void poisson(Trace& t, const ArrivalSpec& a) {
  if (!std::isfinite(a.rate) || a.rate <= 0)
    throw InputError(fmt::format("arrival.rate: must be a finite number > 0, got {}", a.rate));
  // Reads only, so that drawn copies keep sharing their segments.
  const auto fork = [](const Session& s) -> const ContextEvent* {
    const auto& segs = s.segments;
    return !segs.empty() && segs.front().event.kind == ContextEventKind::kFork ? &segs.front().event
                                                                               : nullptr;
  };
  // Before re-timing: each session's first index and its original arrival (a trace without
  // forks needs neither: no index of millions of drawn ids).
  const bool forks = std::any_of(t.begin(), t.end(), fork);
  std::unordered_map<std::string, size_t> index;
  std::vector<double> before(forks ? t.size() : 0);
  for (size_t i = 0; forks && i < t.size(); ++i) {
    index.emplace(t[i].id, i);
    before[i] = t[i].arrival_s;
  }
  std::vector<char> timed(forks ? t.size() : 0, 0);
  Rng rng(a.seed);
  double now = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    Session& s = t[i];
    if (const ContextEvent* f = fork(s)) {
      // A subagent keeps its offset from its parent, once the parent has its new time.
      auto it = index.find(f->parent);
      if (it != index.end() && timed[it->second]) {
        const size_t p = it->second;
        s.arrival_s = t[p].arrival_s + std::max(before[i] - before[p], 0.0);
        timed[i] = 1;
        continue;
      }
    }
    now += rng.exponential(1.0 / a.rate);
    s.arrival_s = now;
    if (forks) timed[i] = 1;
  }
}

void replay(Trace&, const ArrivalSpec&) {}

ArrivalRegistry::Factory process(void (*apply)(Trace&, const ArrivalSpec&)) {
  return [apply] { return std::make_unique<ArrivalProcess>(ArrivalProcess{apply}); };
}

}  // namespace

const ArrivalRegistry& arrival_registry() {
  static const ArrivalRegistry r = [] {
    ArrivalRegistry reg("process");
    reg.add("poisson", "exponential gaps at arrival.rate, seeded", process(poisson));
    reg.add("replay", "the trace's own arrival_s times", process(replay));
    reg.add("users",
            "closed loop: arrival.users concurrent users replay sessions in a row, recycled from "
            "the pool (kv-cache-tester's --recycle)",
            process(apply_users));
    reg.add("user-phases",
            "closed loop per class: arrival.phases give each class's users per phase (repeated "
            "arrival.cycles times); users start sessions only while active",
            process(apply_user_phases));
    return reg;
  }();
  return r;
}

void apply_arrivals(Trace& t, const ArrivalSpec& a) {
  arrival_registry().create(a.process, "arrival.process")->apply(t, a);
}

}  // namespace isim::trace
