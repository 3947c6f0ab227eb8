// sm_90 building blocks of the implicit-GEMM tiles (implicit_gemm.cuh) and the warp-specialised tiles
// (igemm_warp_specialized.cuh): TMA bulk copies completing on mbarriers, thread-block cluster barriers and
// reads of a peer CTA's shared memory, and the wgmma instructions with their shared-memory descriptors.
// On older targets the instructions that need sm_90 trap; the host never launches those kernels there.
#pragma once

#include <cstdint>

#include "backends/cuda/ptx.cuh"

namespace scn::cuda::igemm {

using ptx::smem_addr;

// ---- TMA bulk copies completing on an mbarrier (sm_90) ------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
#endif
}
__device__ __forceinline__ void mbar_fence_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::);
#endif
}
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::);
#endif
}
__device__ __forceinline__ void expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes));
#endif
}
__device__ __forceinline__ void tma_load_1d(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
#endif
}
/// Arrives on `bar` once every cp.async this thread issued so far has completed (the arrival counts
/// toward the barrier's expected count: .noinc).
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(phase)
      : "memory");
#endif
}

// ---- thread-block clusters (sm_90): barrier, rank, reads of a peer's shared memory -------------
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}
/// The 16 bytes at `p` (this CTA's shared memory, 16-byte aligned) in the shared memory of cluster CTA
/// `rank`, as four 32-bit words (float or int32 partial sums, bit for bit).
__device__ __forceinline__ uint4 peer_load4(const void* p, uint32_t rank) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t addr;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(addr) : "r"(smem_addr(p)), "r"(rank));
  asm volatile("ld.shared::cluster.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
#endif
  return v;
}
__device__ __forceinline__ float word_as(uint32_t w, float) { return __uint_as_float(w); }
__device__ __forceinline__ int word_as(uint32_t w, int) { return int(w); }

/// v[q] = the sum over the cluster's SPLIT CTAs, in rank order from zero, of element q of the eight
/// partial sums at `p` (the same offset in every CTA's shared memory): the split tiles' reduction.
template <int SPLIT, typename T>
__device__ __forceinline__ void peer_sum8(const T* p, T (&v)[8]) {
#pragma unroll
  for (int q = 0; q < 8; ++q) v[q] = T(0);
#pragma unroll
  for (int r = 0; r < SPLIT; ++r) {
    const uint4 lo = peer_load4(p, uint32_t(r)), hi = peer_load4(p + 4, uint32_t(r));
    v[0] += word_as(lo.x, T());
    v[1] += word_as(lo.y, T());
    v[2] += word_as(lo.z, T());
    v[3] += word_as(lo.w, T());
    v[4] += word_as(hi.x, T());
    v[5] += word_as(hi.y, T());
    v[6] += word_as(hi.z, T());
    v[7] += word_as(hi.w, T());
  }
}

