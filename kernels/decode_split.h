// How many splits decode attention cuts each sequence's pages into (flash-decoding), as plain
// arithmetic so that the CPU suite tests it; kernels/cuda/decode_attention.cu supplies the
// resident CTA count from cudaOccupancyMaxActiveBlocksPerMultiprocessor.
//
// `items` CTAs exist before splitting (batch x kv heads x q-head tiles). When they already fill
// the `resident` CTAs the device runs at once, or the longest sequence is at most
// kMinSplitTokens long, there is 1 split. Otherwise ceil(resident / items) splits, no more than
// leave kMinSplitTokens tokens of the longest sequence per split, and at most kMaxDecodeSplits.
#pragma once

#include <algorithm>
#include <cstdint>

namespace isim::kernels {

constexpr int kMaxDecodeSplits = 64;
constexpr int64_t kMinSplitTokens = 256;

constexpr int decode_split_count(int64_t items, int64_t max_kv_len, int64_t resident) {
  if (items <= 0 || resident <= 0 || items >= resident || max_kv_len <= kMinSplitTokens) return 1;
  int64_t splits = (resident + items - 1) / items;
  splits = std::min<int64_t>(splits, (max_kv_len + kMinSplitTokens - 1) / kMinSplitTokens);
  return static_cast<int>(std::clamp<int64_t>(splits, 1, kMaxDecodeSplits));
}

}  // namespace isim::kernels
