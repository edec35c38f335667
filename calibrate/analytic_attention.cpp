// The roofline's attention terms (calibrate/analytic.h): decode and prefill attention of one
// decoder layer on one GPU, for standard (MHA/GQA) attention and for MLA as vLLM's MLA backends
// run it: prefill with K and V expanded per head from the latent, decode weight-absorbed over the
// latent itself.
#include <algorithm>

#include "calibrate/analytic.h"

namespace isim::calib {

double Roofline::decode_kv_us(double kv_tokens) const {
  // One layer's share of a token's KV on this GPU (MLA's latent is not split by tp).
  const double kvb = model_.kv_bytes_per_token_unsplit() / model_.tp / model_.layers;
  return kv_tokens * kvb / bw_ * 1e6;
}

double Roofline::decode_compute_us(double kv_tokens) const {
  if (!model_.mla.given()) return 0;  // standard decode attention is priced by its bytes
  // Absorbed MLA: each head scores the latent (kv_lora_rank + rope wide) and sums the latent
  // (kv_lora_rank wide) for every KV token: 2 FLOPs per multiply-add.
  const sim::MlaShape& a = model_.mla;
  const double per_token = 2.0 * model_.heads / model_.tp *
                           (2.0 * a.kv_lora_rank + static_cast<double>(a.qk_rope_head_dim));
  return kv_tokens * per_token / bf16_flops_ * 1e6;
}

double Roofline::decode_attention_us(double sequences, double kv_tokens) const {
  return std::max(decode_compute_us(kv_tokens) / eff_.attention,
                  decode_kv_us(kv_tokens) / eff_.memory) +
         sequences * eff_.attention_per_seq_us;
}

double Roofline::prefill_compute_us(double chunk, double kv_tokens) const {
  const double qk = model_.head_dim;
  const double v = model_.mla.given() ? model_.mla.value_head_dim(model_.head_dim) : qk;
  const double pairs = chunk * (kv_tokens + chunk / 2.0);
  return 2.0 * pairs * model_.heads / static_cast<double>(model_.tp) * (qk + v) / bf16_flops_ * 1e6;
}

double Roofline::prefill_memory_us(double chunk, double kv_tokens) const {
  return decode_kv_us(kv_tokens + chunk);
}

double Roofline::prefill_attention_us(double chunk, double kv_tokens) const {
  return std::max(prefill_compute_us(chunk, kv_tokens) / eff_.attention,
                  prefill_memory_us(chunk, kv_tokens) / eff_.memory);
}

}  // namespace isim::calib
