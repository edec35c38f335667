// profile diff as a library: which entries are compared, how slowdowns are signed, their order,
// and the errors for profiles that cannot be compared.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "calibrate/diff.h"
#include "core/input_error.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {

sim::Profile tables() {
  return sim::load_profile(test::data_dir() + "/profile-tables-small.yaml");
}
sim::Profile linear() {
  return sim::load_profile(test::data_dir() + "/profile-linear-small.yaml");
}

std::string error_of(const sim::Profile& a, const sim::Profile& b) {
  try {
    calib::diff_profiles(a, b);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("identical profiles: every entry compared, no slowdown") {
  const sim::Profile p = tables();
  const calib::DiffReport r = calib::diff_profiles(p, p);
  // dense 3 + decode 2x2 + prefill 2x2 + lm_head 2 + overhead 1 + h2d 2 + d2h 2 + duplex 1 = 19.
  CHECK(r.entries.size() == 19);
  CHECK(r.regressions(0) == 0);
  for (const auto& e : r.entries) CHECK(e.slowdown == 0);
}

TEST_CASE("slowdowns are relative time changes, bandwidth inverted, worst first") {
  const sim::Profile base = tables();
  sim::Profile next = base;
  next.tables.dense_us.y[1] *= 1.10;            // tokens=4: 10% slower
  next.tables.decode_attention_us.z[3] *= 0.5;  // sequences=2 kv_tokens=100: 2x faster
  // h2d at 1000 bytes: 10 GB/s with 2 us per copy = 1000 / 2100 GB/s; at 8 GB/s,
  // 1000 / 2125: 2125 / 2100 - 1 = 1.19% more time.
  next.swap.h2d_gbps.y[0] *= 0.8;
  next.swap.d2h_gbps.y[1] *= 0.5;  // 1,001,000 B: 2,000 + 62,562.5 ns -> 2,000 + 125,125 ns
  next.tables.prefill_attention_us.z[2] *= 1.03;  // chunk=16 kv_tokens=0: 3% slower
  const calib::DiffReport r = calib::diff_profiles(base, next);
  REQUIRE(r.entries.size() == 19);
  CHECK(r.entries[0].table == "swap.d2h_gbps");
  CHECK(r.entries[0].point == "bytes=1001000");
  CHECK(r.entries[0].bandwidth);
  CHECK(r.entries[0].base == doctest::Approx(1001000.0 / 64562.5));
  CHECK(r.entries[0].slowdown == doctest::Approx(127125.0 / 64562.5 - 1));  // +96.90%
  CHECK(r.entries[1].table == "dense_us");
  CHECK(r.entries[1].point == "tokens=4");
  CHECK(r.entries[1].base == 16);
  CHECK(r.entries[1].next == doctest::Approx(17.6));
  CHECK(r.entries[1].slowdown == doctest::Approx(0.10));
  CHECK(r.entries[2].point == "chunk=16 kv_tokens=0");
  CHECK(r.entries[2].slowdown == doctest::Approx(0.03));
  CHECK(r.entries[3].table == "swap.h2d_gbps");
  CHECK(r.entries[3].slowdown == doctest::Approx(2125.0 / 2100.0 - 1));
  CHECK(r.entries.back().point == "sequences=2 kv_tokens=100");
  CHECK(r.entries.back().slowdown == doctest::Approx(-0.5));
  CHECK(r.regressions(0.05) == 2);
  CHECK(r.regressions(0.02) == 3);
  CHECK(r.regressions(0.01) == 4);
  CHECK(r.regressions(1.0) == 0);

  const std::string text = calib::format_diff(r, 0.05, 2, "a.yaml", "b.yaml");
  CHECK(text.find("profile diff: base a.yaml, new b.yaml") == 0);
  CHECK(text.find("19 entries compared; 2 slower by more than 5.00%: REGRESSION") !=
        std::string::npos);
  CHECK(text.find("swap.d2h_gbps") < text.find("dense_us"));
  CHECK(text.find("+96.90%  !") != std::string::npos);
  CHECK(text.find("+10.00%  !") != std::string::npos);
  CHECK(text.find("... 17 more") != std::string::npos);
  CHECK(text.find("chunk=16") == std::string::npos);  // beyond --top 2
}

TEST_CASE("a per-copy cost moved between the overhead and the curve is no change") {
  const sim::Profile base = tables();
  sim::Profile next = base;
  next.swap.per_copy_overhead_us = 0;
  for (sim::Curve1D* c : {&next.swap.h2d_gbps, &next.swap.d2h_gbps})
    for (size_t i = 0; i < c->x.size(); ++i) c->y[i] = c->x[i] / (2000 + c->x[i] / c->y[i]);
  const calib::DiffReport r = calib::diff_profiles(base, next);
  for (const auto& e : r.entries) CHECK(e.slowdown == doctest::Approx(0).epsilon(1e-12));
}

TEST_CASE("only shared grid points are compared") {
  const sim::Profile base = tables();
  sim::Profile next = base;
  next.tables.dense_us.x = {1, 4, 32};  // 16 is gone, 32 is new
  next.tables.dense_us.y = {10, 16, 100};
  const calib::DiffReport r = calib::diff_profiles(base, next);
  CHECK(r.entries.size() == 18);
  for (const auto& e : r.entries) CHECK(e.point != "tokens=16");
  next.tables.dense_us.x = {2, 3, 5};
  CHECK(error_of(base, next).find("forward.tables.dense_us: no grid point in common") !=
        std::string::npos);
}

TEST_CASE("linear profiles compare their coefficients; a zero base time is +inf when it grows") {
  const sim::Profile base = linear();
  sim::Profile next = base;
  next.linear.slope_ms_per_token *= 1.5;
  sim::Profile zero = base;
  zero.linear.base_ms = 0;
  const calib::DiffReport r = calib::diff_profiles(base, next);
  CHECK(r.entries[0].table == "linear.slope_ms_per_token");
  CHECK(r.entries[0].slowdown == doctest::Approx(0.5));
  const calib::DiffReport z = calib::diff_profiles(zero, base);
  CHECK(z.entries[0].table == "linear.base_ms");
  CHECK(std::isinf(z.entries[0].slowdown));
  CHECK(calib::format_diff(z, 0.05, 0, "a", "b").find("+inf%") != std::string::npos);
  CHECK(calib::diff_profiles(base, zero).entries.back().slowdown == doctest::Approx(-1));
}

TEST_CASE("different shapes or forms cannot be compared") {
  const sim::Profile base = tables();
  sim::Profile next = base;
  next.model.layers += 1;
  CHECK(error_of(base, next).find("model.layers:") != std::string::npos);
  next = base;
  next.model.tp = 2;
  CHECK(error_of(base, next).find("model.tp: 1 vs 2") != std::string::npos);
  next = base;
  next.model.name = "renamed";  // only the name differs: comparable
  CHECK(error_of(base, next) == "(no error)");
  sim::Profile lin = linear();
  lin.model = base.model;
  CHECK(error_of(base, lin).find("forward: tables vs linear") != std::string::npos);
}

TEST_CASE("--max-regression takes a percentage") {
  CHECK(calib::parse_percent("5%", "x") == doctest::Approx(0.05));
  CHECK(calib::parse_percent("0.5%", "x") == doctest::Approx(0.005));
  CHECK(calib::parse_percent("0%", "x") == 0);
  for (const char* bad : {"5", "%", "-1%", "five%", "5%%", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(calib::parse_percent(bad, "x"), InputError);
  }
}

TEST_CASE("optional tables and terms are compared where both profiles have them") {
  sim::Profile a = tables();
  sim::Profile b = a;
  // One mixed cell each at (chunk 16, kv 0, 2 decodes, kv 32), plus one only `a` has.
  a.tables.mixed_attention_us.axes = {{{16}, {0}, {2}, {32, 64}}};
  a.tables.mixed_attention_us.z = {50, 60};
  b.tables.mixed_attention_us.axes = {{{16}, {0}, {2}, {32}}};
  b.tables.mixed_attention_us.z = {55};
  a.step_overhead = {100, 0, 0};
  b.step_overhead = {150, 0, 0};
  b.swap.compute_slowdown = 0.1;
  const calib::DiffReport r = calib::diff_profiles(a, b);
  CHECK(r.entries.size() == 19 + 1 + 3 + 1);
  const auto find = [&](const std::string& table) -> const calib::DiffEntry& {
    for (const auto& e : r.entries)
      if (e.table == table) return e;
    throw std::runtime_error("no entry " + table);
  };
  CHECK(find("mixed_attention_us").point == "chunk=16 kv_prefill=0 decodes=2 kv_per_decode=32");
  CHECK(find("mixed_attention_us").slowdown == doctest::Approx(0.1));  // 55 / 50 - 1
  CHECK(find("step_overhead.fixed_us").slowdown == doctest::Approx(0.5));
  CHECK(find("swap.compute_slowdown").slowdown == doctest::Approx(0.1));  // 1.1 / 1 - 1
  CHECK(r.regressions(0.05) == 3);
}
