#include <doctest/doctest.h>

#include <fmt/format.h>
#include <cmath>
#include <limits>

#include "core/input_error.h"
#include "core/rng.h"
#include "traces/arrival.h"

using namespace isim::trace;
using isim::Rng;  // core/rng.h

namespace {

Trace sessions(int n) {
  Trace t;
  for (int i = 0; i < n; ++i) t.push_back(Session{fmt::format("s{}", i), 7.0, {{1, 1, {}}}});
  return t;
}

}  // namespace

// Known answers from an independent Python implementation of splitmix64 + xoshiro256**; the
// splitmix64 step itself matches the published first output for seed 0 (0xe220a8397b1dcdaf).
TEST_CASE("rng: bit-identical known answers") {
  Rng a(1);
  CHECK(a.next() == 0xb3f2af6d0fc710c5ULL);
  CHECK(a.next() == 0x853b559647364ceaULL);
  CHECK(a.next() == 0x92f89756082a4514ULL);
  Rng b(0);
  CHECK(b.next() == 0x99ec5f36cb75f2b4ULL);
  CHECK(Rng(1).uniform01() == 0.7029218331588505);  // (0xb3f2af6d0fc710c5 >> 11) * 2^-53
  CHECK(Rng(7).exponential(2.0) == 2.4117925204948993);
}

TEST_CASE("rng: ranges and moments") {
  Rng r(123);
  const int n = 200000;
  double sum_u = 0, sum_e = 0, sum_z = 0, sum_z2 = 0;
  int64_t counts[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform01();
    REQUIRE((u >= 0 && u < 1));
    sum_u += u;
    sum_e += r.exponential(3.0);
    const double z = r.normal(5.0, 2.0);
    sum_z += z;
    sum_z2 += (z - 5.0) * (z - 5.0);
    const uint64_t k = r.below(3);
    REQUIRE(k < 3);
    ++counts[k];
  }
  // Bounds are >= 7 standard errors wide: the test cannot flake, yet catches a wrong formula.
  CHECK(sum_u / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(sum_e / n == doctest::Approx(3.0).epsilon(0.02));
  CHECK(sum_z / n == doctest::Approx(5.0).epsilon(0.01));
  CHECK(std::sqrt(sum_z2 / n) == doctest::Approx(2.0).epsilon(0.02));
  for (int64_t c : counts)
    CHECK(static_cast<double>(c) / n == doctest::Approx(1.0 / 3).epsilon(0.03));
  CHECK(r.below(1) == 0);
  CHECK_THROWS_AS(r.below(0), std::invalid_argument);
}

TEST_CASE("arrival: poisson gaps follow the seeded Rng exactly and keep session order") {
  Trace t = sessions(3);
  apply_arrivals(t, ArrivalSpec{"poisson", 4.0, 9});
  Rng r(9);
  const double g0 = r.exponential(0.25), g1 = r.exponential(0.25), g2 = r.exponential(0.25);
  CHECK(t[0].arrival_s == g0);  // the first arrival is the first gap, not 0
  CHECK(t[1].arrival_s == g0 + g1);
  CHECK(t[2].arrival_s == g0 + g1 + g2);
  CHECK(t[0].id == "s0");
  CHECK(t[2].id == "s2");
}

TEST_CASE("arrival: poisson is deterministic and has mean gap 1/rate") {
  const int n = 100000;
  Trace a = sessions(n), b = sessions(n), c = sessions(n);
  apply_arrivals(a, ArrivalSpec{"poisson", 2.5, 42});
  apply_arrivals(b, ArrivalSpec{"poisson", 2.5, 42});
  apply_arrivals(c, ArrivalSpec{"poisson", 2.5, 43});
  CHECK(a == b);
  CHECK(a != c);
  for (int i = 1; i < n; ++i) REQUIRE(a[i].arrival_s >= a[i - 1].arrival_s);
  // Mean gap of n exponentials has relative sd 1/sqrt(n) = 0.32%; 3% is ~9.5 sd.
  CHECK(a.back().arrival_s / n == doctest::Approx(1 / 2.5).epsilon(0.03));
}

TEST_CASE("arrival: replay keeps arrival times") {
  Trace t = sessions(2);
  t[1].arrival_s = 3.5;
  const Trace before = t;
  apply_arrivals(t, ArrivalSpec{"replay", 1.0, 1});
  CHECK(t == before);
}

TEST_CASE("arrival: bad process or rate") {
  Trace t = sessions(1);
  CHECK_THROWS_WITH_AS(
      apply_arrivals(t, ArrivalSpec{"uniform", 1.0, 1}),
      "arrival.process: unknown process 'uniform'; valid: poisson, replay, user-phases, users",
      isim::InputError);
  for (double rate : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CAPTURE(rate);
    CHECK_THROWS_WITH_AS(apply_arrivals(t, ArrivalSpec{"poisson", rate, 1}),
                         doctest::Contains("arrival.rate: must be a finite number > 0, got"),
                         isim::InputError);
  }
}

TEST_CASE("arrival: poisson keeps a subagent's offset from its parent and draws no gap for it") {
  // s0 at 0, its subagent c at 4 s (4 s after it), s1 at 0, c's own subagent g at 5 s; an orphan
  // o (its parent is not in the trace) and a child x listed before its parent s2. Gaps are drawn
  // for s0, s1, o, x and s2 only, in that order; c and g keep their offsets.
  const ContextEvent none{};
  auto make = [](const char* id, double at, const char* parent) {
    Session s{id, at, {{1, 1, {}}}};
    if (parent[0] != 0) s.segments[0].event = {ContextEventKind::kFork, 0, 0, parent};
    return s;
  };
  Trace t = {make("s0", 0, ""),      make("c", 4, "s0"), make("s1", 0, ""), make("g", 5, "c"),
             make("o", 7, "nobody"), make("x", 7, "s2"), make("s2", 7, "")};
  CHECK(t[0].segments[0].event == none);
  apply_arrivals(t, ArrivalSpec{"poisson", 4.0, 9});
  Rng r(9);
  const double g0 = r.exponential(0.25), g1 = r.exponential(0.25), g2 = r.exponential(0.25),
               g3 = r.exponential(0.25), g4 = r.exponential(0.25);
  CHECK(t[0].arrival_s == g0);
  CHECK(t[1].arrival_s == g0 + 4.0);  // c: 4 s after s0
  CHECK(t[2].arrival_s == g0 + g1);
  CHECK(t[3].arrival_s == g0 + 4.0 + 1.0);  // g: 1 s after c
  CHECK(t[4].arrival_s == g0 + g1 + g2);
  CHECK(t[5].arrival_s == g0 + g1 + g2 + g3);
  CHECK(t[6].arrival_s == g0 + g1 + g2 + g3 + g4);
}
