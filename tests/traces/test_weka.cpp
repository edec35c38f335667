// The weka-claude-code importer: segments from the growth of `in`, intercepts from think_time,
// compactions and rewrites as resets, subagents as forks that end, their shared prefix hashes,
// and every error path; small files written by hand (block_size 4 keeps the hash counts
// readable). The 58 real sessions are in test_weka_data.cpp.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "core/input_error.h"
#include "tests/cli_helpers.h"
#include "traces/sources.h"
#include "traces/weka.h"

using namespace isim::trace;

namespace {

// One model call; `extra` adds fields (e.g. `"api_time":1`).
std::string call(double t, int in, int out, const std::string& ids, const std::string& stop,
                 const std::string& types = "[\"tool_result\"]", const std::string& extra = "") {
  return fmt::format(R"({{"t":{},"type":"n","in":{},"out":{},"hash_ids":{},"stop":"{}",)"
                     R"("input_types":{},"output_types":["text"]{}}})",
                     t, in, out, ids, stop, types, extra.empty() ? "" : "," + extra);
}

std::string file_text(const std::string& requests, const std::string& scope = "local") {
  return fmt::format(R"({{"id":"x","block_size":4,"hash_id_scope":"{}","requests":[{}]}})", scope,
                     requests);
}

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  return isim::test::write_file(isim::test::scratch(dir) / name, text);
}

std::string error_of(const std::string& text) {
  const std::string path = write("weka-errors", "w.json", text);
  try {
    import_weka(path);
  } catch (const isim::InputError& e) {
    const std::string msg = e.what();
    return msg.rfind(path, 0) == 0 ? "w.json" + msg.substr(path.size()) : msg;
  }
  return "";
}

const std::string kTimes = R"("think_time":0,"api_time":1.5)";

}  // namespace

TEST_CASE("weka: segments are the context's growth, intercepts the think times") {
  // 10 + 2 -> call 1 has 15 in: 3 new; 12 + 3 + 3 = 18 -> call 2 has 20 in: 2 new.
  const std::string text =
      file_text(call(0, 10, 2, "[1,2]", "tool_use", R"(["text"])", kTimes) + "," +
                call(5, 15, 3, "[1,2,3]", "end_turn", R"(["tool_result"])",
                     R"("think_time":3.5,"api_time":2)") +
                "," + call(30, 20, 0, "[1,2,3,4,5]", "", R"(["text"])", R"("think_time":23)"));
  WekaReport rep;
  const Trace t = import_weka(write("weka-basic", "w.json", text), &rep);
  REQUIRE(t.size() == 1);
  CHECK(t[0].id == "w");
  CHECK(t[0].arrival_s == 0);
  const std::vector<Segment> want = {{10, 2, Intercept{"tool", 3.5}},
                                     {3, 3, Intercept{"user", 23}},
                                     {2, 1, std::nullopt}};  // out 0 decodes 1 token
  CHECK(t[0].segments == want);
  CHECK(t[0].prefix.block_tokens == 4);
  CHECK(t[0].prefix.hashes.size() == 2);
  CHECK(t[0].prefix.hashes[0] != t[0].prefix.hashes[1]);
  CHECK(rep.files == 1);
  CHECK(rep.calls == 3);
  CHECK(rep.zero_outputs_raised == 1);
  CHECK(rep.resets + rep.divergent_tails + rep.inputs_raised == 0);
  CHECK(rep.forks + rep.ends + rep.ends_unmarked == 0);
  CHECK(t[0].segments[0].event == ContextEvent{});  // a file's own session forks from nothing
  CHECK(rep.waits_from_gap + rep.waits_without_think + rep.kinds_from_input == 0);
}

TEST_CASE("weka: waits without api_time or think_time, kinds without a stop") {
  // Call 0 has no api_time: the wait is the gap 4 - 1. Call 1 stops with "": the next input
  // holds a tool_result, so a tool; call 2 has no think_time: 10 - 4 - 2.5 = 3.5.
  const std::string text =
      file_text(call(1, 8, 1, "[1,2]", "tool_use", R"(["text"])") + "," +
                call(4, 12, 1, "[1,2]", "", R"(["text"])", R"("think_time":99,"api_time":2.5)") +
                "," + call(10, 14, 1, "[1,2,3]", "tool_use", R"(["tool_result"])"));
  WekaReport rep;
  const Trace t = import_weka(write("weka-waits", "w.json", text), &rep);
  REQUIRE(t.size() == 1);
  CHECK(t[0].arrival_s == 1);  // the first call's offset
  const std::vector<Segment> want = {
      {8, 1, Intercept{"tool", 3}}, {3, 1, Intercept{"tool", 3.5}}, {1, 1, std::nullopt}};
  CHECK(t[0].segments == want);
  CHECK(rep.waits_from_gap == 1);
  CHECK(rep.waits_without_think == 1);
  CHECK(rep.kinds_from_input == 1);
}

