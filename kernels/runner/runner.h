// Synthetic transformer runner: executes one serving iteration's batch (decode sequences and
// prefill chunks) through N decoder layers of a Llama-style model with random weights, over a
// real paged KV pool. Calibration times it; live execution drives it.
//
// Contract:
// - Weights are random and deterministic: element i of tensor t is weight_value(seed, t, i)
//   (kernels/runner/init.h), scaled by 1/sqrt(fan_in); norm gains are 1. Same seed, same batch
//   sequence -> the same tokens and logits (CPU: bit-identical for any thread count).
// - Per layer: RMSNorm, one fused QKV GEMM, RoPE (theta 10000, rotate-half) on q and k at each
//   token's absolute position, append K/V into the pool (kernels/kv_layout.h, plane 2l is layer
//   l's K, 2l+1 its V), paged attention (the decode kernel for one-token steps, the multi-token
//   kernel for longer chunks), O GEMM + residual, RMSNorm, fused gate/up GEMM, SwiGLU, down
//   GEMM + residual. Then the final RMSNorm, lm_head and greedy argmax (lowest id on ties) for
//   the last token of every step that asks for logits.
// - A Step's `blocks` must cover kv_before + tokens.size() positions (exactly ceil(n / block
//   tokens) ids, each in [0, num_blocks)); positions [0, kv_before) must already hold that
//   sequence's K/V (or anything, when only timing). Bad input throws std::invalid_argument
//   naming the step and field (the kernels layer's convention: it cannot see isim::InputError;
//   front ends convert).
// - Phase timing (StepOptions::time_phases) sums, over layers, the time of the dense work
//   (norms, GEMMs, RoPE, KV append, SwiGLU, residuals), decode attention and multi-token
//   attention, plus the lm_head phase (final norm, GEMM, argmax); `total_us` is the whole call.
//   CPU: steady clock; CUDA: events on the runner's stream.
// - CPU backend: float32, Eigen products one row at a time, the CPU reference attention; batch
//   invariant: a token's KV and logits are bit-identical whatever else is in its batch and
//   whether it runs as a decode step, a prefill chunk or a recompute (live-cpu relies on this
//   for exact integrity checks). CUDA backend: bf16 or fp16
//   storage, cuBLAS GEMMs with float accumulation, the CUDA attention kernels, one stream;
//   head_dim must be 64 or 128.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/kv_layout.h"

namespace isim::kernels::runner {

// The shapes the runner needs (the kernels layer does not see sim::ModelShape).
struct ModelDims {
  int32_t layers = 0;
  int32_t hidden = 0;
  int32_t heads = 0;
  int32_t kv_heads = 0;
  int32_t head_dim = 0;
  int32_t ffn = 0;
  int32_t vocab = 0;
  Dtype dtype = Dtype::kF32;  // CPU runs float32 whatever this says; CUDA needs kBF16 or kF16

  AttentionShape attention(int32_t block_tokens) const {
    return {heads, kv_heads, head_dim, block_tokens};
  }
};

// Throws std::invalid_argument("model: FIELD = V: reason") for non-positive sizes or heads %
// kv_heads != 0.
void check_dims(const ModelDims& dims);

struct RunnerConfig {
  ModelDims dims;
  int32_t block_tokens = 16;
  int64_t num_blocks = 0;  // KV pool size in blocks (every layer)
  uint64_t seed = 1;
  int threads = 0;  // CPU attention threads (<= 0: all hardware threads)
};

// One sequence's work in an iteration.
struct Step {
  std::vector<int32_t> tokens;  // new tokens: 1 for a decode step, the chunk for prefill
  int64_t kv_before = 0;        // tokens of this sequence already in the KV pool
  std::vector<int32_t> blocks;  // block table for kv_before + tokens.size() positions
  bool logits = true;           // produce the next token from the last new token
};

struct StepOptions {
  bool keep_logits = false;  // return the logits rows (float)
  bool time_phases = false;
};

struct PhaseTimes {
  double dense_us = 0;
  double decode_attention_us = 0;
  double prefill_attention_us = 0;
  double lm_head_us = 0;
  double total_us = 0;
};

struct StepResult {
  std::vector<int32_t> tokens;  // one per step with logits, in step order
  std::vector<float> logits;    // [tokens.size()][vocab] when keep_logits
  PhaseTimes times;             // when time_phases
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual StepResult step(const std::vector<Step>& batch, const StepOptions& options = {}) = 0;
  // The KV pool as the copy layer sees it: 2 * layers planes (host memory on CPU, device memory
  // on CUDA).
  virtual BlockPool kv_pool() = 0;
  virtual const RunnerConfig& config() const = 0;
  virtual std::string backend() const = 0;  // "cpu" or "cuda"
};

std::unique_ptr<Runner> make_cpu_runner(const RunnerConfig& config);

// Block ids [first, first + ceil(positions / block_tokens)): a convenience for callers that
// lay sequences out contiguously.
std::vector<int32_t> block_range(int32_t first, int64_t positions, int32_t block_tokens);

}  // namespace isim::kernels::runner
