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

CostModel::CostModel(const Profile& p) : profile_(p) {
  const TablesForward& t = profile_.tables;
  if (profile_.form != ForwardForm::kTables || t.prefill_interpolation != "per_pair") return;
  prefill_per_pair_ = t.prefill_attention_us;
  const size_t ny = prefill_per_pair_.y.size();
  for (size_t i = 0; i < prefill_per_pair_.x.size(); ++i)
    for (size_t j = 0; j < ny; ++j)
      prefill_per_pair_.z[i * ny + j] /= pairs(prefill_per_pair_.x[i], prefill_per_pair_.y[j]);
}

Nanos CostModel::forward(const BatchShape& b) const {
  if (b.total_tokens == 0 && b.prefills.empty()) return 0;
  if (profile_.form == ForwardForm::kLinear) {
    const LinearForward& l = profile_.linear;
    return from_ms(l.base_ms + l.slope_ms_per_token * static_cast<double>(b.total_tokens));
  }
  const TablesForward& t = profile_.tables;
  bool outside = false;
  const auto count = [&] {
    if (outside) ++extrapolations_;
  };
  double per_layer_us = 0;
  if (b.total_tokens > 0) {
    per_layer_us += t.dense_us.eval(static_cast<double>(b.total_tokens), &outside);
    count();
  }
  // With a mixed table, the chunk with the most attended pairs runs with the decodes.
  const BatchShape::Chunk* joint = nullptr;
  if (!t.mixed_attention_us.empty() && b.num_decode > 0) {
    for (const BatchShape::Chunk& c : b.prefills) {
      if (c.tokens <= 0) continue;
      const auto cp = pairs(static_cast<double>(c.tokens), static_cast<double>(c.kv_before));
      if (joint == nullptr ||
          cp > pairs(static_cast<double>(joint->tokens), static_cast<double>(joint->kv_before)))
        joint = &c;
    }
  }
  if (b.num_decode > 0 && joint == nullptr) {
    per_layer_us += t.decode_attention_us.eval(static_cast<double>(b.num_decode),
                                               static_cast<double>(b.decode_kv_tokens), &outside);
    count();
  }
  for (const BatchShape::Chunk& c : b.prefills) {
    if (c.tokens <= 0 || &c == joint) continue;
    per_layer_us += prefill_attention_us(c.tokens, c.kv_before, &outside);
    count();
  }
  if (joint != nullptr) {
    const auto n = static_cast<double>(b.num_decode);
    per_layer_us += t.mixed_attention_us.eval(
        {static_cast<double>(joint->tokens), static_cast<double>(joint->kv_before), n,
         static_cast<double>(b.decode_kv_tokens) / n},
        &outside);
    count();
  }
  if (!t.allreduce_us.empty() && b.total_tokens > 0) {
    const double bytes =
        static_cast<double>(b.total_tokens) * profile_.model.hidden * profile_.model.dtype_bytes();
    per_layer_us += 2 * t.allreduce_us.eval(bytes, &outside);
    count();
  }
  double us = static_cast<double>(profile_.model.layers) * per_layer_us;
  if (b.num_logits > 0) {
    us += t.lm_head_us.eval(static_cast<double>(b.num_logits), &outside);
    count();
  }
  return from_us(us + t.overhead_us);
}

double CostModel::prefill_attention_us(int64_t chunk, int64_t kv_before, bool* outside) const {
  const auto c = static_cast<double>(chunk), k = static_cast<double>(kv_before);
  if (prefill_per_pair_.empty()) return profile_.tables.prefill_attention_us.eval(c, k, outside);
  return prefill_per_pair_.eval(c, k, outside) * pairs(c, k);
}

Nanos CostModel::attention(int64_t chunk, int64_t kv_before) const {
  if (profile_.form == ForwardForm::kLinear || chunk <= 0) return 0;
  bool outside = false;
  double us = prefill_attention_us(chunk, kv_before, &outside);
  if (outside) ++extrapolations_;
  return from_us(static_cast<double>(profile_.model.layers) * us);
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
