#include <doctest/doctest.h>

#include "policies/estimator.h"
#include "traces/input_error.h"

using namespace isim;
using namespace isim::policy;

namespace {
std::unique_ptr<DurationEstimator> make(const std::string& name, int64_t min_samples = 8) {
  return estimator_registry().create(name, "test", EstimatorOptions{min_samples});
}
}  // namespace

TEST_CASE("oracle and elapsed") {
  auto o = make("oracle");
  CHECK(o->remaining_s("qa", 0.25, 1.0) == doctest::Approx(0.75));
  CHECK(o->remaining_s("qa", 2.0, 1.0) == 0.0);  // overdue: nothing left
  auto e = make("elapsed");
  CHECK(e->remaining_s("qa", 0.25, 1.0) == doctest::Approx(0.25));
  CHECK(e->remaining_s("qa", 0.0, 99.0) == 0.0);
}

TEST_CASE("history: mean residual life from completed intercepts of the same kind") {
  auto h = make("history", 3);
  h->prepare({{"tool", 1.0}, {"tool", 2.0}, {"tool", 3.0}, {"tool", 10.0}, {"chat", 30.0}});
  // Too little history: falls back to elapsed.
  h->observe("tool", 1.0);
  h->observe("tool", 2.0);
  CHECK(h->remaining_s("tool", 0.5, 99) == doctest::Approx(0.5));
  h->observe("tool", 3.0);
  // E[D - t | D > t] over {1, 2, 3}:
  CHECK(h->remaining_s("tool", 0.0, 99) == doctest::Approx(2.0));  // mean 2 - 0
  CHECK(h->remaining_s("tool", 1.5, 99) == doctest::Approx(1.0));  // mean(2, 3) - 1.5
  CHECK(h->remaining_s("tool", 2.0, 99) == doctest::Approx(1.0));  // only 3 is longer
  // Nothing observed lasted longer than 3 s: fall back to elapsed.
  CHECK(h->remaining_s("tool", 3.0, 99) == doctest::Approx(3.0));
  h->observe("tool", 10.0);
  CHECK(h->remaining_s("tool", 3.0, 99) == doctest::Approx(7.0));
  // Kinds do not mix, and the true duration is never read.
  CHECK(h->remaining_s("chat", 5.0, 30.0) == doctest::Approx(5.0));
}

TEST_CASE("unknown estimator names list the valid ones") {
  CHECK_THROWS_WITH_AS(make("psychic"),
                       "test: unknown estimator 'psychic'; valid: elapsed, history, oracle",
                       InputError);
}
