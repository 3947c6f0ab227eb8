// Site sets on the GPU: a bitmap over (batch x grid) plus a popcount prefix ("rank").
//
//   input set:   validate rows, coords[i] = row, atomicOr(bit(site)) -> a set bit means "present"
//                (an already-set bit is a duplicate); rank = popcount prefix; perm[rank(site)] = row
//   strided set: either every output word from the input bitmap's words it reaches (one thread per word, a
//                generated input set) or, for every (input, offset) pair landing on an output site,
//                atomicOr(bit(site)) (the network's input voxels: a sparse full-resolution grid);
//                rank; coords[rank] = site for every set bit -> output sites sorted by key,
//                deterministic, no sort and no host synchronisation; count = min(total, cap) and
//                an overflow is recorded on the device (a set in neighbour-row order: its coordinates by
//                rank go to a temporary, and site_order.cu writes perm and coords)
//   lookup:      row(site) = bit set ? (perm ? perm[rank] : rank) : -1   (common.cuh)
#include <cub/block/block_scan.cuh>

#include "backends/cuda/block_scan.cuh"
#include "backends/cuda/common.cuh"
#include "core/input_check.h"
#include "plan/strided_window.h"

namespace scn::cuda {

namespace {

// Zeroes a bitmap with 16-byte stores (a kernel, not a memset node: the input step after it launches
// programmatically and converts its features while the bitmap is cleared). Lets its successor launch at once.
__global__ void clear_bits_kernel(uint64_t* __restrict__ bits, int64_t words) {
  ptx::grid_launch_dependents();
  uint4* b = reinterpret_cast<uint4*>(bits);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words / 2; i += int64_t(gridDim.x) * blockDim.x)
    b[i] = make_uint4(0u, 0u, 0u, 0u);
  if (blockIdx.x == 0 && threadIdx.x == 0 && (words & 1)) bits[words - 1] = 0;
}

// The input step in one launch: thread i converts row i's C features into cp padded halves (flagging
// non-finite values) and stores its coordinates, which need no bitmap; then, after the kernel before it (the
// bitmap's clearing) — wait_previous_kernel — validates its coordinates and inserts the site. Rows read in place
// from the caller's buffers (rows.source) keep an offending row's coordinates in the engine's staging, where the
// error message reads them after the forward (the caller's buffer may have changed by then).
template <bool kFp32, class Key>
__global__ void input_sites_features_kernel(InputRows rows, int C, int cp, __half* __restrict__ out, SiteIndex s,
                                            ErrSlot* err, bool let_next) {
  const bool in_place = rows.source != nullptr;
  const int4* __restrict__ raw =
      reinterpret_cast<const int4*>(in_place ? rows.source->indices : static_cast<const int32_t*>(rows.indices));
  const void* __restrict__ feat = in_place ? rows.source->features : rows.features;
  int4* const kept = in_place ? reinterpret_cast<int4*>(rows.indices) : nullptr;
  // row i at site r is bad (`kind`, channel c): recorded, and its site kept when read in place
  auto offending = [&](int kind, int64_t i, int c, const int4& r) {
    record_error(err + kind, i, c, 0);
    if (kept) kept[i] = r;
  };
  const int64_t n = rows_of(s.count, s.cap);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int4 r = raw[i];
    s.coords[i] = r;
    for (int c0 = 0; c0 < cp; c0 += 8) {
      alignas(16) __half v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int c = c0 + j;
        float f = 0.f;
        if (c < C) {
          f = kFp32 ? static_cast<const float*>(feat)[i * C + c]
                    : __half2float(static_cast<const __half*>(feat)[i * C + c]);
          if (!isfinite(f) || fabsf(f) >= kFp16Overflow) {  // float16 would round it to an infinity
            offending(kErrNonFinite, i, c, r);
            f = 0.f;
          }
        }
        v[j] = __float2half_rn(f);
      }
      *reinterpret_cast<uint4*>(out + i * cp + c0) = *reinterpret_cast<const uint4*>(v);
    }
  }
  wait_previous_kernel(let_next);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int4 r = raw[i];
    if (r.x < 0 || r.x >= s.batch) {
      offending(kErrBatch, i, 0, r);
      continue;
    }
    if (!site_in_grid(s, r.x, r.y, r.z, r.w)) {
      offending(kErrRange, i, 0, r);
      continue;
    }
    const Key key = site_key<Key>(s, r.x, r.y, r.z, r.w);
    const unsigned long long bit = 1ull << (key & 63);
    const unsigned long long old = atomicOr(reinterpret_cast<unsigned long long*>(s.bits + (key >> 6)), bit);
    if (old & bit) offending(kErrDuplicate, i, 0, r);
  }
}

