// Model and profile consistency: the one place every loader and importer asks whether a model's
// heads, KV heads and tensor-parallel degree fit together, and whether a profile's time table
// rises with tokens. The profile reader (sim/profile.cpp, so every profile loaded, written by
// `profile analytic` or imported: check_profile_loads reads it back), the model reader
// (calibrate/model.cpp), `profile analytic --tp` and the Hugging Face import all call these.
//
// Contract:
// - heads_problem(heads, kv_heads, tp, mla) is nullopt when they fit, else the key at fault
//   ("kv_heads" or "tp") and why. The rules are vLLM's: a KV head serves a whole number of query
//   heads (kv_heads <= heads, heads % kv_heads == 0); the tensor-parallel ranks split the query
//   heads evenly (heads % tp == 0) and the KV heads too, or replicate each KV head over a whole
//   number of ranks when tp exceeds them (kv_heads % tp == 0, or tp % kv_heads == 0 when
//   tp > kv_heads; vLLM's QKVParallelLinear). With MLA (mla = true) the cache holds one latent
//   every rank replicates, so only heads % tp is required.
// - rising_problem(x, y, axis) is "" when the times y (one per strictly increasing x) may price
//   a step, else why not, naming the points: no time may lie more than kNoiseDip below the
//   largest before it, the last included (past the last two points a table is extrapolated
//   along them, sim/interp.h, so a table that falls reaches 0: a prefill priced below a decode
//   of fewer tokens). Smaller dips are real: the shipped measured profiles dip by up to 16.8%
//   (lm_head at a few microseconds), the measured excerpts in tests/data end on a pair that
//   falls by 7.7%. Along the token axes: dense_us.tokens, lm_head_us.sequences,
//   allreduce_us.bytes, prefill_attention_us.chunk and .kv_tokens, moe_us.tokens. Not decode
//   attention: at a fixed total of KV tokens, more sequences may run faster (the shipped
//   measured tables fall by up to 18.7%), and the shared RTXPRO6000 qwen3-30b-a3b tp2 decode of
//   one sequence falls by 55% from 13122 to 20736 KV tokens (a split-KV kernel switch,
//   presumably): not noise, so not refused.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace isim::sim {

inline constexpr double kNoiseDip = 0.5;

struct HeadsProblem {
  std::string key;  // "kv_heads" or "tp"
  std::string reason;
};

std::optional<HeadsProblem> heads_problem(int heads, int kv_heads, int tp, bool mla);

std::string rising_problem(std::span<const double> x, std::span<const double> y,
                           std::string_view axis);

}  // namespace isim::sim
