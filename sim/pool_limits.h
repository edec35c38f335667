// The most blocks one KV block pool (GPU or CPU) may hold.
//
// Contract: a pool keeps about 40 bytes of bookkeeping per block (10 GiB at this limit) and
// indexes its blocks with int32. engine.gpu_blocks and engine.cpu_blocks are checked against
// it where the spec is read, and the counts derived from memory (the GPU rule, swap_space_gib)
// where they are computed (capacity.cpp), each an InputError naming the key, so that no pool
// is ever asked for more.
#pragma once

#include <cstdint>

namespace isim::sim {

inline constexpr int64_t kMaxPoolBlocks = int64_t{1} << 28;  // 268,435,456

}  // namespace isim::sim
