// The role planners: registry, parameter checks, and hand-computed decision sequences of static
// and dynamo-threshold (dynamo-sla and online: test_planners_adaptive.cpp).
#include <doctest/doctest.h>

#include "core/input_error.h"
#include "tests/planner_fixtures.h"

using namespace isim;
using namespace isim::test::planner_names;  // P, D, M, Changes
using cluster::Role;
using cluster::RoleChange;
using test::make_planner;
using test::PlannerFleet;

TEST_CASE("every planner is registered, described and built with its defaults") {
  std::vector<std::string> names;
  for (const auto* e : policy::planner_registry().entries()) {
    names.push_back(e->name);
    CHECK(!e->description.empty());
    // schedule has no default schedule: it takes one.
    std::map<std::string, std::string> params;
    if (e->name == "schedule") params = {{"at_s", "0"}, {"prefill", "1"}};
    CHECK(make_planner(e->name, params)->name() == e->name);
  }
  CHECK(names == std::vector<std::string>{"dynamo-load", "dynamo-sla", "dynamo-threshold", "online",
                                          "schedule", "static"});
  CHECK_THROWS_WITH_AS(make_planner("dynamo"),
                       "test: unknown planner 'dynamo'; valid: dynamo-load, dynamo-sla, "
                       "dynamo-threshold, online, schedule, static",
                       InputError);
}

TEST_CASE("planner defaults: intervals and provenance") {
  auto load = make_planner("dynamo-threshold");
  CHECK(load->pull_interval_s() == 1.0);
  CHECK(load->interval_s() == 30.0);
  using Facts = std::vector<std::pair<std::string, std::string>>;
  CHECK(load->describe() == Facts{{"metric_pulling_interval", "1"},
                                  {"adjustment_interval", "30"},
                                  {"decode_kv_scale_up_threshold", "0.9"},
                                  {"decode_kv_scale_down_threshold", "0.5"},
                                  {"prefill_queue_scale_up_threshold", "0.5"},
                                  {"prefill_queue_scale_down_threshold", "0.2"},
                                  {"no_decode_scale_down_intervals", "3"},
                                  {"prefill_queue_buffer_intervals", "3"},
                                  {"step", "1"}});
  auto sla = make_planner("dynamo-sla");
  CHECK(sla->interval_s() == 180.0);
  CHECK(sla->describe() == Facts{{"adjustment_interval", "180"},
                                 {"itl_target_s", "0.05"},
                                 {"step", "1"},
                                 {"correction", "true"}});
  auto online = make_planner("online", {{"patience", "3"}});
  CHECK(online->pull_interval_s() == 1.0);
  CHECK(online->interval_s() == 5.0);
  CHECK(online->describe() == Facts{{"interval_s", "5"},
                                    {"horizon_s", "30"},
                                    {"ttft_s", "0.5"},
                                    {"itl_s", "0.05"},
                                    {"headroom", "0.8"},
                                    {"dead_band", "0.25"},
                                    {"patience", "3"},
                                    {"forecast", "true"},
                                    {"window", "256"},
                                    {"min_samples", "10"},
                                    {"smoothing", "0.2"}});
  CHECK(make_planner("static", {{"interval_s", "12.5"}})->describe() ==
        Facts{{"interval_s", "12.5"}});
}

