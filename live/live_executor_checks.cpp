// The live executor's integrity checks (live_executor_impl.h; the contract is
// live/live_executor.h's): token streams, dropped KV kept, swapped blocks' checksums.
#include "live/live_executor_impl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace isim::live::detail {

void LiveExecutor::extend_inputs(int32_t session, int64_t end) {
  Stream& st = streams_[static_cast<size_t>(session)];
  const trace::Session& s = src(session);
  while (static_cast<int64_t>(st.tokens.size()) < end) {
    if (st.seg >= static_cast<int32_t>(s.segments.size()) ||
        st.inputs >= s.segments[static_cast<size_t>(st.seg)].input)
      throw std::logic_error(
          fmt::format("live: session {} needs position {} before it was produced (segment {}, {} "
                      "inputs and "
                      "{} outputs of it so far)",
                      s.id, st.tokens.size(), st.seg, st.inputs, st.outputs) +
          (violations_.empty() ? "" : "; first violation: " + violations_.front()));
    st.tokens.push_back(input_token(s, static_cast<int64_t>(st.tokens.size()), vocab_));
    ++st.inputs;
  }
}

void LiveExecutor::produce(int32_t session, int64_t position, int32_t token) {
  Stream& st = streams_[static_cast<size_t>(session)];
  const trace::Session& s = src(session);
  if (position != static_cast<int64_t>(st.tokens.size())) {
    violation(fmt::format("{}: a token was produced for position {} but the stream holds {}",
                          where(session, position), position, st.tokens.size()));
    return;
  }
  st.tokens.push_back(token);
  ++st.outputs;
  if (st.seg < static_cast<int32_t>(s.segments.size()) &&
      st.outputs == s.segments[static_cast<size_t>(st.seg)].output) {
    ++st.seg;
    st.inputs = 0;
    st.outputs = 0;
  }
}

kernels::runner::Step LiveExecutor::runner_step(const sim::LiveStep& s) {
  extend_inputs(s.session, s.kv_before + s.tokens);
  Stream& st = streams_[static_cast<size_t>(s.session)];
  kernels::runner::Step step;
  step.kv_before = s.kv_before;
  step.logits = s.logits;
  step.blocks.assign(s.blocks.begin(), s.blocks.end());
  step.tokens.assign(st.tokens.begin() + s.kv_before, st.tokens.begin() + s.kv_before + s.tokens);
  if (options_.fault == "recompute" && fault_note_.empty() && s.recompute) {
    for (int64_t i = 0; i < s.tokens; ++i) {
      if (!st.kept.count(s.kv_before + i)) continue;
      auto& t = step.tokens[static_cast<size_t>(i)];
      t = (t + 1) % vocab_;
      fault_note_ = "recompute: wrong token fed at " + where(s.session, s.kv_before + i);
      break;
    }
  }
  return step;
}

std::vector<float> LiveExecutor::sample(const std::vector<std::byte>& bytes, int32_t slot) const {
  std::vector<float> v;
  const int64_t elem = kernels::dtype_bytes(dtype_);
  const int64_t plane_bytes = tiers_->block_bytes();
  for (int64_t plane : sample_planes_)
    for (int32_t h = 0; h < kv_heads_; ++h)
      for (int32_t d = 0; d < head_dim_; ++d) {
        const int64_t e = (int64_t{h} * block_tokens_ + slot) * head_dim_ + d;
        const std::byte* at = bytes.data() + plane * plane_bytes + e * elem;
        if (dtype_ == kernels::Dtype::kF32) {
          float x;
          std::memcpy(&x, at, 4);
          v.push_back(x);
        } else {
          uint16_t x;
          std::memcpy(&x, at, 2);
          v.push_back(kernels::half_to_float(dtype_, x));
        }
      }
  return v;
}

