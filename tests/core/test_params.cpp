// Params: typed component parameters; every error names WHERE.KEY, what was expected and the
// value given.
#include <doctest/doctest.h>

#include "tests/input_error_text.h"

#include <atomic>
#include <functional>
#include <thread>

#include "core/input_error.h"
#include "core/params.h"

using isim::InputError;
using isim::Params;

namespace {

std::string error_of(const std::function<void()>& f) { return isim::test::error_of_call(f); }

}  // namespace

TEST_CASE("params: typed values and defaults") {
  const Params p({{"s", "text"},
                  {"d", "-2.5e3"},
                  {"i", "+42"},
                  {"n", "-7"},
                  {"u", "18446744073709551615"},
                  {"b", "yes"}},
                 "policy");
  CHECK(p.get<std::string>("s", "x") == "text");
  CHECK(p.get<double>("d", 0) == -2500);
  CHECK(p.get<int64_t>("i", 0) == 42);
  CHECK(p.get<int32_t>("n", 0) == -7);
  CHECK(p.get<uint64_t>("u", 0) == UINT64_MAX);
  CHECK(p.get<bool>("b", false));
  CHECK(p.require<double>("d") == -2500);
  // Absent keys give the default.
  CHECK(p.get<int64_t>("absent", 8) == 8);
  CHECK(p.get<std::string>("other", "oracle") == "oracle");
  CHECK(p.get_choice("mode", "none", {"none", "swap"}) == "none");
  CHECK_FALSE(p.empty());
  CHECK(Params().empty());
  CHECK(Params().where.empty());
}

TEST_CASE("params: a bad value is WHERE.KEY: expected WHAT, got 'VALUE'") {
  const Params p({{"d", "fast"},
                  {"i", "1.5"},
                  {"u", "-1"},
                  {"b", "maybe"},
                  {"big", "3000000000"},
                  {"inf", "inf"},
                  {"tail", "12abc"},
                  {"empty", ""},
                  {"pm", "+-3"}},
                 "cluster.router");
  CHECK(error_of([&] { p.get<double>("d", 0); }) ==
        "cluster.router.d: expected a number, got 'fast'");
  CHECK(error_of([&] { p.get<int64_t>("i", 0); }) ==
        "cluster.router.i: expected an integer, got '1.5'");
  CHECK(error_of([&] { p.get<uint64_t>("u", 0); }) ==
        "cluster.router.u: expected a non-negative integer, got '-1'");
  CHECK(error_of([&] { p.get<bool>("b", false); }) ==
        "cluster.router.b: expected true or false, got 'maybe'");
  CHECK(error_of([&] { p.get<int32_t>("big", 0); }) ==
        "cluster.router.big: expected an integer, got '3000000000'");
  CHECK(error_of([&] { p.get<double>("inf", 0); }) ==
        "cluster.router.inf: expected a number, got 'inf'");
  CHECK(error_of([&] { p.get<int64_t>("tail", 0); }) ==
        "cluster.router.tail: expected an integer, got '12abc'");
  CHECK(error_of([&] { p.get<double>("empty", 0); }) ==
        "cluster.router.empty: expected a number, got ''");
  CHECK(error_of([&] { p.get<int64_t>("pm", 0); }) ==
        "cluster.router.pm: expected an integer, got '+-3'");
}

TEST_CASE("params: checks, choices and required keys") {
  const Params p({{"n", "0"}, {"f", "1.5"}, {"fault", "disk"}}, "policies[2]");
  auto at_least_one = [](int64_t n) { return n >= 1; };
  CHECK(error_of([&] { p.get<int64_t>("n", 8, "an integer >= 1", at_least_one); }) ==
        "policies[2].n: expected an integer >= 1, got '0'");
  CHECK(p.get<int64_t>("absent", 8, "an integer >= 1", at_least_one) == 8);
  CHECK(error_of([&] {
          p.get<double>("f", 0, "a fraction in [0, 1)", [](double x) { return x >= 0 && x < 1; });
        }) == "policies[2].f: expected a fraction in [0, 1), got '1.5'");
  CHECK(error_of([&] {
          p.get_choice("fault", "none", {"none", "swap", "recompute"});
        }) == "policies[2].fault: expected none, swap or recompute, got 'disk'");
  CHECK(error_of([&] { p.require<uint64_t>("seed"); }) ==
        "policies[2].seed: missing (expected a non-negative integer)");
  CHECK(error_of([&] { p.require<int64_t>("k", "a block count", at_least_one); }) ==
        "policies[2].k: missing (expected a block count)");
}

TEST_CASE("params: done() rejects every key no read asked for, listing the ones taken") {
  const Params none({{"estimator", "oracle"}}, "policies[0]");
  CHECK(error_of([&] { none.done("policy 'swap'"); }) ==
        "policies[0].estimator: unknown parameter; policy 'swap' takes no parameters");
  const Params p({{"budget", "3"}, {"estimator", "oracle"}}, "policy");
  p.get<std::string>("estimator", "oracle");
  p.get<int64_t>("history_min_samples", 8);  // absent, still one the component takes
  CHECK(error_of([&] { p.done("policy 'min-waste'"); }) ==
        "policy.budget: unknown parameter; policy 'min-waste' takes estimator, "
        "history_min_samples");
  const Params ok({{"seed", "3"}}, "cluster.router");
  CHECK(ok.has("seed"));
  CHECK_NOTHROW(ok.done("router 'random'"));
  // A copy has recorded nothing.
  const Params copy = ok;
  CHECK(copy.values == ok.values);
  CHECK(copy.where == "cluster.router");
  CHECK(error_of([&] { copy.done("router 'random'"); }) ==
        "cluster.router.seed: unknown parameter; router 'random' takes no parameters");
  // With no `where`, the key alone.
  CHECK(error_of([] {
          Params({{"x", "1"}}, "").done("this");
        }) == "x: unknown parameter; this takes no parameters");
}

TEST_CASE("params: several threads may read one Params" * doctest::test_suite("threads")) {
  const Params p({{"a", "1"}, {"b", "2"}}, "policy");
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (p.get<int64_t>("a", 0) + p.get<int64_t>("b", 0) != 3) ++wrong;
        p.done("policy 'x'");
      }
    });
  for (auto& t : ts) t.join();
  CHECK(wrong == 0);
}
