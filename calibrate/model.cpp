#include "calibrate/model.h"

#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "sim/profile_consistency.h"

namespace isim::calib {

namespace {
constexpr double kMaxKvBytesPerToken = 134217728.0;  // 2^27

// An integer in [lo, hi].
int bounded(const YamlMap& m, const char* key, int lo, int hi, const std::string& what) {
  const int v = m.require<int32_t>(key, what);
  if (v < lo || v > hi)
    m.fail(key, fmt::format("must be in [{}, {}] ({}), got {}", lo, hi, what, v));
  return v;
}

// The optional keys of a MoE, MLA or quantized model.
void read_options(const YamlMap& root, sim::ModelShape& s) {
  if (root.has("moe")) {
    const YamlMap m = root.map(
        "moe", {"experts", "experts_per_token", "expert_ffn", "shared_ffn", "dense_layers"});
    constexpr int kMax = std::numeric_limits<int32_t>::max();
    s.moe.experts = bounded(m, "experts", 1, kMax, "the routed experts");
    s.moe.experts_per_token =
        bounded(m, "experts_per_token", 1, s.moe.experts, "routed experts per token");
    s.moe.expert_ffn = bounded(m, "expert_ffn", 1, kMax, "one expert's FFN width");
    s.moe.shared_ffn = bounded(m, "shared_ffn", 0, kMax, "the shared experts' FFN width, 0: none");
    s.moe.dense_layers =
        bounded(m, "dense_layers", 0, s.layers - 1, "layers with a dense FFN, fewer than layers");
  }
  if (root.has("mla")) {
    const YamlMap m = root.map("mla", {"kv_lora_rank", "qk_rope_head_dim", "v_head_dim"});
    constexpr int kMax = std::numeric_limits<int32_t>::max();
    s.mla.kv_lora_rank = bounded(m, "kv_lora_rank", 1, kMax, "the latent KV width");
    s.mla.qk_rope_head_dim = bounded(m, "qk_rope_head_dim", 1, kMax, "the rotary key width");
    if (m.has("v_head_dim"))
      s.mla.v_head_dim = bounded(m, "v_head_dim", 1, kMax, "the value head width");
    else if (s.mla.qk_rope_head_dim >= s.head_dim)
      root.fail("head_dim", fmt::format("must exceed mla.qk_rope_head_dim ({}) unless "
                                        "mla.v_head_dim is given",
                                        s.mla.qk_rope_head_dim));
  }
  s.active_params = root.get<double>("active_params", 0, "the parameters a token uses");
  if (root.has("active_params") && !(s.active_params > 0 && s.active_params <= s.params))
    root.fail("active_params", fmt::format("must be > 0 and at most params ({}), got {}", s.params,
                                           s.active_params));
  s.weight_dtype = root.get<std::string>("weight_dtype", "", "fp8, int8 or int4");
  if (root.has("weight_dtype") && s.weight_dtype != "fp8" && s.weight_dtype != "int8" &&
      s.weight_dtype != "int4")
    root.fail("weight_dtype",
              "unknown weight dtype '" + s.weight_dtype + "'; valid: fp8, int8, int4");
}
}  // namespace

ModelSpec load_model(const std::string& path) {
  const YamlMap root(
      load_yaml_file(path, "model file"), path, "",
      {"name", "source", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
       "dtype", "params", "max_position", "active_params", "weight_dtype", "moe", "mla"},
      "a map of model keys");
  ModelSpec m;
  auto& s = m.shape;
  s.name = root.require<std::string>("name", "a string");
  m.source = root.require<std::string>("source", "where the numbers come from");
  auto positive = [&](const char* key, int& out) {
    out = root.require<int32_t>(key, "a positive integer");
    if (out <= 0) root.fail(key, "must be > 0");
  };
  positive("layers", s.layers);
  positive("hidden", s.hidden);
  positive("heads", s.heads);
  positive("kv_heads", s.kv_heads);
  positive("head_dim", s.head_dim);
  positive("ffn", s.ffn);
  positive("vocab", s.vocab);
  s.dtype = root.require<std::string>("dtype", "fp16, bf16, fp32 or fp8");
  if (s.dtype != "fp16" && s.dtype != "bf16" && s.dtype != "fp32" && s.dtype != "fp8")
    root.fail("dtype", "unknown dtype '" + s.dtype + "'; valid: bf16, fp16, fp32, fp8");
  s.params = root.require<double>("params", "the parameter count");
  if (!(s.params > 0)) root.fail("params", "must be > 0");
  read_options(root, s);
  if (const auto bad = sim::heads_problem(s.heads, s.kv_heads, 1, s.mla.given()))
    root.fail(bad->key, bad->reason);
  // KV bytes per token, in double so that the product cannot overflow: at most 2^27 (128 MiB),
  // 250 times the largest shipped model's, so int64 KV byte counts stay exact (sim/profile.cpp
  // checks the block size again when a profile is read).
  const double kv = s.kv_bytes_per_token_unsplit();
  if (kv > kMaxKvBytesPerToken && s.mla.given())
    root.fail("layers", fmt::format("KV bytes per token layers {} x (mla.kv_lora_rank {} + "
                                    "mla.qk_rope_head_dim {}) x {} bytes = {:.6g}; expected at "
                                    "most {:.0f} (128 MiB)",
                                    s.layers, s.mla.kv_lora_rank, s.mla.qk_rope_head_dim,
                                    s.dtype_bytes(), kv, kMaxKvBytesPerToken));
  if (kv > kMaxKvBytesPerToken)
    root.fail(
        "layers",
        fmt::format("KV bytes per token 2 x layers {} x kv_heads {} x head_dim {} x "
                    "{} bytes = {:.6g}; expected at most {:.0f} (128 MiB)",
                    s.layers, s.kv_heads, s.head_dim, s.dtype_bytes(), kv, kMaxKvBytesPerToken));
  m.max_position = root.get<int64_t>("max_position", 0, "a positive integer");
  if (m.max_position < 0) root.fail("max_position", "must be > 0");
  s.tp = 1;
  return m;
}

void check_tp(const ModelSpec& m, int tp, const std::string& flag, const std::string& path) {
  const auto& s = m.shape;
  if (const auto bad = sim::heads_problem(s.heads, s.kv_heads, tp, s.mla.given()))
    throw InputError(fmt::format("{}: {} (model {}: heads {}, kv_heads {})", flag, bad->reason,
                                 path, s.heads, s.kv_heads));
}

}  // namespace isim::calib
