// Experiment specs: parsing, overrides and every error a user can hit.
#include <doctest/doctest.h>

#include <yaml-cpp/yaml.h>

#include "core/input_error.h"
#include "experiments/spec/experiment.h"
#include "tests/spec_helpers.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {
using test::error_of;
using test::parse;
const char* kMinimal = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";
}  // namespace

TEST_CASE("a minimal spec gets every default and resolves paths against its folder") {
  auto e = parse(kMinimal);
  CHECK(e.trace.path == "/base/t.jsonl");
  CHECK(e.profile == "/base/p.yaml");
  REQUIRE(e.policies.size() == 1);
  CHECK(e.policies[0].name == "swap");
  CHECK(e.engine.scheduler == "vllm-v0");
  CHECK(e.engine.max_num_seqs == 256);
  CHECK(e.arrival.process == "poisson");
  // The resolved spec parses back to the same experiment.
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  CHECK(again.trace.path == e.trace.path);
  CHECK(again.engine.max_num_batched_tokens == e.engine.max_num_batched_tokens);
  CHECK(again.policies[0].name == "swap");
}

TEST_CASE("overrides are applied before checking") {
  YAML::Node y = YAML::Load(std::string(kMinimal) + "arrival: {rate: 1}\n");
  exp::apply_override(y, "arrival.rate=3.5");
  exp::apply_override(y, "engine.scheduler=chunked");
  exp::apply_override(y, "policy=preserve");
  auto e = exp::parse_experiment(y, "e.yaml", ".");
  CHECK(e.arrival.rate == 3.5);
  CHECK(e.engine.scheduler == "chunked");
  CHECK(e.policies[0].name == "preserve");

  YAML::Node bad = YAML::Load(kMinimal);
  exp::apply_override(bad, "engine.schedular=chunked");
  CHECK_THROWS_WITH_AS(exp::parse_experiment(bad, "e.yaml", "."),
                       doctest::Contains("engine.schedular: unknown key; valid keys: scheduler"),
                       InputError);
  CHECK_THROWS_WITH_AS(exp::apply_override(bad, "novalue"),
                       "-p novalue: expected key=value (e.g. arrival.rate=2)", InputError);
}

TEST_CASE("spec errors name the file, line and key") {
  CHECK(error_of(std::string(kMinimal) + "polcy: swap\n") ==
        "e.yaml:4: polcy: unknown key; valid keys: name, seed, trace, arrival, profile, engine, "
        "cluster, "
        "executor, policy, policies, metrics, slo, sweep, plot, validate");
  CHECK(error_of("trace: {from: jsonl, path: t}\nprofile: p\npolicy: swapp\n") ==
        "e.yaml:3: policy: unknown policy 'swapp'; valid: discard, improved-discard, lru, "
        "min-waste, pensieve, "
        "preserve, swap");
  CHECK(error_of("trace: {from: csv, path: t}\nprofile: p\npolicy: swap\n") ==
        "e.yaml:1: trace.from: unknown trace source 'csv'; valid: agents, azure, burstgpt, "
        "dynamo-agentic, generator, infercept, jsonl, llmservingsim, mooncake, mooncake-conversations, multiturn, "
        "tracelab, vllm-requests, weka-claude-code");
  CHECK(error_of(std::string(kMinimal) + "engine: {scheduler: fifo}\n") ==
        "e.yaml:4: engine.scheduler: unknown scheduler 'fifo'; valid: chunked, vllm-v0, vllm-v1");
  CHECK(
      error_of(std::string(kMinimal) + "engine: {kv_manager: lfu}\n") ==
      "e.yaml:4: engine.kv_manager: unknown kv manager 'lfu'; valid: agent-aware, dynamo-agentic, "
      "global-lru, local, oracle-belady");
  CHECK(error_of(std::string(kMinimal) + "arrival: {rate: -1}\n") ==
        "e.yaml:4: arrival.rate: must be > 0 sessions per second");
  CHECK(error_of(std::string(kMinimal) + "engine: {max_num_seqs: many}\n") ==
        "e.yaml:4: engine.max_num_seqs: expected an integer, got 'many'");
  CHECK(error_of("trace: {from: jsonl}\nprofile: p\npolicy: swap\n") ==
        "e.yaml:1: trace.path: missing (expected a trace file)");
  CHECK(error_of("trace: {from: jsonl, path: t}\npolicy: swap\n") ==
        "e.yaml:1: profile: missing (expected a profile YAML path)");
  CHECK(error_of("trace: {from: jsonl, path: t}\nprofile: p\n") ==
        "e.yaml:1: policy: missing; valid: discard, improved-discard, lru, min-waste, pensieve, "
        "preserve, swap");
  CHECK(error_of(std::string(kMinimal) + "executor: gpu\n") ==
        "e.yaml:4: executor: unknown executor 'gpu'; valid: live-cpu, live-cuda, sim");
}

