// How decode attention divides a batch among CTAs, as plain host arithmetic so that the CPU suite
// tests it; kernels/cuda/decode_attention.cu supplies the resident CTA count from
// cudaOccupancyMaxActiveBlocksPerMultiprocessor and runs the plan.
//
// Head tiles (decode_head_tile). One CTA serves `rows` q heads of one kv head's GQA group, so
// each K/V vector it streams serves all of them. Groups below 8 run on CUDA cores with the
// smallest power of two >= group (5 and 7 pad to 8, 3 to 4; the extra rows are masked). Groups of
// 8 and more run on tensor cores with 16-row tiles (8 and 12 pad to 16), or 64-row tiles above 16.
// K/V are read once per tile, so once per GQA group up to 64 heads.
//
// Chunks. Every sequence's pages are cut into chunks of the same `chunk_pages` pages (the last
// one shorter): sequence s has ceil(pages_s / chunk_pages) work items, and a CTA serves one
// (work item, kv head, head tile). A long sequence thus gets more chunks than a short one, and in
// a ragged batch no CTA carries much more than chunk_pages pages. decode_chunk_pages spreads the
// batch's pages over the CTA slots the device holds at once (`resident`), with at least
// kMinSplitTokens tokens per chunk; when that reaches the longest sequence nothing is split.
// A sequence with one chunk is written directly; the others are merged by log-sum-exp
// (kernels/split_merge.h).
#pragma once

#include <algorithm>
#include <cstdint>

namespace isim::kernels {

constexpr int64_t kMinSplitTokens = 256;

struct DecodeHeadTile {
  int32_t rows = 1;           // q heads per CTA (a power of two; rows past the group are masked)
  bool tensor_cores = false;  // mma.sync m16n8k16 instead of CUDA-core dot products
};

constexpr DecodeHeadTile decode_head_tile(int32_t group) {
  if (group >= 8) return {group <= 16 ? 16 : 64, true};
  int32_t rows = 1;
  while (rows < group) rows *= 2;
  return {rows, false};
}

// Head tiles per kv head: ceil(group / rows).
constexpr int32_t decode_head_tiles(int32_t group) {
  const int32_t rows = decode_head_tile(group).rows;
  return (group + rows - 1) / rows;
}

// Pages per chunk. total_pages and max_pages are the batch's sum and maximum of pages per
// sequence; ctas_per_chunk = kv heads x head tiles; resident = CTA slots on the device.
constexpr int32_t decode_chunk_pages(int64_t total_pages, int32_t max_pages, int64_t ctas_per_chunk,
                                     int64_t resident, int32_t block_tokens) {
  if (max_pages <= 1 || total_pages <= 0 || ctas_per_chunk <= 0 || resident <= 0 ||
      block_tokens <= 0)
    return std::max<int32_t>(max_pages, 1);
  const int64_t min_pages = (kMinSplitTokens + block_tokens - 1) / block_tokens;
  const int64_t spread = (total_pages * ctas_per_chunk + resident - 1) / resident;
  return static_cast<int32_t>(std::min<int64_t>(std::max(spread, min_pages), max_pages));
}

// The work items of a batch under one chunk size.
struct DecodeChunkPlan {
  int32_t batch = 0;
  int32_t chunk_pages = 1;
  int64_t work_items = 0;  // sum over sequences of ceil(pages / chunk_pages)

  // Some sequence has more than one chunk: the launch needs a workspace and a merge.
  bool split() const { return work_items > batch; }
};

// Chunks of a fixed size; indptr is the host copy of the page table's indptr[batch + 1].
inline DecodeChunkPlan decode_chunk_plan(const int32_t* indptr, int32_t batch,
                                         int32_t chunk_pages) {
  DecodeChunkPlan plan{batch, std::max<int32_t>(chunk_pages, 1), 0};
  for (int32_t s = 0; s < batch; ++s) {
    const int64_t pages = indptr[s + 1] - indptr[s];
    plan.work_items += (pages + plan.chunk_pages - 1) / plan.chunk_pages;
  }
  return plan;
}

// The chunk size decode_chunk_pages picks for this batch, and its work items.
inline DecodeChunkPlan decode_chunk_plan_auto(const int32_t* indptr, int32_t batch,
                                              int64_t ctas_per_chunk, int64_t resident,
                                              int32_t block_tokens) {
  int64_t total = 0;
  int32_t longest = 1;
  for (int32_t s = 0; s < batch; ++s) {
    total += indptr[s + 1] - indptr[s];
    longest = std::max(longest, indptr[s + 1] - indptr[s]);
  }
  return decode_chunk_plan(
      indptr, batch, decode_chunk_pages(total, longest, ctas_per_chunk, resident, block_tokens));
}

}  // namespace isim::kernels
