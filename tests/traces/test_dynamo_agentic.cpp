// The Dynamo agentic trace importer (traces/dynamo_agentic.h): every mapping rule on a
// hand-written sample and on small inline rows, and every error with its exact message. All
// expected values are worked out by hand from the contract.
#include <doctest/doctest.h>

#include <sstream>

#include "core/input_error.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"
#include "traces/dynamo_agentic.h"
#include "traces/sources.h"

using namespace isim::trace;

namespace {

Trace parse(const std::string& text, int64_t block = 4, DynamoAgenticReport* rep = nullptr) {
  std::istringstream in(text);
  return parse_dynamo_agentic(in, "d.jsonl", block, rep);
}

std::string error_of(const std::string& text, int64_t block = 4) {
  return isim::test::error_of_call([&] { parse(text, block); });
}

ContextEvent reset(int64_t tokens) {
  return {ContextEventKind::kReset, tokens, tokens, ""};
}

// A row with the given fields after request_id and a 1-block prompt of 4 tokens.
std::string row(const std::string& id, const std::string& more = "") {
  return R"({"request_id": ")" + id + R"(", "input_length": 4, "output_length": 1, )" +
         R"("hash_ids": [1], "timestamp": 0)" + (more.empty() ? "" : ", " + more) + "}\n";
}

}  // namespace

TEST_CASE("dynamo-agentic: the sample converts to exact sessions") {
  DynamoAgenticReport rep;
  const Trace t =
      import_dynamo_agentic(isim::test::data_dir() + "/dynamo-agentic-sample.jsonl", 16, &rep);
  REQUIRE(t.size() == 4);
  // main: m1 .. m5 in one chain (block 16).
  const Session& main = t[0];
  CHECK(main.id == "main");
  CHECK(main.arrival_s == 0);
  CHECK(main.prefix == PrefixHashes{16, {1, 2, 3}});
  REQUIRE(main.segments.size() == 5);
  // m2 repeats m1's 2 full blocks and 60 >= 40 + 10 + 1: input 60 - 50; the wait after m1 is
  // delay 500 + tool 1500 ms, a tool.
  CHECK(main.segments[0] == Segment{40, 10, Intercept{"tool", 2.0}});
  // m3 waits for m2 and c2 (a join): end(m2) = c1's 4500 - 100 = 4400, so 9000 - 4400 ms.
  // Its input: 90 - (60 + 8).
  CHECK(main.segments[1] == Segment{10, 8, Intercept{"join", 4.6}});
  // m4 keeps 2 of m3's 5 full blocks: diverged, reset to min(32, 90, 39) = 32; input 40 - 32.
  CHECK(main.segments[2] == Segment{22, 12, Intercept{"delay", 1.0}});
  CHECK(main.segments[3] == Segment{8, 4, Intercept{"tool", 0.25}, reset(32)});
  // m5 is prefix_reset: min(3 * 16, 40, 49) = 40 kept; input 50 - 40.
  CHECK(main.segments[4] == Segment{10, 6, std::nullopt, reset(40)});
  CHECK(main.segments[4].event.kind == ContextEventKind::kReset);

  // child: c1 forks from m2, sharing 3 leading blocks: min(48, 60, 50) = 48.
  const Session& child = t[1];
  CHECK(child.id == "child");
  CHECK(child.arrival_s == 4.5);
  CHECK(child.prefix == PrefixHashes{16, {1, 2, 4, 9}});
  REQUIRE(child.segments.size() == 2);
  CHECK(child.segments[0] ==
        Segment{50, 5, Intercept{"tool", 0.8}, {ContextEventKind::kFork, 48, 0, "main"}});
  // c2: 70 - (50 + 5); output 0 decodes 1; the subagent's last segment ends its context.
  CHECK(child.segments[1] == Segment{15, 1, std::nullopt, {ContextEventKind::kEnd, 0, 0, ""}});

  // s1 (line 9) has no session_id; input_tokens / output_tokens / created_time are aliases.
  CHECK(t[2] == Session{"request_9",
                        12.0,
                        {{20, 3, std::nullopt}},
                        PrefixHashes{16, {100, 18446744073709551615ull}}});
  // m6 waits for nothing: a second piece of main.
  CHECK(t[3] == Session{"main#1", 20.0, {{16, 2, std::nullopt}}, PrefixHashes{16, {1}}});

  DynamoAgenticReport want;
  want.rows = 9;
  want.sessions = 4;
  want.splits = 1;
  want.forks = 1;
  want.ends = 1;
  want.start_waits_dropped = 1;  // c1's delay
  want.joins = 1;
  want.resets_flagged = 1;
  want.resets_diverged = 1;
  want.zero_outputs_raised = 1;
  want.dropped_field_rows = 1;  // c1's request_kind
  CHECK(rep == want);
}

