// Recognizing a trace's format from its first record (traces/sniff.h), and the hint a reader's
// error on a file of another format becomes: the --from the file needs.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"
#include "traces/sniff.h"
#include "traces/sources.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

// One small record of each format, as the format's own files start.
const std::vector<std::pair<std::string, std::string>> kSamples = {
    {"jsonl", R"({"id":"s1","arrival_s":0,"segments":[{"input":3,"output":2}]})"
              "\n"},
    {"dynamo-agentic",
     R"({"request_id": "m1", "session_id": "main", "input_length": 40, "output_length": 10, )"
     R"("hash_ids": [1, 2], "timestamp": 0})"
     "\n"},
    {"mooncake", R"({"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0]})"
                 "\n"},
    {"tracelab", R"({"provider":"claude","session_id":"c:1","round_index":0,)"
                 R"("input_tokens_total":32272,"output_tokens":10})"
                 "\n"},
    {"vllm-requests", R"({"request_id": "b-0", "input_toks": 2, "output_toks": 5, )"
                      R"("queued_ts": 1.5, "scheduled_ts": 1.6})"
                      "\n"},
    {"llmservingsim", R"({"input_toks": 3, "output_toks": 5, "arrival_time_ns": 46926808, )"
                      R"("input_tok_ids": [1, 2, 3]})"
                      "\n"},
    // A JSON document printed over many lines: the keys come after a line with only "{".
    {"infercept",
     "\n{\n \"0a84\": [\n  {\n   \"prompt_tokens\": 392,\n"
     "   \"completion_tokens\": 127\n  }\n ]\n}\n"},
    {"weka-claude-code", R"({"id":"t2","block_size":64,"requests":[{"t":0.0,"in":5,"out":1}]})"
                         "\n"},
    // The CSV formats, by their header line (the Azure files end lines in CRLF).
    {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n"},
    {"burstgpt",
     "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
     "5,ChatGPT,472,18,490,Conversation log\n"},
};

std::string load_error(const std::string& from, const std::string& path) {
  return test::error_of_call(
      [&] { trace::trace_source_registry().create(from, "test")->load({path}); });
}

}  // namespace

TEST_CASE("sniff: each format is recognized from its first record") {
  const fs::path d = test::scratch("sniff");
  for (const auto& sample : kSamples) {  // not a structured binding: CAPTURE takes it by lambda
    const std::string& format = sample.first;
    const std::string& text = sample.second;
    CAPTURE(format);
    const std::string path = test::write_file(d / (format + ".txt"), "\n" + text);
    const trace::Sniffed s = trace::sniff_trace(path);
    CHECK(s.format == format);
    CHECK(s.line == (format == "infercept" ? 3 : 2));  // after the leading blank line(s)
  }
  CHECK(trace::sniff_trace(test::write_file(d / "csv.txt", "a,b\n1,2\n")).format.empty());
  CHECK(trace::sniff_trace(test::write_file(d / "empty.txt", "")).format.empty());
  CHECK(trace::sniff_trace((d / "missing.txt").string()).format.empty());
  // A key named only inside a string value is not a key.
  CHECK(trace::sniff_trace(test::write_file(d / "v.txt", R"({"note": "queued_ts"})"
                                                         "\n"))
            .format.empty());
  // A directory of kv-cache-tester files.
  fs::create_directories(d / "weka");
  test::write_file(d / "weka" / "trace_0001.json", kSamples[7].second);
  CHECK(trace::sniff_trace((d / "weka").string()).format == "weka-claude-code");
  CHECK(trace::sniff_trace((d / "weka").string()).line == 0);
}

