// Trace sources and arrival processes come from their registries: every name is listed with a
// description, and loading through the registry is the same as calling the reader.
#include <doctest/doctest.h>

#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/arrival.h"
#include "traces/generator.h"
#include "traces/mooncake.h"
#include "traces/sources.h"

using namespace isim::trace;

TEST_CASE("every trace source and arrival process is registered with a description") {
  // A component missing here was never linked in (Ramulator 2 issue #122).
  std::vector<std::string> sources, generated;
  for (const auto* e : trace_source_registry().entries()) {
    sources.push_back(e->name);
    CHECK(!e->description.empty());
    if (trace_source_registry().create(e->name, "test")->generated) generated.push_back(e->name);
  }
  CHECK(sources == std::vector<std::string>{"agents", "azure", "burstgpt", "dynamo-agentic",
                                            "generator", "infercept", "jsonl", "llmservingsim",
                                            "mooncake", "mooncake-conversations", "multiturn", "tracelab", "vllm-requests",
                                            "weka-claude-code"});
  CHECK(generated == std::vector<std::string>{"agents", "generator", "multiturn"});
  std::vector<std::string> processes;
  for (const auto* e : arrival_registry().entries()) {
    processes.push_back(e->name);
    CHECK(!e->description.empty());
  }
  CHECK(processes == std::vector<std::string>{"poisson", "replay", "user-phases", "users"});
}

TEST_CASE("an unknown trace source lists the valid ones") {
  CHECK_THROWS_WITH_AS(
      trace_source_registry().create("csv", "e.yaml:1: trace.from"),
      "e.yaml:1: trace.from: unknown trace source 'csv'; valid: agents, azure, burstgpt, "
      "dynamo-agentic, generator, infercept, jsonl, llmservingsim, mooncake, mooncake-conversations, multiturn, "
      "tracelab, vllm-requests, weka-claude-code",
      isim::InputError);
}

TEST_CASE("a source loads what its reader reads, with the importer's notes") {
  const std::string path = isim::test::data_dir() + "/mooncake-excerpt.jsonl";
  const LoadedTrace t = trace_source_registry().create("mooncake", "test")->load({path, 0, 1, 0});
  MooncakeReport rep;
  CHECK(t.trace == import_mooncake(path, &rep));
  CHECK(t.notes.size() == (rep.zero_outputs_raised > 0 ? 1u : 0u));

  const LoadedTrace g = trace_source_registry().create("generator", "test")->load({"", 5, 3, 0});
  CHECK(g.trace == generate(default_generator_config(), 5, 3));
  CHECK(g.notes.empty());
}