// One thread per input row: per axis the offsets that land on an output coordinate (a few
// divisions per axis instead of per offset), then one bit per (row, offset) combination.
template <class Key>
__global__ void strided_mark_kernel(SiteIndex in, SiteIndex out, MapGeom g) {
  const int64_t n = rows_of(in.count, in.cap);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int4 c = in.coords[i];
    if (!site_in_grid(in, c.x, c.y, c.z, c.w)) continue;
    const TapMasks m = strided_taps(c, g, out);
    for (uint32_t a = m.m0; a; a &= a - 1u)
      for (uint32_t b = m.m1; b; b &= b - 1u)
        for (uint32_t e = m.m2; e; e &= e - 1u) {
          const int o0 = (c.y + g.p0 - (__ffs(a) - 1) * g.d0) / g.st0;
          const int o1 = (c.z + g.p1 - (__ffs(b) - 1) * g.d1) / g.st1;
          const int o2 = (c.w + g.p2 - (__ffs(e) - 1) * g.d2) / g.st2;
          const Key key = site_key<Key>(out, c.x, o0, o1, o2);
          const unsigned long long bit = 1ull << (key & 63);
          atomicOr(reinterpret_cast<unsigned long long*>(out.bits + (key >> 6)), bit);
        }
  }
}

// One block ranks kRankBlock words: 256 threads x 4 words.
constexpr int kRankThreads = 256;
static_assert(kRankThreads * 4 == kRankBlock, "rank block layout");

__global__ void __launch_bounds__(kRankThreads) rank_local_kernel(SiteIndex s, bool let_next) {
  wait_previous_kernel(let_next);
  using Scan = cub::BlockScan<uint32_t, kRankThreads>;
  __shared__ typename Scan::TempStorage scan;
  const int64_t base = int64_t(blockIdx.x) * kRankBlock + threadIdx.x * 4;
  int pc[4];
  uint32_t sum = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t w = base + j;
    pc[j] = w < s.words ? __popcll(s.bits[w]) : 0;
    sum += uint32_t(pc[j]);
  }
  uint32_t ex = 0, total = 0;
  Scan(scan).ExclusiveSum(sum, ex, total);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t w = base + j;
    if (w < s.words) s.rank_local[w] = uint16_t(ex);
    ex += uint32_t(pc[j]);
  }
  if (threadIdx.x == 0) s.rank_block[blockIdx.x] = total;
}

/// (b, i0, i1, i2) of a bitmap key (site_key's inverse), with divisions in the key's type.
template <typename K>
__device__ __forceinline__ int4 key_coords(const SiteIndex& s, K key) {
  const int i2 = int(key % K(s.s2));
  key /= K(s.s2);
  const int i1 = int(key % K(s.s1));
  key /= K(s.s1);
  const int i0 = int(key % K(s.s0));
  return make_int4(int(key / K(s.s0)), i0, i1, i2);
}

/// Bitmap keys start .. start + 191 as three words (bit t of v is key start + t), keys outside the bitmap read as 0:
/// four aligned words, each loaded independently of the others, so that every line's loads are in flight at once.
__device__ __forceinline__ void bitmap_window(const uint64_t* __restrict__ bits, int64_t words, int64_t start,
                                              uint64_t (&v)[3]) {
  const int64_t a = start >= 0 ? start >> 6 : -((-start + 63) >> 6);
  const int s = int(start - a * 64);
  uint64_t w[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) w[q] = a + q >= 0 && a + q < words ? __ldg(bits + a + q) : 0;
#pragma unroll
  for (int q = 0; q < 3; ++q) v[q] = s ? (w[q] >> s) | (w[q + 1] << (64 - s)) : w[q];
}

/// Bits 0, 2, 4, .. 62 of v packed into bits 0 .. 31.
__device__ __forceinline__ uint64_t even_bits(uint64_t v) {
  v &= 0x5555555555555555ull;
  v = (v | (v >> 1)) & 0x3333333333333333ull;
  v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v >> 4)) & 0x00FF00FF00FF00FFull;
  v = (v | (v >> 8)) & 0x0000FFFF0000FFFFull;
  return (v | (v >> 16)) & 0x00000000FFFFFFFFull;
}