TEST_CASE("sniff: a file of another format read as jsonl names the --from it needs") {
  const fs::path d = test::scratch("sniff-hint");
  for (const auto& sample : kSamples) {
    const std::string& format = sample.first;
    const std::string& text = sample.second;
    if (format == "jsonl") continue;
    CAPTURE(format);
    const std::string path = test::write_file(d / (format + ".txt"), text);
    const std::string line = format == "infercept" ? "2" : "1";
    CHECK(load_error("jsonl", path) == path + ":" + line +
                                           ": not a native JSONL trace; it looks like " +
                                           trace::format_name(format) + ": add --from " + format +
                                           " (in a spec: trace.from: " + format + ")");
  }
  // The InferCept reader given a native trace names jsonl.
  const std::string native = test::write_file(d / "native.jsonl", kSamples.front().second);
  CHECK(load_error("infercept", native) ==
        native +
            ":1: not an InferCept trace; it looks like a native JSONL trace: add --from jsonl "
            "(in a spec: trace.from: jsonl)");
  // A CSV reader given a file of another format names it too.
  const std::string burst = test::write_file(d / "burst.csv", kSamples.back().second);
  CHECK(load_error("azure", burst) ==
        burst +
            ":1: not an Azure LLM inference trace; it looks like a BurstGPT trace: add --from "
            "burstgpt (in a spec: trace.from: burstgpt)");
  CHECK(load_error("azure", native) ==
        native +
            ":1: not an Azure LLM inference trace; it looks like a native JSONL trace: add --from "
            "jsonl (in a spec: trace.from: jsonl)");
  // An error in a file of the format asked for is the reader's own.
  const std::string bad = test::write_file(
      d / "bad.jsonl", R"({"id":"s1","arrival_s":-1,"segments":[{"input":3,"output":2}]})"
                       "\n");
  CHECK(load_error("jsonl", bad).find("not a native JSONL trace") == std::string::npos);
  CHECK(load_error("jsonl", bad).find("arrival_s") != std::string::npos);
  // mooncake-conversations reads Mooncake files: a Mooncake file's error is the reader's own,
  // through the source and through a second hint with the source's name (isim trace), and
  // another format is named against Mooncake's.
  const std::string moon =
      test::write_file(d / "moon.jsonl",
                       R"({"timestamp": 0, "input_length": -3, "output_length": 1, "hash_ids": []})"
                       "\n");
  const std::string moon_error = moon + ":1: input_length: expected an integer >= 1, got -3";
  CHECK(load_error("mooncake-conversations", moon) == moon_error);
  CHECK(test::error_of_call([&] {
          trace::with_format_hint("mooncake-conversations", moon, [&] {
            return trace::trace_source_registry()
                .create("mooncake-conversations", "test")
                ->load({moon});
          });
        }) == moon_error);
  CHECK(load_error("mooncake-conversations", native) ==
        native +
            ":1: not a Mooncake trace; it looks like a native JSONL trace: add --from jsonl (in "
            "a spec: trace.from: jsonl)");
}

TEST_CASE("sniff: a first line that is neither JSON nor a known header names every --from") {
  const fs::path d = test::scratch("sniff-unknown");
  const std::string csv =
      test::write_file(d / "x.csv", "\xEF\xBB\xBF\ntime,prompt,output\r\n1,2,3\n");
  const std::string formats =
      "--from takes a JSON trace (dynamo-agentic, infercept, jsonl, llmservingsim, mooncake, "
      "mooncake-conversations, "
      "tracelab, vllm-requests, weka-claude-code) or a CSV one with its header: azure "
      "(TIMESTAMP,ContextTokens,GeneratedTokens), burstgpt (Timestamp,Model,Request "
      "tokens,Response tokens,Total tokens,Log Type)";
  CHECK(trace::readable_formats() == formats);
  // Line 2: the byte-order mark's line is blank.
  CHECK(load_error("jsonl", csv) == csv +
                                        ":2: not a native JSONL trace: its first line, "
                                        "'time,prompt,output', is neither JSON nor the header of "
                                        "a CSV trace; " +
                                        formats);
  CHECK(load_error("mooncake", csv).find(":2: not a Mooncake trace: its first line") !=
        std::string::npos);
  // A CSV reader says which header it expected.
  CHECK(load_error("burstgpt", csv) ==
        csv +
            ":2: expected the header 'Timestamp,Model,Request tokens,Response tokens,Total "
            "tokens,Log Type' (a BurstGPT trace), got 'time,prompt,output'");
  // A JSON line of no known format keeps the reader's own error.
  const std::string odd = test::write_file(d / "odd.jsonl", "{\"a\": 1}\n");
  CHECK(load_error("jsonl", odd).find("not a native JSONL trace") == std::string::npos);
}

TEST_CASE("sniff: the shared data files are recognized" *
          doctest::skip(isim::test::absent(!fs::exists(test::shared_data())))) {
  const std::string s = test::shared_data();
  const std::vector<std::pair<std::string, std::string>> files = {
      {"infercept", s + "/infercept-mix/merged_exp_uniform.json"},
      {"mooncake", s + "/mooncake/conversation_trace.jsonl"},
      {"tracelab", s + "/tracelab/round_trace.jsonl"},
      {"llmservingsim", s + "/llmservingsim/sharegpt-llama-3.1-8b-300-sps10.jsonl"},
      {"vllm-requests", s + "/llmservingsim/vllm-RTX4090-llama-3.1-8b/requests.jsonl"},
      {"weka-claude-code", s + "/weka-claude-code/traces"},
      {"dynamo-agentic", test::data_dir() + "/dynamo-agentic-sample.jsonl"},
      {"azure", s + "/azure-llm-2023/AzureLLMInferenceTrace_code.csv"},
      {"azure", s + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"},
      {"azure", test::data_dir() + "/azure-2024-style.csv"},
      {"burstgpt", test::data_dir() + "/burstgpt-excerpt.csv"},
  };
  for (const auto& file : files) {
    const std::string& path = file.second;
    CAPTURE(path);
    CHECK(trace::sniff_trace(path).format == file.first);
  }
  CHECK(load_error("jsonl", files[0].second) ==
        files[0].second +
            ":1: not a native JSONL trace; it looks like an InferCept trace: add --from "
            "infercept (in a spec: trace.from: infercept)");
}
