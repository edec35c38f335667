// Paged KV layout and page table, shared by the CPU reference and the CUDA kernels.
//
// Pool (one layer, K and V separately). An array of `num_blocks` blocks; a block holds
// `block_tokens` token slots of every kv head:
//
//     k[block][kv_head][slot][dim]        element offset
//     ((block * num_kv_heads + kv_head) * block_tokens + slot) * head_dim + dim
//
// so one (block, kv_head) tile is block_tokens x head_dim contiguous elements ("HND" in
// FlashInfer's terms) and block b starts at b * block_elems(). A whole KV pool of L layers is
// 2L such planes, plane p = 2 * layer + (0 for K, 1 for V), plane p at p * num_blocks *
// block_elems(): [layer][K|V][block][kv_head][slot][dim]. Block copies move one block id in
// every plane (see BlockCopy).
//
// Page table, FlashInfer style, for `batch` sequences (int32, on the host for the CPU
// reference, on the device for CUDA):
//
//     indptr[batch + 1]       sequence s owns indices[indptr[s] .. indptr[s+1]), >= 1 block
//     indices[indptr[batch]]  block ids in token order; any ids, any order, non-contiguous
//     last_page_len[batch]    slots used in the sequence's last block, 1 .. block_tokens
//
//     kv_len(s) = (indptr[s+1] - indptr[s] - 1) * block_tokens + last_page_len[s]
//     token i of s lives in slot i % block_tokens of block indices[indptr[s] + i / block_tokens]
//
// Queries and outputs are dense: q[token][num_q_heads][head_dim], out likewise, lse[token]
// [num_q_heads] (natural log of the softmax denominator, float). Decode has one query token per
// sequence; multi-token ("prefill") attention has ragged chunks given by qo_indptr[batch + 1].
// GQA: num_q_heads is a multiple of num_kv_heads and q head h reads kv head h / group_size().
//
// Causal rule for multi-token attention: a chunk's own K/V are already in the cache (append them
// first; see append_kv), as the last q_len of its kv_len positions. Query i of the chunk
// (0-based) attends to kv positions [0, kv_len - q_len + i]. Decode is the case q_len = 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define ISIM_HD __host__ __device__
#else
#define ISIM_HD
#endif

namespace isim::kernels {

struct AttentionShape {
  int32_t num_q_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t block_tokens = 0;

  ISIM_HD int32_t group_size() const { return num_q_heads / num_kv_heads; }
  // Elements of one block in one plane (K or V of one layer).
  ISIM_HD int64_t block_elems() const { return int64_t{num_kv_heads} * block_tokens * head_dim; }
  // Offset of (block, kv_head, slot, dim 0) in a plane.
  ISIM_HD int64_t offset(int64_t block, int32_t kv_head, int32_t slot) const {
    return ((block * num_kv_heads + kv_head) * block_tokens + slot) * int64_t{head_dim};
  }
};

struct PageTable {
  const int32_t* indptr = nullptr;
  const int32_t* indices = nullptr;
  const int32_t* last_page_len = nullptr;
  int32_t batch = 0;

