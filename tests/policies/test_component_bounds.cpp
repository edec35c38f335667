// Every component parameter's bound is enforced and named (issue 36): generated from the rows
// the components record as they read (experiments/spec/component_params.h), the same rows
// `isim list` prints. For each policy, router, planner, KV manager and executor and each of its
// numeric parameters: both ends are finite and the help is given; a value just outside each end
// is refused naming WHERE.KEY and the end ("must be <= N (WHY)"); one just inside is read
// without a bound error. Then hand-written exact messages.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "experiments/spec/component_params.h"
#include "tests/input_error_text.h"

using namespace isim;

namespace {

// Text of a value just past (outside = true) or just within one end of `b`.
// Integers step by one; numbers by 1e-9 of the end's size (never a denormal).
struct EndValue {
  std::string text;
  double value = 0;
  bool parses = true;  // false: beyond what the type can hold (the parser refuses it)
};

EndValue end_value(const Bound& b, bool integer, bool upper, bool outside) {
  const double end = upper ? b.hi : b.lo;
  const bool open = upper ? b.hi_open : b.lo_open;
  const double dir = (upper == outside) ? 1.0 : -1.0;  // +: towards +inf
  // Closed end: outside steps past it, inside is the end. Open end: outside is the end itself,
  // inside steps into the range.
  const bool step = outside ? !open : open;
  if (integer) {
    if (upper && end >= 1.8e19) {  // a uint64's whole range
      return outside ? EndValue{"18446744073709551616", 0, false}
                     : EndValue{"18446744073709551615", end, true};
    }
    const auto e = static_cast<int64_t>(end);
    const int64_t v = step ? e + static_cast<int64_t>(dir) : e;
    return {fmt::format("{}", v), static_cast<double>(v), true};
  }
  const double v = step ? end + dir * std::max(std::fabs(end), 1.0) * 1e-9 : end;
  return {fmt::format("{}", v), v, true};
}

}  // namespace

TEST_CASE("every component parameter's bound is enforced and named") {
  const auto components = exp::component_params();
  int checked = 0;
  for (const auto& c : components) {
    for (const auto& r : c.rows) {
      const std::string path = c.where + "." + r.key;
      CAPTURE(c.name);
      CAPTURE(path);
      CHECK(std::isfinite(r.bound.lo));
      CHECK(std::isfinite(r.bound.hi));
      CHECK(!r.help.empty());
      for (const bool upper : {false, true}) {
        const EndValue out = end_value(r.bound, r.integer, upper, true);
        const std::string err = test::error_of_call([&] {
          exp::build_component(c.kind, c.name, {{r.key, out.text}});
        });
        // An unsigned integer's parser refuses -1 before the bound sees it.
        const bool unsigned_below = r.integer && !upper && r.bound.lo == 0;
        if (!out.parses)
          CHECK(err.rfind(path + ": expected ", 0) == 0);
        else if (unsigned_below && err == path + ": expected a non-negative integer, got '-1'")
          CHECK(true);
        else
          CHECK(err == path + ": " + r.bound.check(out.value));
        const EndValue in = end_value(r.bound, r.integer, upper, false);
        const std::string ok = test::error_of_call([&] {
          exp::build_component(c.kind, c.name, {{r.key, in.text}});
        });
        CAPTURE(in.text);
        // (a cross-key rule, "must be at least metric_pulling_interval", may still apply)
        CHECK(ok.find(path + ": must be >") == std::string::npos);
        CHECK(ok.find(path + ": must be <") == std::string::npos);
        CHECK(ok.find(path + ": expected ") == std::string::npos);
        ++checked;
      }
    }
  }
  // 3 + 3 (lru, pensieve) + 1 (min-waste) + 1 (kv-aware) + 1 (power-of-two) + 7 (dynamo-load)
  // + 3 (dynamo-sla) + 9 (dynamo-threshold) + 10 (online) + 1 + 1 (schedule, static) + 7
  // (agent-aware) + 1 (dynamo-agentic) + 3 + 3 (live-cpu, live-cuda) = 54 parameters, two ends.
  CHECK(checked == 2 * 54);
}

TEST_CASE("component parameter bounds: hand-written messages") {
  using test::error_of_call;
  // overlap_weight's upper end is 10^6 with its reason; 1000001 is just past it.
  CHECK(error_of_call([] {
          exp::build_component("router", "kv-aware", {{"overlap_weight", "1000001"}});
        }) ==
        "cluster.router.overlap_weight: must be <= 1000000 (10^6 blocks outweigh any "
        "replica's decode load)");
  // reserve is a fraction in [0, 1): 1 itself is refused.
  CHECK(error_of_call([] {
          exp::build_component("policy", "lru", {{"reserve", "1"}});
        }) == "policy.reserve: must be < 1");
  // A planner interval under 1 ms would make a run all planner ticks.
  CHECK(error_of_call([] {
          exp::build_component("planner", "static", {{"interval_s", "0.0001"}});
        }) == "cluster.planner.interval_s: must be >= 0.001");
  // A type error still says what a value must be.
  CHECK(error_of_call([] {
          exp::build_component("kv manager", "agent-aware", {{"pool_after_s", "soon"}});
        }) == "engine.kv_manager.pool_after_s: expected a number, got 'soon'");
  // 1025 threads: more than any host's hardware threads.
  CHECK(error_of_call([] {
          exp::build_component("executor", "live-cpu", {{"threads", "1025"}});
        }) == "executor.threads: must be <= 1024 (more threads than any host's hardware threads)");
}
