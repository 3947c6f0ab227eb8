// Inline-PTX building blocks shared by the implicit-GEMM kernels (implicit_gemm.cuh) and the
// warp-independent osplit kernel (igemm_offset_split.cuh): shared-memory addresses, cp.async copies
// (plain, zero-filling or predicated on a gathered row, partial) and groups, values pinned in registers,
// ldmatrix, the fp16 and int8 tensor-core MMAs, named barriers, and the programmatic-launch controls.
#pragma once

#include <cstdint>

namespace scn::cuda::ptx {

// Programmatic dependent launch (sm_90). A conv launched with cudaLaunchAttributeProgrammaticStreamSerialization
// may become resident while the previous kernel of its stream finishes; it stages what that kernel
// does not write (row count, weights; its kernel map unless the map's writer may overlap it:
// ConvArgs::map_late) and then waits for it to complete before touching activations or writing anything. Both
// instructions are no-ops for a grid launched without the attribute.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/// Barrier of `threads` threads of the block (ids 1..15; 0 is __syncthreads): a team of warps, or one
/// warpgroup of a warp-specialised block.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
/// 16-byte asynchronous copy of a gathered row to a shared-memory address; a negative `row` (no
/// neighbour) writes zeros and reads nothing (the ignore-src predicate, set from the row's sign).
__device__ __forceinline__ void cp_async16_row(uint32_t dst, const void* src, int32_t row) {
  asm volatile(
      "{\n .reg .pred p;\n setp.lt.s32 p, %2, 0;\n cp.async.cg.shared.global [%0], [%1], 16, p;\n}\n" ::"r"(dst),
      "l"(src), "r"(row));
}
/// 16-byte asynchronous copy issued only where `row` is non-negative (a row with a neighbour); no copy,
/// and no write to `dst`, for the others.
__device__ __forceinline__ void cp_async16_if_row(uint32_t dst, const void* src, int32_t row) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ge.s32 p, %2, 0;\n @p cp.async.cg.shared.global [%0], [%1], 16;\n}\n" ::"r"(dst),
      "l"(src), "r"(row));
}
/// 16-byte asynchronous copy that reads the first `src_bytes` (0..16) of `src` and zero-fills the rest
/// (nothing is read when it is 0).
__device__ __forceinline__ void cp_async16_n(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
/// The value, opaque to the compiler: it stays in a register instead of being recomputed from its
/// operands at every use (lane-constant addresses of an unrolled loop).
__device__ __forceinline__ uint32_t pinned(uint32_t v) {
  asm volatile("" : "+r"(v));
  return v;
}
template <class T>
__device__ __forceinline__ const T* pinned(const T* p) {
  asm volatile("" : "+l"(p));
  return p;
}
/// a * b + c with the 64-bit product of two 32-bit operands (one IMAD.WIDE.U32).
__device__ __forceinline__ uint64_t mad_wide_u32(uint32_t a, uint32_t b, uint64_t c) {
  uint64_t d;
  asm("mad.wide.u32 %0, %1, %2, %3;\n" : "=l"(d) : "r"(a), "r"(b), "l"(c));
  return d;
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
/// Waits until at most N groups are pending. The block-wide kernels follow it with __syncthreads;
/// cp_async_wait_mem also keeps the compiler from moving shared-memory reads above it (warp-level
/// pipelines that follow it with __syncwarp only).
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void cp_async_wait_mem() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/// Four 8x8 b16 matrices from shared memory; `addr` is this lane's row address (smem_addr), so that the
/// kernels can keep lane-constant addresses in registers and add immediates to them.
__device__ __forceinline__ void ldmatrix_x4_at(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// Two 8x8 b16 matrices from shared memory; lanes 0-15 give the row addresses (smem_addr).
__device__ __forceinline__ void ldmatrix_x2_at(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
/// As ldmatrix_x2_at, from a shared-memory pointer.
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* p) { ldmatrix_x2_at(r, smem_addr(p)); }

/// fp16 tensor cores: D(16x8, f32) += A(16x16, f16, row) * B(16x8, f16, col).
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

/// int8 tensor cores: D(16x8, s32) += A(16x32, s8, row) * B(32x8, s8, col).
__device__ __forceinline__ void mma_16832_s8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

/// int8 tensor cores, K = 16: D(16x8, s32) += A(16x16, s8, row) * B(16x8, s8, col). Layers of at
/// most 16 channels (rows of 16 bytes) take this one instead of padding to 32 channels.
__device__ __forceinline__ void mma_16816_s8(int (&c)[4], const uint32_t (&a)[2], uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(b));
#else
  __trap();
#endif
}

}  // namespace scn::cuda::ptx