TEST_CASE("unknown planner parameters are rejected, listing the ones it takes") {
  CHECK_THROWS_WITH_AS(make_planner("static", {{"step", "2"}}),
                       "cluster.planner.step: unknown parameter; planner 'static' takes "
                       "interval_s",
                       InputError);
  CHECK_THROWS_WITH_AS(make_planner("dynamo-threshold", {{"interval_s", "30"}}),
                       "cluster.planner.interval_s: unknown parameter; planner 'dynamo-threshold' "
                       "takes metric_pulling_interval, adjustment_interval, "
                       "decode_kv_scale_up_threshold, decode_kv_scale_down_threshold, "
                       "prefill_queue_scale_up_threshold, prefill_queue_scale_down_threshold, "
                       "no_decode_scale_down_intervals, prefill_queue_buffer_intervals, step",
                       InputError);
  CHECK_THROWS_WITH_AS(make_planner("dynamo-sla", {{"ttft_target_s", "0.5"}}),
                       "cluster.planner.ttft_target_s: unknown parameter; planner 'dynamo-sla' "
                       "takes adjustment_interval, itl_target_s, step, correction",
                       InputError);
  CHECK_THROWS_WITH_AS(make_planner("online", {{"smoothing_s", "1"}}),
                       "cluster.planner.smoothing_s: unknown parameter; planner 'online' takes "
                       "interval_s, horizon_s, ttft_s, itl_s, headroom, dead_band, patience, "
                       "forecast, window, min_samples, smoothing",
                       InputError);
}

TEST_CASE("every checked planner parameter names its key when the value is bad") {
  struct Bad {
    const char* planner;
    const char* key;
    const char* value;
    const char* expected;
  };
  // Each message written out: a value outside a bound says the end ("must be >= 0.001":
  // planner intervals start at 1 ms), one that is not a number says what it must be.
  const Bad cases[] = {
      {"static", "interval_s", "0", "must be >= 0.001"},
      {"static", "interval_s", "inf", "expected a number, got 'inf'"},
      {"dynamo-threshold", "metric_pulling_interval", "-1", "must be >= 0.001"},
      {"dynamo-threshold", "adjustment_interval", "nan", "expected a number, got 'nan'"},
      {"dynamo-threshold", "decode_kv_scale_up_threshold", "1.5", "must be <= 1"},
      {"dynamo-threshold", "decode_kv_scale_down_threshold", "-0.1", "must be >= 0"},
      {"dynamo-threshold", "prefill_queue_scale_up_threshold", "-1", "must be >= 0"},
      {"dynamo-threshold", "prefill_queue_scale_down_threshold", "x", "expected a number, got 'x'"},
      {"dynamo-threshold", "no_decode_scale_down_intervals", "-1", "must be >= 0"},
      {"dynamo-threshold", "prefill_queue_buffer_intervals", "1.5",
       "expected an integer, got '1.5'"},
      {"dynamo-threshold", "step", "0", "must be >= 1"},
      {"dynamo-sla", "adjustment_interval", "0", "must be >= 0.001"},
      {"dynamo-sla", "itl_target_s", "-0.05", "must be > 0"},
      {"dynamo-sla", "step", "-2", "must be >= 1"},
      {"dynamo-sla", "correction", "maybe", "expected true or false, got 'maybe'"},
      {"online", "interval_s", "0", "must be >= 0.001"},
      {"online", "horizon_s", "-1", "must be >= 0.001"},
      {"online", "ttft_s", "0", "must be > 0"},
      {"online", "itl_s", "nan", "expected a number, got 'nan'"},
      {"online", "headroom", "0", "must be > 0"},
      {"online", "dead_band", "-0.5", "must be >= 0"},
      {"online", "patience", "0", "must be >= 1"},
      {"online", "forecast", "maybe", "expected true or false, got 'maybe'"},
      {"online", "window", "0", "must be >= 1"},
      {"online", "min_samples", "0", "must be >= 1"},
      {"online", "smoothing", "0", "must be > 0"},
      {"online", "smoothing", "1.01", "must be <= 1"},
  };

  for (const Bad& b : cases) {
    CAPTURE(b.planner);
    CAPTURE(b.key);
    CHECK_THROWS_WITH_AS(make_planner(b.planner, {{b.key, b.value}}),
                         (std::string("cluster.planner.") + b.key + ": " + b.expected).c_str(),
                         InputError);
  }
  // Pairs that must be ordered.
  CHECK_THROWS_WITH_AS(
      make_planner("dynamo-threshold", {{"decode_kv_scale_down_threshold", "0.95"}}),
      "cluster.planner.decode_kv_scale_down_threshold: must not exceed "
      "decode_kv_scale_up_threshold (0.9)",
      InputError);
  CHECK_THROWS_WITH_AS(
      make_planner("dynamo-threshold", {{"prefill_queue_scale_up_threshold", "0.1"}}),
      "cluster.planner.prefill_queue_scale_down_threshold: must not exceed "
      "prefill_queue_scale_up_threshold (0.1)",
      InputError);
  CHECK_THROWS_WITH_AS(make_planner("dynamo-threshold", {{"adjustment_interval", "0.5"}}),
                       "cluster.planner.adjustment_interval: must be at least "
                       "metric_pulling_interval (1)",
                       InputError);
}

