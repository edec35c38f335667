#include "sim/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace isim::sim {

// Tables and curves are checked when used (Curve1D/Grid2D::eval throw std::logic_error on an
// empty one), so an in-memory linear profile without swap curves still prices forward passes.
namespace {
// Attended (query, key) pairs of a causal chunk over kv_before cached tokens.
double pairs(double chunk, double kv_before) {
  return chunk * kv_before + chunk * (chunk + 1) / 2;
}
}  // namespace

CostModel::CostModel(const Profile& p) : profile_(p), skew_(p.tables.decode_skew) {
  const TablesForward& t = profile_.tables;
  if (profile_.form != ForwardForm::kTables || t.prefill_interpolation != "per_pair") return;
  prefill_per_pair_ = t.prefill_attention_us;
  const size_t ny = prefill_per_pair_.y.size();
  for (size_t i = 0; i < prefill_per_pair_.x.size(); ++i)
    for (size_t j = 0; j < ny; ++j)
      prefill_per_pair_.z[i * ny + j] /= pairs(prefill_per_pair_.x[i], prefill_per_pair_.y[j]);
}

Nanos CostModel::forward(const BatchShape& b) const {
  return parts(b).total;
}

ForwardParts CostModel::parts(const BatchShape& b) const {
  ForwardParts out;
  if (b.total_tokens == 0 && b.prefills.empty()) return out;
  if (profile_.form == ForwardForm::kLinear) {
    const LinearForward& l = profile_.linear;
    out.total = from_ms(l.base_ms + l.slope_ms_per_token * static_cast<double>(b.total_tokens));
    out.dense_us = to_seconds(out.total) * 1e6;
    return out;
  }
  const TablesForward& t = profile_.tables;
  bool outside = false;
  const auto count = [&] {
    if (outside) ++extrapolations_;
  };
  double per_layer_us = 0, attention_us = 0;
  if (b.total_tokens > 0) {
    out.dense_us = t.dense_us.eval_rising(static_cast<double>(b.total_tokens), &outside);
    per_layer_us += out.dense_us;
    count();
  }
  // The chunk with the most attended pairs (the first on a tie): with a mixed table it runs with
  // the decodes; it is also the prefill the ragged-decode correction is bucketed by.
  const BatchShape::Chunk* big = nullptr;
  for (const BatchShape::Chunk& c : b.prefills) {
    if (c.tokens <= 0) continue;
    const auto cp = pairs(static_cast<double>(c.tokens), static_cast<double>(c.kv_before));
    if (big == nullptr ||
        cp > pairs(static_cast<double>(big->tokens), static_cast<double>(big->kv_before)))
      big = &c;
  }
  const BatchShape::Chunk* joint =
      !t.mixed_attention_us.empty() && b.num_decode > 0 ? big : nullptr;
  double decode = 0;  // decode attention, with the joint chunk when there is one
  if (b.num_decode > 0) {
    const auto n = static_cast<double>(b.num_decode);
    // Decode attention (with the joint chunk when there is one) at `kv_total` KV tokens in all.
    const auto decode_us = [&](double kv_total) {
      const double us =
          joint == nullptr
              ? t.decode_attention_us.eval_rising(n, kv_total, false, true, &outside)
              : t.mixed_attention_us.eval({static_cast<double>(joint->tokens),
                                           static_cast<double>(joint->kv_before), n, kv_total / n},
                                          &outside);
      count();
      return us;
    };
    const auto kv = static_cast<double>(b.decode_kv_tokens);
    double us = decode_us(kv);
    const auto kv_max = static_cast<double>(b.decode_kv_max);
    if (skew_.given() && kv_max * n > kv) {
      const double mean = kv / n, kv_min = static_cast<double>(b.decode_kv_min);
      const double rate = kv_max > kv_min ? (mean - kv_min) / (kv_max - kv_min) : 0;
      const double alpha =
          skew_.alpha(big == nullptr ? 0 : static_cast<double>(big->tokens), n, rate, kv_max,
                      big == nullptr ? 0 : static_cast<double>(big->kv_before));
      us = std::max(0.0, us + alpha * (decode_us(kv_max * n) - us));
    }
    decode = us;
  }
  // Summed in the order that keeps every existing profile's times to the last bit.
  if (b.num_decode > 0 && joint == nullptr) {
    per_layer_us += decode;
    attention_us += decode;
  }
  for (const BatchShape::Chunk& c : b.prefills) {
    if (c.tokens <= 0 || &c == joint) continue;
    const double chunk_us = prefill_attention_us(c.tokens, c.kv_before, &outside);
    per_layer_us += chunk_us;
    attention_us += chunk_us;
    count();
  }
  if (joint != nullptr) {
    per_layer_us += decode;
    attention_us += decode;
  }
  if (!t.allreduce_us.empty() && b.total_tokens > 0) {
    const double bytes =
        static_cast<double>(b.total_tokens) * profile_.model.hidden * profile_.model.dtype_bytes();
    out.allreduce_us = 2 * t.allreduce_us.eval_rising(bytes, &outside);
    per_layer_us += out.allreduce_us;
    count();
  }
  const auto layers = static_cast<double>(profile_.model.layers);
  out.dense_us *= layers;
  out.attention_us = layers * attention_us;
  out.allreduce_us *= layers;
  double us = layers * per_layer_us;
  const ModelShape& m = profile_.model;
  if (m.moe.given() && b.total_tokens > 0) {
    out.moe_us = moe_layers_us(b.total_tokens, &outside);
    us += out.moe_us;
    count();
  }
  if (b.num_logits > 0) {
    out.lm_head_us = t.lm_head_us.eval_rising(static_cast<double>(b.num_logits), &outside);
    us += out.lm_head_us;
    count();
  }
  out.overhead_us = t.overhead_us;
  out.total = from_us(us + t.overhead_us);
  return out;
}

