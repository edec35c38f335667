#include "calibrate/model.h"

#include <fmt/format.h>

#include "traces/strict_yaml.h"

namespace isim::calib {

namespace {
constexpr double kMaxKvBytesPerToken = 134217728.0;  // 2^27
}  // namespace

ModelSpec load_model(const std::string& path) {
  const YamlMap root(load_yaml_file(path, "model file"), path, "",
                     {"name", "source", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn",
                      "vocab", "dtype", "params", "max_position"},
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
  if (s.heads % s.kv_heads != 0)
    root.fail("kv_heads", "heads (" + std::to_string(s.heads) + ") must be a multiple of kv_heads");
  s.dtype = root.require<std::string>("dtype", "fp16, bf16, fp32 or fp8");
  if (s.dtype != "fp16" && s.dtype != "bf16" && s.dtype != "fp32" && s.dtype != "fp8")
    root.fail("dtype", "unknown dtype '" + s.dtype + "'; valid: bf16, fp16, fp32, fp8");
  // KV bytes per token, in double so that the product cannot overflow: at most 2^27 (128 MiB),
  // 250 times the largest shipped model's, so int64 KV byte counts stay exact (sim/profile.cpp
  // checks the block size again when a profile is read).
  const double kv = s.kv_bytes_per_token_unsplit();
  if (kv > kMaxKvBytesPerToken)
    root.fail("layers", fmt::format("KV bytes per token 2 x layers {} x kv_heads {} x head_dim {} x "
                                    "{} bytes = {:.6g}; expected at most {:.0f} (128 MiB)",
                                    s.layers, s.kv_heads, s.head_dim, s.dtype_bytes(), kv,
                                    kMaxKvBytesPerToken));
  s.params = root.require<double>("params", "the parameter count");
  if (!(s.params > 0)) root.fail("params", "must be > 0");
  m.max_position = root.get<int64_t>("max_position", 0, "a positive integer");
  if (m.max_position < 0) root.fail("max_position", "must be > 0");
  s.tp = 1;
  return m;
}

}  // namespace isim::calib
