// Output-stationary implicit GEMM for sparse convolution on tensor cores (mma.sync m16n8k16,
// fp16 operands, fp32 accumulation; sm_80 and newer).
//
//   for each tile of BM output rows (persistent loop) and BN output channels (grid.y):
//     map   = out_in[rows, 0:K]                    -> shared memory (coalesced, BM*K contiguous ints)
//     mask  = OR over rows of (map[row, k] >= 0)   -> offsets no row of the tile needs are skipped
//     acc   = 0
//     for each active offset k, for each BK chunk c of the input channels:   (cp.async pipeline)
//       A[r, :] = x[map[r, k], c : c + BK]   (zero-filled when map[r, k] < 0)
//       B[n, :] = W[k, n0 + n, c : c + BK]
//       acc += A * B^T                       (ldmatrix + mma.sync)
//     y[rows, n0 : n0 + BN] = epilogue(acc)  (bias, activation, residual add, ReLU, fp16)
//
// Every output element is produced by one thread with a fixed summation order (offsets
// ascending, channels ascending), so results are deterministic and independent of the tile
// shape and of which offsets a tile skips.
#include "backends/cuda/common.cuh"

#include <mutex>

namespace scn::cuda {

namespace {

constexpr int kStages = 3;
constexpr int kMaxMapK = 32;  // kernels with K <= 32 stage the map in shared memory and skip offsets

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

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

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N>
struct Tile {
  static constexpr int kThreads = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M;
  static constexpr int WN = BN / WARPS_N;
  static constexpr int MT = WM / 16;  // mma tiles per warp along M
  static constexpr int NT = WN / 8;   // along N
  static constexpr int LDS = BK + 8;  // padded smem row (halves): conflict-free ldmatrix
  static constexpr int A_STAGE = BM * LDS;
  static constexpr int B_STAGE = BN * LDS;
  static constexpr size_t kSmem =
      size_t(kStages) * (A_STAGE + B_STAGE) * sizeof(__half) + size_t(BM) * kMaxMapK * sizeof(int32_t) +
      (kMaxMapK + 4) * sizeof(int32_t);
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16x16");
  static_assert(BK % 16 == 0, "BK must be a multiple of 16");
};

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
    igemm_kernel(const ConvArgs a) {
  using T = Tile<BM, BN, BK, WARPS_M, WARPS_N>;
  extern __shared__ __align__(16) uint8_t smem[];
  __half* sA = reinterpret_cast<__half*>(smem);
  __half* sB = sA + kStages * T::A_STAGE;
  int32_t* sMap = reinterpret_cast<int32_t*>(sB + kStages * T::B_STAGE);
  int32_t* sOff = sMap + BM * kMaxMapK;
  uint32_t* sMask = reinterpret_cast<uint32_t*>(sOff + kMaxMapK);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t ntiles = (n + BM - 1) / BM;
  const int n0 = blockIdx.y * BN;
  const int K = a.K;
  const bool map_smem = K <= kMaxMapK;
  const int chunks = a.cin_p / BK;
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  const __half* __restrict__ w = static_cast<const __half*>(a.w);

  for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    const int64_t m0 = tile * BM;
    __syncthreads();  // the previous tile is done with shared memory
    int nact = K;
    if (map_smem) {
      if (tid == 0) *sMask = 0u;
      __syncthreads();
      uint32_t mine = 0;
      const int64_t base = m0 * K;
      const int64_t limit = n * K;
      for (int i = tid; i < BM * K; i += T::kThreads) {
        const int32_t v = base + i < limit ? __ldg(a.out_in + base + i) : -1;
        sMap[i] = v;
        if (v >= 0) mine |= 1u << (i % K);
      }
      mine = __reduce_or_sync(0xffffffffu, mine);
      if (lane == 0 && mine) atomicOr(sMask, mine);
      __syncthreads();
      const uint32_t mask = *sMask;
      nact = __popc(mask);
      if (warp == 0) {
        if ((mask >> lane) & 1u) sOff[__popc(mask & ((1u << lane) - 1u))] = lane;
      }
      __syncthreads();
    }
    const int nsteps = nact * chunks;

    auto load_stage = [&](int slot, int step) {
      const int kk = step / chunks;
      const int c0 = (step - kk * chunks) * BK;
      const int k = map_smem ? sOff[kk] : kk;
      __half* dA = sA + slot * T::A_STAGE;
      __half* dB = sB + slot * T::B_STAGE;
      constexpr int CPR = BK / 8;  // 16-byte chunks per row
#pragma unroll
      for (int i = tid; i < BM * CPR; i += T::kThreads) {
        const int r = i / CPR, cc = i % CPR;
        int32_t src_row;
        if (map_smem) {
          src_row = sMap[r * K + k];
        } else {
          src_row = m0 + r < n ? __ldg(a.out_in + (m0 + r) * K + k) : -1;
        }
        const __half* src = src_row >= 0 ? x + int64_t(src_row) * a.cin_p + c0 + cc * 8 : x;
        cp_async16(dA + r * T::LDS + cc * 8, src, src_row >= 0);
      }
#pragma unroll
      for (int i = tid; i < BN * CPR; i += T::kThreads) {
        const int r = i / CPR, cc = i % CPR;
        const __half* src = w + (int64_t(k) * a.cout_w + n0 + r) * a.cin_p + c0 + cc * 8;
        cp_async16(dB + r * T::LDS + cc * 8, src, true);
      }
    };

    float acc[T::MT][T::NT][4];
#pragma unroll
    for (int i = 0; i < T::MT; ++i)
#pragma unroll
      for (int j = 0; j < T::NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;

#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < nsteps) load_stage(s, s);
      cp_async_commit();
    }

    for (int step = 0; step < nsteps; ++step) {
      cp_async_wait<kStages - 2>();
      __syncthreads();
      const int nxt = step + kStages - 1;
      if (nxt < nsteps) load_stage(nxt % kStages, nxt);
      cp_async_commit();

      const __half* tA = sA + (step % kStages) * T::A_STAGE;
      const __half* tB = sB + (step % kStages) * T::B_STAGE;
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        uint32_t af[T::MT][4];
        uint32_t bf[T::NT][2];
#pragma unroll
        for (int i = 0; i < T::MT; ++i) {
          const int row = wm * T::WM + i * 16 + (lane & 15);
          const int col = kk * 16 + (lane >> 4) * 8;
          ldmatrix_x4(af[i], tA + row * T::LDS + col);
        }
#pragma unroll
        for (int j = 0; j < T::NT / 2; ++j) {
          const int row = wn * T::WN + j * 16 + (lane & 7) + (lane >> 4) * 8;
          const int col = kk * 16 + ((lane >> 3) & 1) * 8;
          uint32_t r[4];
          ldmatrix_x4(r, tB + row * T::LDS + col);
          bf[2 * j][0] = r[0];
          bf[2 * j][1] = r[1];
          bf[2 * j + 1][0] = r[2];
          bf[2 * j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < T::MT; ++i)
#pragma unroll
          for (int j = 0; j < T::NT; ++j) mma_16816(acc[i][j], af[i], bf[j][0], bf[j][1]);
      }
    }
    cp_async_wait<0>();

    // Epilogue: c0,c1 -> (row g, cols 2t, 2t+1); c2,c3 -> (row g + 8, same cols).
    const __half* __restrict__ res = static_cast<const __half*>(a.residual);
    __half* y = static_cast<__half*>(a.y);
#pragma unroll
    for (int i = 0; i < T::MT; ++i) {
#pragma unroll
      for (int j = 0; j < T::NT; ++j) {
        const int col = n0 + wn * T::WN + j * 8 + (lane & 3) * 2;
        if (col >= a.cout_p) continue;
        const float b0 = a.bias[col], b1 = a.bias[col + 1];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t row = m0 + wm * T::WM + i * 16 + (lane >> 2) + h * 8;
          if (row >= n) continue;
          float r0 = 0.f, r1 = 0.f;
          if (res) {
            const __half2 rv = *reinterpret_cast<const __half2*>(res + row * a.cout_p + col);
            r0 = __low2float(rv);
            r1 = __high2float(rv);
          }
          const float v0 = col < a.cout
                               ? epilogue_value(acc[i][j][2 * h], b0, a.act, a.alpha, res != nullptr, r0, a.relu_after)
                               : 0.f;
          const float v1 = col + 1 < a.cout ? epilogue_value(acc[i][j][2 * h + 1], b1, a.act, a.alpha,
                                                             res != nullptr, r1, a.relu_after)
                                            : 0.f;
          *reinterpret_cast<__half2*>(y + row * a.cout_p + col) = __floats2half2_rn(v0, v1);
        }
      }
    }
  }
}