Nanos CostModel::moe(int64_t tokens) const {
  const ModelShape& m = profile_.model;
  if (profile_.form != ForwardForm::kTables || !m.moe.given() || tokens <= 0) return 0;
  return from_us(moe_layers_us(tokens, nullptr));
}

double CostModel::moe_layers_us(int64_t tokens, bool* outside) const {
  const ModelShape& m = profile_.model;
  return m.moe.moe_layers(m.layers) *
         moe_layer_us(m, profile_.tables, static_cast<double>(tokens), outside);
}

double CostModel::prefill_attention_us(int64_t chunk, int64_t kv_before, bool* outside) const {
  const auto c = static_cast<double>(chunk), k = static_cast<double>(kv_before);
  if (prefill_per_pair_.empty())
    return profile_.tables.prefill_attention_us.eval_rising(c, k, true, true, outside);
  // Per pair the time may fall past the grid (larger chunks run more efficiently); the chunk's
  // time may not (interp.h's eval_rising, on the product).
  const auto us = [&](double cc, double kk) {
    return prefill_per_pair_.eval(cc, kk) * pairs(cc, kk);
  };
  double v = prefill_per_pair_.eval(c, k, outside) * pairs(c, k);
  v = keep_rising(v, prefill_per_pair_.x, c, [&](double edge) { return us(edge, k); });
  return keep_rising(v, prefill_per_pair_.y, k, [&](double edge) { return us(c, edge); });
}

Nanos CostModel::attention(int64_t chunk, int64_t kv_before) const {
  if (profile_.form == ForwardForm::kLinear || chunk <= 0) return 0;
  bool outside = false;
  const double us = prefill_attention_us(chunk, kv_before, &outside);
  return from_us(static_cast<double>(profile_.model.layers) * us);
}

Nanos CostModel::recompute_cost(int64_t chunk, int64_t kv_before) const {
  if (chunk <= 0) return 0;
  if (marginal_ns_ < 0) {
    const int64_t counted = extrapolations_;
    marginal_ns_ = marginal_ns_per_token();
    extrapolations_ = counted;
  }
  return static_cast<Nanos>(std::llround(marginal_ns_ * static_cast<double>(chunk))) +
         attention(chunk, kv_before);
}

CopyBandwidth CostModel::copy_bandwidth(double bytes_per_copy, Direction dir) const {
  const Curve1D& curve =
      dir == Direction::kHostToDevice ? profile_.swap.h2d_gbps : profile_.swap.d2h_gbps;
  CopyBandwidth b;
  b.curve_gbps = curve.eval(bytes_per_copy, &b.extrapolated);  // throws if no curve
  // Extrapolating a falling curve can reach 0; never go below the slowest measured bandwidth.
  const double floor = *std::min_element(curve.y.begin(), curve.y.end());
  b.clamped = b.curve_gbps < floor;
  b.gbps = std::max(b.curve_gbps, floor);
  return b;
}

Nanos CostModel::transfer(int64_t bytes, int64_t copies, Direction dir, bool duplex) const {
  if (bytes < 0) throw std::invalid_argument(fmt::format("transfer: negative bytes {}", bytes));
  if (bytes == 0) return 0;
  if (copies < 1) throw std::invalid_argument(fmt::format("transfer: {} copies", copies));
  const CopyBandwidth bw =
      copy_bandwidth(static_cast<double>(bytes) / static_cast<double>(copies), dir);
  double gbps = bw.gbps;  // GB/s == bytes per ns
  if (bw.extrapolated) ++extrapolations_;
  if (duplex) gbps *= profile_.swap.duplex_factor;
  const double ns = static_cast<double>(copies) * profile_.swap.per_copy_overhead_us * 1e3 +
                    static_cast<double>(bytes) / gbps;
  return static_cast<Nanos>(std::llround(ns));
}

Nanos CostModel::T(int64_t tokens) const {
  if (tokens < 0) throw std::invalid_argument(fmt::format("T: negative tokens {}", tokens));
  BatchShape b;
  b.total_tokens = tokens;
  b.num_logits = 1;
  b.prefills.push_back({tokens, 0});
  return forward(b);
}

double CostModel::marginal_ns_per_token() const {
  if (profile_.form == ForwardForm::kLinear) return profile_.linear.slope_ms_per_token * 1e6;
  const int64_t s = profile_.saturation_tokens;
  if (s <= 0) throw std::invalid_argument("marginal_ns_per_token: saturation_tokens must be > 0");
  return static_cast<double>(T(2 * s) - T(s)) / static_cast<double>(s);
}

}  // namespace isim::sim