// ---- wgmma (sm_90a only: igemm_fp16_wgmma*.cu and igemm_int8_wgmma.cu are compiled for that target alone)
// Operands are read from shared memory through matrix descriptors: K-major tiles of 16-bit units
// (fp16 channels, or pairs of int8 channels) in a swizzle as wide as the row: 64-unit (128-byte) rows
// in the 128-byte swizzle (16-byte chunk c of row r stored at chunk c ^ (r % 8), 8-row groups 1024
// bytes apart), 32-unit (64-byte) rows in the 64-byte swizzle (chunk c ^ ((r / 2) % 4), 8-row groups
// 512 bytes apart); every tile base 1024-byte aligned. wg_swizzle_chunk is that placement, shared by
// the gathers and the host's weight tiling (igemm_tile_weights).
template <int ROW_UNITS>
__device__ __forceinline__ uint64_t wg_desc(const void* p) {
  static_assert(ROW_UNITS == 64 || ROW_UNITS == 32, "wgmma rows of 128 or 64 bytes");
  constexpr uint64_t group_bytes = ROW_UNITS == 64 ? 1024 : 512;
  constexpr uint64_t layout = ROW_UNITS == 64 ? 1 : 2;  // descriptor swizzle mode: 1 = 128-byte, 2 = 64-byte
  const uint64_t addr = smem_addr(p);
  return ((addr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | ((group_bytes >> 4) << 32) | (layout << 62);
}
__device__ __forceinline__ void wg_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wg_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
/// Ties the accumulator registers to this point (the compiler must not move their uses across
/// the asynchronous wgmma and its wait).
template <int NT>
__device__ __forceinline__ void wg_fence_acc(float (&d)[NT][4]) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) asm volatile("" : "+f"(d[j][q])::"memory");
}
template <int NT>
__device__ __forceinline__ void wg_fence_acc(int (&d)[NT][4]) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) asm volatile("" : "+r"(d[j][q])::"memory");
}
/// D(64 x N, f32) += A(64 x 16, f16, K-major, smem) * B(N x 16, f16, K-major, smem)^T, one warpgroup.
/// (Two shapes, two instructions: their accumulator operand lists differ only in length.)
#define SCN_WG_ACC4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[8][4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : SCN_WG_ACC4(0), SCN_WG_ACC4(1), SCN_WG_ACC4(2), SCN_WG_ACC4(3), SCN_WG_ACC4(4), SCN_WG_ACC4(5), SCN_WG_ACC4(6),
        SCN_WG_ACC4(7)
      : "l"(da), "l"(db), "r"(1));
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[16][4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : SCN_WG_ACC4(0), SCN_WG_ACC4(1), SCN_WG_ACC4(2), SCN_WG_ACC4(3), SCN_WG_ACC4(4), SCN_WG_ACC4(5), SCN_WG_ACC4(6),
        SCN_WG_ACC4(7), SCN_WG_ACC4(8), SCN_WG_ACC4(9), SCN_WG_ACC4(10), SCN_WG_ACC4(11), SCN_WG_ACC4(12),
        SCN_WG_ACC4(13), SCN_WG_ACC4(14), SCN_WG_ACC4(15)
      : "l"(da), "l"(db), "r"(1));
#else
  __trap();
#endif
}
#undef SCN_WG_ACC4
/// D(64 x N, s32) += A(64 x 32, s8, K-major, smem) * B(N x 32, s8, K-major, smem)^T, one warpgroup:
/// 32 int8 channels are 32 bytes, the same bytes as the fp16 instructions' 16 channels, so the
/// descriptors advance alike; the accumulator fragments have the f32 instructions' layout.
#define SCN_WG_ACC4I(j) "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3])
__device__ __forceinline__ void wgmma_m64n64k32_s8(int (&d)[8][4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p;\n"
      "}\n"
      : SCN_WG_ACC4I(0), SCN_WG_ACC4I(1), SCN_WG_ACC4I(2), SCN_WG_ACC4I(3), SCN_WG_ACC4I(4), SCN_WG_ACC4I(5),
        SCN_WG_ACC4I(6), SCN_WG_ACC4I(7)
      : "l"(da), "l"(db), "r"(1));
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_m64n128k32_s8(int (&d)[16][4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p;\n"
      "}\n"
      : SCN_WG_ACC4I(0), SCN_WG_ACC4I(1), SCN_WG_ACC4I(2), SCN_WG_ACC4I(3), SCN_WG_ACC4I(4), SCN_WG_ACC4I(5),
        SCN_WG_ACC4I(6), SCN_WG_ACC4I(7), SCN_WG_ACC4I(8), SCN_WG_ACC4I(9), SCN_WG_ACC4I(10), SCN_WG_ACC4I(11),
        SCN_WG_ACC4I(12), SCN_WG_ACC4I(13), SCN_WG_ACC4I(14), SCN_WG_ACC4I(15)
      : "l"(da), "l"(db), "r"(1));
#else
  __trap();
#endif
}
#undef SCN_WG_ACC4I

}  // namespace scn::cuda::igemm