TEST_CASE("planner static: never changes a role, whatever the load") {
  PlannerFleet f({P, D, D, M});
  auto p = make_planner("static");
  for (size_t r = 0; r < f.m.size(); ++r) {
    f.m[r].waiting_sessions = 50;
    f.m[r].kv_utilization = 1.0;
  }
  f.s.prefill_tokens = 100000;
  for (int i = 0; i < 5; ++i) {
    f.pull(*p, 30);
    CHECK(f.decide(*p).empty());
  }
  CHECK(f.c.roles == std::vector<Role>{P, D, D, M});
}

namespace {

// One dynamo-threshold pull: `waiting` sessions queued on the lowest-index prefill replica (the
// per-worker queue is waiting / prefill replicas) and KV utilisation `kv` on every decode one.
void load_pull(PlannerFleet& f, cluster::Planner& p, int32_t waiting, double kv) {
  bool first = true;
  for (size_t r = 0; r < f.m.size(); ++r) {
    f.m[r].waiting_sessions = 0;
    if (f.c.roles[r] == P && first) {
      f.m[r].waiting_sessions = waiting;
      first = false;
    }
    if (f.c.roles[r] == D) f.m[r].kv_utilization = kv;
  }
  f.pull(p);
}

// A 30-pull interval at constant load, then the decision.
Changes load_interval(PlannerFleet& f, cluster::Planner& p, int32_t waiting, double kv) {
  for (int i = 0; i < 30; ++i) load_pull(f, p, waiting, kv);
  return f.decide(p);
}

}  // namespace

TEST_CASE("planner dynamo-threshold: the decision sequence on a synthetic metric series") {
  // Replicas 0-1 prefill, 2-7 decode. Work, used to pick the replica that moves: queued prefill
  // tokens and running sessions.
  PlannerFleet f({P, P, D, D, D, D, D, D});
  const int64_t queued[] = {100, 50, 70, 20, 90, 60, 65, 80};
  const int32_t running[] = {5, 6, 5, 3, 3, 9, 1, 4};
  for (size_t r = 0; r < 8; ++r) {
    f.m[r].queued_prefill_tokens = queued[r];
    f.m[r].running_sessions = running[r];
  }
  auto p = make_planner("dynamo-threshold");

  // 1. Queue 0 for 10 pulls, then 2 on 2 workers (1.0 each) for 20: mean 0.667 > 0.5 and the
  //    trend 1 + (1 - 0) x 3 = 4 > 0.5, so prefill +1; KV 0.7 is steady. A decode replica goes
  //    to prefill: the one with the fewest running sessions, 6.
  for (int i = 0; i < 10; ++i) load_pull(f, *p, 0, 0.7);
  for (int i = 0; i < 20; ++i) load_pull(f, *p, 2, 0.7);
  CHECK(f.decide(*p) == Changes{{6, P}});

  // 2. KV 1.0 for 15 pulls then 0.85 for 15: the mean 0.925 > 0.9 (the last pull alone would be
  //    steady), decode +1; queue 0 < 0.2 wants prefill -1. The prefill replica with the least
  //    queued prefill (0: 100, 1: 50, 6: 65) goes to decode: 1. The 3-interval window opens.
  for (int i = 0; i < 15; ++i) load_pull(f, *p, 0, 1.0);
  for (int i = 0; i < 15; ++i) load_pull(f, *p, 0, 0.85);
  CHECK(f.decide(*p) == Changes{{1, D}});
  CHECK(f.of(P) == std::vector<int32_t>{0, 6});

  // 3-5. Each would take a decode replica (prefill +1 with KV steady, then prefill +1 with
  //      decode -1): refused for 3 decisions after the one that added a decode replica.
  CHECK(load_interval(f, *p, 2, 0.7).empty());
  CHECK(load_interval(f, *p, 2, 0.7).empty());
  CHECK(load_interval(f, *p, 2, 0.3).empty());
  // 6. The window is over: decode -1 and prefill +1 move the least busy decode replica (3 and 4
  //    run 3 sessions each: the lower index).
  CHECK(load_interval(f, *p, 2, 0.3) == Changes{{3, P}});

  // 7. Both pools want +1 (queue 2/3 = 0.667, KV 0.95): a fixed fleet cannot give both.
  CHECK(load_interval(f, *p, 2, 0.95).empty());
  // 8. Both want -1 (queue 0, KV 0.3): nothing either.
  CHECK(load_interval(f, *p, 0, 0.3).empty());
  // 9. Both steady (queue 1/3 = 0.333, KV 0.7): nothing.
  CHECK(load_interval(f, *p, 1, 0.7).empty());
  // 10. Prefill -1 with decode steady: the freed prefill replica serves decode (0: 100, 3: 20,
  //     6: 65 queued: 3 goes).
  CHECK(load_interval(f, *p, 0, 0.7) == Changes{{3, D}});
  CHECK(f.of(P) == std::vector<int32_t>{0, 6});
}

