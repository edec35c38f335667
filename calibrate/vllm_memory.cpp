#include "calibrate/vllm_memory.h"

#include <fmt/format.h>

namespace isim::calib {

sim::MemorySpec vllm_memory(const ModelSpec& model, double usable_bytes, int tp,
                            std::string* rule) {
  const sim::ModelShape& m = model.shape;
  const double dtype = m.dtype_bytes();
  sim::MemorySpec s;
  s.given = true;
  s.usable_gib = usable_bytes / (1024.0 * 1024.0 * 1024.0);
  s.weights_extra_bytes = static_cast<double>(model.max_position) * m.head_dim * dtype;
  s.activation_bytes_per_token =
      dtype * (3.0 * m.ffn / tp + static_cast<double>(m.heads + 2 * m.kv_heads) / tp * m.head_dim +
               2.0 * m.hidden);
  s.sampler_bytes_per_sequence = static_cast<double>(m.vocab) * (dtype + 12.0);
  s.non_torch_gib = 0.25;
  s.cuda_graph_gib = 0;
  if (rule != nullptr) {
    *rule = fmt::format(
        "modelled after vLLM 0.19's determine_available_memory (vllm/v1/worker/gpu_worker.py): "
        "KV = usable x gpu_memory_utilization - weights - torch peak of the profiling run - "
        "non-torch increase; usable {} B as CUDA reports the device; weights extra = rotary "
        "cos/sin cache {} x {} x {} B; the profiling run's peak is the larger of its dummy "
        "forward at max_num_batched_tokens ({} B/token: gate_up output and activation, qkv, "
        "hidden and residual) and its dummy sampler over min(max_num_seqs, tokens) sequences "
        "({} B/sequence = vocab x (logits in {} B + fp32 copy + probabilities + exponential "
        "noise), the Triton top-k/top-p path of vLLM PR #33538, whose own scratch is not "
        "counted); non-torch 0.25 GiB (a vLLM 0.19 Llama-8B startup log: 'non-torch forward "
        "increase memory: 0.25GiB'); CUDA graphs 0 (vLLM subtracts its CUDA-graph estimate by "
        "default only from v0.21.0: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, vllm/envs.py); "
        "none of these terms was fitted to a run",
        usable_bytes, model.max_position, m.head_dim, dtype, s.activation_bytes_per_token,
        s.sampler_bytes_per_sequence, dtype);
  }
  return s;
}

}  // namespace isim::calib
