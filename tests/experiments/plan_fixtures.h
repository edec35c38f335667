// Hand-computable plans for the capacity-planning tests: replay traces of one-token sessions on
// the round profile (T(x) = 10 ms + 1 ms/token), where every prefill time is exact.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/profile.h"
#include "tests/cli_helpers.h"
#include "tests/sim_fixtures.h"
#include "traces/jsonl.h"

namespace isim::test {

// Runs the isim binary; returns its exit code, with stdout and stderr captured when asked.
inline int run_isim(const std::string& args, std::string* out = nullptr,
                    std::string* err = nullptr) {
  return run_bin("isim", args, out, err);
}

// A replay trace of `n` sessions arriving 1 s apart, session i with prompts[i % size] prompt
// tokens and one output token, no intercepts. With the default 115 tokens and a 116-token batch
// limit, each session is one 125 ms prefill: a replica serves exactly 8 sessions/s.
inline std::string hand_trace(const std::filesystem::path& dir, int n,
                              const std::vector<int64_t>& prompts = {115}) {
  trace::Trace t;
  for (int i = 0; i < n; ++i) {
    trace::Session s;
    s.id = fmt::format("s{}", i);
    s.arrival_s = i;
    s.segments = {seg(prompts[static_cast<size_t>(i) % prompts.size()], 1)};
    t.push_back(s);
  }
  std::ofstream f(dir / "hand.jsonl");
  trace::write_jsonl(f, t);
  return (dir / "hand.jsonl").string();
}

inline std::string hand_profile(const std::filesystem::path& dir) {
  sim::write_profile_file((dir / "round.yaml").string(), round_profile());
  return (dir / "round.yaml").string();
}

// The hand-computable plan; `slo`, `extra` (lines under the deployment) and `routers` vary it.
// Round-robin by default: it places session i on replica i mod R, which a hand can follow.
inline std::string hand_plan(const std::filesystem::path& dir,
                             const std::string& slo = "{ttft_s.p99: 0.2}",
                             const std::string& extra = "",
                             const std::string& routers = "[round-robin]") {
  std::string s = "name: hand\n";                                                   // 1
  s += "seeds: [1, 2]\n";                                                           // 2
  s += "trace: {from: jsonl, path: " + hand_trace(dir, 400) + "}\n";                // 3
  s += "arrival: {process: replay}\n";                                              // 4
  s += "peak_rate: 50\n";                                                           // 5
  s += "slo: " + slo + "\n";                                                        // 6
  s += "search: {start_rate: 3, tolerance: 0.05}\n";                                // 7
  s += "engine: {max_num_batched_tokens: 116, gpu_blocks: 1000, cpu_blocks: 0,\n";  // 8
  s += "         activation_reserve_gib: 0}\n";
  s += "policies: [discard, preserve]\n";           // 10
  s += "routers: " + routers + "\n";                // 11
  s += "deployments:\n";                            // 12
  s += "  test:\n";                                 // 13
  s += "    gpu: test-gpu\n";                       // 14
  s += "    profile: " + hand_profile(dir) + "\n";  // 15
  s += "    price_per_gpu_hour: 2\n";               // 16
  s += extra;
  return write_file(dir / "plan.yaml", s);
}

}  // namespace isim::test