TEST_CASE("dynamo-agentic: a context that grew less than the last output is reset") {
  // r2 repeats both of r1's blocks but 9 < 8 + 2 + 1: shrunk, kept min(2 * 4, 8, 9 - 1) = 8.
  DynamoAgenticReport rep;
  const Trace t =
      parse(R"({"request_id": "r1", "session_id": "s", "input_length": 8, "output_length": 2, )"
            R"("hash_ids": [1, 2], "timestamp": 5})"
            "\n"
            R"({"request_id": "r2", "session_id": "s", "input_length": 9, "output_length": 1, )"
            R"("hash_ids": [1, 2, 3], "wait_for": ["r1"]})"
            "\n",
            4, &rep);
  REQUIRE(t.size() == 1);
  CHECK(t[0].segments ==
        std::vector<Segment>{{8, 2, Intercept{"delay", 0}}, {1, 1, std::nullopt, reset(8)}});
  CHECK(rep.resets_shrunk == 1);
  CHECK(rep.resets_diverged + rep.resets_flagged == 0);
}

TEST_CASE("dynamo-agentic: join waits without an end estimate or without timestamps") {
  // j waits for a (its chain) and for b: nobody waits for a alone, so a's start is its end.
  const std::string a = R"({"request_id": "a", "session_id": "p", "input_length": 4, )"
                        R"("output_length": 1, "hash_ids": [1], "timestamp": 1000})"
                        "\n";
  const std::string b = R"({"request_id": "b", "input_length": 4, "output_length": 1, )"
                        R"("hash_ids": [7], "timestamp": 1500})"
                        "\n";
  DynamoAgenticReport rep;
  Trace t = parse(a + b +
                      R"({"request_id": "j", "session_id": "p", "input_length": 9, )"
                      R"("output_length": 1, "hash_ids": [1, 2, 3], "timestamp": 4000, )"
                      R"("delay": 10, "wait_for": ["a", "b"]})"
                      "\n",
                  4, &rep);
  REQUIRE(t.size() == 2);
  CHECK(t[0].segments[0].intercept == Intercept{"join", 3.0});  // max(10, 4000 - 1000) ms
  CHECK(t[0].segments[1].input == 4);                           // 9 - (4 + 1)
  CHECK(rep.joins == 1);
  CHECK(rep.join_waits_from_start == 1);
  // b is a root session: nothing forks here.
  CHECK(t[1].segments[0].event == ContextEvent{});

  // Without j's timestamp the wait is delay + tool_wait_ms alone.
  t = parse(a + b +
                R"({"request_id": "j", "session_id": "p", "input_length": 9, )"
                R"("output_length": 1, "hash_ids": [1, 2, 3], "delay": 10, "tool_wait_ms": 5, )"
                R"("wait_for": ["a", "b"]})"
                "\n",
            4, &rep);
  CHECK(t[0].segments[0].intercept == Intercept{"join", 0.015});
  CHECK(rep.join_waits_without_times == 1);
  CHECK(rep.join_waits_from_start == 0);
}

