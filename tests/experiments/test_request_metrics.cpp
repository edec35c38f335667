// Requests as a benchmark client sees them, and NumPy-style statistics
// (experiments/run/request_metrics.h). Expected values by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/sort_doubles.h"
#include "experiments/run/request_metrics.h"

using namespace isim;
using exp::Values;

TEST_CASE("Values: mean, population std and linearly interpolated percentiles") {
  Values v;
  for (double x : {4.0, 1.0, 3.0, 2.0}) v.add(x);  // out of order on purpose
  CHECK(v.size() == 4);
  CHECK(v.mean() == doctest::Approx(2.5));
  // std: deviations 1.5, 0.5, 0.5, 1.5 -> (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25 -> sqrt.
  CHECK(v.std() == doctest::Approx(std::sqrt(1.25)));
  CHECK(v.median() == doctest::Approx(2.5));         // h = 3 x 0.5 = 1.5: 2 + 0.5 x (3 - 2)
  CHECK(v.percentile(99) == doctest::Approx(3.97));  // h = 2.97: 3 + 0.97 x (4 - 3)
  CHECK(v.percentile(0) == doctest::Approx(1.0));
  CHECK(v.percentile(100) == doctest::Approx(4.0));
}

TEST_CASE("Values: counts weigh each value") {
  Values v;
  v.add(1.0, 3);
  v.add(5.0);
  // {1, 1, 1, 5}: mean 2; std sqrt((1 + 1 + 1 + 9) / 4) = sqrt(3).
  CHECK(v.mean() == doctest::Approx(2.0));
  CHECK(v.std() == doctest::Approx(std::sqrt(3.0)));
  CHECK(v.median() == doctest::Approx(1.0));        // h = 1.5 between two 1s
  CHECK(v.percentile(75) == doctest::Approx(2.0));  // h = 2.25: 1 + 0.25 x (5 - 1)
  v.add(1.0, 0);                                    // a zero count adds nothing
  CHECK(v.size() == 4);
}

TEST_CASE("Values: no values give NaN, a bad q is a logic error") {
  Values v;
  CHECK(std::isnan(v.mean()));
  CHECK(std::isnan(v.std()));
  CHECK(std::isnan(v.median()));
  v.add(1.0);
  CHECK_THROWS_AS(v.percentile(101), std::logic_error);
}

TEST_CASE("request_rows: e2el, TPOT and gaps of each turn") {
  sim::TurnRecord a;
  a.session = 3;
  a.seg = 1;
  a.start_s = 1.0;
  a.ttft_s = 0.1;
  a.finish_s = 1.16;  // first token at 1.1, then gaps summing to 60 ms
  a.output_tokens = 5;
  a.input_tokens = 40;
  a.replica = 2;
  sim::GapArena arena;
  const auto at = arena.append({{10'000'000, 2}, {30'000'000, 1}, {10'000'000, 1}});
  a.gaps_at = at.at;
  a.gaps_words = at.words;
  a.span_ns = 60'000'000;
  sim::TurnRecord b;
  b.start_s = 2.0;
  b.ttft_s = 0.25;
  b.finish_s = 2.25;
  b.output_tokens = 1;
  const auto rows = exp::request_rows({a, b}, arena);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].send_s == 1.0);
  CHECK(rows[0].e2el_s == doctest::Approx(0.16));
  CHECK(rows[0].tpot_s == doctest::Approx(0.015));  // (0.16 - 0.1) / (5 - 1) = 60 ms / 4
  CHECK(rows[0].input_tokens == 40);
  CHECK(rows[0].replica == 2);
  CHECK(rows[1].e2el_s == doctest::Approx(0.25));
  CHECK(rows[1].tpot_s < 0);  // one output: no TPOT
  // Gaps 10, 10, 30, 10 ms: mean 15 ms; sorted 10, 10, 10, 30: median (h = 1.5) 10 ms,
  // p99 h = 2.97 between 10 and 30 -> 10 + 0.97 x 20 = 29.4 ms.
  const Values itl = exp::itl_values(rows);
  CHECK(itl.size() == 4);
  CHECK(itl.mean() == doctest::Approx(0.015));
  CHECK(itl.median() == doctest::Approx(0.010));
  CHECK(itl.percentile(99) == doctest::Approx(0.0294));
}