struct Instance {
  IgemmConfig cfg;
  void (*kernel)(const ConvArgs);
  size_t smem;
  int threads;
  int blocks_per_sm;
};

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N>
Instance make_instance(const char* name) {
  using T = Tile<BM, BN, BK, WARPS_M, WARPS_N>;
  return Instance{{BM, BN, BK, WARPS_M, WARPS_N, name}, &igemm_kernel<BM, BN, BK, WARPS_M, WARPS_N>, T::kSmem,
                  T::kThreads, 1};
}

std::vector<Instance>& instances() {
  static std::vector<Instance> v = {
      make_instance<128, 16, 16, 4, 1>("igemm m128n16k16"),
      make_instance<128, 32, 16, 4, 1>("igemm m128n32k16"),
      make_instance<128, 32, 32, 4, 1>("igemm m128n32k32"),
      make_instance<64, 32, 32, 2, 1>("igemm m64n32k32"),
      make_instance<64, 64, 16, 2, 2>("igemm m64n64k16"),
      make_instance<64, 64, 32, 2, 2>("igemm m64n64k32"),
      make_instance<128, 64, 32, 2, 2>("igemm m128n64k32"),
      make_instance<32, 64, 32, 1, 2>("igemm m32n64k32"),
      make_instance<64, 128, 16, 2, 2>("igemm m64n128k16"),
      make_instance<64, 128, 32, 2, 2>("igemm m64n128k32"),
      make_instance<32, 128, 32, 1, 4>("igemm m32n128k32"),
      make_instance<128, 128, 32, 2, 4>("igemm m128n128k32"),
      make_instance<64, 128, 64, 2, 2>("igemm m64n128k64"),
      make_instance<128, 16, 32, 4, 1>("igemm m128n16k32"),
      make_instance<64, 16, 16, 2, 1>("igemm m64n16k16"),
  };
  return v;
}

}  // namespace

