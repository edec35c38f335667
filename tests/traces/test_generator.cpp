#include <doctest/doctest.h>

#include <fmt/format.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/input_error.h"
#include "core/rng.h"
#include "tests/test_paths.h"
#include "traces/generator.h"
#include "traces/jsonl.h"

using namespace isim::trace;
using isim::Rng;  // core/rng.h

namespace {

Dist fixed(double v) {
  return Dist{"normal", v, 0, 0, std::numeric_limits<double>::infinity()};
}

// Every draw is its mean: generated sessions can be written down by hand.
GeneratorConfig fixed_config() {
  GeneratorConfig c;
  c.max_context = 2048;
  c.mix = {{"tool", 1, fixed(3), fixed(100), fixed(10), {"calc", fixed(2), fixed(5)}, {}}};
  return c;
}

std::string load_error(const std::string& yaml, std::string* path_out) {
  const auto path = std::filesystem::temp_directory_path() / "isim_test_generator.yaml";
  std::ofstream(path) << yaml;
  *path_out = path.string();
  try {
    load_generator_config(path.string());
  } catch (const isim::InputError& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "";
}

}  // namespace

TEST_CASE("generator: the shipped YAML equals default_generator_config()") {
  const GeneratorConfig loaded =
      load_generator_config(isim::test::source_dir() + "/traces/generators/infercept-mix.yaml");
  const GeneratorConfig def = default_generator_config();
  REQUIRE(loaded.mix.size() == def.mix.size());
  for (size_t i = 0; i < def.mix.size(); ++i) {
    CAPTURE(def.mix[i].name);
    CHECK(loaded.mix[i] == def.mix[i]);
  }
  CHECK(loaded == def);
  CHECK(def.max_context == 2048);
}

TEST_CASE("generator: hand-checked sessions from a constant config") {
  const Trace t = generate(fixed_config(), 2, 5);
  REQUIRE(t.size() == 2);
  const std::vector<Segment> expected = {{100, 10, Intercept{"calc", 2}},
                                         {5, 10, Intercept{"calc", 2}},
                                         {5, 10, Intercept{"calc", 2}},
                                         {5, 10, {}}};
  CHECK(t[0] == Session{"g0", 0, expected});
  CHECK(t[1] == Session{"g1", 0, expected});

  GeneratorConfig c = fixed_config();  // tool calls alternate with human turns
  c.mix[0].human_turn = InterceptSpec{"chat", fixed(30), fixed(7)};
  CHECK(generate(c, 1, 5)[0].segments == std::vector<Segment>{{100, 10, Intercept{"calc", 2}},
                                                              {5, 10, Intercept{"chat", 30}},
                                                              {7, 10, Intercept{"calc", 2}},
                                                              {5, 10, {}}});

  c.max_context = 137;  // 110 + 15 fit; after 7 returned tokens, 5 are left for the output
  CHECK(generate(c, 1, 5)[0].segments == std::vector<Segment>{{100, 10, Intercept{"calc", 2}},
                                                              {5, 10, Intercept{"chat", 30}},
                                                              {7, 5, {}}});
}

TEST_CASE("generator: prompts and outputs drawn below 1 token are 1") {
  // A prompt of mean 0 made sessions with nothing to prefill, which the engine never starts
  // and write_jsonl refuses (found by tests/fuzz: corpus generator/regress-*).
  GeneratorConfig c = fixed_config();
  c.mix[0].prompt = fixed(0);
  c.mix[0].output = fixed(0.2);
  c.mix[0].intercept.returned = fixed(0);
  const Trace t = generate(c, 1, 5);
  CHECK(t[0].segments == std::vector<Segment>{{1, 1, Intercept{"calc", 2}},
                                              {0, 1, Intercept{"calc", 2}},
                                              {0, 1, Intercept{"calc", 2}},
                                              {0, 1, {}}});
  std::ostringstream out;
  CHECK_NOTHROW(write_jsonl(out, t));
}

TEST_CASE("generator: truncate_to_context") {
  const Session s{
      "x", 0, {{100, 50, Intercept{"k", 1}}, {30, 20, Intercept{"k", 1}}, {10, 10, {}}}};
  Session a = s;
  truncate_to_context(a, 1000);
  CHECK(a == s);
  truncate_to_context(a, 190);  // segment 1 keeps 10 of its 20 output tokens and ends the session
  CHECK(a.segments == std::vector<Segment>{{100, 50, Intercept{"k", 1}}, {30, 10, {}}});
  CHECK(a.max_context() == 190);
  Session b = s;
  truncate_to_context(b, 175);  // segment 1's input alone leaves no room: dropped
  CHECK(b.segments == std::vector<Segment>{{100, 50, {}}});
  Session c = s;
  truncate_to_context(c, 60);  // the prompt is capped so that one token can be decoded
  CHECK(c.segments == std::vector<Segment>{{59, 1, {}}});
  CHECK_THROWS_AS(truncate_to_context(c, 1), isim::InputError);
}

TEST_CASE("generator: the default mix is deterministic, valid and within max_context") {
  const GeneratorConfig c = default_generator_config();
  const Trace a = generate(c, 20000, 42);
  CHECK(a == generate(c, 20000, 42));
  CHECK(a != generate(c, 20000, 43));
  const Trace prefix = generate(c, 100, 42);
  CHECK(std::equal(prefix.begin(), prefix.end(), a.begin()));

  std::map<std::string, int64_t> first_kind;
  std::map<std::string, std::pair<double, int64_t>> duration;  // kind -> (sum, count)
  for (size_t i = 0; i < a.size(); ++i) {
    const Session& s = a[i];
    REQUIRE(s.id == fmt::format("g{}", i));
    REQUIRE(s.arrival_s == 0);
    validate_session(s, s.id);
    REQUIRE(s.max_context() <= 2048);
    if (s.segments[0].intercept) ++first_kind[s.segments[0].intercept->kind];
    for (const Segment& g : s.segments)
      if (g.intercept) {
        duration[g.intercept->kind].first += g.intercept->duration_s;
        ++duration[g.intercept->kind].second;
      }
  }
  // Shares 98/65/50/65/54/65 of 397; binomial sd <= 0.0031 at n = 20000, bound 0.015.
  const std::map<std::string, double> share = {{"math", 98}, {"chat", 65}, {"qa", 50},
                                               {"tts", 65},  {"ve", 54},   {"image", 65}};
  for (const auto& entry : share) {  // not a structured binding: CAPTURE takes it by lambda
    const std::string& kind = entry.first;
    const double s = entry.second;
    CAPTURE(kind);
    CHECK(static_cast<double>(first_kind[kind]) / 20000 == doctest::Approx(s / 397).epsilon(0.1));
  }
  // Kinds whose draws are barely clamped keep their configured mean duration.
  auto mean = [&](const std::string& k) { return duration[k].first / duration[k].second; };
  CHECK(mean("qa") == doctest::Approx(0.71).epsilon(0.03));
  CHECK(mean("ve") == doctest::Approx(0.085).epsilon(0.03));
  CHECK(mean("image") == doctest::Approx(11.5).epsilon(0.03));
  CHECK(mean("tts") == doctest::Approx(6.1).epsilon(0.03));
}

TEST_CASE("generator: bootstrap") {
  const Trace src = {Session{"a", 1, {{1, 1, {}}}}, Session{"b", 2, {{2, 2, {}}}},
                     Session{"c", 3, {{3, 3, {}}}}};
  const Trace t = bootstrap(src, 1000, 7);
  REQUIRE(t.size() == 1000);
  CHECK(t == bootstrap(src, 1000, 7));
  CHECK(t != bootstrap(src, 1000, 8));
  std::set<std::string> drawn;
  for (size_t k = 0; k < t.size(); ++k) {
    const std::string base = t[k].id.substr(0, 1);
    REQUIRE(t[k].id == fmt::format("{}#{}", base, k));
    REQUIRE(t[k].arrival_s == 0);
    const Session& from = src[static_cast<size_t>(base[0] - 'a')];
    REQUIRE(t[k].segments == from.segments);
    drawn.insert(base);
  }
  CHECK(drawn.size() == 3);
  CHECK(bootstrap(Trace{}, 0, 1).empty());
  CHECK_THROWS_WITH_AS(bootstrap(Trace{}, 1, 1), "bootstrap: the source trace has no sessions",
                       isim::InputError);
  CHECK_THROWS_AS(bootstrap(src, -1, 1), isim::InputError);
  CHECK_THROWS_WITH_AS(generate(fixed_config(), -1, 1), "generator: sessions: must be >= 0, got -1",
                       isim::InputError);
}

TEST_CASE("generator: config errors name file, line and key") {
  const std::string head = "max_context: 2048\nmix:\n  - name: t\n    share: 1\n";
  const std::string dists =
      "    calls: {mean: 1, sd: 0}\n    prompt: {mean: 10, sd: 0}\n    output: {mean: 5, sd: 0}\n";
  const std::string icpt =
      "    intercept:\n      kind: k\n      duration_s: {mean: 1, sd: 0}\n"
      "      returned: {mean: 3, sd: 0}\n";
  std::string path;
  CHECK(load_error(head + dists + icpt, &path).empty());

  struct Case {
    std::string yaml;
    std::string suffix;  // after "PATH"
  };
  const Case cases[] = {
      {"max_context: 2048\nmixx: []\n", ":2: mixx: unknown key; valid keys: max_context, mix"},
      {"max_context: 2048\n", ":1: mix: missing"},
      {"mix: {a: 1}\n", ":1: mix: expected a list of session kinds"},
      {"max_context: 1.5\nmix: []\n", ":1: max_context: expected an integer >= 2"},
      {head + dists + "    intercept:\n      kind: k\n      durtion_s: {mean: 1, sd: 0}\n",
       ":10: mix[0].intercept.durtion_s: unknown key; valid keys: kind, duration_s, returned"},
      {"mix:\n  - name: t\n" + dists + icpt, ":2: mix[0].share: missing"},
      {head + "    calls: {mean: lots, sd: 0}\n",
       ":5: mix[0].calls.mean: expected a number, got 'lots'"},
      {head + "    calls: {mean: 1, sd: 0, median: 1}\n",
       ":5: mix[0].calls.median: unknown key; valid keys: dist, mean, sd, min, max"},
      {head + "    calls: {mean: 1, sd: -1}\n" + dists.substr(dists.find("    prompt")) + icpt,
       ": mix[0].calls.sd: must be finite and >= 0"},
      {head + "    calls: {mean: 1, sd: 0, dist: gamma}\n" +
           dists.substr(dists.find("    prompt")) + icpt,
       ": mix[0].calls.dist: unknown distribution 'gamma'; valid: normal, lognormal, exponential, "
       "geometric"},
      {"mix: []\n", ": mix: needs at least one session kind"},
      {"mix: [\n", ":2: <yaml>:"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    const std::string msg = load_error(c.yaml, &path);
    CAPTURE(msg);
    CHECK(msg.starts_with(path + c.suffix));
  }
  CHECK_THROWS_WITH_AS(load_generator_config("/nonexistent-dir/g.yaml"),
                       "/nonexistent-dir/g.yaml: cannot open: No such file or directory",
                       isim::InputError);
}

TEST_CASE("generator: truncate_to_context drops prefix hashes beyond the capped prompt") {
  Session s{"x", 0, {{100, 50, {}}}};
  s.prefix = PrefixHashes{16, {1, 2, 3, 4, 5, 6, 7}};  // ceil(100 / 16) = 7 blocks
  truncate_to_context(s, 40);                          // prompt 39 -> ceil(39 / 16) = 3 blocks
  CHECK(s.segments == std::vector<Segment>{{39, 1, {}}});
  CHECK(s.prefix == PrefixHashes{16, {1, 2, 3}});
  Session short_chain{"y", 0, {{100, 50, {}}}};
  short_chain.prefix = PrefixHashes{16, {9}};
  truncate_to_context(short_chain, 40);  // fewer hashes than blocks: kept as they are
  CHECK(short_chain.prefix == PrefixHashes{16, {9}});
}

// By hand: 100 + 10 = 110; reset to 20, + 30 + 20 = 70; + 10 + 50 = 130 (the plain sum: 220).
TEST_CASE("generator: truncate_to_context counts resets and keeps the signals valid") {
  Session s{"x", 0, {{100, 10, Intercept{"k", 1}}, {30, 20, Intercept{"k", 1}}, {10, 50, {}}}};
  s.segments[1].event = {ContextEventKind::kReset, 20, 20, ""};
  s.segments[2].event.kind = ContextEventKind::kEnd;
  CHECK(s.max_context() == 130);
  Session a = s;
  truncate_to_context(a, 130);
  CHECK(a == s);
  truncate_to_context(a, 120);  // segment 2 has 120 - 70 - 10 = 40 tokens to decode
  REQUIRE(a.segments.size() == 3);
  CHECK(a.segments[2].output == 40);
  CHECK(a.segments[2].event.kind == ContextEventKind::kEnd);
  CHECK(a.max_context() == 120);
  Session b = s;
  truncate_to_context(b, 105);  // segment 0 decodes 5 and ends the session, with the end event
  std::vector<Segment> want = {{100, 5, {}}};
  want[0].event.kind = ContextEventKind::kEnd;
  CHECK(b.segments == want);
  // A capped prompt: the fork shares at most 39 tokens, the retention ranges are clipped to it.
  Session c{"c", 0, {{100, 5, {}}}};
  c.segments[0].event = {ContextEventKind::kFork, 80, 0, "p"};
  c.segments[0].retention = {{0, 50, 9, 0}, {50, 100, 1, 0}};
  truncate_to_context(c, 40);
  want = {{39, 1, {}}};
  want[0].event = {ContextEventKind::kFork, 39, 0, "p"};
  want[0].retention = {{0, 39, 9, 0}};
  CHECK(c.segments == want);
  for (const Session* v : {&a, &b, &c}) CHECK_NOTHROW(validate_session(*v, v->id));
}

TEST_CASE("generator: a bootstrap draw of a forked session loses its fork") {
  Session p{"p", 0, {{4, 1, {}}}};
  Session c{"c", 1, {{6, 1, Intercept{"k", 1}}, {2, 1, {}}}};
  c.segments[0].event = {ContextEventKind::kFork, 3, 0, "p"};
  c.segments[1].event.kind = ContextEventKind::kEnd;
  const Trace t = bootstrap({p, c}, 20, 3);
  int64_t children = 0;
  for (const Session& s : t) {
    if (s.id[0] != 'c') continue;
    ++children;
    CHECK(s.segments[0].event == ContextEvent{});
    CHECK(s.segments[1].event.kind == ContextEventKind::kEnd);
  }
  CHECK(children > 0);
  CHECK_NOTHROW(validate_forks(t, [](size_t i) { return std::to_string(i); }));
}

TEST_CASE("dist: exponential and geometric families") {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Rng rng(11);
  const Dist expo{"exponential", 60, 0, 0, kInf};
  const Dist geo{"geometric", 5.56, 0, 1, kInf};
  const Dist one{"geometric", 1, 0, 1, kInf};
  const int n = 200000;
  double se = 0, sg = 0, sg2 = 0;
  for (int i = 0; i < n; ++i) {
    se += draw(expo, rng);
    const double g = draw(geo, rng);
    CHECK(g == std::floor(g));
    CHECK(g >= 1);
    sg += g;
    sg2 += g * g;
    CHECK(draw(one, rng) == 1);
  }
  // Standard errors: exponential sd 60 -> 0.134; geometric sd sqrt(1 - p) / p = 5.03 -> 0.0113.
  CHECK(se / n == doctest::Approx(60).epsilon(0.01));    // ~4.5 standard errors
  CHECK(sg / n == doctest::Approx(5.56).epsilon(0.01));  // ~5 standard errors
  const double var = sg2 / n - (sg / n) * (sg / n);
  CHECK(var == doctest::Approx(5.56 * 5.56 * (1 - 1 / 5.56)).epsilon(0.05));

  CHECK_THROWS_WITH_AS(check_dist(Dist{"exponential", 60, 3, 0, kInf}, "w", "k"),
                       "w: k.sd: is implied by the mean for dist exponential; leave it out",
                       isim::InputError);
  CHECK_THROWS_WITH_AS(check_dist(Dist{"geometric", 0.5, 0, 0, kInf}, "w", "k"),
                       "w: k.mean: must be >= 1 for dist geometric", isim::InputError);
  CHECK_THROWS_WITH_AS(check_dist(Dist{"exponential", 0, 0, 0, kInf}, "w", "k"),
                       "w: k.mean: must be > 0 for dist exponential", isim::InputError);
}

TEST_CASE("generator: a session's intercepts add up to at most the limit on a time") {
  // Found by reading the fuzz harness's promise (a config that loads must generate a trace the
  // reader takes back): three intercepts of 3e9 s, each within the 4e9 s limit, made a session
  // of 9e9 s that write_jsonl wrote and parse_jsonl refused. Draws are now capped at what is
  // left: 3e9, then 4e9 - 3e9 = 1e9, then 0.
  GeneratorConfig c = fixed_config();
  c.max_context = 1'000'000;
  c.mix[0].intercept.duration_s = fixed(3e9);
  const Trace t = generate(c, 1, 5);
  REQUIRE(t[0].segments.size() == 4);
  CHECK(t[0].segments[0].intercept->duration_s == 3e9);
  CHECK(t[0].segments[1].intercept->duration_s == 1e9);
  CHECK(t[0].segments[2].intercept->duration_s == 0);
  std::stringstream io;
  write_jsonl(io, t);
  CHECK(parse_jsonl(io, "t.jsonl") == t);
}