TEST_CASE("trace.rate_scale scales the agents source's phase rates, and only those") {
  auto e = parse(
      "trace: {from: agents, sessions: 10, rate_scale: 2.5}\nprofile: p.yaml\n"
      "policy: swap\narrival: {process: replay}\n");
  CHECK(e.trace.rate_scale == 2.5);
  CHECK(e.resolved()["trace"]["rate_scale"].as<double>() == 2.5);
  CHECK(parse("trace: {from: agents, sessions: 10}\nprofile: p.yaml\npolicy: swap\n")
            .trace.rate_scale == 1);
  CHECK(
      error_of("trace: {from: agents, sessions: 10, rate_scale: 0}\nprofile: p\npolicy: swap\n") ==
      "e.yaml:1: trace.rate_scale: must be > 0");
  CHECK(error_of(std::string("trace: {from: jsonl, path: t, rate_scale: 2}\n") +
                 "profile: p\npolicy: swap\n") ==
        "e.yaml:1: trace.rate_scale: only the agents source has rates to scale");
}

TEST_CASE("trace.block_tokens sets a dynamo-agentic trace's block size, and only that") {
  auto e = parse(
      "trace: {from: dynamo-agentic, path: d.jsonl, block_tokens: 64}\nprofile: p\n"
      "policy: swap\n");
  CHECK(e.trace.block_tokens == 64);
  CHECK(e.resolved()["trace"]["block_tokens"].as<int64_t>() == 64);
  CHECK(!parse(kMinimal).resolved()["trace"]["block_tokens"]);
  CHECK(error_of("trace: {from: dynamo-agentic, path: d, block_tokens: 0}\nprofile: p\n"
                 "policy: swap\n") == "e.yaml:1: trace.block_tokens: must be >= 1");
  CHECK(error_of("trace: {from: mooncake, path: m, block_tokens: 64}\nprofile: p\n"
                 "policy: swap\n") ==
        "e.yaml:1: trace.block_tokens: only a dynamo-agentic trace leaves its block size to the "
        "run");
}

TEST_CASE("loading a missing or malformed experiment file") {
  CHECK_THROWS_WITH_AS(
      exp::load_experiment("/nonexistent/x.yaml", {}),
      "/nonexistent/x.yaml: cannot open experiment file: No such file or directory", InputError);
}

