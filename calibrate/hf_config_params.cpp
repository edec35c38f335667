// The parameter count of a dense decoder from its shapes (see hf_config_params.h).
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

Terms llama_layer(const Shapes& s) {
  const double h = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  Terms t = {{fmt::format("q {}x{}", s.hidden, q), h * q},
             {fmt::format("k,v 2x{}x{}", s.hidden, kv), 2 * h * kv},
             {fmt::format("o {}x{}", q, s.hidden), q * h},
             {fmt::format("gate/up/down 3x{}x{}", s.hidden, s.ffn), 3 * h * s.ffn},
             {fmt::format("2 norms 2x{}", s.hidden), 2 * h}};
  if (s.family == Family::kQwen2 || s.attention_bias)
    t.emplace_back(fmt::format("q,k,v bias {}+2x{}", q, kv), q + 2 * kv);
  if (s.attention_bias) t.emplace_back(fmt::format("o bias {}", s.hidden), h);
  if (s.mlp_bias)
    t.emplace_back(fmt::format("gate/up/down bias 2x{}+{}", s.ffn, s.hidden), 2.0 * s.ffn + h);
  return t;
}

Terms llama_outer(const Shapes& s) {
  const double table = static_cast<double>(s.vocab) * s.hidden;
  Terms t;
  if (s.tied)
    t.emplace_back(fmt::format("embedding {}x{} (lm_head tied)", s.vocab, s.hidden), table);
  else
    t.emplace_back(fmt::format("embedding and lm_head 2 x {}x{}", s.vocab, s.hidden), 2 * table);
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

}  // namespace

ParamCount count_params(const Shapes& s) {
  const bool gptj = s.family == Family::kGptj;
  const Terms layer = gptj ? gptj_layer(s) : llama_layer(s);
  const Terms outer = gptj ? gptj_outer(s) : llama_outer(s);
  ParamCount pc;
  pc.total = static_cast<double>(s.layers) * sum(layer) + sum(outer);
  pc.lines = wrapped(fmt::format("per layer: {} = {}; x {} layers + {} = {}", joined(layer),
                                 grouped(sum(layer)), s.layers, joined(outer), grouped(pc.total)),
                     94);
  return pc;
}

}  // namespace isim::calib
