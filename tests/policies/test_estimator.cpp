#include <doctest/doctest.h>

#include "core/input_error.h"
#include "policies/estimator.h"

using namespace isim;
using namespace isim::policy;

namespace {
std::unique_ptr<DurationEstimator> make(const std::string& name, int64_t min_samples = 8) {
  return estimator_registry().create(name, "test", EstimatorOptions{min_samples});
}
}  // namespace

TEST_CASE("oracle and elapsed") {
  // A session paused in a 1 s "qa" intercept: only the oracle reads that duration.
  const trace::Session src{"s", 0.0, {{10, 1, trace::Intercept{"qa", 1.0}}, {1, 1, std::nullopt}}};
  const auto s = sim::SessionState::arrive(src, 0, 0);
  auto o = make("oracle");
  CHECK(o->remaining_for(s, 0.25) == doctest::Approx(0.75));
  CHECK(o->remaining_for(s, 2.0) == 0.0);                         // overdue: nothing left
  CHECK_THROWS_AS(o->remaining_s("qa", 0.25), std::logic_error);  // it needs the session
  auto e = make("elapsed");
  CHECK(e->remaining_s("qa", 0.25) == doctest::Approx(0.25));
  CHECK(e->remaining_for(s, 0.25) == doctest::Approx(0.25));  // the kind only, never the future
  CHECK(e->remaining_s("qa", 0.0) == 0.0);
}

TEST_CASE("history: mean residual life from completed intercepts of the same kind") {
  auto h = make("history", 3);
  // Too little history: falls back to elapsed.
  h->observe("tool", 1.0);
  h->observe("tool", 2.0);
  CHECK(h->remaining_s("tool", 0.5) == doctest::Approx(0.5));
  h->observe("tool", 3.0);
  // E[D - t | D > t] over {1, 2, 3}:
  CHECK(h->remaining_s("tool", 0.0) == doctest::Approx(2.0));  // mean 2 - 0
  CHECK(h->remaining_s("tool", 1.5) == doctest::Approx(1.0));  // mean(2, 3) - 1.5
  CHECK(h->remaining_s("tool", 2.0) == doctest::Approx(1.0));  // only 3 is longer
  // Nothing observed lasted longer than 3 s: fall back to elapsed.
  CHECK(h->remaining_s("tool", 3.0) == doctest::Approx(3.0));
  h->observe("tool", 10.0);
  CHECK(h->remaining_s("tool", 3.0) == doctest::Approx(7.0));
  // Kinds do not mix.
  CHECK(h->remaining_s("chat", 5.0) == doctest::Approx(5.0));
}

TEST_CASE("unknown estimator names list the valid ones") {
  CHECK_THROWS_WITH_AS(make("psychic"),
                       "test: unknown estimator 'psychic'; valid: elapsed, history, oracle",
                       InputError);
}

TEST_CASE("history learns online: any order of observation, duplicates counted, no universe") {
  auto a = make("history", 1);
  auto b = make("history", 1);
  // 1..100 s, ascending into one and in a scrambled order (37 is coprime to 100) into the other.
  for (int i = 1; i <= 100; ++i) a->observe("tool", i);
  for (int i = 0; i < 100; ++i) b->observe("tool", (i * 37) % 100 + 1);
  // Longer than 50.5 s: 51..100, mean 75.5, so 25 s remain.
  CHECK(a->remaining_s("tool", 50.5) == 25.0);
  CHECK(b->remaining_s("tool", 50.5) == 25.0);
  // Duplicates: {2, 2, 8} longer than 1 s has mean 4, so 3 s remain.
  auto d = make("history", 1);
  for (double x : {2.0, 8.0, 2.0}) d->observe("x", x);
  CHECK(d->remaining_s("x", 1.0) == 3.0);
  // A kind first seen mid-run is learnt too.
  d->observe("new", 4.0);
  CHECK(d->remaining_s("new", 1.0) == 3.0);
}