TEST_CASE("arrival process users: its keys, their checks, and the resolved spec") {
  const std::string head = kMinimal;
  auto e = parse(head +
                 "arrival: {process: users, users: 8, sessions_per_user: 3, stagger_s: 5, "
                 "max_delay_s: 0, advance_min: 0.1, advance_max: 0.4}\n");
  CHECK(e.arrival.users == 8);
  CHECK(e.arrival.sessions_per_user == 3);
  CHECK(e.arrival.stagger_s == 5);
  CHECK(e.arrival.max_delay_s == 0);
  CHECK(e.arrival.advance_min == 0.1);
  CHECK(e.arrival.advance_max == 0.4);
  const YAML::Node r = e.resolved()["arrival"];
  CHECK(r["users"].as<int64_t>() == 8);
  CHECK(r["advance_max"].as<double>() == 0.4);
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  CHECK(again.arrival.users == 8);
  CHECK(again.arrival.stagger_s == 5);
  CHECK(again.arrival.advance_min == 0.1);
  // Defaults: the replay tester's.
  auto d = parse(head + "arrival: {process: users, users: 2}\n");
  CHECK(d.arrival.sessions_per_user == 2);
  CHECK(d.arrival.stagger_s == 60);
  CHECK(d.arrival.max_delay_s == 60);
  CHECK(d.arrival.advance_max == 0);
  // Other processes ignore the keys, as replay ignores rate, and resolve as they always did.
  auto p = parse(head + "arrival: {process: poisson, users: 0}\n");
  CHECK(!p.resolved()["arrival"]["users"]);
  CHECK(p.resolved()["arrival"].size() == 2);

  const std::string at = head + "arrival: {process: users";
  CHECK(error_of(at + "}\n") ==
        "e.yaml:4: arrival.users: missing (process users needs how many users replay sessions at "
        "once)");
  CHECK(error_of(at + ", users: 0}\n") ==
        "e.yaml:4: arrival.users: must be an integer >= 1 (how many users replay sessions at "
        "once), got 0");
  CHECK(error_of(at + ", users: 2.5}\n") ==
        "e.yaml:4: arrival.users: expected an integer number of users, got '2.5'");
  CHECK(error_of(at + ", users: 2, sessions_per_user: 0}\n") ==
        "e.yaml:4: arrival.sessions_per_user: must be an integer >= 1, got 0");
  CHECK(error_of(at + ", users: 2, stagger_s: -1}\n") ==
        "e.yaml:4: arrival.stagger_s: must be a finite number of seconds >= 0, got -1");
  CHECK(error_of(at + ", users: 2, advance_min: 0.5, advance_max: 0.2}\n") ==
        "e.yaml:4: arrival.advance_min: must be <= advance_max (0.2), got 0.5");
  CHECK(error_of(at + ", users: 2, advance_max: 2}\n") ==
        "e.yaml:4: arrival.advance_max: must be a fraction in [0, 1], got 2");
  CHECK(error_of(at + ", users: 2, advance_min: -1}\n") ==
        "e.yaml:4: arrival.advance_min: must be a fraction in [0, 1], got -1");
  CHECK(error_of(at + ", user: 2}\n") ==
        "e.yaml:4: arrival.user: unknown key; valid keys: process, rate, users, "
        "sessions_per_user, stagger_s, max_delay_s, advance_min, advance_max, salt_copies, "
        "phases, cycles");
  // An override goes through the same checks.
  YAML::Node y = YAML::Load(head + "arrival: {process: users, users: 2}\n");
  exp::apply_override(y, "arrival.users=0");
  CHECK_THROWS_WITH_AS(exp::parse_experiment(y, "e.yaml", "."),
                       doctest::Contains("arrival.users: must be an integer >= 1"), InputError);
}

TEST_CASE(
    "engine keys come from the knob tables: every number bounded, token-budget keys shown "
    "only for a scheduler that reads them") {
  const std::string m = kMinimal;
  CHECK(error_of(m + "engine: {max_num_seqs: 1048577}\n") ==
        "e.yaml:4: engine.max_num_seqs: must be <= 1048576");
  CHECK(error_of(m + "engine: {max_num_batched_tokens: 16777217}\n") ==
        "e.yaml:4: engine.max_num_batched_tokens: must be <= 16777216");
  CHECK(error_of(m + "engine: {cpu_blocks: -2}\n") == "e.yaml:4: engine.cpu_blocks: must be >= -1");
  CHECK(error_of(m + "engine: {swap_space_gib: 2000000}\n") ==
        "e.yaml:4: engine.swap_space_gib: must be <= 1048576");
  CHECK(error_of(m + "engine: {long_prefill_token_threshold: -1}\n") ==
        "e.yaml:4: engine.long_prefill_token_threshold: must be >= 0");
  const auto v0 = parse(m + "engine: {watermark: 0.1}\n").resolved()["engine"];
  CHECK(!v0["watermark"]);
  CHECK(!v0["async_scheduling"]);
  const auto v1 =
      parse(m + "engine: {scheduler: vllm-v1, watermark: 0.1, async_scheduling: true}\n")
          .resolved()["engine"];
  CHECK(v1["watermark"].as<std::string>() == "0.1");
  CHECK(v1["max_num_partial_prefills"].as<int>() == 1);
  CHECK(v1["async_scheduling"].as<bool>());
}
