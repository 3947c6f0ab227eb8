// Microbenchmark of one step of a warp-specialised ring (the shape of igemm_warp_specialized.cuh's
// producer and consumers, without MMAs): 128 producer threads fill a ring slot of 128 rows x 128 bytes
// (16 KiB, a 128-row, 64-channel A stage), a consumer warpgroup waits on the slot's "full" mbarrier
// and releases it on "empty". The nanoseconds per step, by how the producer fills the slot:
//   handshake   no copies; every producer thread arrives
//   zfill       8 cp.async of 16 bytes per thread, all zero-fill (ignore-src), cp.async.mbarrier.arrive.noinc
//   real        8 cp.async of 16 bytes per thread from random 128-byte rows of a 10 MB buffer (in L2), eight
//               lanes per row as the ws producer copies; .noinc arrivals
//   mixed P%    rows present with probability P (real copies), zero-fill copies for the others
//   ldg+sts     8 LDG.128 + STS.128 per thread, then a plain arrive (the thread waits for its loads)
//   bulk        one 128-byte TMA bulk copy (cp.async.bulk) per thread, thread 0 expects the bytes
//   tensor P%   one 2-D TMA tensor copy of a 1-row box (64 fp16 channels, 128-byte swizzle) per thread;
//               rows absent with probability 1 - P are requested out of bounds (the TMA writes zeros)
//   tensor P%, zeros by STS (+fence)   present rows by tensor copy (each thread adds its bytes to the
//               slot's transaction count), absent rows by the thread's shared stores and a proxy fence
//               (what a wgmma reader needs; also without the fence, for its cost); every thread arrives
//   tensor P%, zeros by bulk copy      absent rows by a 128-byte bulk copy of one zero row in global memory
//   ... 2^30-row map / consecutive rows / hot rows   the same with the rows declared as 2^30 of them, with
//               the present rows consecutive source rows (a tile's neighbours at one offset), or drawn from a
//               pool of 2,048 rows every block reads (an input row is read by ~16 tiles of a conv)
//   + W KiB weights                    thread 0 also copies a weight slice of W bytes by one bulk copy per step
// with 1, 2 and 3 blocks per SM on every SM (medians of 7 launches of 2,000 steps, CUDA events); and
// first a check that a 1-row tensor box lands in the 128-byte swizzle of its destination address (chunk
// c of slot row r at c ^ (r % 8)) and that an out-of-bounds row arrives as zeros, counted in full.
// Usage: ring_step_bench   (exit 77 when no GPU of compute capability 9.0 is visible)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda {
namespace {

enum Fill {
  kHandshake,
  kZfill,
  kReal,
  kMixed,
  kLdgSts,
  kBulk,
  kTensor,
  kTensorSts,
  kTensorStsNoFence,
  kTensorBulkZero,
  kTensorStsSeq,
  kTensorStsHot
};

// with a weight slice per step (W > 0): thread 0 also copies W bytes of weights by one bulk copy into the
// step's weight slot and adds them to the slot's transaction count, as the ws producer does

constexpr int kProducers = 128, kChunks = 8, kStages = 3, kSteps = 2000;

// The ring's primitives are the kernels' own (implicit_gemm.cuh, ptx.cuh): the benchmark times the
// instructions the warp-specialised producer and consumers issue.
using igemm::cp_async_arrive_noinc;
using igemm::expect_tx;
using igemm::fence_proxy_async;
using igemm::mbar_arrive;
using igemm::mbar_fence_init;
using igemm::mbar_init;
using igemm::mbar_wait;
using igemm::tma_load_1d;
using ptx::cp_async16_row;
using ptx::smem_addr;

__device__ __forceinline__ void tensor_row(void* dst, const CUtensorMap* map, int row, uint64_t* b) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_addr(dst)),
      "l"(map), "r"(0), "r"(row), "r"(smem_addr(b))
      : "memory");
}

