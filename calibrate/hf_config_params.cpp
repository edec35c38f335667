// The parameter count of a decoder from its shapes (see hf_config_params.h).
#include "calibrate/hf_config_params.h"

#include <sstream>
#include <utility>

#include <fmt/format.h>

namespace isim::calib {

namespace {

using Terms = std::vector<std::pair<std::string, double>>;

// 8030261248 -> "8,030,261,248".
std::string grouped(double v) {
  const std::string digits = fmt::format("{:.0f}", v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

double sum(const Terms& t) {
  double s = 0;
  for (const auto& [text, v] : t) s += v;
  return s;
}

std::string joined(const Terms& t) {
  std::string s;
  for (const auto& [text, v] : t) s += (s.empty() ? "" : " + ") + text;
  return s;
}

void append(Terms& to, const Terms& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// Greedy word wrap to `width` columns.
std::vector<std::string> wrapped(const std::string& text, size_t width) {
  std::vector<std::string> lines(1);
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (!lines.back().empty() && lines.back().size() + 1 + w.size() > width) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + w;
  }
  return lines;
}

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, GLM-5).
Terms mla_attention(const Shapes& s) {
  const double h = s.hidden, n = s.heads, qk = s.qk_nope_head_dim + s.qk_rope_head_dim;
  const double kvr = s.kv_lora_rank, rope = s.qk_rope_head_dim;
  Terms t;
  if (s.q_lora_rank > 0) {
    const double qr = s.q_lora_rank;
    t = {{fmt::format("q_a {}x{}", s.hidden, s.q_lora_rank), h * qr},
         {fmt::format("q_a norm {}", s.q_lora_rank), qr},
         {fmt::format("q_b {}x{}", s.q_lora_rank, n * qk), qr * n * qk}};
  } else {
    t = {{fmt::format("q {}x{}", s.hidden, n * qk), h * n * qk}};
  }
  const double kv_b = n * (s.qk_nope_head_dim + s.v_head_dim), o = n * s.v_head_dim;
  t.insert(t.end(), {{fmt::format("kv_a {}x{}", s.hidden, kvr + rope), h * (kvr + rope)},
                     {fmt::format("kv_a norm {}", s.kv_lora_rank), kvr},
                     {fmt::format("kv_b {}x{}", s.kv_lora_rank, kv_b), kvr * kv_b},
                     {fmt::format("o {}x{}", o, s.hidden), o * h}});
  if (s.mla_bias)
    t.emplace_back(fmt::format("q_a,kv_a,o bias {}+{}+{}", s.q_lora_rank, kvr + rope, s.hidden),
                   static_cast<double>(s.q_lora_rank) + kvr + rope + h);
  return t;
}

Terms gqa_attention(const Shapes& s) {
  const double h = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  return {{fmt::format("q {}x{}", s.hidden, q), h * q},
          {fmt::format("k,v 2x{}x{}", s.hidden, kv), 2 * h * kv},
          {fmt::format("o {}x{}", q, s.hidden), q * h}};
}

// What follows the norms in a layer: q/k norms and biases.
Terms extras(const Shapes& s) {
  const double h = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  Terms t;
  if (s.qk_norm) t.emplace_back(fmt::format("q_norm, k_norm 2x{}", s.head_dim), 2.0 * s.head_dim);
  if (s.qkv_bias) t.emplace_back(fmt::format("q,k,v bias {}+2x{}", q, kv), q + 2 * kv);
  if (s.o_bias) t.emplace_back(fmt::format("o bias {}", s.hidden), h);
  return t;
}

Terms norms(const Shapes& s) {
  if (s.norm_bias) return {{fmt::format("2 LayerNorms 2x2x{}", s.hidden), 4.0 * s.hidden}};
  return {{fmt::format("2 norms 2x{}", s.hidden), 2.0 * s.hidden}};
}

Terms dense_mlp(const Shapes& s) {
  const double h = s.hidden;
  Terms t = {{fmt::format("gate/up/down 3x{}x{}", s.hidden, s.ffn), 3 * h * s.ffn}};
  if (s.mlp_bias)
    t.emplace_back(fmt::format("gate/up/down bias 2x{}+{}", s.ffn, s.hidden), 2.0 * s.ffn + h);
  return t;
}

double one_expert(const Shapes& s) {
  return 3.0 * s.hidden * static_cast<double>(s.expert_ffn);
}

Terms moe_block(const Shapes& s) {
  const double h = s.hidden, e = s.experts;
  Terms t = {{fmt::format("router {}x{}", s.experts, s.hidden), e * h}};
  if (s.router_bias) t.emplace_back(fmt::format("router bias {}", s.experts), e);
  t.emplace_back(fmt::format("experts {} x 3x{}x{}", s.experts, s.hidden, s.expert_ffn),
                 e * one_expert(s));
  if (s.shared_ffn > 0)
    t.emplace_back(fmt::format("shared 3x{}x{}", s.hidden, s.shared_ffn),
                   3.0 * h * static_cast<double>(s.shared_ffn));
  if (s.shared_expert_gate) t.emplace_back(fmt::format("shared gate {}", s.hidden), h);
  return t;
}

Terms layer(const Shapes& s, bool moe) {
  Terms t = s.kv_lora_rank > 0 ? mla_attention(s) : gqa_attention(s);
  append(t, moe ? moe_block(s) : dense_mlp(s));
  append(t, norms(s));
  append(t, extras(s));
  return t;
}

Terms outer(const Shapes& s) {
  const double table = static_cast<double>(s.vocab) * s.hidden;
  Terms t;
  if (s.tied)
    t.emplace_back(fmt::format("embedding {}x{} (lm_head tied)", s.vocab, s.hidden), table);
  else
    t.emplace_back(fmt::format("embedding and lm_head 2 x {}x{}", s.vocab, s.hidden), 2 * table);
  if (s.lm_head_bias) t.emplace_back(fmt::format("lm_head bias {}", s.vocab), s.vocab);
  if (s.norm_bias)
    t.emplace_back(fmt::format("final LayerNorm 2x{}", s.hidden), 2.0 * s.hidden);
  else
    t.emplace_back(fmt::format("final norm {}", s.hidden), s.hidden);
  return t;
}

Terms gptj_layer(const Shapes& s) {
  const double h = s.hidden, f = s.ffn;
  return {{fmt::format("LayerNorm 2x{}", s.hidden), 2 * h},
          {fmt::format("q,k,v,o 4x{}x{}", s.hidden, s.hidden), 4 * h * h},
          {fmt::format("fc_in {}x{} + bias {}", s.hidden, s.ffn, s.ffn), h * f + f},
          {fmt::format("fc_out {}x{} + bias {}", s.ffn, s.hidden, s.hidden), f * h + h}};
}

Terms gptj_outer(const Shapes& s) {
  const double table = static_cast<double>(s.vocab) * s.hidden;
  Terms t = {{fmt::format("embedding {}x{}", s.vocab, s.hidden), table}};
  if (s.tied)
    t.emplace_back(fmt::format("lm_head bias {} (weight tied)", s.vocab), s.vocab);
  else
    t.emplace_back(fmt::format("lm_head {}x{} + bias {}", s.vocab, s.hidden, s.vocab),
                   table + s.vocab);
  t.emplace_back(fmt::format("final LayerNorm 2x{}", s.hidden), 2.0 * s.hidden);
  return t;
}

ParamCount count_dense(const Shapes& s) {
  const bool gptj = s.family == Family::kGptj;
  const Terms per_layer = gptj ? gptj_layer(s) : layer(s, false);
  const Terms out = gptj ? gptj_outer(s) : outer(s);
  ParamCount pc;
  pc.total = pc.active = static_cast<double>(s.layers) * sum(per_layer) + sum(out);
  pc.lines = wrapped(fmt::format("per layer: {} = {}; x {} layers + {} = {}", joined(per_layer),
                                 grouped(sum(per_layer)), s.layers, joined(out), grouped(pc.total)),
                     94);
  return pc;
}

ParamCount count_moe(const Shapes& s) {
  const Terms moe = layer(s, true), dense = layer(s, false), out = outer(s);
  const double moe_layers = static_cast<double>(s.layers - s.dense_layers);
  const double d = static_cast<double>(s.dense_layers);
  const double unused = static_cast<double>(s.experts - s.experts_per_token) * one_expert(s);
  ParamCount pc;
  pc.total = moe_layers * sum(moe) + d * sum(dense) + sum(out);
  pc.active = moe_layers * (sum(moe) - unused) + d * sum(dense) + sum(out);
  std::string text = fmt::format("per MoE layer: {} = {};", joined(moe), grouped(sum(moe)));
  if (s.dense_layers > 0)
    text += fmt::format(" per dense layer: {} = {};", joined(dense), grouped(sum(dense)));
  text += fmt::format(" {} MoE layers x {}", moe_layers, grouped(sum(moe)));
  if (s.dense_layers > 0)
    text += fmt::format(" + {} dense x {}", s.dense_layers, grouped(sum(dense)));
  text += fmt::format(" + {} = {}.", joined(out), grouped(pc.total));
  text += fmt::format(
      " Active per token ({} of {} routed experts): {} x ({} - {} unpicked x {}){} + outer {} = {}",
      s.experts_per_token, s.experts, moe_layers, grouped(sum(moe)),
      s.experts - s.experts_per_token, grouped(one_expert(s)),
      s.dense_layers > 0 ? fmt::format(" + {} x {}", s.dense_layers, grouped(sum(dense))) : "",
      grouped(sum(out)), grouped(pc.active));
  pc.lines = wrapped(text, 94);
  return pc;
}

}  // namespace

ParamCount count_params(const Shapes& s) {
  return s.experts > 0 ? count_moe(s) : count_dense(s);
}

}  // namespace isim::calib