  // Valid only where the pointers are readable (host for the CPU code, device in kernels).
  ISIM_HD int64_t kv_len(int32_t s, int32_t block_tokens) const {
    return int64_t{indptr[s + 1] - indptr[s] - 1} * block_tokens + last_page_len[s];
  }
  ISIM_HD int32_t block_of(int32_t s, int64_t token, int32_t block_tokens) const {
    return indices[indptr[s] + token / block_tokens];
  }
};

// Checks a host-resident page table against the shape and the pool size. Returns "" when it
// is valid, otherwise a message naming the first bad field ("last_page_len[3] = 0: must be in
// 1..16"). Every CPU entry point calls it; CUDA callers may call it on their host copy.
std::string check_page_table(const AttentionShape& shape, const PageTable& table,
                             int64_t num_blocks);
// Checks shape fields (positive, GQA multiple). Returns "" or a message.
std::string check_shape(const AttentionShape& shape);

// One copy job: for every listed block i in [0, count) and every plane p in [0, planes),
// block_bytes bytes move from
//     src + p * src_plane_stride + src_ids[i] * block_bytes
// to  dst + p * dst_plane_stride + dst_ids[i] * block_bytes.
// A null id array means the identity (block i), i.e. a contiguous staging buffer laid out
// [plane][i]. Source and destination ranges must not overlap. Strides are in bytes.
struct BlockCopy {
  const void* src = nullptr;
  int64_t src_plane_stride = 0;
  const int32_t* src_ids = nullptr;
  void* dst = nullptr;
  int64_t dst_plane_stride = 0;
  const int32_t* dst_ids = nullptr;
  int64_t count = 0;
  int64_t planes = 1;
  int64_t block_bytes = 0;

  int64_t bytes() const { return count * planes * block_bytes; }
  int64_t segments() const { return count * planes; }
};

// A pool as the copy layer sees it: `planes` planes of `num_blocks` blocks of `block_bytes`.
struct BlockPool {
  void* base = nullptr;
  int64_t planes = 1;
  int64_t num_blocks = 0;
  int64_t block_bytes = 0;

  int64_t plane_stride() const { return num_blocks * block_bytes; }
  int64_t bytes() const { return planes * plane_stride(); }
};

// Scattered pool blocks -> contiguous staging ([plane][i], count * planes * block_bytes bytes).
inline BlockCopy gather_blocks(const BlockPool& pool, const int32_t* ids, int64_t count,
                               void* staging) {
  return BlockCopy{.src = pool.base,
                   .src_plane_stride = pool.plane_stride(),
                   .src_ids = ids,
                   .dst = staging,
                   .dst_plane_stride = count * pool.block_bytes,
                   .dst_ids = nullptr,
                   .count = count,
                   .planes = pool.planes,
                   .block_bytes = pool.block_bytes};
}

// Contiguous staging -> scattered pool blocks (the inverse of gather_blocks).
inline BlockCopy scatter_blocks(const void* staging, int64_t count, const BlockPool& pool,
                                const int32_t* ids) {
  return BlockCopy{.src = staging,
                   .src_plane_stride = count * pool.block_bytes,
                   .src_ids = nullptr,
                   .dst = pool.base,
                   .dst_plane_stride = pool.plane_stride(),
                   .dst_ids = ids,
                   .count = count,
                   .planes = pool.planes,
                   .block_bytes = pool.block_bytes};
}

// Pool to pool, block src_ids[i] -> dst_ids[i]; both pools have the same planes and block_bytes.
inline BlockCopy pool_to_pool(const BlockPool& src, const int32_t* src_ids, const BlockPool& dst,
                              const int32_t* dst_ids, int64_t count) {
  return BlockCopy{.src = src.base,
                   .src_plane_stride = src.plane_stride(),
                   .src_ids = src_ids,
                   .dst = dst.base,
                   .dst_plane_stride = dst.plane_stride(),
                   .dst_ids = dst_ids,
                   .count = count,
                   .planes = src.planes,
                   .block_bytes = src.block_bytes};
}

// A run of a BlockCopy: `blocks` consecutive listed blocks first .. first + blocks - 1 whose
// source ids and destination ids both step by one, so that in every plane they move as one
// contiguous copy of blocks * block_bytes bytes from src_block to dst_block.
struct CopyRun {
  int64_t first = 0;
  int64_t src_block = 0;
  int64_t dst_block = 0;
  int64_t blocks = 0;
  bool operator==(const CopyRun&) const = default;
};

// The maximal runs of `copy`, in list order (a null id array is the identity, so a staging
// side never breaks a run). The coalesced and batched DMA paths issue one copy per run and plane.
std::vector<CopyRun> copy_runs(const BlockCopy& copy);

}  // namespace isim::kernels
