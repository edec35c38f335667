#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/arrival.h"
#include "traces/jsonl.h"
#include "traces/multiturn.h"

using namespace isim::trace;

namespace {

std::string load_error(const std::string& yaml, std::string* path_out) {
  const auto path = std::filesystem::temp_directory_path() / "isim_test_multiturn.yaml";
  std::ofstream(path) << yaml;
  *path_out = path.string();
  std::string msg;
  try {
    load_multiturn_config(path.string());
  } catch (const isim::InputError& e) {
    msg = e.what();
  }
  std::filesystem::remove(path);
  return msg;
}

}  // namespace

TEST_CASE("multiturn: the shipped YAML equals default_multiturn_config()") {
  const MultiTurnConfig loaded =
      load_multiturn_config(isim::test::source_dir() + "/traces/generators/pensieve-sharegpt.yaml");
  const MultiTurnConfig def = default_multiturn_config();
  CHECK(loaded.turns == def.turns);
  CHECK(loaded.input == def.input);
  CHECK(loaded.output == def.output);
  CHECK(loaded.think_time_s == def.think_time_s);
  CHECK(loaded == def);
  CHECK(def.max_context == 16384);
  CHECK(def.turns.mean == 5.56);
  CHECK(def.input.mean == 37.8);
  CHECK(def.output.mean == 204.6);
  CHECK(def.think_time_s == Dist{"exponential", 60, 0, 0, std::numeric_limits<double>::infinity()});
  CHECK(def.intercept_kind == "user");
}

TEST_CASE("multiturn: a constant config gives hand-checked conversations") {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  MultiTurnConfig c;
  c.max_context = 100;
  c.turns = Dist{"normal", 3, 0, 1, kInf};
  c.input = Dist{"normal", 10, 0, 1, kInf};
  c.output = Dist{"normal", 20, 0, 1, kInf};
  c.think_time_s = Dist{"normal", 5, 0, 0, kInf};
  const Trace t = generate_multiturn(c, 2, 1);
  REQUIRE(t.size() == 2);
  CHECK(t[0].id == "c0");
  CHECK(t[1].id == "c1");
  CHECK(t[0].segments == std::vector<Segment>{{10, 20, Intercept{"user", 5}},
                                              {10, 20, Intercept{"user", 5}},
                                              {10, 20, {}}});
  c.max_context = 75;  // 30 + 30 + 10 leaves 5 of the third reply
  CHECK(generate_multiturn(c, 1, 1)[0].segments ==
        std::vector<Segment>{
            {10, 20, Intercept{"user", 5}}, {10, 20, Intercept{"user", 5}}, {10, 5, {}}});
  CHECK_THROWS_WITH_AS(generate_multiturn(c, -1, 1),
                       "multiturn generator: conversations: must be >= 0, got -1",
                       isim::InputError);
}

TEST_CASE("multiturn: a first prompt and outputs drawn below 1 token are 1") {
  // Found by tests/fuzz (corpus multiturn/regress-*): outputs of 0 tokens made a trace that
  // write_jsonl refuses.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  MultiTurnConfig c;
  c.turns = Dist{"normal", 2, 0, 1, kInf};
  c.input = Dist{"normal", 0, 0, 0, kInf};
  c.output = Dist{"normal", 0, 0, 0, kInf};
  c.think_time_s = Dist{"normal", 5, 0, 0, kInf};
  const Trace t = generate_multiturn(c, 1, 1);
  CHECK(t[0].segments == std::vector<Segment>{{1, 1, Intercept{"user", 5}}, {0, 1, {}}});
  std::ostringstream out;
  CHECK_NOTHROW(write_jsonl(out, t));
}

TEST_CASE("multiturn: deterministic, prefix-stable, valid, capped at 16K") {
  const MultiTurnConfig c = default_multiturn_config();
  const Trace a = generate_multiturn(c, 3000, 42);
  CHECK(a == generate_multiturn(c, 3000, 42));
  CHECK(a != generate_multiturn(c, 3000, 43));
  const Trace first = generate_multiturn(c, 100, 42);
  CHECK(std::equal(first.begin(), first.end(), a.begin()));
  for (const Session& s : a) {
    validate_session(s, s.id);
    CHECK(s.max_context() <= 16384);
    for (size_t k = 0; k + 1 < s.segments.size(); ++k)
      CHECK(s.segments[k].intercept->kind == "user");
    CHECK(s.segments.back().output >= 1);
  }
  // Poisson over conversations: the arrival process assigns one time per conversation.
  Trace timed = a;
  apply_arrivals(timed, ArrivalSpec{"poisson", 0.5, 7});
  CHECK(timed.back().arrival_s > timed.front().arrival_s);
}

