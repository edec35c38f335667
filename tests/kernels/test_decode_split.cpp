// decode_split_count (kernels/decode_split.h): the split count decode attention uses, from the
// CTAs that fit on the device at once, hand-computed.
#include <doctest/doctest.h>

#include "kernels/decode_split.h"

using isim::kernels::decode_split_count;

TEST_CASE("decode splits: enough CTAs to fill the resident slots, no split under 256 tokens") {
  // H200: 132 SMs x 2 resident CTAs = 264. Batch 8 x 8 kv heads x 1 head tile = 64 items:
  // ceil(264 / 64) = 5 splits; a 4,096-token context allows ceil(4096 / 256) = 16, so 5.
  CHECK(decode_split_count(64, 4096, 264) == 5);
  // The same with 4 resident CTAs per SM (528): ceil(528 / 64) = 9.
  CHECK(decode_split_count(64, 4096, 528) == 9);
  // A 1,000-token context allows ceil(1000 / 256) = 4 splits, fewer than the 5 wanted.
  CHECK(decode_split_count(64, 1000, 264) == 4);
  // Batch 1 x 8 kv heads = 8 items, 32K context: ceil(264 / 8) = 33 (128 allowed).
  CHECK(decode_split_count(8, 32768, 264) == 33);
  // 1 item on 1,056 slots wants 1,056 splits; 65,536 tokens allow 256; capped at 64.
  CHECK(decode_split_count(1, 65536, 1056) == 64);
}

TEST_CASE("decode splits: 1 when the batch fills the device or the context is short") {
  CHECK(decode_split_count(264, 32768, 264) == 1);  // items == resident
  CHECK(decode_split_count(1024, 32768, 264) == 1);
  CHECK(decode_split_count(8, 256, 264) == 1);      // 256 tokens: not worth a split
  CHECK(decode_split_count(8, 257, 264) == 2);      // ceil(257 / 256) = 2 allowed
  CHECK(decode_split_count(0, 4096, 264) == 1);
  CHECK(decode_split_count(8, 4096, 0) == 1);
}