TEST_CASE("Values: many values of few distinct ones merge as they come, statistics unchanged") {
  // 9,000 values cycling 3, 1, 2 (out of order, past the 4,096 entries that trigger a merge):
  // 3,000 of each. Mean 2; std sqrt((3000 x 1 + 3000 x 0 + 3000 x 1) / 9000) = sqrt(2 / 3);
  // sorted: ranks 0-2999 are 1, 3000-5999 are 2, 6000-8999 are 3. Median h = 4499.5: 2.
  // p99: h = 8999 x 0.99 = 8909.01: rank 8909 and 8910 are both 3.
  Values v;
  for (int i = 0; i < 9000; ++i) v.add(i % 3 == 0 ? 3.0 : i % 3 == 1 ? 1.0 : 2.0);
  CHECK(v.size() == 9000);
  CHECK(v.mean() == doctest::Approx(2.0));
  CHECK(v.std() == doctest::Approx(std::sqrt(2.0 / 3)));
  CHECK(v.median() == doctest::Approx(2.0));
  CHECK(v.percentile(99) == doctest::Approx(3.0));
  // p33.33...: h = 8999 / 3 = 2999.67: between rank 2999 (1) and 3000 (2): 1.67.
  CHECK(v.percentile(100.0 / 3) == doctest::Approx(1 + 8999.0 / 3 - 2999));
}

TEST_CASE("TPOT comes from the first-to-last token span when a turn has it, else e2el and TTFT") {
  // Three turns of equal 7 ms gaps at different start times and lengths: the same TPOT exactly
  // (span 7,000,000 x k ns / k / 1e9), so their spread is exactly 0, as a constant TPOT's is.
  std::vector<sim::TurnRecord> turns;
  for (int k : {2, 5, 9}) {
    sim::TurnRecord t;
    t.start_s = 0.1 * k + 0.0123;
    t.ttft_s = 0.0311;
    t.output_tokens = k + 1;
    t.span_ns = 7'000'000LL * k;  // no gaps kept: the span alone gives TPOT
    t.finish_s = t.start_s + t.ttft_s + 0.007 * k;
    turns.push_back(t);
  }
  Values tpot;
  for (const auto& t : turns) tpot.add(exp::request_row(t).tpot_s);
  CHECK(tpot.mean() == 0.007);
  CHECK(tpot.std() == 0.0);
  // Without a span (a record built elsewhere), the formula: (0.5 - 0.1) / (5 - 1).
  sim::TurnRecord bare;
  bare.start_s = 1.0;
  bare.ttft_s = 0.1;
  bare.finish_s = 1.5;
  bare.output_tokens = 5;
  CHECK(exp::request_row(bare).tpot_s == doctest::Approx(0.1));
}

TEST_CASE("Values: one distinct value is its own mean, with no spread") {
  Values v;
  v.add(0.1, 3);  // 0.1 x 3 / 3 rounds to 0.10000000000000002 in doubles
  CHECK(v.mean() == 0.1);
  CHECK(v.std() == 0.0);
}

TEST_CASE("sort_doubles: the order std::sort gives, negatives and repeats included") {
  // 1,000 values past the 256 below which std::sort is used: i x 0.37 - 100 for i = 999..0
  // (negatives, zero's neighbours, positives), each twice, plus 1e300 and -1e-300.
  std::vector<double> v;
  for (int i = 999; i >= 0; --i)
    for (int k = 0; k < 2; ++k) v.push_back(i * 0.37 - 100);
  v.push_back(1e300);
  v.push_back(-1e-300);
  std::vector<double> expected = v;
  std::sort(expected.begin(), expected.end());  // the oracle
  isim::sort_doubles(v);
  CHECK(v == expected);
  // values_of: 3, 1, 2, 1 -> sorted 1, 1, 2, 3: mean 7 / 4, median (h = 1.5) 1.5.
  const Values x = exp::values_of({3.0, 1.0, 2.0, 1.0});
  CHECK(x.size() == 4);
  CHECK(x.mean() == 1.75);
  CHECK(x.median() == 1.5);
}
