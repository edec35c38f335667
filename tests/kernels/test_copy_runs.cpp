// copy_runs (kernels/kv_layout.h): the runs of consecutive blocks that the coalesced and batched
// DMA paths copy as one memcpy per plane, hand-listed.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "kernels/kv_layout.h"

using isim::kernels::BlockCopy;
using isim::kernels::copy_runs;
using isim::kernels::CopyRun;

TEST_CASE("copy runs: consecutive ids on both sides merge, any break starts a new run") {
  // src 4 5 6 | 9 | 10 11 (dst breaks between 9 and 10) ; dst 0 1 2 | 3 | 7 8
  const std::vector<int32_t> src = {4, 5, 6, 9, 10, 11};
  const std::vector<int32_t> dst = {0, 1, 2, 3, 7, 8};
  BlockCopy c{.src_ids = src.data(), .dst_ids = dst.data(), .count = 6, .planes = 2,
              .block_bytes = 64};
  const std::vector<CopyRun> want = {{.first = 0, .src_block = 4, .dst_block = 0, .blocks = 3},
                                     {.first = 3, .src_block = 9, .dst_block = 3, .blocks = 1},
                                     {.first = 4, .src_block = 10, .dst_block = 7, .blocks = 2}};
  CHECK(copy_runs(c) == want);
}

TEST_CASE("copy runs: a staging side (null ids) is the identity and never breaks a run") {
  const std::vector<int32_t> pool = {7, 8, 9, 3, 2};
  BlockCopy gather{.src_ids = pool.data(), .dst_ids = nullptr, .count = 5, .block_bytes = 16};
  // 7 8 9 -> staging 0 1 2 ; 3 -> 3 ; 2 -> 4 (descending ids do not merge)
  const std::vector<CopyRun> want = {{.first = 0, .src_block = 7, .dst_block = 0, .blocks = 3},
                                     {.first = 3, .src_block = 3, .dst_block = 3, .blocks = 1},
                                     {.first = 4, .src_block = 2, .dst_block = 4, .blocks = 1}};
  CHECK(copy_runs(gather) == want);
  BlockCopy both{.src_ids = nullptr, .dst_ids = nullptr, .count = 4, .block_bytes = 16};
  CHECK(copy_runs(both) ==
        std::vector<CopyRun>{{.first = 0, .src_block = 0, .dst_block = 0, .blocks = 4}});
  BlockCopy none{.count = 0};
  CHECK(copy_runs(none).empty());
}