TEST_CASE("weka: a context that grew less than the output prefills 1 token, then catches up") {
  // 20 + 10 = 30 but call 1 has 25 (thinking dropped): 1 token, context 30 + 1 + 2 = 33 (the
  // real one is 27); call 2 has 40: 40 - 33 = 7, and the simulated context is the real one again.
  const std::string text =
      file_text(call(0, 20, 10, "[1,2,3,4,5]", "tool_use", R"(["text"])", kTimes) + "," +
                call(3, 25, 2, "[1,2,3,4,5,6]", "tool_use", R"(["tool_result"])", kTimes) + "," +
                call(6, 40, 1, "[1,2,3,4,5,6,7,8]", "end_turn", R"(["tool_result"])", kTimes));
  WekaReport rep;
  const Trace t = import_weka(write("weka-shrink", "w.json", text), &rep);
  REQUIRE(t.size() == 1);
  CHECK(t[0].segments[1].input == 1);
  CHECK(t[0].segments[2].input == 7);
  CHECK(t[0].max_context() == 41);
  CHECK(rep.inputs_raised == 1);
  CHECK(rep.max_ahead_tokens == 30 + 1 - 25);
}

TEST_CASE("weka: a compaction or a rewrite is a reset in the same session; a changed tail is "
          "counted") {
  // Call 1 keeps 3 of call 0's 4 blocks (>= half): it continues, with a 1-block divergent tail;
  // input 20 - (16 + 1) = 3, context 21. Call 2 keeps 1 of call 1's 5 (< half) and is smaller: a
  // compaction. It shares block 1, 4 tokens: reset {tokens 4, shared 4}, input 8 - 4 = 4, context
  // 4 + 4 + 1 = 9. Call 3 keeps 1 of call 2's 2, half: it continues (a 1-block tail), input
  // 12 - 9 = 3, context 13. Call 4 keeps 0 of 3 and is not smaller: a rewrite, reset {0, 0} with
  // input 13. Every wait is kept: 0, 7, 2 s (tool) and 3 s (user, after end_turn).
  const std::string text =
      file_text(call(0, 16, 1, "[1,2,3,4]", "tool_use", R"(["text"])", kTimes) + "," +
                call(10, 20, 1, "[1,2,3,9,10]", "tool_use", R"(["tool_result"])", kTimes) + "," +
                call(50, 8, 1, "[1,20]", "tool_use", R"(["text"])",
                     R"("think_time":7,"api_time":1)") +
                "," +
                call(60, 12, 1, "[1,30,31]", "end_turn", R"(["tool_result"])",
                     R"("think_time":2,"api_time":1)") +
                "," +
                call(70, 13, 1, "[40,41,42]", "end_turn", R"(["text"])",
                     R"("think_time":3,"api_time":1)"));
  WekaReport rep;
  const Trace t = import_weka(write("weka-compact", "w.json", text), &rep);
  REQUIRE(t.size() == 1);
  CHECK(t[0].id == "w");
  std::vector<Segment> want = {{16, 1, Intercept{"tool", 0}},
                               {3, 1, Intercept{"tool", 7}},
                               {4, 1, Intercept{"tool", 2}},
                               {3, 1, Intercept{"user", 3}},
                               {13, 1, std::nullopt}};
  want[2].event = ContextEvent{ContextEventKind::kReset, 4, 4, ""};
  want[4].event = ContextEvent{ContextEventKind::kReset, 0, 0, ""};
  CHECK(t[0].segments == want);
  // 17, 21; then 9, 13; then 0 + 13 + 1 = 14: the largest is 21.
  CHECK(t[0].max_context() == 21);
  CHECK(rep.resets == 2);
  CHECK(rep.resets_shrunk == 1);
  CHECK(rep.divergent_tails == 2);
  CHECK(rep.tail_tokens == (1 + 1) * 4);
  CHECK(rep.sessions == 1);
}