TEST_CASE("dynamo-agentic: forks, ends and what a session-starting row drops") {
  // k1 forks from p (sharing block 1 of 2: 4 tokens) and also waits for q (dropped); k2 forks
  // from k1, so k1 keeps its context (no end); k2 is one segment, so it keeps its fork only.
  DynamoAgenticReport rep;
  const Trace t = parse(row("p", R"("session_id": "P")") + row("q", R"("session_id": "Q")") +
                            R"({"request_id": "k1", "session_id": "K", "input_length": 6, )"
                            R"("output_length": 1, "hash_ids": [1, 5], "timestamp": 10, )"
                            R"("wait_for": ["p", "q"]})"
                            "\n" +
                            R"({"request_id": "k2", "session_id": "K2", "input_length": 4, )"
                            R"("output_length": 1, "hash_ids": [1], "timestamp": 20, )"
                            R"("wait_for": ["k1"]})"
                            "\n",
                        4, &rep);
  REQUIRE(t.size() == 4);
  CHECK(t[2].segments[0].event == ContextEvent{ContextEventKind::kFork, 4, 0, "P"});
  // k2's hash [1] matches k1's first block: min(4, 6, 4) = 4.
  CHECK(t[3].segments[0].event == ContextEvent{ContextEventKind::kFork, 4, 0, "K"});
  CHECK(rep.forks == 2);
  CHECK(rep.ends == 0);
  CHECK(rep.start_waits_dropped == 1);
}