// One slot of 128 rows by tensor copies: row t from source row (7 t) % rows, every fifth row out of
// bounds. found[0]: chunks in the swizzled place, [1]: chunks in the unswizzled place, [2]: zero rows
// correct, [3]: 1 when the barrier completed.
__global__ void check_tensor_rows(const __grid_constant__ CUtensorMap map, const uint16_t* src, int rows, int* found) {
  extern __shared__ __align__(1024) uint8_t sm[];
  __shared__ uint64_t bar;
  uint8_t* slot = sm + ((1024u - (smem_addr(sm) & 1023u)) & 1023u);
  const int t = threadIdx.x;
  if (t == 0) {
    mbar_init(&bar, 1);
    mbar_fence_init();
  }
  __syncthreads();
  const int r = t % 5 == 0 ? -1 : (7 * t) % rows;
  if (t == 0) expect_tx(&bar, 128 * 128);
  __syncthreads();
  tensor_row(slot + t * 128, &map, r, &bar);
  uint32_t done = 0;
  for (long spin = 0; spin < 20000000L && !done; ++spin)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_addr(&bar))
                 : "memory");
  if (t == 0) found[3] = int(done);
  if (!done) return;
  const uint16_t* got = reinterpret_cast<const uint16_t*>(slot + t * 128);
  for (int c = 0; c < 8; ++c) {
    bool sw = true, plain = true, zero = true;
    for (int e = 0; e < 8; ++e) {
      const uint16_t want = r < 0 ? 0 : src[size_t(r) * 64 + c * 8 + e];
      sw = sw && got[((c ^ (t % 8)) * 8) + e] == want;
      plain = plain && got[c * 8 + e] == want;
      zero = zero && got[c * 8 + e] == 0;
    }
    if (r >= 0) {
      atomicAdd(&found[0], int(sw));
      atomicAdd(&found[1], int(plain));
    } else {
      atomicAdd(&found[2], int(zero));
    }
  }
}

// 128 zero bytes in global memory: the source of kTensorBulkZero's absent rows
__device__ uint4 zero_row[8];

__device__ __forceinline__ void expect_tx_only(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

template <Fill F, int PRESENT, int W = 0>
__global__ void __launch_bounds__(kProducers + 128)
    ring(const uint4* __restrict__ src, unsigned rows, unsigned long long* sink,
         const __grid_constant__ CUtensorMap map) {
  __shared__ uint64_t full[kStages], empty[kStages];
  extern __shared__ __align__(1024) uint8_t raw[];  // [kStages][kProducers * kChunks] 16-byte units
  uint4* slots = reinterpret_cast<uint4*>(raw + ((1024u - (smem_addr(raw) & 1023u)) & 1023u));
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], F == kBulk || F == kTensor || F == kTensorBulkZero ? 1 : kProducers + (W > 0 && F == kMixed));
      mbar_init(&empty[s], 4);  // lane 0 of every consumer warp
    }
    mbar_fence_init();
  }
  __syncthreads();
  uint32_t slot = 0, phase = 0;
  if (tid < kProducers) {
    uint32_t h = (blockIdx.x * 977u + tid * 131u) | 1u;
    bool wrapped = false;
    for (int i = 0; i < kSteps; ++i) {
      if (wrapped) mbar_wait(&empty[slot], phase ^ 1u);
      uint4* dst = slots + slot * kProducers * kChunks + tid * kChunks;
      if (W > 0 && tid == 0) {
        uint8_t* wslot = reinterpret_cast<uint8_t*>(slots + kStages * kProducers * kChunks) + slot * W;
        if (F == kMixed)
          expect_tx(&full[slot], W);  // (kMixed: the weights' arrival is thread 0's only one)
        else
          expect_tx_only(&full[slot], W);
        tma_load_1d(wslot, src + (i % 64) * (W / 16), W, &full[slot]);
      }
      if (F == kTensorSts || F == kTensorStsNoFence || F == kTensorStsSeq || F == kTensorStsHot) {
        // present rows: the thread adds its bytes and copies by TMA (Seq: consecutive source rows, as a tile's
        // neighbours at one offset are runs of consecutive input rows, the block's window moving every step);
        // absent rows: zeros by shared stores (and a proxy fence, as a wgmma reader needs); every thread arrives
        h = h * 1664525u + 1013904223u;
        const bool present = (h >> 16) % 100u < unsigned(PRESENT);
        if (present) {
          // Hot: from a pool of 2,048 rows read by every block (each input row is read by ~16 tiles in a conv)
          const unsigned row = F == kTensorStsSeq   ? blockIdx.x * 4096u + unsigned(i) * 128u + unsigned(tid)
                               : F == kTensorStsHot ? h % 2048u
                                                    : h;
          expect_tx_only(&full[slot], kChunks * 16);
          tensor_row(dst, &map, int(row % (rows / 8)), &full[slot]);
        } else {
#pragma unroll
          for (int c = 0; c < kChunks; ++c) dst[c] = make_uint4(0u, 0u, 0u, 0u);
          if (F != kTensorStsNoFence) fence_proxy_async();
        }
        mbar_arrive(&full[slot]);
      } else if (F == kTensorBulkZero) {
        // present rows by tensor TMA, absent rows by a 128-byte bulk copy of a zero row: every row by the TMA
        // unit, one expect_tx of the slot's bytes
        if (tid == 0) expect_tx(&full[slot], kProducers * kChunks * 16);
        h = h * 1664525u + 1013904223u;
        const bool present = (h >> 16) % 100u < unsigned(PRESENT);
        if (present)
          tensor_row(dst, &map, int(h % (rows / 8)), &full[slot]);
        else
          tma_load_1d(dst, zero_row, kChunks * 16, &full[slot]);
      } else if (F == kTensor) {
        if (tid == 0) expect_tx(&full[slot], kProducers * kChunks * 16);
        h = h * 1664525u + 1013904223u;
        const bool present = (h >> 16) % 100u < unsigned(PRESENT);
        tensor_row(dst, &map, present ? int(h % (rows / 8)) : -1, &full[slot]);
      } else if (F == kBulk) {
        if (tid == 0) expect_tx(&full[slot], kProducers * kChunks * 16);
        h = h * 1664525u + 1013904223u;
        tma_load_1d(dst, src + (h % (rows / 8)) * 8, kChunks * 16, &full[slot]);
      } else if (F == kLdgSts) {
        uint4 v[kChunks];
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          h = h * 1664525u + 1013904223u;
          const unsigned r = __shfl_sync(0xffffffffu, h, tid & 24) % (rows / 8);  // one row per 8 lanes
          v[c] = __ldcg(src + r * 8 + (tid & 7));
        }
#pragma unroll
        for (int c = 0; c < kChunks; ++c) dst[c] = v[c];
        mbar_arrive(&full[slot]);
      } else if (F != kHandshake) {
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          h = h * 1664525u + 1013904223u;
          const unsigned hr = __shfl_sync(0xffffffffu, h, tid & 24);
          const bool present = F == kReal || (F == kMixed && (hr >> 16) % 100u < unsigned(PRESENT));
          cp_async16_row(smem_addr(dst + c), src + (present ? (hr % (rows / 8)) * 8 : 0) + (tid & 7), present ? 0 : -1);
        }
        cp_async_arrive_noinc(&full[slot]);
      } else {
        mbar_arrive(&full[slot]);
      }
      if (++slot == kStages) {
        slot = 0;
        phase ^= 1u;
        wrapped = true;
      }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
  } else {
    unsigned long long acc = 0;
    for (int i = 0; i < kSteps; ++i) {
      mbar_wait(&full[slot], phase);
      acc += slots[slot * kProducers * kChunks + (tid - kProducers)].x;
      __syncwarp();
      if ((tid & 31) == 0) mbar_arrive(&empty[slot]);
      if (++slot == kStages) {
        slot = 0;
        phase ^= 1u;
      }
    }
    if (acc == 0x12345ull) *sink = acc;  // keeps the consumer's reads
  }
}

