// Forks that form a cycle (a -> b -> a, arriving at one instant so that "a parent arrives no
// later" holds) are refused by validate_forks, so by every reader and writer that calls it,
// listing the session ids around the cycle.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "tests/input_error_text.h"
#include "traces/jsonl.h"

namespace {

std::string fork_line(const std::string& id, const std::string& parent, double arrival) {
  return R"({"id":")" + id + R"(","arrival_s":)" + std::to_string(static_cast<int>(arrival)) +
         R"(,"segments":[{"input":4,"output":1,"context_event":{"kind":"fork","parent":")" +
         parent + R"(","tokens":2}}]})" + "\n";
}

const char* const kRoot = R"({"id":"r","arrival_s":0,"segments":[{"input":4,"output":1}]})"
                          "\n";

}  // namespace

TEST_CASE("fork cycles: a -> b -> a and a longer ring are refused with their ids") {
  // Line 2 "a" forks from "b", line 3 "b" from "a": both arrive at 1 s.
  std::istringstream two(kRoot + fork_line("a", "b", 1) + fork_line("b", "a", 1));
  CHECK(isim::test::error_of_call([&] { isim::trace::parse_jsonl(two, "t.jsonl"); }) ==
        R"(t.jsonl:2: segments[0].context_event.parent: the forks form a cycle "a" -> "b" -> "a" )"
        "(each forks from the next); expected every chain of parents to end at a session that "
        "forks from none");
  // A child "c" of the ring is read first (line 2); the ring "x" -> "z" -> "y" -> "x" starts at
  // its first session in the trace, "x" on line 3.
  std::istringstream ring(kRoot + fork_line("c", "y", 1) + fork_line("x", "z", 1) +
                          fork_line("y", "x", 1) + fork_line("z", "y", 1));
  CHECK(isim::test::error_of_call([&] { isim::trace::parse_jsonl(ring, "t.jsonl"); }) ==
        R"(t.jsonl:3: segments[0].context_event.parent: the forks form a cycle "x" -> "z" -> "y" )"
        R"(-> "x" (each forks from the next); expected every chain of parents to end at a )"
        "session that forks from none");
  // A chain r <- a <- b <- c that ends at a root is fine.
  std::istringstream chain(kRoot + fork_line("a", "r", 1) + fork_line("b", "a", 1) +
                           fork_line("c", "b", 2));
  isim::trace::Trace t;
  CHECK_NOTHROW(t = isim::trace::parse_jsonl(chain, "t.jsonl"));
  CHECK(t.size() == 4);
}