TEST_CASE("dynamo-agentic: defaults, extra hash ids and block sizes") {
  // No input_length: 2 hash ids x 4 tokens. At the default block (512), 3 ids of a 600-token
  // prompt cover it and the third is dropped.
  Trace t = parse(R"({"request_id": "r", "output_length": 2, "hash_ids": [4, 5], "timestamp": 0})"
                  "\n");
  CHECK(t[0].segments == std::vector<Segment>{{8, 2, std::nullopt}});
  DynamoAgenticReport rep;
  t = parse(R"({"request_id": "r", "input_length": 600, "output_length": 2, )"
            R"("hash_ids": [4, 5, 6], "timestamp": 0})"
            "\n",
            kDynamoBlockTokens, &rep);
  CHECK(t[0].prefix == PrefixHashes{512, {4, 5}});
  CHECK(rep.extra_hash_rows == 1);
  CHECK(isim::test::error_of_call([] { parse(row("r"), 0); }) ==
        "d.jsonl: block_tokens: must be an integer in [1, 1000000000], got 0");
  CHECK(isim::test::error_of_call([] { parse(row("r"), 1'000'000'001); }) ==
        "d.jsonl: block_tokens: must be an integer in [1, 1000000000], got 1000000001");
}

TEST_CASE("dynamo-agentic: every bad row names its line and field") {
  const std::string r1 = row("r1");
  CHECK(error_of("{\"request_id\": \n").rfind("d.jsonl:1: <json>: ", 0) == 0);
  CHECK(error_of("[1]\n") == "d.jsonl:1: <json>: expected an object, got [1]");
  CHECK(error_of(R"({"request_id": "r", "wait": []})") ==
        "d.jsonl:1: wait: unknown field; valid: request_id, session_id, input_length, "
        "input_tokens, output_length, output_tokens, hash_ids, timestamp, created_time, delay, "
        "delay_ms, tool_wait_ms, wait_for, branches, prefix_reset, request_kind, priority, "
        "strict_priority, policy_class, output_token_ids, tool_events");
  CHECK(error_of(R"({"output_length": 1})") == "d.jsonl:1: request_id: missing");
  CHECK(error_of(R"({"request_id": " "})") ==
        "d.jsonl:1: request_id: expected a non-empty string, got \" \"");
  CHECK(error_of(R"({"request_id": 3})") ==
        "d.jsonl:1: request_id: expected a non-empty string, got 3");
  CHECK(error_of(row("r", R"("session_id": "")")) ==
        "d.jsonl:1: session_id: expected a non-empty string, got \"\"");
  CHECK(error_of(R"({"request_id": "r", "hash_ids": [1]})") == "d.jsonl:1: output_length: missing");
  CHECK(error_of(R"({"request_id": "r", "output_tokens": -1, "hash_ids": [1]})") ==
        "d.jsonl:1: output_tokens: expected an integer >= 0, got -1");
  CHECK(error_of(R"({"request_id": "r", "output_length": 1, "output_tokens": 1})") ==
        "d.jsonl:1: output_tokens: given together with output_length; use one of the two names");
  CHECK(error_of(R"({"request_id": "r", "output_length": 1})") == "d.jsonl:1: hash_ids: missing");
  CHECK(error_of(R"({"request_id": "r", "output_length": 1, "hash_ids": 5})") ==
        "d.jsonl:1: hash_ids: expected an array of non-negative integers, got 5");
  CHECK(error_of(R"({"request_id": "r", "output_length": 1, "hash_ids": [1, -2]})") ==
        "d.jsonl:1: hash_ids[1]: expected a non-negative integer below 2^64, got -2");
  CHECK(error_of(R"({"request_id": "r", "output_length": 1, "hash_ids": []})") ==
        "d.jsonl:1: input_length: missing, and hash_ids is empty: the prompt has no tokens");
  CHECK(error_of(R"({"request_id": "r", "input_length": 0, "output_length": 1, "hash_ids": []})") ==
        "d.jsonl:1: input_length: expected an integer >= 1, got 0");
  CHECK(
      error_of(R"({"request_id": "r", "input_tokens": 9, "output_length": 1, "hash_ids": [1]})") ==
      "d.jsonl:1: hash_ids: 1 hash ids cover 4 tokens, but input_tokens is 9: expected "
      "ceil(9 / 4) = 3 (block_tokens 4)");
  CHECK(error_of(row("r", R"("created_time": 1)")) ==
        "d.jsonl:1: created_time: given together with timestamp; use one of the two names");
  CHECK(error_of(row("r", R"("delay_ms": -1)")) ==
        "d.jsonl:1: delay_ms: expected milliseconds, a finite number >= 0, got -1");
  CHECK(error_of(row("r", R"("tool_wait_ms": "1")")) ==
        "d.jsonl:1: tool_wait_ms: expected milliseconds, a finite number >= 0, got \"1\"");
  CHECK(error_of(R"({"request_id": "r", "input_length": 4, "output_length": 1, )"
                 R"("hash_ids": [1], "timestamp": -5})") ==
        "d.jsonl:1: timestamp: expected milliseconds, a finite number >= 0, got -5");
  CHECK(error_of(row("r", R"("wait_for": "a")")) ==
        "d.jsonl:1: wait_for: expected an array of request ids, got \"a\"");
  CHECK(error_of(row("r", R"("branches": [""])")) ==
        "d.jsonl:1: branches[0]: expected a non-empty string, got \"\"");
  CHECK(error_of(row("r", R"("prefix_reset": 1)")) ==
        "d.jsonl:1: prefix_reset: expected true or false, got 1");
  CHECK(error_of(row("r", R"("request_kind": 1)")) ==
        "d.jsonl:1: request_kind: expected a string, got 1");
  CHECK(error_of(row("r", R"("policy_class": [])")) ==
        "d.jsonl:1: policy_class: expected a string, got []");
  CHECK(error_of(row("r", R"("priority": 2.5)")) ==
        "d.jsonl:1: priority: expected a 32-bit integer, got 2.5");
  CHECK(error_of(row("r", R"("strict_priority": -1)")) ==
        "d.jsonl:1: strict_priority: expected an integer in [0, 2^32), got -1");
  CHECK(error_of(row("r", R"("output_token_ids": [1, 4294967296])")) ==
        "d.jsonl:1: output_token_ids[1]: expected a token id in [0, 2^32), got 4294967296");
  CHECK(error_of(row("r", R"("output_token_ids": 3)")) ==
        "d.jsonl:1: output_token_ids: expected an array, got 3");
  CHECK(error_of(row("r", R"("tool_events": {})")) ==
        "d.jsonl:1: tool_events: expected an array, got {}");
  CHECK(error_of(row("r", R"("tool_events": [1])")) ==
        "d.jsonl:1: tool_events[0]: expected a tool event object, got 1");
  // The checks across rows.
  CHECK(error_of("") == "d.jsonl: no requests");
  CHECK(error_of(r1 + "\n" + r1) == "d.jsonl:3: request_id: duplicate 'r1' (first on line 1)");
  CHECK(error_of(row("r", R"("wait_for": ["x"])")) ==
        "d.jsonl:1: wait_for[0]: no row has request_id 'x'");
  CHECK(error_of(row("r", R"("wait_for": ["r"])")) ==
        "d.jsonl:1: wait_for[0]: a request cannot wait for itself");
  CHECK(error_of(row("r", R"("wait_for": ["r1", "r2"])") + r1 + row("r2")) ==
        "d.jsonl:1: wait_for[0]: 'r1' is on line 2, after this row: a request must come after "
        "the requests it waits for");
  CHECK(error_of(row("r", R"("branches": ["y"])")) ==
        "d.jsonl:1: branches[0]: no row has request_id 'y'");
  CHECK(
      error_of(R"({"request_id": "r", "input_length": 4, "output_length": 1, "hash_ids": [1]})") ==
      "d.jsonl:1: timestamp: missing: this row starts a session (it does not wait for the last "
      "request of its session_id), so it needs its start time");
  CHECK(error_of(R"({"request_id": "p", "input_length": 4, "output_length": 1, "hash_ids": [1], )"
                 R"("created_time": 50})"
                 "\n" +
                 row("c", R"("wait_for": ["p"])")) ==
        "d.jsonl:2: timestamp: 0 ms is before its fork parent 'request_1' arrives (line 1, 50 "
        "ms)");
  CHECK(error_of(row("a", R"("session_id": "s")") + row("b", R"("session_id": "s")") +
                 row("c", R"("session_id": "s#1")")) ==
        "d.jsonl:3: session_id: the session 's#1' this row starts has the same id as the session "
        "from line 2 (later pieces of a session are named <session_id>#<n>)");
}

TEST_CASE("dynamo-agentic: the trace source passes block_tokens and reports the mapping") {
  const std::string path = isim::test::data_dir() + "/dynamo-agentic-sample.jsonl";
  SourceRequest req;
  req.path = path;
  req.block_tokens = 16;
  const LoadedTrace t = trace_source_registry().create("dynamo-agentic", "test")->load(req);
  CHECK(t.trace == import_dynamo_agentic(path, 16));
  REQUIRE(t.notes.size() == 6);
  CHECK(t.notes[0] ==
        path +
            ": 9 requests -> 4 sessions at 16 tokens per hash id: 1 forked (subagents and "
            "branches, arriving at their recorded start, not after their parent's simulated "
            "request), 1 end with context end, 1 pieces started without waiting for their "
            "session's last request");
  CHECK(t.notes[1] == path +
                          ": context resets to the prefix shared with the previous request: 1 "
                          "prefix_reset, 1 hashes diverged, 0 context shrank");
  // At the default 512 tokens per id, every hash list of the sample is longer than its blocks.
  req.block_tokens = 0;
  const LoadedTrace d = trace_source_registry().create("dynamo-agentic", "test")->load(req);
  CHECK(d.trace[0].prefix.block_tokens == 512);
  CHECK(d.trace[0].prefix.hashes == std::vector<uint64_t>{1});
}
