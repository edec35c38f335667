#include "calibrate/vllm_memory.h"

#include <algorithm>

#include <fmt/format.h>

namespace isim::calib {

namespace {
// Non-torch GiB by process layout: medians of the startup logs' "non-torch forward increase
// memory" (one GPU in the engine process: 0.24-0.27, granite 0.46; pipeline workers: 0.07;
// tp 2 workers: 2.06-2.11, tp 4: 2.13-2.21), each checked on every log by --kv-logs.
constexpr double kNonTorchInProcess = 0.25;
constexpr double kNonTorchWorker = 0.07;
constexpr double kNonTorchTensorParallel = 2.0;
}  // namespace

sim::MemorySpec vllm_memory(const ModelSpec& model, double usable_bytes, int tp, std::string* rule,
                            int pp) {
  const sim::ModelShape& m = model.shape;
  const double dtype = m.dtype_bytes();
  sim::MemorySpec s;
  s.given = true;
  s.usable_gib = usable_bytes / (1024.0 * 1024.0 * 1024.0);
  s.weights_extra_bytes = static_cast<double>(model.max_position) * m.head_dim * dtype;
  s.activation_bytes_per_token =
      dtype * (3.0 * m.ffn / tp + static_cast<double>(m.heads + 2 * m.kv_heads) / tp * m.head_dim +
               2.0 * m.hidden);
  // Logits in dtype, their fp32 copy, probabilities, exponential noise: dtype + 12 B a logit;
  // + 1 B derived from the startup logs as a rule (the residual of the sampler-bound logs,
  // 0.7-1.1 B a logit over 11 models) and checked on all of them by --kv-logs.
  s.sampler_bytes_per_sequence = static_cast<double>(m.vocab) * (dtype + 13.0);
  s.sampler_bytes_per_token = static_cast<double>(m.hidden) * dtype;
  if (m.moe.given()) {
    // vLLM's fused-MoE workspace stays allocated after the dummy forward: per token, topk x
    // (max(2 expert_ffn / tp, hidden) + expert_ffn / tp) plus the MoE output, in dtype. Derived
    // from the MoE logs' peaks above their sampler (DeepSeek-V2-Lite 0.43 GiB against 0.42,
    // Qwen1.5-MoE 0.27 against 0.29, Mixtral tp 2 0.69 against 0.72, Qwen3-30B-A3B 0.48
    // against 0.41); --kv-logs checks it once those models load.
    const double ffn_e = static_cast<double>(m.moe.expert_ffn) / tp;
    s.sampler_bytes_per_token +=
        dtype *
        (m.moe.experts_per_token * (std::max(2.0 * ffn_e, static_cast<double>(m.hidden)) + ffn_e) +
         m.hidden);
  }
  s.non_torch_gib = tp * pp == 1 ? kNonTorchInProcess
                                 : kNonTorchWorker + (tp > 1 ? kNonTorchTensorParallel : 0.0);
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
        "noise + 1 B), the Triton top-k/top-p path of vLLM PR #33538) plus the forward's "
        "output held meanwhile and, for MoE, the fused-MoE workspace that stays allocated ({} "
        "B/token: hidden x dtype + topk x (max(2 expert_ffn/tp, hidden) + expert_ffn/tp) x dtype "
        "+ hidden x dtype); non-torch {} GiB (tp {}, pp {}); "
        "CUDA graphs 0 (vLLM 0.19 logs its CUDA-graph estimate but subtracts it by default "
        "only from v0.21.0: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, vllm/envs.py). Derived "
        "from the 74 vLLM 0.19.0 H100 startup logs of ../shared/data/vllm-startup-logs as "
        "rules, each checked on all of them by `isim validate --kv-logs`: the sampler's 1 B "
        "per logit (the residual of the sampler-bound logs), the MoE workspace held through the "
        "sampler (the MoE logs' peaks above their sampler) and non-torch (0.25 GiB for one "
        "GPU in the engine process, 0.07 GiB in a worker process, + 2.0 GiB of NCCL and "
        "custom all-reduce buffers with tp > 1: the logs' medians); no term was fitted to one "
        "run",
        usable_bytes, model.max_position, m.head_dim, dtype, s.activation_bytes_per_token,
        s.sampler_bytes_per_sequence, dtype, s.sampler_bytes_per_token, s.non_torch_gib, tp, pp);
  }
  return s;
}

}  // namespace isim::calib