int igemm_num_configs() { return int(instances().size()); }

const IgemmConfig& igemm_config(int id) { return instances().at(size_t(id)).cfg; }

bool igemm_config_fits(int id, int cin_p) {
  const IgemmConfig& c = igemm_config(id);
  return cin_p % c.bk == 0;
}

void igemm_init() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int dev = 0;
  SCN_CUDA_CHECK(cudaGetDevice(&dev));
  for (Instance& in : instances()) {
    SCN_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(in.kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, int(in.smem)));
    int bps = 0;
    SCN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, reinterpret_cast<const void*>(in.kernel),
                                                                 in.threads, in.smem));
    in.blocks_per_sm = bps < 1 ? 1 : bps;
  }
}

void launch_igemm(int id, const ConvArgs& a, int sm_count, cudaStream_t st) {
  const Instance& in = instances().at(size_t(id));
  const int64_t tiles = (a.cap_out + in.cfg.bm - 1) / in.cfg.bm;
  const int ny = (a.cout_p + in.cfg.bn - 1) / in.cfg.bn;
  int64_t resident = int64_t(sm_count) * in.blocks_per_sm / ny;
  if (resident < 1) resident = 1;
  const int64_t gx = tiles < resident ? tiles : resident;
  dim3 grid(unsigned(gx < 1 ? 1 : gx), unsigned(ny));
  in.kernel<<<grid, in.threads, in.smem, st>>>(a);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
