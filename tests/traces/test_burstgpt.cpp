// The BurstGPT reader (traces/burstgpt.h). BurstGPT's data is not in ../shared/data, so the
// fixture tests/data/burstgpt-excerpt.csv is written from the columns its README documents
// (HPMLL/BurstGPT @ ff1a7c63, "Schema"), not cut from the real files.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "core/input_error.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"
#include "traces/burstgpt.h"
#include "traces/sources.h"
#include "traces/stats.h"
#include "traces/workload.h"

using namespace isim::trace;

namespace {

const char* kBurstHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

// The InputError of parse_burstgpt on `text` (origin b.csv), "(no error)" when it parses.
std::string burstgpt_error(const std::string& text) {
  std::istringstream in(text);
  return isim::test::error_of_call([&] { parse_burstgpt(in, "b.csv"); });
}

std::string burstgpt_fixture() {
  return isim::test::data_dir() + "/burstgpt-excerpt.csv";
}

}  // namespace

// Lines 2-8 of the fixture: Timestamps 5, 5, 12.5, 13, 40.25, 41, 60; lines 3 and 7 failed
// (Response tokens 0). Kept: lines 2, 4, 5, 6, 8 at 5 - 5 = 0, 12.5 - 5 = 7.5, 8, 35.25, 55.
TEST_CASE("burstgpt: rows become single-turn sessions named by model and log type") {
  BurstGptReport r;
  const Trace t = import_burstgpt(burstgpt_fixture(), &r);
  REQUIRE(t.size() == 5);
  CHECK(t[0].id == "chatgpt-conv-2");
  CHECK(t[0].arrival_s == 0);
  CHECK(t[0].segments == std::vector<Segment>{{472, 18, {}}});
  CHECK(t[1].id == "gpt4-api-4");
  CHECK(t[1].arrival_s == 7.5);
  CHECK(t[1].segments == std::vector<Segment>{{2000, 300, {}}});
  CHECK(t[2].id == "chatgpt-api-5");
  CHECK(t[2].arrival_s == 8);
  CHECK(t[3].id == "gpt4-conv-6");
  CHECK(t[3].arrival_s == 35.25);
  CHECK(t[3].segments == std::vector<Segment>{{700, 250, {}}});
  CHECK(t[4].id == "chatgpt-conv-8");
  CHECK(t[4].arrival_s == 55);
  CHECK(t[4].segments == std::vector<Segment>{{1500, 410, {}}});
  CHECK(t[4].prefix.empty());
  const BurstGptReport want{
      7, 5,   2,
      3, 5.0, {{"chatgpt-conv", 2}, {"gpt4-api", 1}, {"chatgpt-api", 1}, {"gpt4-conv", 1}}};
  CHECK(r == want);
  // 5 sessions over 55 s: (5 - 1) / 55 = 0.0727273 sessions/s; prompts 472, 2000, 35, 700, 1500
  // (mean 941.4), outputs 18 + 300 + 120 + 250 + 410 = 1098 (mean 219.6).
  const std::string stats = trace_stats(t);
  CHECK(stats.find("sessions      5\n") != std::string::npos);
  CHECK(stats.find("arrival span  55 s (0 .. 55)\n") != std::string::npos);
  CHECK(stats.find("mean rate     0.0727273 sessions/s\n") != std::string::npos);
  CHECK(stats.find("output tokens per session: mean 219.6\n") != std::string::npos);

  const LoadedTrace loaded =
      trace_source_registry().create("burstgpt", "test")->load({burstgpt_fixture()});
  CHECK(loaded.trace == t);
  CHECK(loaded.notes ==
        std::vector<std::string>{
            burstgpt_fixture() + ": 5 requests, each a single-turn session (2 chatgpt-conv, 1 "
                                 "gpt4-api, 1 chatgpt-api, 1 gpt4-conv; trace.kinds keeps some); "
                                 "arrivals count from the first row's Timestamp, 5 s; no prefix "
                                 "hashes",
            burstgpt_fixture() + ": 2 failed requests (Response tokens 0) dropped, the first at "
                                 "line 3"});
}

