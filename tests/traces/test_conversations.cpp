// Conversations rebuilt from a hash-prefix trace (traces/conversations.h), by hand on a small
// Mooncake-format excerpt (512-token blocks).
#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>

#include "traces/conversations.h"
#include "traces/jsonl.h"
#include "traces/mooncake.h"

using namespace isim::trace;

namespace {

// Line by line (t in s; full blocks = floor(input / 512)):
// 1  t0   1100/50  [0 1 2]    full [0 1]: starts c1 (block 0 new: continued through it)
// 2  t0   1030/20  [0 5 6]    full [0 5]: c1's [0 1] is no prefix: starts c2
// 3  t4   1600/30  [0 1 2 3]  extends c1's [0 1]: c1 context 1150 -> input 1600 - 1150 = 450,
//                             context 1630, latest [0 1 2]; c1's first turn waits 4 s
// 4  t5    700/10  [0 9]      full [0], nothing new in full: starts c3, never continued
// 5  t6   1100/5   [0 9 10]   only c3's [0] is a prefix, and it is not through a new block:
//                             starts c4
// 6  t9   1100/8   [0 1 7]    extends c1's retired [0 1] (2 blocks) more than any latest prompt
//                             (none through a new block): a branch, starts c5
// 7  t10  1560/40  [0 1 2 11] extends c1's [0 1 2]; 1560 <= context 1630: a reset keeping
//                             3 x 512 = 1536 tokens, input 1560 - 1536 = 24; waits 10 - 4 = 6 s
const char* kExcerpt =
    R"({"timestamp": 0, "input_length": 1100, "output_length": 50, "hash_ids": [0, 1, 2]}
{"timestamp": 0, "input_length": 1030, "output_length": 20, "hash_ids": [0, 5, 6]}
{"timestamp": 4000, "input_length": 1600, "output_length": 30, "hash_ids": [0, 1, 2, 3]}
{"timestamp": 5000, "input_length": 700, "output_length": 10, "hash_ids": [0, 9]}
{"timestamp": 6000, "input_length": 1100, "output_length": 5, "hash_ids": [0, 9, 10]}
{"timestamp": 9000, "input_length": 1100, "output_length": 8, "hash_ids": [0, 1, 7]}
{"timestamp": 10000, "input_length": 1560, "output_length": 40, "hash_ids": [0, 1, 2, 11]}
)";

Trace requests() {
  std::istringstream in(kExcerpt);
  return parse_mooncake(in, "excerpt.jsonl");
}

}  // namespace

TEST_CASE("conversations: a hash-prefix excerpt chains into exact sessions") {
  ConversationReport rep;
  const Trace t = chain_conversations(requests(), &rep);
  CHECK(rep == ConversationReport{7, 5, 2, 1, 1, 3});
  REQUIRE(t.size() == 5);
  const Session& c1 = t[0];
  CHECK(c1.id == "cm1");
  CHECK(c1.arrival_s == 0.0);
  CHECK(c1.prefix.hashes == std::vector<uint64_t>{0, 1, 2});
  REQUIRE(c1.segments.size() == 3);
  CHECK(c1.segments[0].input == 1100);
  CHECK(c1.segments[0].output == 50);
  REQUIRE(c1.segments[0].intercept.has_value());
  CHECK(c1.segments[0].intercept->kind == "user");
  CHECK(c1.segments[0].intercept->duration_s == 4.0);
  CHECK(c1.segments[1].input == 450);
  CHECK(c1.segments[1].output == 30);
  CHECK(c1.segments[1].event.kind == ContextEventKind::kNone);
  CHECK(c1.segments[1].intercept->duration_s == 6.0);
  CHECK(c1.segments[2].event == ContextEvent{ContextEventKind::kReset, 1536, 1536, ""});
  CHECK(c1.segments[2].input == 24);
  CHECK(c1.segments[2].output == 40);
  CHECK_FALSE(c1.segments[2].intercept.has_value());
  CHECK(c1.max_context() == 1630);  // 1100 + 50 + 450 + 30; after the reset 1536 + 64
  const std::vector<std::string> ids{t[1].id, t[2].id, t[3].id, t[4].id};
  CHECK(ids == std::vector<std::string>{"cm2", "cm4", "cm5", "cm6"});
  for (size_t i = 1; i < t.size(); ++i) CHECK(t[i].segments.size() == 1);
  CHECK(t[3].arrival_s == 6.0);
  CHECK(t[4].segments[0].input == 1100);
  for (const Session& s : t) CHECK_NOTHROW(validate_session(s, s.id));
}

TEST_CASE("conversations: calls at one instant sharing a prefix are parallel, not turns") {
  std::istringstream in(
      R"({"timestamp": 1000, "input_length": 1100, "output_length": 5, "hash_ids": [4, 5, 6]}
{"timestamp": 1000, "input_length": 1300, "output_length": 5, "hash_ids": [4, 5, 8]}
{"timestamp": 1500, "input_length": 1300, "output_length": 5, "hash_ids": [4, 5, 9]}
)");
  ConversationReport rep;
  const Trace t = chain_conversations(parse_mooncake(in, "p.jsonl"), &rep);
  // Line 2 shares [4 5] with line 1 at the same instant: its own conversation. Line 3 extends
  // [4 5] half a second later: line 1's conversation takes it (line 2's has no new block).
  REQUIRE(t.size() == 2);
  REQUIRE(t[0].segments.size() == 2);
  CHECK(t[0].segments[0].intercept->duration_s == doctest::Approx(0.5));
  CHECK(t[0].segments[1].input == 1300 - 1105);
  CHECK(t[1].segments.size() == 1);
  CHECK(rep.continued == 1);
}

TEST_CASE("conversations: a request without hashes is one turn; one of two segments is refused") {
  std::istringstream in(
      R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": []}
{"timestamp": 1000, "input_length": 1300, "output_length": 5, "hash_ids": [4, 5, 9]}
)");
  ConversationReport rep;
  const Trace t = chain_conversations(parse_mooncake(in, "h.jsonl"), &rep);
  CHECK(rep == ConversationReport{2, 2, 0, 0, 0, 1});
  CHECK(t[0].id == "cm1");
  CHECK(t[0].prefix.empty());
  Session s;
  s.id = "x";
  s.segments.push_back(Segment{10, 1, Intercept{"user", 1.0}});
  s.segments.push_back(Segment{5, 1});
  CHECK_THROWS_WITH_AS(chain_conversations({s}),
                       "conversations: request x is not one call (2 segments)",
                       std::invalid_argument);
}
