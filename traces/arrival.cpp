#include "traces/arrival.h"

#include <fmt/format.h>

#include <cmath>

#include "traces/input_error.h"
#include "traces/rng.h"

namespace isim::trace {

namespace {

void poisson(Trace& t, const ArrivalSpec& a) {
  if (!std::isfinite(a.rate) || a.rate <= 0)
    throw InputError(fmt::format("arrival.rate: must be a finite number > 0, got {}", a.rate));
  Rng rng(a.seed);
  double now = 0;
  for (Session& s : t) {
    now += rng.exponential(1.0 / a.rate);
    s.arrival_s = now;
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
    return reg;
  }();
  return r;
}

void apply_arrivals(Trace& t, const ArrivalSpec& a) {
  arrival_registry().create(a.process, "arrival.process")->apply(t, a);
}

}  // namespace isim::trace