// The strided set's bitmap from the input set's bitmap: one thread per output word. Output site o2 of a line exists
// when, for some kernel row (r0, r1) inside the input grid, the input line holds a site at o2 * st2 - p2 + r2 * d2;
// per line one window of 192 input sites (bitmap_window) covers a run of output sites: 64 at strides 1 and 2, so a
// word costs one window per kernel row, all of them loaded at once (K0 x K1 kernel rows unrolled; 0 = the sizes
// read at run time). A word holding the end of one line and the start of the next takes a run per line. Every word
// is written once: no memset, no atomics, no read of the input set's coordinates.
template <class Key, int K0, int K1>
__global__ void __launch_bounds__(32) strided_bits_kernel(SiteIndex in, SiteIndex out, MapGeom g, bool let_next) {
  wait_previous_kernel(let_next);
  const int k0 = K0 > 0 ? K0 : g.k0, k1 = K1 > 0 ? K1 : g.k1;
  const Key keys = Key(out.batch) * Key(out.s0) * Key(out.s1) * Key(out.s2);
  const int reach = (g.k2 - 1) * g.d2;
  const int run = g.st2 <= 2 ? 64 : 1 + (191 - reach) / g.st2;  // output sites per window
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < out.words;
       w += int64_t(gridDim.x) * blockDim.x) {
    uint64_t word = 0;
    for (int pos = 0; pos < 64;) {
      const Key key = Key(w) * 64 + Key(pos);
      if (key >= keys) break;
      const int4 o = key_coords(out, key);
      const int b = o.x, o0 = o.y, o1 = o.z, o2 = o.w;
      const int len = 64 - pos < out.s2 - o2 ? 64 - pos : out.s2 - o2;
      for (int c = 0; c < len; c += run) {
        const int n = len - c < run ? len - c : run;
        const int x0 = (o2 + c) * g.st2 - g.p2;
        // the kernel rows' windows ORed: bit t = some row has an input site at x0 + t (the bits of a window beyond
        // its line belong to the next line, the same positions for every row: cleared once, below)
        uint64_t v[3] = {0, 0, 0};
#pragma unroll
        for (int r0 = 0; r0 < k0; ++r0) {
#pragma unroll
          for (int r1 = 0; r1 < k1; ++r1) {
            const int i0 = o0 * g.st0 - g.p0 + r0 * g.d0, i1 = o1 * g.st1 - g.p1 + r1 * g.d1;
            if (i0 < 0 || i0 >= in.s0 || i1 < 0 || i1 >= in.s1) continue;
            uint64_t u[3];
            bitmap_window(in.bits, in.words, int64_t(site_key<Key>(in, b, i0, i1, 0)) + x0, u);
            v[0] |= u[0];
            v[1] |= u[1];
            v[2] |= u[2];
          }
        }
#pragma unroll
        for (int q = 0; q < 3; ++q) {  // keep the positions inside the line: 0 <= x0 + t < in.s2
          const int from = -x0 - 64 * q, upto = in.s2 - x0 - 64 * q;  // valid t - 64 q in [from, upto)
          const uint64_t hi = upto >= 64 ? ~uint64_t(0) : upto <= 0 ? 0 : (uint64_t(1) << upto) - 1;
          const uint64_t lo = from <= 0 ? ~uint64_t(0) : from >= 64 ? 0 : ~((uint64_t(1) << from) - 1);
          v[q] &= hi & lo;
        }
        uint64_t d[3] = {0, 0, 0};  // bit t: an input site at x0 + t + r2 * d2 for some r2
        for (int r2 = 0; r2 < g.k2; ++r2) {
          const int r = r2 * g.d2;
          d[0] |= r ? (v[0] >> r) | (v[1] << (64 - r)) : v[0];
          d[1] |= r ? (v[1] >> r) | (v[2] << (64 - r)) : v[1];
          d[2] |= v[2] >> r;
        }
        uint64_t bits = 0;  // output site j of the run: bit j * st2 of d
        if (g.st2 == 1) {
          bits = d[0];
        } else if (g.st2 == 2) {
          bits = even_bits(d[0]) | (even_bits(d[1]) << 32);
        } else {
          for (int j = 0; j < n; ++j) {
            const int t = j * g.st2;
            const uint64_t dw = t < 64 ? d[0] : t < 128 ? d[1] : d[2];  // selects, not an indexed array
            bits |= ((dw >> (t & 63)) & 1) << j;
          }
        }
        if (n < 64) bits &= (uint64_t(1) << n) - 1;
        word |= bits << (pos + c);
      }
      pos += len;
    }
    out.bits[w] = word;
  }
}

