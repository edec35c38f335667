// Small, hand-checkable simulation set-ups shared by the tests.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "policies/builtin.h"
#include "sim/executor.h"
#include "cluster/simulation.h"
#include "traces/session.h"

namespace isim::test {

// Linear profile with round numbers: T(x) = 10 ms + 1 ms/token; 1000 KV bytes per token
// (layers 1, kv_heads 1, head_dim 250, fp16); 4-token blocks (4000 B); PCIe 1 MB/s both ways,
// no per-copy overhead, so swapping one block takes exactly 4 ms.
inline sim::Profile round_profile() {
  sim::Profile p;
  p.provenance = {{"source", "published"}, {"description", "hand-checkable test profile"}};
  p.device = {"test-gpu", 1.0};
  p.model.name = "test";
  p.model.layers = 1;
  p.model.hidden = 250;
  p.model.heads = 1;
  p.model.kv_heads = 1;
  p.model.head_dim = 250;
  p.model.ffn = 1000;
  p.model.vocab = 1000;
  p.model.dtype = "fp16";
  p.model.params = 1e6;
  p.model.tp = 1;
  p.block_tokens = 4;
  p.saturation_tokens = 16;
  p.form = sim::ForwardForm::kLinear;
  p.linear = {10.0, 1.0};
  p.swap.h2d_gbps = {{1.0, 1e12}, {0.001, 0.001}};
  p.swap.d2h_gbps = {{1.0, 1e12}, {0.001, 0.001}};
  p.swap.duplex_factor = 1.0;
  p.swap.per_copy_overhead_us = 0;
  return p;
}

// The pipelined swap budget (both directions together, in blocks) of an iteration on the round
// profile, from its numbers: the engine sizes it by the forward time of the running decodes,
// T(d) = base + slope x d (d = 0: the saturated pass T(saturation_tokens)), and one block copy
// takes block_tokens x kv_bytes_per_token / bandwidth (no per-copy overhead), so
// floor(T / block copy) blocks fit. Round profile: T(1) = 11 ms, 4000 B at 1 MB/s = 4 ms: 2.
inline int64_t round_swap_budget_blocks(int64_t decodes) {
  const sim::Profile p = round_profile();
  const int64_t tokens = decodes > 0 ? decodes : p.saturation_tokens;
  const auto window_ns =
      std::llround((p.linear.base_ms + p.linear.slope_ms_per_token * static_cast<double>(tokens)) * 1e6);
  const double bytes = static_cast<double>(p.block_tokens * p.model.kv_bytes_per_token());
  const auto block_ns = std::llround(bytes / p.swap.d2h_gbps.y.front());  // GB/s = bytes per ns
  return window_ns / block_ns;
}

// The round profile with a model the runner can execute (live executors): 2 layers, GQA 4:2,
// `head_dim` (the CUDA kernels take 64 or 128), `hidden` = 4 x head_dim, vocab 97 or 512.
inline sim::Profile runnable_profile(int head_dim, const std::string& dtype, int block_tokens) {
  sim::Profile p = round_profile();
  p.model.layers = 2;
  p.model.hidden = 4 * head_dim;
  p.model.heads = 4;
  p.model.kv_heads = 2;
  p.model.head_dim = head_dim;
  p.model.ffn = 8 * head_dim;
  p.model.vocab = dtype == "fp32" ? 97 : 512;
  p.model.dtype = dtype;
  p.block_tokens = block_tokens;
  return p;
}

inline trace::Segment seg(int64_t in, int64_t out, const std::string& kind = "", double dur = 0) {
  trace::Segment s{in, out, std::nullopt};
  if (!kind.empty()) s.intercept = trace::Intercept{kind, dur};
  return s;
}

inline cluster::RunResult run(const trace::Trace& t, const std::string& policy, sim::EngineConfig cfg,
                          const sim::Profile& p = round_profile()) {
  cfg.check_invariants = true;
  sim::SimExecutor ex(p);
  auto pol = policy::policy_registry().create(policy, "test", policy::PolicyParams{});
  return cluster::simulate(t, cfg, ex, *pol);
}

inline const sim::SessionRecord& rec(const cluster::RunResult& r, const std::string& id) {
  for (const auto& s : r.sessions)
    if (s.id == id) return s;
  throw std::runtime_error("no session " + id);
}

}  // namespace isim::test
