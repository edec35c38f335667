// Cross-check of the analytic roofline (calibrate/analytic.h) against measured aiconfigurator
// tables (ai-dynamo/aiconfigurator, H200 under vLLM 0.24; calibrate/import_aiconfigurator.h reads
// the same CSVs with the same reader, import_common.h's read_csv), where the two overlap.
//
// Contract:
// - GEMMs: the model's projection shapes on one GPU (tp split as vLLM splits them; MLA's kv_a,
//   kv_b and o; q_a and q_b are left out, the shape has no q_lora_rank; routed experts whole
//   when ep > 1, else split by tp; shared experts, the dense FFN and lm_head split by tp) at
//   m = 1, 8, 32, 128, 512, 2048, 8192 against gemm_perf.csv's bfloat16 rows of the same (n, k)
//   at the table's nearest m (the roofline evaluated at that m): Roofline::gemm_bf16_us, the bf16
//   peak whatever the model's weight_dtype (the tables hold bf16 only). Shapes without rows are
//   listed, not interpolated. Two classes: the points where the roofline's FLOP side is the
//   larger (compute) and the rest (memory).
// - Attention (standard attention only; the tables have no MLA rows, which the note says):
//   generation_attention_perf.csv and context_attention_perf.csv rows of kernel
//   vllm_flash_attn_fa3, kv_cache_dtype bfloat16, window_size 0, with num_heads = heads / tp,
//   num_key_value_heads = max(1, kv_heads / tp) and head_dim = head_dim. Generation row (b, isl,
//   step): decode_attention_us(b, b (isl + step)); context row (b, isl, step 0):
//   b x prefill_attention_us(isl, 0).
// - All-to-all: nccl_perf*.csv rows of op_name alltoall, num_gpus R in {2, 4, 8}, message_size
//   elements of nccl_dtype (half and bfloat16 2 bytes, int8 and fp8 1, float 4; others
//   skipped): Roofline::alltoall_us(message_size x bytes, R), one class per R.
// - Error of a point: predicted / measured - 1 (> 0: the roofline is slower). Each class gives
//   the points, the median and largest |error| and the median signed error.
// - A missing file or column is an InputError naming it (read_csv's messages).
#pragma once

#include <string>
#include <vector>

#include "calibrate/analytic.h"

namespace isim::calib {

struct CrossCheckClass {
  std::string kernel;  // "gemm bf16 (compute)", "generation attention", "alltoall 8 GPUs", ...
  int points = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  double median_error = 0;  // signed
  std::string note;         // what was compared, or why nothing was
};

struct CrossCheck {
  std::string dir;
  std::string model;
  std::string gpu;
  std::vector<CrossCheckClass> classes;
};

CrossCheck cross_check_aiconfigurator(const std::string& dir, const GpuSpec& gpu,
                                      const sim::ModelShape& model, const Efficiency& eff);

// The printed table: one line per class, errors in percent.
std::string cross_check_text(const CrossCheck& c);

}  // namespace isim::calib
