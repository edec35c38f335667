// arrival.salt_copies (traces/arrival.h, traces/arrival_copies.h) and Session::shared_prompt as
// the weka reader and the agents source set it. The salted values were computed by hand with an
// independent Python port of core/hash.h's splitmix64: salt_key(0, 0) = splitmix64(splitmix64(0)
// + 0) = 0xa706dd2f4d197e6f and salt_key(1, 0) = 0x5e41ab087439611e; splitmix64(h ^ key) for
// h = 3, 4, 9 is 5924491911326406803, 8217262392301527385, 3364216518213030411 (user 0) and
// 15804133323032236162, 9021294660820647873, 6144335845415140085 (user 1).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/cli_helpers.h"
#include "traces/agents.h"
#include "traces/arrival.h"
#include "traces/arrival_copies.h"
#include "traces/weka.h"

using namespace isim::trace;

namespace {

// Root "a": 64 prompt tokens in four 16-token blocks {1, 2, 3, 4}, of which its source knows
// 40 tokens are a shared system prompt (two whole blocks); subagent "a/x" forks from it with
// blocks {1, 2, 3, 9}.
Trace salt_pool() {
  Session a{"a", 0.0, {Segment{64, 2, Intercept{"tool", 5.0}}, Segment{3, 1, std::nullopt}}};
  a.prefix = {16, {1, 2, 3, 4}};
  a.shared_prompt = 40;
  Session x{"a/x", 1.0, {Segment{64, 1, std::nullopt}}};
  x.segments[0].event = {ContextEventKind::kFork, 0, 0, "a"};
  x.prefix = {16, {1, 2, 3, 9}};
  return {a, x};
}

ArrivalSpec two_users(bool salt) {
  ArrivalSpec s;
  s.process = "users";
  s.users = 2;
  s.sessions_per_user = 1;
  s.salt_copies = salt;
  return s;
}

const std::vector<uint64_t>& hashes_of(const Trace& t, const std::string& id) {
  for (const auto& s : t)
    if (s.id == id) return s.prefix.hashes;
  FAIL("no session " << id);
  static const std::vector<uint64_t> none;
  return none;
}

}  // namespace

TEST_CASE("salt_copies: copies share the system prompt and nothing past it") {
  Trace t = salt_pool();
  apply_arrivals(t, two_users(true));
  REQUIRE(t.size() == 4);
  // Both users draw the one root; blocks 1 and 2 (the 40-token system prompt's whole blocks)
  // stay, the rest are salted per user session, a subagent's copy of its parent's block 3
  // matching its parent copy's.
  CHECK(hashes_of(t, "u0/0/a") ==
        std::vector<uint64_t>{1, 2, 5924491911326406803ull, 8217262392301527385ull});
  CHECK(hashes_of(t, "u0/0/a/x") ==
        std::vector<uint64_t>{1, 2, 5924491911326406803ull, 3364216518213030411ull});
  CHECK(hashes_of(t, "u1/0/a") ==
        std::vector<uint64_t>{1, 2, 15804133323032236162ull, 9021294660820647873ull});
  CHECK(hashes_of(t, "u1/0/a/x") ==
        std::vector<uint64_t>{1, 2, 15804133323032236162ull, 6144335845415140085ull});
  SUBCASE("off (the default): every hash as the trace has it") {
    Trace u = salt_pool();
    apply_arrivals(u, two_users(false));
    CHECK(hashes_of(u, "u0/0/a") == std::vector<uint64_t>{1, 2, 3, 4});
    CHECK(hashes_of(u, "u1/0/a/x") == std::vector<uint64_t>{1, 2, 3, 9});
    CHECK(two_users(false).salt_copies == ArrivalSpec{}.salt_copies);
  }
}

TEST_CASE("salt_copies: without shared_prompt the lead shared with another root is kept") {
  // p {1, 2, 3} and q {1, 2, 7} share two leading blocks, r {5, 6} none; p's shared_prompt of
  // 16 tokens (one block) overrides its lead of two.
  Trace t = {Session{"p", 0.0, {Segment{48, 1, std::nullopt}}},
             Session{"q", 0.0, {Segment{48, 1, std::nullopt}}},
             Session{"r", 0.0, {Segment{32, 1, std::nullopt}}}};
  t[0].prefix = {16, {1, 2, 3}};
  t[1].prefix = {16, {1, 2, 7}};
  t[2].prefix = {16, {5, 6}};
  const auto pool = copies::families(t);
  CHECK(copies::kept_blocks(t, pool) == std::vector<size_t>{2, 2, 0});
  t[0].shared_prompt = 16;
  CHECK(copies::kept_blocks(t, pool) == std::vector<size_t>{1, 2, 0});
  t[0].shared_prompt = 1000;  // never more than the root has
  CHECK(copies::kept_blocks(t, pool) == std::vector<size_t>{3, 2, 0});
}

TEST_CASE("shared_prompt: the weka reader sums system_tokens and tool_tokens") {
  auto file = [](const std::string& name, const std::string& extra) {
    return isim::test::write_file(
        isim::test::scratch("weka-shared") / name,
        "{\"block_size\": 64," + extra +
            " \"requests\": [{\"t\": 0, \"in\": 200, \"out\": 5, \"hash_ids\": [1, 2, 3, 4], "
            "\"stop\": \"end_turn\", \"input_types\": [\"text\"]}]}");
  };
  CHECK(import_weka(file("a.json", "\"system_tokens\": 100, \"tool_tokens\": 50,"))[0]
            .shared_prompt == 150);
  CHECK(import_weka(file("b.json", "\"system_tokens\": 180, \"tool_tokens\": 50,"))[0]
            .shared_prompt == 200);  // capped by the first prompt
  CHECK(import_weka(file("c.json", "\"system_tokens\": 100,"))[0].shared_prompt == 0);
}

TEST_CASE("shared_prompt: the agents source gives each session its kind's system prompt") {
  const AgentsConfig c = default_agents_config();
  const Trace t = generate_agents(c, 30, 1);
  for (const auto& s : t) {
    const std::string kind = session_class(s.id);
    for (const auto& k : c.kinds)
      if (k.name == kind) CHECK(s.shared_prompt == k.system_prompt);
  }
}
