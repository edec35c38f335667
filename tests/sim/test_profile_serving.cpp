// The profile's serving sections (step_overhead, memory) and the KV capacity rules built on
// them, with block counts computed by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "sim/engine.h"
#include "sim/profile.h"
#include "tests/input_error_text.h"
#include "tests/sim_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {

std::string small_profile_text() {
  std::ifstream in(test::data_dir() + "/profile-linear-small.yaml");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kMemory =
    "memory:\n  usable_gib: 10\n  weights_extra_bytes: 1e8\n  activation_bytes_per_token: 1000\n"
    "  sampler_bytes_per_sequence: 1e6\n  non_torch_gib: 0.5\n  cuda_graph_gib: 0.25\n";

}  // namespace

TEST_CASE("serving sections read, write back equal, and are absent when unset") {
  const std::string base = small_profile_text();
  REQUIRE(!base.empty());
  const sim::Profile plain = sim::parse_profile(base, "p.yaml");
  CHECK(!plain.memory.given);
  CHECK(!plain.step_overhead.given());
  std::ostringstream w;
  sim::write_profile(w, plain);
  CHECK(w.str().find("memory:") == std::string::npos);
  CHECK(w.str().find("step_overhead:") == std::string::npos);

  const std::string text =
      base + kMemory +
      "step_overhead:\n  fixed_us: 800\n  per_sequence_us: 6\n  per_token_us: 0.1\n";
  const sim::Profile p = sim::parse_profile(text, "p.yaml");
  CHECK(p.memory.given);
  CHECK(p.memory.usable_gib == 10);
  CHECK(p.memory.weights_extra_bytes == 1e8);
  CHECK(p.memory.cuda_graph_gib == 0.25);
  CHECK(p.step_overhead.fixed_us == 800);
  CHECK(p.step_overhead.per_token_us == 0.1);
  std::ostringstream w2;
  sim::write_profile(w2, p);
  CHECK(sim::parse_profile(w2.str(), "back") == p);
}

TEST_CASE("serving section errors name the file, line and key") {
  const std::string base = small_profile_text();
  const auto err = [&](const std::string& extra) {
    return test::error_of_call([&] { (void)sim::parse_profile(base + extra, "p.yaml"); });
  };
  const int line = static_cast<int>(std::count(base.begin(), base.end(), '\n')) + 1;
  CHECK(err("memory:\n  usable_gib: 10\n") ==
        "p.yaml: memory.weights_extra_bytes: missing (expected a number)");
  CHECK(err("step_overhead:\n  fixed_us: -1\n  per_sequence_us: 0\n  per_token_us: 0\n") ==
        "p.yaml:" + std::to_string(line + 1) +
            ": step_overhead.fixed_us: must be >= 0 (a time), got -1");
  CHECK(err("memory:\n  usable: 10\n").find("memory.usable: unknown key") != std::string::npos);
}

TEST_CASE("KV capacity: vLLM's rule, computed by hand") {
  // Round profile: 1000 KV bytes per token, 4-token blocks of 4000 B; 1e6 params in fp16.
  sim::Profile p = test::round_profile();
  p.memory = sim::parse_profile(small_profile_text() + kMemory, "p.yaml").memory;
  p.model.params = 1e9;  // 2e9 B of weights
  sim::EngineConfig c;
  c.gpu_memory_utilization = 0.9;
  c.max_num_batched_tokens = 4096;
  c.max_num_seqs = 256;
  // 10 GiB x 0.9 = 9,663,676,416 B; - 2e9 weights - 1e8 extra; peak = max(1000 x 4096,
  // 1e6 x 256) = 2.56e8; - 0.75 GiB (805,306,368) = 6,502,370,048 B -> 1,625,592 blocks.
  CHECK(sim::derive_block_counts(p, c).gpu == 1625592);
  SUBCASE("a forward peak above the sampler's") {
    c.max_num_batched_tokens = 1 << 20;  // 1000 x 2^20 = 1,048,576,000 B
    // 9,663,676,416 - 2.1e9 - 1,048,576,000 - 805,306,368 = 5,709,794,048 -> 1,427,448
    CHECK(sim::derive_block_counts(p, c).gpu == 1427448);
  }
  SUBCASE("an explicit activation reserve keeps the reserve rule") {
    c.activation_reserve_gib = 1;
    c.activation_reserve_given = true;
    // 1 GiB x 0.9 (device.memory_gib of the round profile) - 2e9 - 1 GiB < 0: nothing fits
    CHECK(test::error_of_call([&] {
            (void)sim::derive_block_counts(p, c);
          }).find("no KV block fits") != std::string::npos);
  }
  SUBCASE("kv_capacity vllm without a memory section") {
    p.memory = {};
    c.kv_capacity = "vllm";
    CHECK(test::error_of_call([&] { (void)sim::derive_block_counts(p, c); }) ==
          "profile: memory: missing; engine.kv_capacity 'vllm' needs the profile's memory "
          "section (or use kv_capacity: reserve)");
  }
  SUBCASE("gpu_blocks still overrides") {
    c.gpu_blocks = 7;
    CHECK(sim::derive_block_counts(p, c).gpu == 7);
  }
}

TEST_CASE("KV capacity: a swap space of more blocks than a pool holds names the key") {
  // Round profile: 4-token blocks of 4000 B. 1000 GiB = 1,073,741,824,000 B = 2^28 blocks
  // exactly, the most a pool holds; 1001 GiB = 1,074,815,565,824 B -> 268,703,891 blocks.
  sim::Profile p = test::round_profile();
  sim::EngineConfig c;
  c.gpu_blocks = 10;
  c.swap_space_gib = 1000;
  CHECK(sim::derive_block_counts(p, c).cpu == 268435456);
  c.swap_space_gib = 1001;
  CHECK(test::error_of_call([&] { (void)sim::derive_block_counts(p, c); }) ==
        "engine.swap_space_gib: 1001 GiB is 268703891 blocks of 4000 B, more than a pool holds "
        "(at most 268435456); lower it, or give engine.cpu_blocks");
  c.swap_space_gib = 1e300;  // no overflowing cast on the way
  CHECK(test::error_of_call([&] { (void)sim::derive_block_counts(p, c); })
            .starts_with("engine.swap_space_gib: 1e+300 GiB is "));
}
