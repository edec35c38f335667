#include "traces/arrival.h"

#include <fmt/format.h>

#include <cmath>

#include "traces/input_error.h"
#include "traces/rng.h"

namespace isim::trace {

void apply_arrivals(Trace& t, const ArrivalSpec& a) {
  if (a.process == "replay") return;
  if (a.process != "poisson")
    throw InputError(
        fmt::format("arrival.process: unknown process '{}'; valid: poisson, replay", a.process));
  if (!std::isfinite(a.rate) || a.rate <= 0)
    throw InputError(fmt::format("arrival.rate: must be a finite number > 0, got {}", a.rate));
  Rng rng(a.seed);
  double now = 0;
  for (Session& s : t) {
    now += rng.exponential(1.0 / a.rate);
    s.arrival_s = now;
  }
}

}  // namespace isim::trace