TEST_CASE("weka: a reset whose call is all shared blocks keeps 1 token of input") {
  // Call 0: 30 tokens, 8 blocks (the last partial). Call 1 (6 tokens) repeats blocks 1 and 2
  // only, 2 of 8 (< half): a reset. The shared blocks cover min(2 * 4, 30, 6) = 6 tokens, all
  // of call 1's `in`, so the input is 1 and the reset keeps tokens = shared = 6 - 1 = 5.
  const std::string text =
      file_text(call(0, 30, 2, "[1,2,3,4,5,6,7,8]", "end_turn", R"(["text"])", kTimes) + "," +
                call(9, 6, 1, "[1,2]", "end_turn", R"(["text"])", kTimes));
  WekaReport rep;
  const Trace t = import_weka(write("weka-all-shared", "w.json", text), &rep);
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].segments.size() == 2);
  CHECK(t[0].segments[1].input == 1);
  CHECK(t[0].segments[1].event == ContextEvent{ContextEventKind::kReset, 5, 5, ""});
  CHECK(rep.resets == 1);
  CHECK(rep.resets_shrunk == 1);
  CHECK(rep.inputs_raised == 0);  // the context is not ahead: 5 + 1 = 6 = in
}

TEST_CASE("weka: subagents fork from the spawning call and end their context") {
  // w/a finished at t 50 after 20 s: it starts at 30, after w's call 0 (t 0) and before call 1
  // (t 60), so call 0 spawned it: call 0's ids [1,2] and a's first [1,6] share block 1, 4
  // tokens. a's nested b finished at 12 after 2 s: it starts at a's offset 10, after a's call 1
  // (t 4), whose ids [1,7,8] share 2 blocks, 8 tokens, with b's [1,7] (call 0's [1,6] would
  // share 1). b's only segment forks, so it cannot also end: counted.
  const std::string nested =
      R"({"type":"subagent","agent_id":"b","t":12,"duration_ms":2000,"requests":[)" +
      call(0, 8, 1, "[1,7]", "end_turn", R"(["text"])", kTimes) + "]}";
  const std::string sub = R"({"type":"subagent","agent_id":"a","t":50,"duration_ms":20000,)"
                          R"("requests":[)" +
                          call(0, 8, 2, "[1,6]", "tool_use", R"(["text"])", kTimes) + "," + nested +
                          "," +
                          call(4, 12, 1, "[1,7,8]", "end_turn", R"(["tool_result"])",
                               R"("think_time":1.25,"api_time":1)") +
                          "]}";
  const std::string text =
      file_text(call(0, 8, 1, "[1,2]", "tool_use", R"(["text"])", kTimes) + "," + sub + "," +
                call(60, 11, 1, "[1,2]", "end_turn", R"(["tool_result"])",
                     R"("think_time":58,"api_time":1)"));
  WekaReport rep;
  const Trace t = import_weka(write("weka-sub", "w.json", text), &rep);
  REQUIRE(t.size() == 3);
  CHECK(t[0].id == "w");
  CHECK(t[0].segments == std::vector<Segment>{{8, 1, Intercept{"tool", 58}}, {2, 1, std::nullopt}});
  CHECK(t[1].id == "w/a");
  CHECK(t[1].arrival_s == 30);
  std::vector<Segment> a = {{8, 2, Intercept{"tool", 1.25}}, {2, 1, std::nullopt}};
  a[0].event = ContextEvent{ContextEventKind::kFork, 4, 0, "w"};
  a[1].event.kind = ContextEventKind::kEnd;
  CHECK(t[1].segments == a);
  CHECK(t[2].id == "w/a/b");
  CHECK(t[2].arrival_s == 40);
  std::vector<Segment> b = {{8, 1, std::nullopt}};
  b[0].event = ContextEvent{ContextEventKind::kFork, 8, 0, "w/a"};
  CHECK(t[2].segments == b);
  CHECK(t[1].prefix.hashes[0] == t[0].prefix.hashes[0]);
  CHECK(t[2].prefix.hashes[0] == t[0].prefix.hashes[0]);
  CHECK(t[1].prefix.hashes[1] != t[0].prefix.hashes[1]);
  CHECK(rep.subagents == 2);
  CHECK(rep.sessions == 3);
  CHECK(rep.forks == 2);
  CHECK(rep.fork_tokens == 4 + 8);
  CHECK(rep.ends == 1);
  CHECK(rep.ends_unmarked == 1);
  CHECK(rep.divergent_tails == 1);  // a's call 1 keeps 1 of call 0's 2 blocks
}