TEST_CASE("burstgpt: trace.kinds keeps one model's requests") {
  WorkloadSpec spec;
  spec.from = "burstgpt";
  spec.path = burstgpt_fixture();
  spec.kinds = {"gpt4-conv", "gpt4-api"};
  ArrivalSpec replay;
  replay.process = "replay";
  const Workload w = make_workload(spec, replay, 1, "e.yaml");
  REQUIRE(w.trace.size() == 2);
  CHECK(w.trace[0].id == "gpt4-api-4");
  CHECK(w.trace[0].arrival_s == 7.5);
  CHECK(w.trace[1].id == "gpt4-conv-6");
  CHECK(w.trace[1].arrival_s == 35.25);
  CHECK(w.notes.back() == "trace.kinds=[gpt4-conv, gpt4-api]: 2 of 5 sessions kept");
}

TEST_CASE("burstgpt: every bad row names its line and what was expected") {
  const std::string h = kBurstHeader;
  const std::string row = "5,ChatGPT,472,18,490,Conversation log\n";
  CHECK(burstgpt_error("Timestamp,Model,Request tokens,Response tokens,Total tokens\n") ==
        "b.csv:1: expected the header 'Timestamp,Model,Request tokens,Response tokens,Total "
        "tokens,Log Type' (a BurstGPT trace), got 'Timestamp,Model,Request tokens,Response "
        "tokens,Total tokens'");
  CHECK(burstgpt_error(h + "5,ChatGPT,472,18,490\n") ==
        "b.csv:2: expected 6 comma-separated cells (Timestamp,Model,Request tokens,Response "
        "tokens,Total tokens,Log Type), got 5");
  CHECK(burstgpt_error(h + "-5,ChatGPT,472,18,490,API log\n") ==
        "b.csv:2: Timestamp: expected seconds, a decimal number >= 0, got '-5'");
  CHECK(burstgpt_error(h + "4000000001,ChatGPT,472,18,490,API log\n") ==
        "b.csv:2: Timestamp: expected at most 4000000000 s (about 126 years, the limit on a "
        "time), got '4000000001'");
  CHECK(burstgpt_error(h + row + "4.5,ChatGPT,472,18,490,API log\n") ==
        "b.csv:3: Timestamp: '4.5' is before line 2's '5': rows must be in time order");
  CHECK(burstgpt_error(h + "5,GPT-3.5,472,18,490,API log\n") ==
        "b.csv:2: Model: expected ChatGPT or GPT-4, got 'GPT-3.5'");
  CHECK(burstgpt_error(h + "5,ChatGPT,472,18,490,conversation log\n") ==
        "b.csv:2: Log Type: expected 'Conversation log' or 'API log', got 'conversation log'");
  CHECK(burstgpt_error(h + "5,ChatGPT,0,18,18,API log\n") ==
        "b.csv:2: Request tokens: expected an integer >= 1, got '0'");
  CHECK(burstgpt_error(h + "5,ChatGPT,472,1.5,490,API log\n") ==
        "b.csv:2: Response tokens: expected an integer >= 0, got '1.5'");
  CHECK(burstgpt_error(h + "5,ChatGPT,472,18,491,API log\n") ==
        "b.csv:2: Total tokens: expected Request tokens + Response tokens = 472 + 18 = 490, got "
        "'491'");
  // A failed row is checked like any other before it is dropped.
  CHECK(burstgpt_error(h + row + "6,ChatGPT,96,0,97,API log\n") ==
        "b.csv:3: Total tokens: expected Request tokens + Response tokens = 96 + 0 = 96, got "
        "'97'");

  const auto d = isim::test::scratch("burstgpt-empty");
  const std::string failed =
      isim::test::write_file(d / "f.csv", h + "6,ChatGPT,96,0,96,API log\r\n");
  CHECK(isim::test::error_of_call([&] { import_burstgpt(failed); }) ==
        failed + ": no sessions (every row is a failed request: Response tokens 0)");
  const std::string header_only = isim::test::write_file(d / "h.csv", h);
  CHECK(isim::test::error_of_call([&] { import_burstgpt(header_only); }) ==
        header_only + ": no sessions (the file holds no rows: it is empty or has only its header)");
}