// One block turns the block sums into an exclusive prefix (in place; BlockScanInPlace: ~14 us for the 10k
// sums of a batch of 8 frames when each thread walked its own run of sums). 256 threads and 8 KB of shared
// memory: the map stream's block fits on an SM beside the running conv's blocks; a 1024-thread block (54
// registers) waited 6-8 us for a conv boundary (docs/benchmarks.md, session 18).
constexpr int kRankBlocksThreads = 256;
using RankBlocksScan = BlockScanInPlace<kRankBlocksThreads, 8>;
__global__ void __launch_bounds__(kRankBlocksThreads)
    rank_blocks_kernel(SiteIndex s, int64_t nblocks, bool set_count, ErrSlot* err, bool let_next) {
  wait_previous_kernel(let_next);
  __shared__ RankBlocksScan::TempStorage tmp;
  const uint32_t carry = RankBlocksScan::run(tmp, s.rank_block, nblocks);
  if (threadIdx.x == 0 && set_count) {
    const int64_t t = int64_t(carry);
    if (t > s.cap) record_error(err + kErrOverflow, 0, t, s.cap);
    *s.count = int(t < s.cap ? t : s.cap);
  }
}

// One warp per group of `group` (<= 32) bitmap words: lane l < group loads word w0 + l and its rank,
// then the warp walks the group's non-empty words together, lane l decoding bits l and l + 32 of
// each. A dense word (the deep levels are mostly full) costs two steps of the warp instead of 64
// serial ones of one thread; small groups spread the few, dense words of deep levels over more warps.
__global__ void emit_coords_kernel(SiteIndex s, int group, bool let_next) {
  wait_previous_kernel(let_next);
  const int lane = int(threadIdx.x & 31);
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  // keys below 2^32 decode with 32-bit divisions
  const bool narrow = int64_t(s.batch) * s.s0 * s.s1 * s.s2 <= int64_t(UINT32_MAX);
  // w0 is warp-uniform: every lane runs the same iterations (the shuffles need all 32)
  for (int64_t w0 = ((int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5) * group; w0 < s.words;
       w0 += warps * group) {
    const int64_t w = w0 + lane;
    uint64_t word = 0;
    int64_t rank = 0;
    if (lane < group && w < s.words) {
      word = s.bits[w];
      if (word) rank = site_rank_base(s, w);
    }
    for (uint32_t live = __ballot_sync(0xffffffffu, word != 0); live; live &= live - 1u) {
      const int src = __ffs(live) - 1;
      const uint64_t wd = __shfl_sync(0xffffffffu, word, src);
      const int64_t r0 = __shfl_sync(0xffffffffu, rank, src);
      for (int bit = lane; bit < 64; bit += 32) {
        if (!((wd >> bit) & 1)) continue;
        const int64_t r = site_rank_in_word(r0, bit, wd);
        if (r >= s.cap) continue;
        const int64_t key = (w0 + src) * 64 + bit;
        s.coords[r] = narrow ? key_coords<uint32_t>(s, uint32_t(key)) : key_coords<uint64_t>(s, uint64_t(key));
      }
    }
  }
}

template <class Key>
__global__ void build_perm_kernel(SiteIndex s, bool let_next) {
  wait_previous_kernel(let_next);
  const int64_t n = rows_of(s.count, s.cap);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int4 c = s.coords[i];
    if (!site_in_grid(s, c.x, c.y, c.z, c.w)) continue;
    const Key key = site_key<Key>(s, c.x, c.y, c.z, c.w);
    const uint64_t word = s.bits[key >> 6];
    const int64_t r = site_rank(s, int64_t(key), word);
    if (r < s.cap) s.perm[r] = int32_t(i);
  }
}

}  // namespace

void launch_clear_bits(SiteIndex s, int sm, cudaStream_t st) {
  clear_bits_kernel<<<grid_for(s.words / 2, 256, sm, 4), 256, 0, st>>>(s.bits, s.words);
  SCN_CUDA_LAUNCHED();
}