TEST_CASE("weka: a directory is read in name order; local ids are per file, global shared") {
  const auto d = isim::test::scratch("weka-dir");
  const std::string c = call(0, 8, 1, "[1,2]", "end_turn", R"(["text"])", kTimes);
  isim::test::write_file(d / "b.json", file_text(c));
  isim::test::write_file(d / "a.json", file_text(c));
  isim::test::write_file(d / "notes.txt", "not a trace");
  const Trace local = import_weka(d.string());
  REQUIRE(local.size() == 2);
  CHECK(local[0].id == "a");
  CHECK(local[1].id == "b");
  CHECK(local[0].prefix.hashes[0] != local[1].prefix.hashes[0]);
  isim::test::write_file(d / "a.json", file_text(c, "global"));
  isim::test::write_file(d / "b.json", file_text(c, "global"));
  const Trace global = import_weka(d.string());
  CHECK(global[0].prefix.hashes == global[1].prefix.hashes);
  // Through the registry, with the importer's notes.
  const LoadedTrace l = trace_source_registry().create("weka-claude-code", "t")->load({d.string()});
  CHECK(l.trace == global);
  REQUIRE(!l.notes.empty());
  CHECK(l.notes[0].find("2 files -> 2 sessions: 0 subagents") != std::string::npos);
}