// 20,000 conversations with the cap lifted, so the draws are seen untruncated. Bounds are 5
// standard errors of the mean (the sd of each family over sqrt(n)), so a correct generator fails
// with probability below 1e-6 while a wrong mean (e.g. 5 turns instead of 5.56) fails at once.
TEST_CASE("multiturn: empirical means match ShareGPT's") {
  MultiTurnConfig c = default_multiturn_config();
  c.max_context = int64_t{1} << 50;
  const Trace t = generate_multiturn(c, 20000, 2025);
  double turns = 0, input = 0, output = 0, think = 0;
  int64_t segs = 0, gaps = 0;
  for (const Session& s : t) {
    turns += static_cast<double>(s.segments.size());
    for (const Segment& seg : s.segments) {
      input += static_cast<double>(seg.input);
      output += static_cast<double>(seg.output);
      ++segs;
      if (seg.intercept) {
        think += seg.intercept->duration_s;
        ++gaps;
      }
    }
  }
  const double n = static_cast<double>(t.size());
  const double mt = turns / n, mi = input / static_cast<double>(segs),
               mo = output / static_cast<double>(segs), mth = think / static_cast<double>(gaps);
  MESSAGE("multiturn, 20000 conversations: turns " << mt << ", input " << mi << ", output " << mo
                                                   << ", think " << mth << " s (" << segs
                                                   << " turns)");
  // sds: geometric sqrt(1 - p) / p = 5.03; input 56.7; output 204.6; think 60.
  const double turn_se = std::sqrt(1 - 1 / 5.56) * 5.56 / std::sqrt(n);
  CHECK(std::abs(mt - 5.56) < 5 * turn_se);
  CHECK(std::abs(mi - 37.8) < 5 * 56.7 / std::sqrt(static_cast<double>(segs)) + 0.05);
  CHECK(std::abs(mo - 204.6) < 5 * 204.6 / std::sqrt(static_cast<double>(segs)) + 0.05);
  CHECK(std::abs(mth - 60) < 5 * 60 / std::sqrt(static_cast<double>(gaps)));
  int64_t over = 0;
  for (const Session& s : t) over += s.max_context() > 16384 ? 1 : 0;
  MESSAGE(over << " of 20000 uncapped conversations exceed the 16K cap");
  CHECK(over < 20);  // the geometric tail: ~68 average turns are needed to reach 16K
}

TEST_CASE("multiturn: config errors name file, line and key") {
  std::string path;
  const std::string ok =
      "turns: {dist: geometric, mean: 3}\ninput: {mean: 5, sd: 0}\noutput: {mean: 5, sd: 0}\n"
      "think_time_s: {dist: exponential, mean: 1}\n";
  CHECK(load_error(ok, &path).empty());
  struct Case {
    std::string yaml;
    std::string suffix;
  };
  const Case cases[] = {
      {ok + "think_s: 3\n",
       ":5: think_s: unknown key; valid keys: max_context, turns, input, output, think_time_s, "
       "intercept_kind"},
      {"input: {mean: 5, sd: 0}\n", ":1: turns: missing"},
      {ok + "max_context: 1\n", ":5: max_context: expected an integer >= 2"},
      {"turns: {dist: geometric, mean: 0.5}\ninput: {mean: 5, sd: 0}\noutput: {mean: 5, sd: "
       "0}\nthink_time_s: {dist: exponential, mean: 1}\n",
       ": turns.mean: must be >= 1 for dist geometric"},
      {"turns: {mean: 3}\n", ":1: turns.sd: missing"},
      {ok + "intercept_kind: ''\n", ": intercept_kind: must be a non-empty string"},
      {"turns: [\n", ":2: <yaml>:"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    const std::string msg = load_error(c.yaml, &path);
    CAPTURE(msg);
    CHECK(msg.starts_with(path + c.suffix));
  }
}

TEST_CASE("multiturn: think times add up to at most the limit on a time") {
  // As for the session generator: each draw of 3e9 s is within the 4e9 s limit, three are not;
  // draws are capped at what is left (3e9, 1e9, 0), so the trace reads back.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  MultiTurnConfig c;
  c.max_context = 1000;
  c.turns = Dist{"normal", 4, 0, 1, kInf};
  c.input = Dist{"normal", 10, 0, 1, kInf};
  c.output = Dist{"normal", 20, 0, 1, kInf};
  c.think_time_s = Dist{"normal", 3e9, 0, 0, kInf};
  const Trace t = generate_multiturn(c, 1, 1);
  CHECK(t[0].segments == std::vector<Segment>{{10, 20, Intercept{"user", 3e9}},
                                              {10, 20, Intercept{"user", 1e9}},
                                              {10, 20, Intercept{"user", 0}},
                                              {10, 20, {}}});
  std::stringstream io;
  write_jsonl(io, t);
  CHECK(parse_jsonl(io, "t.jsonl") == t);
}
