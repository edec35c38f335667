// Arrival processes: assign each session's arrival_s. Each process is registered by name.
//
// Contract:
// - `poisson`: sessions keep their order; gaps between arrivals are exponential with mean
//   1/rate, and the first session arrives at the first gap (not at 0). Same seed, same times, on
//   every platform (traces/rng.h).
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
