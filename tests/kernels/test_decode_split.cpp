// Decode planning (kernels/decode_split.h): head tiles, the chunk size from the batch's total
// pages and the resident CTA slots, and the work items of ragged batches, hand-computed.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/decode_split.h"

using namespace isim::kernels;

namespace {

// indptr of sequences with the given page counts.
std::vector<int32_t> indptr_of(const std::vector<int32_t>& pages) {
  std::vector<int32_t> indptr{0};
  for (int32_t p : pages) indptr.push_back(indptr.back() + p);
  return indptr;
}

}  // namespace

TEST_CASE("decode head tiles: powers of two on CUDA cores below 8, 16 or 64 rows on tensor cores") {
  CHECK(decode_head_tile(1).rows == 1);
  CHECK(decode_head_tile(3).rows == 4);  // one masked row, not three re-reads of K/V
  CHECK(decode_head_tile(4).rows == 4);
  CHECK(decode_head_tile(5).rows == 8);
  CHECK(decode_head_tile(7).rows == 8);
  CHECK_FALSE(decode_head_tile(7).tensor_cores);
  CHECK(decode_head_tile(8).rows == 16);
  CHECK(decode_head_tile(8).tensor_cores);
  CHECK(decode_head_tile(12).rows == 16);
  CHECK(decode_head_tile(24).rows == 64);
  CHECK(decode_head_tile(64).rows == 64);
  // One tile per kv head up to 64 q heads per kv head; 96 needs two 64-row tiles.
  CHECK(decode_head_tiles(5) == 1);
  CHECK(decode_head_tiles(12) == 1);
  CHECK(decode_head_tiles(64) == 1);
  CHECK(decode_head_tiles(96) == 2);
}

TEST_CASE("decode chunk pages: the batch's pages spread over the resident CTA slots") {
  // H200: 132 SMs x 2 resident CTAs = 264 slots; 8 kv heads x 1 head tile = 8 CTAs per chunk.
  // Batch 8 x 4,096 tokens in 16-token blocks: 8 x 256 = 2,048 pages.
  // ceil(2048 * 8 / 264) = ceil(62.06) = 63 pages (>= 256 / 16 = 16).
  CHECK(decode_chunk_pages(2048, 256, 8, 264, 16) == 63);
  // Batch 128 x 4,096: ceil(32768 * 8 / 264) = 993 > 256 pages, so no sequence is split.
  CHECK(decode_chunk_pages(32768, 256, 8, 264, 16) == 256);
  // Batch 1 x 1,024 tokens in 8-token blocks: ceil(128 * 8 / 264) = 4, but a chunk keeps
  // 256 / 8 = 32 pages at least.
  CHECK(decode_chunk_pages(128, 128, 8, 264, 8) == 32);
  // Block 12 (the runtime-size kernel): at least ceil(256 / 12) = 22 pages.
  CHECK(decode_chunk_pages(200, 200, 8, 264, 12) == 22);
  // Sequences of 13 pages are never cut below 16 pages: one chunk each.
  CHECK(decode_chunk_pages(52, 13, 8, 264, 16) == 13);
  // Degenerate inputs: one chunk per sequence.
  CHECK(decode_chunk_pages(100, 1, 8, 264, 16) == 1);
  CHECK(decode_chunk_pages(100, 40, 8, 0, 16) == 40);
  CHECK(decode_chunk_pages(0, 0, 8, 264, 16) == 1);
}

TEST_CASE("decode chunk plan: ceil(pages / chunk_pages) work items per sequence") {
  const auto indptr = indptr_of({3, 1, 10});
  const DecodeChunkPlan three = decode_chunk_plan(indptr.data(), 3, 3);
  CHECK(three.batch == 3);
  CHECK(three.chunk_pages == 3);
  CHECK(three.work_items == 1 + 1 + 4);
  CHECK(three.split());
  CHECK(decode_chunk_plan(indptr.data(), 3, 1).work_items == 14);
  const DecodeChunkPlan whole = decode_chunk_plan(indptr.data(), 3, 10);
  CHECK(whole.work_items == 3);
  CHECK_FALSE(whole.split());
  CHECK(decode_chunk_plan(indptr.data(), 0, 5).work_items == 0);
}

TEST_CASE("decode chunk plan: a ragged batch cuts the long sequence, not the short ones") {
  // 1 x 32,768 tokens + 63 x 512 tokens in 16-token blocks: 2,048 + 63 x 32 = 4,064 pages.
  // ceil(4064 * 8 / 264) = ceil(123.15) = 124 pages per chunk. The long sequence gets
  // ceil(2048 / 124) = 17 chunks, each short one 1: 80 work items, 640 CTAs, none above 124
  // pages, where one chunk per sequence would leave one CTA with 2,048.
  std::vector<int32_t> pages(64, 32);
  pages[0] = 2048;
  const auto indptr = indptr_of(pages);
  const DecodeChunkPlan plan = decode_chunk_plan_auto(indptr.data(), 64, 8, 264, 16);
  CHECK(plan.chunk_pages == 124);
  CHECK(plan.work_items == 80);
  CHECK(plan.split());
  // Batch 1 x 32,768: ceil(2048 * 8 / 264) = 63 pages, ceil(2048 / 63) = 33 chunks, 264 CTAs.
  const auto one = indptr_of({2048});
  const DecodeChunkPlan single = decode_chunk_plan_auto(one.data(), 1, 8, 264, 16);
  CHECK(single.chunk_pages == 63);
  CHECK(single.work_items == 33);
  // A uniform batch that fills the device is not split.
  const auto full = indptr_of(std::vector<int32_t>(128, 256));
  const DecodeChunkPlan unsplit = decode_chunk_plan_auto(full.data(), 128, 8, 264, 16);
  CHECK(unsplit.chunk_pages == 256);
  CHECK(unsplit.work_items == 128);
  CHECK_FALSE(unsplit.split());
}
