// Arrival processes: assign each session's arrival_s. Each process is registered by name.
//
// Contract:
// - `poisson`: sessions keep their order; gaps between arrivals are exponential with mean
//   1/rate, and the first session arrives at the first gap (not at 0). Same seed, same times, on
//   every platform (traces/rng.h). A forked session (traces/session.h kFork) whose parent comes
//   before it keeps its offset from the parent (max(0, its arrival - the parent's) before
//   re-timing) and draws no gap: a subagent still starts while its parent waits for it. So a
//   trace without forks gets exactly the times it always did.
// - `replay`: arrival_s stays as the trace has it; sessions are not reordered.
// - arrival_registry() lists each process with a one-line description (`isim list` prints
//   them). An unknown process or a rate that is not a finite number > 0 is an InputError naming
//   `arrival.process` or `arrival.rate` and what is valid.
// Adding a process: one function in arrival.cpp and one registration line there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "traces/registry.h"
#include "traces/session.h"

namespace isim::trace {

struct ArrivalSpec {
  std::string process = "poisson";
  double rate = 1.0;  // sessions per second (poisson only)
  uint64_t seed = 1;
};

struct ArrivalProcess {
  std::function<void(Trace&, const ArrivalSpec&)> apply;
};

using ArrivalRegistry = Registry<ArrivalProcess>;
const ArrivalRegistry& arrival_registry();

void apply_arrivals(Trace& t, const ArrivalSpec& a);

}  // namespace isim::trace
