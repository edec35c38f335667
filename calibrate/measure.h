// isim-calibrate's measuring: runs a kernels/runner backend over grids of batches and turns the
// medians into a `tables` profile, derives saturation_tokens with the knee detector
// (calibrate/knee.h), and validates the result against whole mixed batches.
//
// Contract:
// - Every grid point is warmed up, then timed `reps` times; the median is kept. Dense and
//   attention times come from the runner's phase timers, divided by layers (the profile's
//   tables are per layer); lm_head is the lm_head phase; overhead is the median of (whole
//   call - phases) for a one-decode batch.
//   - dense_us(x): x one-token sequences with 1 KV token each, no logits.
//   - decode_attention_us(n, kv): n decode sequences of kv / n tokens each.
//   - prefill_attention_us(c, k): one chunk of c tokens over k cached tokens; the profile asks
//     for per-pair interpolation (tables.prefill_interpolation: per_pair).
//   - lm_head_us(n): n decode sequences with logits.
// - Swap curves: bytes per copy -> GB/s of the backend's default copy path, per direction. A
//   copy is one call moving N scattered blocks (x = its total bytes), as the engine issues one
//   copy per session and direction each iteration (sim/swap_budget.h).
//   On CPU they are host memcpy between the pool and a host buffer, and provenance says so.
//   duplex_factor = (one direction alone) / (both at once), capped at 1; per-copy cost is
//   inside the size-dependent curve, so per_copy_overhead_us = 0. CUDA: compute_slowdown =
//   (a 1024-token decode batch's wall time beside copies in both directions) / (alone) - 1, at
//   least 0, with the times in provenance; CPU: 0 (not measured).
// - Validation: each mixed batch's measured median wall time (no phase timers) against
//   sim::CostModel on the profile as written (serialised, then parsed back). It is recorded in
//   the profile's `validation:` list (batch, predicted_ms, measured_ms).
// - Bad options (unknown backend, missing model, tp that does not divide the model, CUDA
//   requested where no device or no CUDA build) throw isim::InputError.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/runner/runner.h"
#include "kernels/runner/shard.h"
#include "sim/cost_model.h"
#include "sim/profile.h"

namespace isim::calib {

struct CalibrateOptions {
  std::string model_path;
  std::string backend = "cuda";  // cuda | cpu
  int tp = 1;
  bool quick = false;
  uint64_t seed = 1;
  // > 0: extend the grids (by doubling) so that batches of this many tokens (dense, prefill
  // chunks) and contexts of this many tokens (prefill KV) are measured, not extrapolated.
  int64_t cover_tokens = 0;
  int64_t cover_context = 0;
  std::function<void(const std::string&)> progress;  // one line per step; may be empty
};

// The grids one run measures.
struct Grids {
  std::vector<int64_t> dense_tokens;
  std::vector<int64_t> decode_sequences, decode_kv_tokens;
  std::vector<int64_t> prefill_chunk, prefill_kv;
  std::vector<int64_t> lm_head_sequences;
  std::vector<int64_t> swap_blocks;  // blocks per copy
  int warmup = 1;
  int reps = 3;
};
Grids default_grids(const std::string& backend, bool quick);
// Appends doubled points to the dense, prefill chunk and prefill KV axes until their last point
// reaches cover_tokens / cover_context (no-op for <= 0 or already covered).
void extend_grids(Grids& g, int64_t cover_tokens, int64_t cover_context);

struct ValidationBatch {
  std::string name;
  double predicted_ms = 0;
  double measured_ms = 0;
  double error() const { return (predicted_ms - measured_ms) / measured_ms; }  // signed
};

// One TP shard of a model shape as the runner sees it (kernels/runner/shard.h, which live/
// shares); InputError when tp does not divide it.
using kernels::runner::shard_dims;
// What the cost model sees of a runner batch.
sim::BatchShape batch_shape(const std::vector<kernels::runner::Step>& batch);
// Appends validation results to the profile's `validation:` list.
void add_validation(sim::Profile& p, const std::vector<ValidationBatch>& v);

// Runs the whole calibration; the returned profile is ready for write_profile_file.
sim::Profile calibrate(const CalibrateOptions& options);

}  // namespace isim::calib
