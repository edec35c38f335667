// One tensor-parallel shard of a model, as the runner builds it: what live executors and
// isim-calibrate both hand the runner for a model shape and a TP degree.
//
// Contract: shard_dims(shape, tp) takes any shape with integer fields layers, hidden, heads,
// kv_heads, head_dim, ffn, vocab and a string dtype (sim::ModelShape; a template so that
// kernels/ knows nothing of sim/). heads, ffn and vocab are divided by tp (vocab-parallel
// lm_head), kv_heads too, at least 1 (replicated when tp > kv_heads); dtype "bf16" and "fp32"
// are theirs, anything else is fp16. InputError "--tp N: ..." when tp < 1, when tp does not
// divide heads, ffn or vocab, or when kv_heads neither divides nor is divided by tp.
#pragma once

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/input_error.h"
#include "kernels/dtype.h"
#include "kernels/runner/runner.h"

namespace isim::kernels::runner {

template <class Shape>
ModelDims shard_dims(const Shape& m, int tp) {
  if (tp < 1) throw InputError(fmt::format("--tp {}: must be >= 1", tp));
  for (const auto& [name, v] :
       {std::pair{"heads", m.heads}, std::pair{"ffn", m.ffn}, std::pair{"vocab", m.vocab}})
    if (v % tp != 0)
      throw InputError(fmt::format("--tp {}: does not divide model {} = {}", tp, name, v));
  if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
    throw InputError(
        fmt::format("--tp {}: kv_heads = {} neither divides nor is divided by it", tp, m.kv_heads));
  ModelDims d;
  d.layers = m.layers;
  d.hidden = m.hidden;
  d.heads = m.heads / tp;
  d.kv_heads = std::max(1, m.kv_heads / tp);  // replicated when tp > kv_heads
  d.head_dim = m.head_dim;
  d.ffn = m.ffn / tp;
  d.vocab = m.vocab / tp;  // vocab-parallel lm_head
  d.dtype = m.dtype == "bf16" ? Dtype::kBF16 : m.dtype == "fp32" ? Dtype::kF32 : Dtype::kF16;
  return d;
}

}  // namespace isim::kernels::runner
