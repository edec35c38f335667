// Arrival processes: assign each session's arrival_s.
//
// Contract:
// - `poisson`: sessions keep their order; gaps between arrivals are exponential with mean
//   1/rate, and the first session arrives at the first gap (not at 0). Same seed, same times, on
//   every platform (traces/rng.h).
// - `replay`: arrival_s stays as the trace has it; sessions are not reordered.
// - An unknown process or a rate that is not a finite number > 0 is an InputError naming
//   `arrival.process` or `arrival.rate` and what is valid.
#pragma once

#include <cstdint>
#include <string>

#include "traces/session.h"

namespace isim::trace {

struct ArrivalSpec {
  std::string process = "poisson";
  double rate = 1.0;  // sessions per second (poisson only)
  uint64_t seed = 1;
};

void apply_arrivals(Trace& t, const ArrivalSpec& a);

}  // namespace isim::trace
