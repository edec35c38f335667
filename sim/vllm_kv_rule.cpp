#include "sim/vllm_kv_rule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::sim {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

// Bytes per quantized layer weight as a checkpoint stores it: ModelShape's packed bytes, and for
// int4 an fp16 scale per group of 128 weights besides.
double stored_weight_bytes(const ModelShape& m) {
  return m.weight_dtype_bytes() + (m.weight_dtype == "int4" ? 2.0 / 128 : 0.0);
}

// Embedding matrices outside the decoder layers: 1 (tied) or 2, from params against the dense
// layer shapes; MoE and MLA layers are not dense, so those models are taken as untied.
int embedding_matrices(const ModelShape& m) {
  if (m.moe.given() || m.mla.given()) return 2;
  const double h = m.hidden;
  const double attn = h * m.heads * m.head_dim * 2.0 + 2.0 * h * m.kv_heads * m.head_dim;
  const double layer = attn + 3.0 * h * m.ffn + 2.0 * h;
  const double k = std::round((m.params - m.layers * layer) / (static_cast<double>(m.vocab) * h));
  return k <= 1 ? 1 : 2;
}

// The decoder layers' linear weights, the ones a quantized checkpoint (compressed-tensors, vLLM's
// fp8) stores quantized: q, k, v, o and the (gated) FFN or its experts, from the shapes; MLA's
// projections have no shape here, so an MLA model quantizes all but the embeddings. Never more
// than the parameters outside the embedding and lm_head.
double linear_params(const ModelShape& m, double outside_embeddings) {
  if (m.mla.given()) return outside_embeddings;
  const double h = m.hidden;
  const double attn = h * m.heads * m.head_dim * 2.0 + 2.0 * h * m.kv_heads * m.head_dim;
  const double dense = attn + 3.0 * h * m.ffn;
  double all = m.layers * dense;
  if (m.moe.given()) {
    const double moe =
        attn + 3.0 * h * (static_cast<double>(m.moe.experts) * m.moe.expert_ffn + m.moe.shared_ffn);
    all = m.moe.dense_layers * dense + m.moe.moe_layers(m.layers) * moe;
  }
  return std::min(all, outside_embeddings);
}

// What PyTorch's caching allocator counts as allocated for one fresh tensor of `bytes`: a
// request of 10 MiB or more gets a segment rounded up to 2 MiB, and the block is split only
// when more than 1 MiB would be left over (c10/cuda/CUDACachingAllocator.cpp: kMinLargeAlloc,
// kRoundLarge, kSmallSize); smaller requests cost themselves (rounded to 512 B, ignored here).
double allocated_excess(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (bytes < 10 * kMiB) return 0;
  const double rest = std::ceil(bytes / (2 * kMiB)) * 2 * kMiB - bytes;
  return rest <= kMiB ? rest : 0;
}

// The allocator's excess over the dense tensors of one GPU's stage: per layer vLLM's fused qkv
// [(heads + 2 kv_heads) x head_dim / tp, hidden], o, gate_up [2 ffn / tp, hidden] and down;
// the embedding and lm_head [vocab / tp, hidden]. MoE and MLA layers are not modelled (0).
double allocator_excess(const ModelShape& m, double layer_bytes, int n, int embeddings) {
  if (m.moe.given() || m.mla.given()) return 0;
  const int tp = std::max(1, m.tp);
  const double h = m.hidden;
  const double qkv = static_cast<double>(m.heads + 2 * m.kv_heads) * m.head_dim / tp * h;
  const double o = static_cast<double>(m.heads) * m.head_dim / tp * h;
  const double ffn = static_cast<double>(m.ffn) / tp * h;
  const double layer = allocated_excess(qkv * layer_bytes) + allocated_excess(o * layer_bytes) +
                       allocated_excess(2 * ffn * layer_bytes) +
                       allocated_excess(ffn * layer_bytes);
  const double embed = allocated_excess(static_cast<double>(m.vocab) / tp * h * m.dtype_bytes());
  return layer * n + embed * embeddings;
}

}  // namespace

int pp_stage_layers(int layers, int pp, int stage) {
  if (pp < 1 || stage < 0 || stage >= pp)
    throw InputError(fmt::format("pipeline stage {} of {}: expected 0 <= stage < pp", stage, pp));
  if (pp > layers)
    throw InputError(
        fmt::format("pipeline_parallel_size {} is more than the {} layers", pp, layers));
  int n = layers / pp;
  const int extra = layers % pp;
  // get_pp_indices: the remainder goes one each to stages pp-2, pp-3, ... (never the last).
  if (stage < pp - 1 && stage >= pp - 1 - extra) ++n;
  return n;
}

double vllm_weight_bytes(const ModelShape& m, int pp, int stage) {
  const int tp = std::max(1, m.tp);
  const double matrix = static_cast<double>(m.vocab) * m.hidden;
  const int k = embedding_matrices(m);
  const int n = pp_stage_layers(m.layers, pp, stage);
  const int embeddings = pp == 1 ? k : (stage == 0) + (stage == pp - 1);
  const double packed = m.weight_dtype_bytes();  // no scales
  const double excess = allocator_excess(m, packed, n, embeddings);
  if (m.weight_dtype.empty() && pp == 1) return m.params * m.dtype_bytes() / tp + excess;
  // Linear layer weights in weight_dtype; the rest (norms, biases, a vision tower) in dtype,
  // split over the stages as the layers are; the embedding and lm_head in dtype.
  const double outside = std::max(0.0, m.params - k * matrix);
  const double linear = linear_params(m, outside);
  const double share = static_cast<double>(n) / m.layers;
  return ((linear * stored_weight_bytes(m) + (outside - linear) * m.dtype_bytes()) * share +
          embeddings * matrix * m.dtype_bytes()) /
             tp +
         excess;
}

VllmKvTerms vllm_kv_terms(const ModelShape& m, const MemorySpec& s, const VllmKvSettings& k) {
  VllmKvTerms t;
  t.stage_layers = pp_stage_layers(m.layers, k.pp, k.stage);
  const double kv_dtype = k.kv_dtype_bytes > 0 ? k.kv_dtype_bytes : m.dtype_bytes();
  t.kv_bytes_per_token = m.mla.given()
                             ? static_cast<double>(t.stage_layers) *
                                   (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * kv_dtype
                             : 2.0 * t.stage_layers * m.kv_heads_per_gpu() * m.head_dim * kv_dtype;
  t.requested = s.usable_gib * kBytesPerGiB * k.gpu_memory_utilization;
  t.weights = vllm_weight_bytes(m, k.pp, k.stage) + s.weights_extra_bytes;
  const auto tokens = static_cast<double>(k.max_num_batched_tokens);
  t.seqs = std::min<int64_t>(k.max_num_seqs, k.max_num_batched_tokens);
  t.forward = s.activation_bytes_per_token * tokens;
  if (k.stage == k.pp - 1)
    t.sampler = s.sampler_bytes_per_sequence * static_cast<double>(t.seqs) +
                s.sampler_bytes_per_token * tokens;
  t.peak = std::max(t.forward, t.sampler);
  t.non_torch = s.non_torch_gib * kBytesPerGiB;
  t.cuda_graph = s.cuda_graph_gib * kBytesPerGiB;
  t.kv_bytes = t.requested - t.weights - t.peak - t.non_torch - t.cuda_graph;
  return t;
}

}  // namespace isim::sim