void launch_input_sites_features(InputRows rows, bool raw_fp32, int C, int cp, void* out, SiteIndex s, ErrSlot* err,
                                 int sm, cudaStream_t st, bool pdl) {
  const int g = grid_for(s.cap, 256, sm);
  __half* o = static_cast<__half*>(out);
  with_site_key(s, [&](auto k) {
    using Key = decltype(k);
    if (raw_fp32)
      launch_chained(input_sites_features_kernel<true, Key>, g, 256, 0, st, pdl, rows, C, cp, o, s, err);
    else
      launch_chained(input_sites_features_kernel<false, Key>, g, 256, 0, st, pdl, rows, C, cp, o, s, err);
  });
  SCN_CUDA_LAUNCHED();
}

void launch_strided_mark(SiteIndex in, SiteIndex out, MapGeom g, int sm, cudaStream_t st) {
  SCN_CHECK(g.k0 <= kMaxTapsPerAxis && g.k1 <= kMaxTapsPerAxis && g.k2 <= kMaxTapsPerAxis,
            "strided convolution kernels larger than ", kMaxTapsPerAxis,
            " per axis are not supported by the CUDA backend");
  with_site_key(out, [&](auto k) {
    strided_mark_kernel<decltype(k)><<<grid_for(in.cap, 128, sm, 16), 128, 0, st>>>(in, out, g);
  });
  SCN_CUDA_LAUNCHED();
}

bool strided_sites_from_bits_fits(const MapGeom& g) {
  return g.st2 >= 1 && strided_bits_window_fits(g.k0, g.k1, g.k2, g.d2);
}

void launch_strided_sites_from_bits(SiteIndex in, SiteIndex out, MapGeom g, ErrSlot* err, int sm, cudaStream_t st,
                                    bool pdl) {
  SCN_CHECK(strided_sites_from_bits_fits(g), "launch_strided_sites_from_bits: a ", g.k0, "x", g.k1, "x", g.k2,
            " kernel of dilation ", g.d2, " along the last axis does not fit its windows");
  SCN_CHECK(in.batch == out.batch, "launch_strided_sites_from_bits: batch ", in.batch, " -> ", out.batch);
  // one-warp blocks (~64 registers a thread): one fits in the registers a level's conv blocks leave free on an SM
  // (docs/benchmarks.md, session 23: 4,096 beside the level-1 and level-2 convs)
  const int grid = grid_for(out.words, 32, sm, 64);
  const bool k33 = g.k0 == 3 && g.k1 == 3;
  if (site_keys32(in) && site_keys32(out)) {
    if (k33)
      launch_chained(strided_bits_kernel<uint32_t, 3, 3>, grid, 32, 0, st, pdl, in, out, g);
    else
      launch_chained(strided_bits_kernel<uint32_t, 0, 0>, grid, 32, 0, st, pdl, in, out, g);
  } else {
    if (k33)
      launch_chained(strided_bits_kernel<int64_t, 3, 3>, grid, 32, 0, st, pdl, in, out, g);
    else
      launch_chained(strided_bits_kernel<int64_t, 0, 0>, grid, 32, 0, st, pdl, in, out, g);
  }
  SCN_CUDA_LAUNCHED();
  launch_rank(out, true, err, sm, st, pdl);
}

void launch_rank(SiteIndex s, bool set_count, ErrSlot* err, int, cudaStream_t st, bool pdl) {
  const int64_t nb = rank_blocks(s.words);
  launch_chained(rank_local_kernel, unsigned(nb), kRankThreads, 0, st, pdl, s);
  SCN_CUDA_LAUNCHED();
  launch_chained(rank_blocks_kernel, 1, kRankBlocksThreads, 0, st, pdl, s, nb, set_count, err);
  SCN_CUDA_LAUNCHED();
}

void launch_emit_coords(SiteIndex s, int sm, cudaStream_t st, bool pdl) {
  // words per warp: about 64 warps per SM, at most 32 words each; blocks of 128 threads (54 registers each)
  // fit beside a level's conv blocks, so the map stream's site emission runs during the convs, not only in
  // their tails
  const int64_t per = s.words / (int64_t(sm) * 64);
  const int group = per < 1 ? 1 : per > 32 ? 32 : int(per);
  const int64_t warps = (s.words + group - 1) / group;
  launch_chained(emit_coords_kernel, grid_for(warps * 32, 128, sm, 16), 128, 0, st, pdl, s, group);
  SCN_CUDA_LAUNCHED();
}

void launch_build_perm(SiteIndex s, int sm, cudaStream_t st, bool pdl) {
  with_site_key(
      s, [&](auto k) { launch_chained(build_perm_kernel<decltype(k)>, grid_for(s.cap, 256, sm), 256, 0, st, pdl, s); });
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