TEST_CASE("weka: errors name the file and the JSON path") {
  const std::string ok = call(0, 8, 1, "[1]", "end_turn", R"(["text"])", kTimes);
  CHECK(error_of(file_text(ok)) == "");
  CHECK(error_of("[1]") == "w.json: <json>: expected an object, got [1]");
  CHECK(error_of("{").rfind("w.json: <json>: ", 0) == 0);
  CHECK(error_of(R"({"requests":[]})") == "w.json: block_size: missing");
  CHECK(error_of(R"({"block_size":0,"requests":[]})") ==
        "w.json: block_size: expected an integer >= 1, got 0");
  CHECK(error_of(R"({"block_size":4,"hash_id_scope":"file","requests":[]})") ==
        "w.json: hash_id_scope: expected \"local\" or \"global\", got \"file\"");
  CHECK(error_of(file_text("")) ==
        "w.json: requests: expected a non-empty array of requests, got []");
  CHECK(error_of(file_text(ok + ",3")) == "w.json: requests[1]: expected an object, got 3");
  CHECK(error_of(file_text(R"({"t":0})")) == "w.json: requests[0].in: missing");
  CHECK(error_of(file_text(call(0, -5, 1, "[]", ""))) ==
        "w.json: requests[0].in: expected an integer >= 1, got -5");
  CHECK(error_of(file_text(call(0, 0, 1, "[]", ""))) ==
        "w.json: requests[0].in: expected an integer >= 1, got 0");
  CHECK(error_of(file_text(call(-1, 4, 1, "[]", ""))) ==
        "w.json: requests[0].t: expected a finite number >= 0, got -1");
  CHECK(error_of(file_text(call(0, 4, 1, "[1,2]", ""))) ==
        "w.json: requests[0].hash_ids[1]: 2 hash ids but in = 4 has only ceil(4 / 4) = 1 blocks");
  CHECK(error_of(file_text(call(0, 8, 1, "[1,-2]", ""))) ==
        "w.json: requests[0].hash_ids[1]: expected a non-negative integer below 2^64, got -2");
  CHECK(error_of(file_text(call(0, 8, 1, "7", ""))) ==
        "w.json: requests[0].hash_ids: expected an array of non-negative integers, got 7");
  CHECK(error_of(file_text(call(0, 8, 1, "[]", "", "\"text\""))) ==
        "w.json: requests[0].input_types: expected an array, got \"text\"");
  CHECK(error_of(file_text(call(0, 8, 1, "[]", "", "[1]"))) ==
        "w.json: requests[0].input_types[0]: expected a string, got 1");
  CHECK(error_of(file_text(call(0, 8, 1, "[]", "", "[]", R"("think_time":-1)"))) ==
        "w.json: requests[0].think_time: expected a finite number >= 0, got -1");
  CHECK(error_of(file_text(call(0, 8, 1, "[]", "", "[]", R"("api_time":"x")"))) ==
        "w.json: requests[0].api_time: expected a finite number >= 0, got \"x\"");
  CHECK(error_of(file_text(R"({"type":1})")) ==
        "w.json: requests[0].type: expected a string, got 1");
  CHECK(error_of(file_text(ok + "," + call(0.5, 9, 1, "[1]", ""))) == "");
  CHECK(error_of(file_text(call(2, 8, 1, "[1]", "") + "," + call(1, 9, 1, "[1]", ""))) ==
        "w.json: requests[1].t: 1 is before the previous call's 2 (requests[0])");
  CHECK(error_of(file_text(R"({"t":0,"in":8,"out":1,"hash_ids":[],"input_types":[]})")) ==
        "w.json: requests[0].stop: missing");
  const std::string sub = R"({"type":"subagent","agent_id":"a","t":5,"requests":[)" + ok + "]}";
  CHECK(error_of(file_text(sub)) == "w.json: requests: no model calls (only subagents)");
  CHECK(error_of(file_text(ok + "," + sub + "," + sub)) ==
        "w.json: requests[2].agent_id: duplicate agent_id 'a' (also requests[1])");
  CHECK(error_of(file_text(ok + R"(,{"type":"subagent","agent_id":"","t":5,"requests":[]})")) ==
        "w.json: requests[1].agent_id: expected a non-empty string");
  CHECK(error_of(file_text(ok + R"(,{"type":"subagent","agent_id":"a","t":5})")) ==
        "w.json: requests[1].requests: missing");
  CHECK(error_of(file_text(ok +
                           R"(,{"type":"subagent","agent_id":"a","t":1,"duration_ms":2000,)"
                           R"("requests":[)" +
                           ok + "]}")) ==
        "w.json: requests[1].t: the subagent would start before its parent's first call: t - "
        "duration_ms / 1000 = 1 - 2 < 0");
  // The parent's own first call at t 5: a subagent starting at 4 would precede it.
  CHECK(error_of(file_text(call(5, 8, 1, "[1]", "end_turn", R"(["text"])", kTimes) +
                           R"(,{"type":"subagent","agent_id":"a","t":4,"requests":[)" + ok +
                           "]}")) ==
        "w.json: requests[1].t: the subagent would start before its parent's first call: t - "
        "duration_ms / 1000 = 4 - 0 < 5");
  CHECK(error_of(file_text(ok + R"(,{"type":"subagent","agent_id":"a","t":5,"requests":[)" +
                           call(0, 8, -1, "[]", "") + "]}")) ==
        "w.json: requests[1].requests[0].out: expected an integer >= 0, got -1");
  CHECK_THROWS_WITH_AS(import_weka("/nonexistent-dir/w.json"),
                       "/nonexistent-dir/w.json: cannot open: No such file or directory",
                       isim::InputError);
  const auto empty = isim::test::scratch("weka-empty");
  const std::string none = empty.string() + ": no *.json files";
  CHECK_THROWS_WITH_AS(import_weka(empty.string()), none.c_str(), isim::InputError);
}

TEST_CASE("weka: subagents nested more than 64 deep are refused, naming where") {
  // A chain of `depth` subagents, each one call at t 0 then its own subagent (t 0, 0 ms: it
  // starts with its parent's first call). Each level is requests[1] of the one above, so the
  // 65th is at requests[1] followed by 64 x .requests[1].
  const auto chain = [](int depth) {
    std::string inner;
    for (int d = depth; d >= 1; --d)
      inner = fmt::format(R"({{"type":"subagent","agent_id":"a{}","t":0,"duration_ms":0,)"
                          R"("requests":[{}{}]}})",
                          d, call(0, 8, 1, "[1,2]", "end_turn", R"(["text"])", kTimes),
                          inner.empty() ? "" : "," + inner);
    return file_text(call(0, 8, 1, "[1,2]", "end_turn", R"(["text"])", kTimes) + "," + inner);
  };
  CHECK(error_of(chain(64)) == "");
  std::string at = "requests[1]";
  for (int d = 2; d <= 65; ++d) at += ".requests[1]";
  CHECK(error_of(chain(65)) == "w.json: " + at + ": subagents nested more than 64 deep");
}