TEST_CASE(
    "planner dynamo-threshold: the queue trend, at least one replica per role, switching, step") {
  SUBCASE("a queue above the threshold on average but draining fast adds no prefill replica") {
    PlannerFleet f({P, D, D});
    f.m[1].running_sessions = 2;
    f.m[2].running_sessions = 1;
    auto p = make_planner("dynamo-threshold");
    auto q = make_planner("dynamo-threshold", {{"prefill_queue_buffer_intervals", "0"}});
    // Queue 3 for 10 pulls, then 1: mean 1.667 > 0.5, but the trend 1 + (1 - 3) x 3 < 0.5.
    // Without buffer intervals the last pull, 1 > 0.5, is the prediction.
    for (cluster::Planner* x : {p.get(), q.get()}) {
      for (int i = 0; i < 10; ++i) load_pull(f, *x, 3, 0.7);
      for (int i = 0; i < 20; ++i) load_pull(f, *x, 1, 0.7);
    }
    CHECK(p->decide(f.c).empty());
    CHECK(q->decide(f.c) == Changes{{2, P}});
  }
  SUBCASE("the last replica of a role never moves") {
    PlannerFleet f({P, D});
    auto p = make_planner("dynamo-threshold");
    CHECK(load_interval(f, *p, 0, 0.7).empty());  // prefill -1, decode steady
    CHECK(load_interval(f, *p, 0, 0.3).empty());  // both -1
    CHECK(load_interval(f, *p, 3, 0.3).empty());  // decode -1 and prefill +1
    CHECK(f.c.roles == std::vector<Role>{P, D});
  }
  SUBCASE("no adjustment while a replica switches; a switching replica never moves") {
    PlannerFleet f({P, D, D, D, M});
    auto p = make_planner("dynamo-threshold", {{"step", "2"}});
    f.c.switching[2] = 1;
    CHECK(load_interval(f, *p, 2, 0.7).empty());
    f.c.switching[2] = 0;
    f.m[1].running_sessions = 4;
    f.m[2].running_sessions = 1;
    f.m[3].running_sessions = 2;
    // step 2: the two least busy decode replicas, in ascending order; mixed 4 is never counted.
    CHECK(load_interval(f, *p, 2, 0.7) == Changes{{2, P}, {3, P}});
    // Decode replica 1 is now the last one: it stays.
    CHECK(load_interval(f, *p, 6, 0.7).empty());
  }
  SUBCASE("no pulls, no decision") {
    PlannerFleet f({P, D});
    auto p = make_planner("dynamo-threshold");
    CHECK(f.decide(*p).empty());
  }
}