void LiveExecutor::keep_dropped(const KvOp& op) {
  Stream& st = streams_[static_cast<size_t>(op.session)];
  std::vector<std::byte> bytes;
  for (size_t i = 0; i < op.src.size(); ++i) {
    const int64_t first = op.token_block[i] * block_tokens_;
    const int64_t valid = std::min<int64_t>(block_tokens_, op.kv_tokens - first);
    if (valid <= 0) continue;
    tiers_->read(op.on_cpu[i] != 0, op.src[i], bytes);
    for (int32_t t = 0; t < valid; ++t)
      if (!st.kept.count(first + t)) st.kept.emplace(first + t, sample(bytes, t));
  }
}

std::vector<uint64_t> LiveExecutor::source_sums(const KvOp& op) {
  std::vector<uint64_t> sums;
  std::vector<std::byte> bytes;
  for (int32_t b : op.src) {
    tiers_->read(false, b, bytes);
    sums.push_back(block_checksum(bytes));
  }
  return sums;
}

void LiveExecutor::after_copy(const KvOp& op, const std::vector<uint64_t>& sums) {
  std::vector<std::byte> bytes;
  const bool out = op.kind == KvOp::Kind::kSwapOut;
  for (size_t i = 0; i < op.src.size(); ++i) {
    tiers_->read(/*cpu_tier=*/out, op.dst[i], bytes);
    const uint64_t got = block_checksum(bytes);
    const uint64_t want = out ? sums[i] : cpu_sum_[static_cast<size_t>(op.src[i])];
    ++swap_checked_;
    const int64_t pos = op.token_block[i] * block_tokens_;
    if (got != want)
      violation(fmt::format(
          "{}: {} of token block {} ({} block {} -> {} block {}): checksum {:016x}, expected "
          "{:016x} (the block {})",
          where(op.session, pos), out ? "swap-out" : "swap-in", op.token_block[i],
          out ? "GPU" : "CPU", op.src[i], out ? "CPU" : "GPU", op.dst[i], got, want,
          out ? "was copied wrong" : "did not come back as it was swapped out"));
    if (!out) continue;
    cpu_sum_[static_cast<size_t>(op.dst[i])] = sums[i];
    if (options_.fault == "swap" && fault_note_.empty()) {
      bytes[bytes.size() / 2] ^= std::byte{0x10};
      tiers_->write(true, op.dst[i], bytes);
      fault_note_ = fmt::format("swap: CPU copy of CPU block {} corrupted ({})", op.dst[i],
                                where(op.session, pos));
    }
  }
}

void LiveExecutor::check_recomputed(const sim::LiveStep& s) {
  Stream& st = streams_[static_cast<size_t>(s.session)];
  if (st.kept.empty()) return;
  const int64_t end = s.kv_before + s.tokens;
  std::vector<std::byte> bytes;
  bool reported = false;
  for (size_t j = 0; j < s.blocks.size(); ++j) {
    const int64_t first = static_cast<int64_t>(j) * block_tokens_;
    bool any = false;
    for (int64_t p = first; p < std::min(end, first + block_tokens_) && !any; ++p)
      any = st.kept.count(p) != 0;
    if (!any) continue;
    tiers_->read(false, s.blocks[j], bytes);
    for (int64_t p = first; p < std::min(end, first + block_tokens_); ++p) {
      auto it = st.kept.find(p);
      if (it == st.kept.end()) continue;
      const std::vector<float> now = sample(bytes, static_cast<int32_t>(p - first));
      ++recompute_checked_;
      for (size_t e = 0; e < now.size(); ++e) {
        const double err = std::fabs(double{now[e]} - double{it->second[e]});
        max_error_ = std::max(max_error_, err);
        if (reported || within_tolerance(tolerance_, it->second[e], now[e])) continue;
        const size_t per_plane = static_cast<size_t>(kv_heads_) * head_dim_;
        const int64_t plane = sample_planes_[e / per_plane];
        violation(fmt::format(
            "{}: recomputed KV differs from the original: layer {} {} head {} dim {}: {} vs "
            "{} (tolerance {:g})",
            where(s.session, p), plane / 2, plane % 2 ? "V" : "K",
            (e % per_plane) / static_cast<size_t>(head_dim_), e % static_cast<size_t>(head_dim_),
            now[e], it->second[e], tolerance_));
        reported = true;
      }
      st.kept.erase(it);
    }
  }
}

}  // namespace isim::live::detail
