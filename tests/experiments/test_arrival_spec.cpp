// The class-workload keys of an experiment (experiments/spec/arrival_spec.h): arrival.salt_copies,
// arrival.phases and arrival.cycles for user-phases, and trace.kinds; their checks name the
// file, the line and the key, and a resolved spec reads back the same.
#include <doctest/doctest.h>

#include <string>

#include "tests/spec_helpers.h"

using namespace isim;
using isim::test::error_of;
using isim::test::parse;

namespace {
const char* kClassSpec = "trace: {from: agents, sessions: 50}\nprofile: p.yaml\npolicy: swap\n";
}  // namespace

TEST_CASE("user-phases: phases and cycles, their checks, and the resolved spec") {
  const std::string head = kClassSpec;
  auto e = parse(head +
                 "arrival:\n"
                 "  process: user-phases\n"
                 "  cycles: 3\n"
                 "  salt_copies: true\n"
                 "  phases:\n"
                 "    - {duration_s: 1200, users: {coding: 48, math: 8}}\n"
                 "    - {duration_s: 600, users: {math: 48}}\n");
  REQUIRE(e.arrival.phases.size() == 2);
  CHECK(e.arrival.cycles == 3);
  CHECK(e.arrival.salt_copies);
  CHECK(e.arrival.phases[0].duration_s == 1200);
  using Users = std::vector<std::pair<std::string, int64_t>>;
  CHECK(e.arrival.phases[0].users == Users{{"coding", 48}, {"math", 8}});
  CHECK(e.arrival.phases[1].users == Users{{"math", 48}});
  const YAML::Node r = e.resolved()["arrival"];
  CHECK(r["cycles"].as<int64_t>() == 3);
  CHECK(r["salt_copies"].as<bool>());
  CHECK(r["phases"][1]["users"]["math"].as<int64_t>() == 48);
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  CHECK(again.arrival.phases[0].users == e.arrival.phases[0].users);
  CHECK(again.arrival.phases[1].duration_s == 600);
  CHECK(again.arrival.cycles == 3);
  CHECK(again.arrival.salt_copies);
  // Other processes ignore phases and cycles, and resolve without them; salt_copies false
  // (the default) is not written.
  auto u = parse(head + "arrival: {process: users, users: 2, cycles: 0}\n");
  CHECK(!u.resolved()["arrival"]["cycles"]);
  CHECK(!u.resolved()["arrival"]["salt_copies"]);

  const std::string at = head + "arrival:\n  process: user-phases\n";
  CHECK(error_of(at) ==
        "e.yaml:5: arrival.phases: missing (user-phases needs a list of {duration_s, users: "
        "{CLASS: N}})");
  CHECK(error_of(at + "  phases: []\n") ==
        "e.yaml:6: arrival.phases: expected a non-empty list of {duration_s, users: {CLASS: N}}");
  CHECK(error_of(at + "  phases:\n    - {duration_s: 0, users: {math: 1}}\n") ==
        "e.yaml:7: arrival.phases[0].duration_s: must be a finite number of seconds > 0, got 0");
  CHECK(error_of(at + "  phases:\n    - {duration_s: 5, users: {math: 1}}\n"
                      "    - {duration_s: 5, users: {math: -2}}\n") ==
        "e.yaml:8: arrival.phases[1].users.math: must be an integer >= 0, got -2");
  CHECK(error_of(at + "  phases:\n    - {duration_s: 5, user: {math: 1}}\n") ==
        "e.yaml:7: arrival.phases[0].user: unknown key; valid keys: duration_s, users");
  CHECK(error_of(at + "  phases:\n    - {duration_s: 5, users: {math: 1.5}}\n") ==
        "e.yaml:7: arrival.phases[0].users.math: expected an integer number of users, got '1.5'");
  CHECK(error_of(at + "  cycles: 0\n  phases:\n    - {duration_s: 5, users: {math: 1}}\n") ==
        "e.yaml:6: arrival.cycles: must be an integer >= 1, got 0");
  CHECK(error_of(head + "arrival: {process: users, users: 2, salt_copies: 3}\n") ==
        "e.yaml:4: arrival.salt_copies: expected true or false, got '3'");
}

TEST_CASE("trace.kinds: a list of classes, resolved as given") {
  auto e = parse(
      "trace: {from: agents, sessions: 50, kinds: [math, computer-use]}\n"
      "profile: p.yaml\npolicy: swap\n");
  CHECK(e.trace.kinds == std::vector<std::string>{"math", "computer-use"});
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  CHECK(again.trace.kinds == e.trace.kinds);
  CHECK(
      error_of("trace: {from: agents, sessions: 50, kinds: []}\nprofile: p.yaml\npolicy: swap\n") ==
      "e.yaml:1: trace.kinds: expected a non-empty list of session classes, e.g. [math]");
}