template <Fill F, int PRESENT = 100, int W = 0>
void run(const char* name, const uint4* src, unsigned rows, unsigned long long* sink, int sms, const CUtensorMap& map) {
  const int smem = kStages * (kProducers * kChunks * 16 + W) + 1024;
  cudaFuncSetAttribute(ring<F, PRESENT, W>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  std::printf("%-34s", name);
  for (int per_sm = 1; per_sm <= 3; ++per_sm) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> ms;
    for (int r = 0; r < 7; ++r) {
      cudaEventRecord(a);
      ring<F, PRESENT, W><<<sms * per_sm, kProducers + 128, smem>>>(src, rows, sink, map);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float t = 0.f;
      cudaEventElapsedTime(&t, a, b);
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("  %8.1f", double(ms[3]) * 1e6 / kSteps);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  const cudaError_t e = cudaGetLastError();
  std::printf("%s\n", e == cudaSuccess ? "" : cudaGetErrorString(e));
}

}  // namespace
}  // namespace scn::cuda

int main() {
  using namespace scn::cuda;
  int dev = 0, major = 0, sms = 0;
  const bool ok = cudaGetDevice(&dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major == 9;
  if (!ok) {
    std::printf("SKIP: ring_step_bench needs a GPU of compute capability 9.0\n");
    return 77;
  }
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, dev);
  const unsigned rows = 640000;  // 16-byte units: 10 MB, resident in L2
  uint4* src = nullptr;
  unsigned long long* sink = nullptr;
  cudaMalloc(&src, size_t(rows) * 16);
  cudaMemset(src, 1, size_t(rows) * 16);
  cudaMalloc(&sink, 8);
  // the source as a 2-D tensor of fp16: 64 channels (128 bytes) per row, boxes of one row
  CUtensorMap map{}, huge_map{};  // huge_map: the same rows declared as 2^30 of them
  bool tensor_ok = false;
  {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      std::printf("cuTensorMapEncodeTiled is not available\n");
      return 1;
    }
    const cuuint64_t dims[2] = {64, rows / 8}, strides[1] = {128};
    const cuuint32_t box[2] = {64, 1}, estr[2] = {1, 1};
    const CUresult r = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, src, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      std::printf("cuTensorMapEncodeTiled failed (%d)\n", int(r));
      return 1;
    }
    {
      const cuuint64_t hdims[2] = {64, cuuint64_t(1) << 30};
      const CUresult rh = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)(
          &huge_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, src, hdims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (rh != CUDA_SUCCESS) std::printf("cuTensorMapEncodeTiled (2^30 rows) failed (%d)\n", int(rh));
    }
    std::vector<uint16_t> host(size_t(rows) * 8);
    for (size_t i = 0; i < host.size(); ++i) host[i] = uint16_t(i * 2654435761u >> 7);
    cudaMemcpy(src, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
    int* found = nullptr;
    cudaMalloc(&found, 16);
    cudaMemset(found, 0, 16);
    check_tensor_rows<<<1, 128, 128 * 128 + 1024>>>(map, reinterpret_cast<const uint16_t*>(src), int(rows / 8), found);
    int f[4] = {0, 0, 0, 0};
    cudaMemcpy(f, found, 16, cudaMemcpyDeviceToHost);
    std::printf(
        "1-row tensor boxes: barrier %s; of %d present chunks %d in the swizzled place, %d unswizzled; "
        "%d of %d out-of-bounds chunks zero (%s)\n",
        f[3] ? "completed" : "TIMED OUT", (128 - 26) * 8, f[0], f[1], f[2], 26 * 8,
        cudaGetErrorString(cudaGetLastError()));
    cudaFree(found);
    tensor_ok = f[3] != 0;
  }
  std::printf("%s, %d SMs: ns per ring step (16 KiB per slot, %d stages), every SM running 1 / 2 / 3 blocks\n", p.name,
              sms, kStages);
  run<kHandshake>("handshake (no copies)", src, rows, sink, sms, map);
  run<kZfill>("zfill cp.async x8 / thread", src, rows, sink, sms, map);
  run<kReal>("real cp.async x8 / thread", src, rows, sink, sms, map);
  run<kMixed, 27>("mixed 27% present", src, rows, sink, sms, map);
  run<kMixed, 60>("mixed 60% present", src, rows, sink, sms, map);
  run<kLdgSts>("LDG.128 + STS.128 x8 / thread", src, rows, sink, sms, map);
  run<kBulk>("TMA bulk 128 B / thread", src, rows, sink, sms, map);
  if (tensor_ok) {  // (a barrier that never completes would hang the ring)
    run<kTensor, 60>("TMA tensor 1-row box, 60% present", src, rows, sink, sms, map);
    run<kTensor, 100>("TMA tensor 1-row box, all present", src, rows, sink, sms, map);
    run<kTensorSts, 60>("TMA tensor 60%, zeros by STS+fence", src, rows, sink, sms, map);
    run<kTensorStsNoFence, 60>("TMA tensor 60%, zeros by STS only", src, rows, sink, sms, map);
    run<kTensorBulkZero, 60>("TMA tensor 60%, zeros by bulk copy", src, rows, sink, sms, map);
    run<kTensorBulkZero, 27>("TMA tensor 27%, zeros by bulk copy", src, rows, sink, sms, map);
    run<kTensorSts, 60>("TMA tensor 60%, STS, 2^30-row map", src, rows, sink, sms, huge_map);
    run<kTensorStsSeq, 60>("TMA tensor 60% consecutive rows, STS", src, rows, sink, sms, map);
    run<kTensorStsSeq, 100>("TMA tensor all consecutive rows", src, rows, sink, sms, map);
    run<kTensorStsHot, 60>("TMA tensor 60% from 2,048 hot rows", src, rows, sink, sms, map);
    run<kTensor, 100>("TMA tensor all present, 2^30-row map", src, rows, sink, sms, huge_map);
    run<kMixed, 60, 8192>("mixed 60% + 8 KiB weights", src, rows, sink, sms, map);
    run<kTensorSts, 60, 8192>("TMA tensor 60%, STS zeros + 8 KiB w", src, rows, sink, sms, map);
    run<kMixed, 60, 16384>("mixed 60% + 16 KiB weights", src, rows, sink, sms, map);
    run<kTensorSts, 60, 16384>("TMA tensor 60%, STS zeros + 16 KiB w", src, rows, sink, sms, map);
  }
  cudaFree(src);
  cudaFree(sink);
  return 0;
}
