// Warp-level tensor-core and async-copy primitives of the attention kernels, decode and prefill
// (sm_80 and later):
// cp.async 16-byte copies into shared memory, ldmatrix, and mma.sync m16n8k16 with 16-bit
// inputs and float accumulators.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"); g = lane / 4, t = lane % 4:
//   A (16 x 16, row major), 4 registers of two elements: a0 row g, cols 2t..2t+1; a1 row g + 8,
//     same cols; a2 row g, cols 8 + 2t..; a3 row g + 8, cols 8 + 2t..
//   B (16 x 8, "col"), 2 registers: b0 rows (k) 2t..2t+1 of col (n) g; b1 rows 8 + 2t.., col g.
//   C/D (16 x 8, float): c0, c1 row g, cols 2t, 2t + 1; c2, c3 row g + 8, same cols.
// The C layout of two adjacent n-tiles is the A layout of one 16-wide k slice, which is how the
// softmax weights P feed the second product without leaving registers. The lower 16 bits of a
// register hold the element with the smaller column (or k) index.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace isim::kernels::cuda {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes global -> shared without passing through registers; a dead copy reads
// nothing and writes zeros, so padding keys and rows are finite.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool live) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(live ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Four 8x8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8,
// and receives in r[i] row l / 4, cols 2 (l % 4) .. + 1 of matrix i.
__device__ __forceinline__ void ldmatrix_x4(const void* row, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(row))
               : "memory");
}

// As ldmatrix_x4 but transposed: r[i] holds rows 2 (l % 4) .. + 1 of col l / 4 of matrix i.
__device__ __forceinline__ void ldmatrix_x4_trans(const void* row, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(row))
               : "memory");
}

// c += a * b for one 16x8x16 tile.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4],
                                                         uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const uint32_t (&a)[4],
                                                  uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace isim::kernels::cuda
