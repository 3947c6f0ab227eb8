// Registry and launcher of the warp-independent implicit GEMM (igemm_offset_split.cuh).
#include <cstring>
#include <vector>

#include "backends/cuda/igemm_offset_split.cuh"
#include "backends/cuda/per_device.h"

namespace scn::cuda {

namespace {

struct OsplitInstance {
  OsplitConfig cfg;
  void (*kernel)(const ConvArgs);
  size_t smem;
};

template <int CIN, int COUT, int WR, int P, int S, int W, int MODE = kF16>
OsplitInstance make(const char* name) {
  using C = osplit::Cfg<CIN, COUT, WR, P, S, W, MODE>;
  return OsplitInstance{
      {CIN, COUT, WR, P, S, W, MODE, name}, &osplit::osplit_kernel<CIN, COUT, WR, P, S, W, MODE>, C::kSmem};
}

// Name: [q|i8]c{input channels}x{COUT} r{rows per warp} p{offset groups} s{stages} w{warps per block}
// (q: fp16 operands with the quantization-aware epilogue, i8: int8 operands). The
// shared memory is the K x COUT weight rows plus warps x stages x rows input rows (int8 rows are half
// as wide); the warps per SM follow from it.
std::vector<OsplitInstance>& instances() {
  static std::vector<OsplitInstance> v = [] {
    std::vector<OsplitInstance> all;
    // 16 -> 16 (level 0): 13.5 KiB of weights, 1 KiB per stage and warp
    all.push_back(make<16, 16, 32, 1, 6, 8>("osplit c16x16r32p1s6w8"));
    all.push_back(make<16, 16, 32, 1, 8, 16>("osplit c16x16r32p1s8w16"));
    all.push_back(make<16, 16, 64, 1, 4, 8>("osplit c16x16r64p1s4w8"));
    all.push_back(make<16, 16, 32, 2, 6, 8>("osplit c16x16r32p2s6w8"));
    all.push_back(make<16, 16, 32, 2, 4, 16>("osplit c16x16r32p2s4w16"));
    all.push_back(make<16, 16, 32, 4, 4, 8>("osplit c16x16r32p4s4w8"));
    all.push_back(make<16, 16, 32, 4, 6, 16>("osplit c16x16r32p4s6w16"));
    // 64-row slabs: a weight fragment serves twice the rows; faster where a frame fills several waves
    // (batch 8), slower with a residual epilogue (docs/benchmarks.md, session 50)
    all.push_back(make<16, 16, 64, 2, 4, 8>("osplit c16x16r64p2s4w8"));
    // 32 -> 32 (level 1): 54 KiB of weights, 2 KiB per stage and warp
    all.push_back(make<32, 32, 32, 1, 4, 16>("osplit c32x32r32p1s4w16"));
    all.push_back(make<32, 32, 32, 1, 5, 12>("osplit c32x32r32p1s5w12"));
    all.push_back(make<32, 32, 32, 1, 5, 8>("osplit c32x32r32p1s5w8"));
    all.push_back(make<32, 32, 32, 2, 4, 16>("osplit c32x32r32p2s4w16"));
    all.push_back(make<32, 32, 32, 2, 3, 20>("osplit c32x32r32p2s3w20"));
    all.push_back(make<32, 32, 32, 4, 4, 16>("osplit c32x32r32p4s4w16"));
    all.push_back(make<32, 32, 32, 4, 3, 20>("osplit c32x32r32p4s3w20"));
    // 16 -> 32 (the strided conv into level 1): 27 KiB of weights, 1 KiB per stage and warp; the
    // partial sums of P > 1 need 4.5 KiB per warp, so five or more stages there
    all.push_back(make<16, 32, 32, 1, 6, 8>("osplit c16x32r32p1s6w8"));
    all.push_back(make<16, 32, 32, 2, 6, 8>("osplit c16x32r32p2s6w8"));
    all.push_back(make<16, 32, 32, 2, 5, 16>("osplit c16x32r32p2s5w16"));
    all.push_back(make<16, 32, 32, 4, 6, 16>("osplit c16x32r32p4s6w16"));
    // 32 -> 64 (the strided conv into level 2): 108 KiB of weights, 2 KiB per stage and warp; one group (the
    // tiles' summation order), so the tuner times these beside the tiles of that conv (tile_choice.h
    // osplit_tile_order_candidates); two groups measured slower (docs/benchmarks.md, session 18)
    all.push_back(make<32, 64, 32, 1, 3, 8>("osplit c32x64r32p1s3w8"));
    all.push_back(make<32, 64, 32, 1, 3, 12>("osplit c32x64r32p1s3w12"));
    all.push_back(make<32, 64, 32, 1, 4, 8>("osplit c32x64r32p1s4w8"));
    all.push_back(make<32, 64, 32, 1, 4, 12>("osplit c32x64r32p1s4w12"));
    // INT8 engines, fp16 operands with the quantization-aware epilogue (summed like the fp16 configs of
    // the same P)
    all.push_back(make<16, 16, 32, 1, 6, 8, kF16Q>("osplit qc16x16r32p1s6w8"));
    all.push_back(make<16, 16, 32, 2, 6, 8, kF16Q>("osplit qc16x16r32p2s6w8"));
    all.push_back(make<16, 16, 32, 2, 4, 16, kF16Q>("osplit qc16x16r32p2s4w16"));
    all.push_back(make<32, 32, 32, 1, 5, 8, kF16Q>("osplit qc32x32r32p1s5w8"));
    all.push_back(make<32, 32, 32, 2, 3, 20, kF16Q>("osplit qc32x32r32p2s3w20"));
    all.push_back(make<16, 32, 32, 1, 6, 8, kF16Q>("osplit qc16x32r32p1s6w8"));
    all.push_back(make<16, 32, 32, 2, 6, 8, kF16Q>("osplit qc16x32r32p2s6w8"));
    // INT8 engines (int8 operands, int32 sums: every config gives the same bits). 16 -> 16: 6.75 KiB of
    // weights, 16-byte rows (0.5 KiB per stage and warp); partial sums need 2.5 KiB per warp
    all.push_back(make<8, 16, 32, 1, 6, 8, kI8>("osplit i8c16x16r32p1s6w8"));
    all.push_back(make<8, 16, 32, 2, 6, 8, kI8>("osplit i8c16x16r32p2s6w8"));
    all.push_back(make<8, 16, 32, 2, 8, 16, kI8>("osplit i8c16x16r32p2s8w16"));
    all.push_back(make<8, 16, 32, 4, 6, 16, kI8>("osplit i8c16x16r32p4s6w16"));
    all.push_back(make<8, 16, 64, 1, 4, 8, kI8>("osplit i8c16x16r64p1s4w8"));
    // 32 -> 32: 27 KiB of weights, 32-byte rows (1 KiB per stage and warp); partial sums 4.5 KiB per warp
    all.push_back(make<16, 32, 32, 1, 6, 8, kI8>("osplit i8c32x32r32p1s6w8"));
    all.push_back(make<16, 32, 32, 2, 6, 8, kI8>("osplit i8c32x32r32p2s6w8"));
    all.push_back(make<16, 32, 32, 2, 5, 16, kI8>("osplit i8c32x32r32p2s5w16"));
    all.push_back(make<16, 32, 32, 4, 6, 16, kI8>("osplit i8c32x32r32p4s6w16"));
    // 16 -> 32 (the strided conv into level 1): 13.5 KiB of weights, 16-byte rows
    all.push_back(make<8, 32, 32, 1, 8, 8, kI8>("osplit i8c16x32r32p1s8w8"));
    all.push_back(make<8, 32, 32, 2, 8, 8, kI8>("osplit i8c16x32r32p2s8w8"));
    all.push_back(make<8, 32, 32, 4, 8, 16, kI8>("osplit i8c16x32r32p4s8w16"));
    return all;
  }();
  return v;
}

/// What a launch needs to know of each config on one GPU (osplit_init).
struct LaunchLimits {
  std::vector<int> blocks_per_sm;  ///< 0: the config does not fit this GPU's shared memory
};

PerDevice<LaunchLimits>& limits() {
  static PerDevice<LaunchLimits> t;
  return t;
}

const LaunchLimits& current_limits() { return limits().get(current_cuda_device(), "osplit_init"); }

}  // namespace

int osplit_num_configs() { return int(instances().size()); }

const OsplitConfig& osplit_config(int id) { return instances().at(size_t(id)).cfg; }

int osplit_find_config(const char* name) {
  for (int i = 0; i < osplit_num_configs(); ++i) {
    const char* n = osplit_config(i).name;
    if (std::strcmp(n, name) == 0 || std::strcmp(n + 7, name) == 0) return i;  // "osplit " prefix optional
  }
  return -1;
}

bool osplit_config_fits(int id, const ConvArgs& a) {
  const OsplitConfig& c = osplit_config(id);
  return (a.q == nullptr) == (c.mode == kF16) && a.K == 27 && a.cin_p == c.cin && a.cout_p == c.cout &&
         a.cout <= c.cout && a.cout_w >= c.cout;
}

int osplit_blocks_per_sm(int id) { return current_limits().blocks_per_sm.at(size_t(id)); }

size_t osplit_smem_bytes(int id) { return instances().at(size_t(id)).smem; }

void osplit_init() {
  const int device = current_cuda_device();
  limits().get_or_make(device, [device] {
    int smem_optin = 0;
    SCN_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const std::vector<OsplitInstance>& all = instances();
    LaunchLimits l;
    l.blocks_per_sm.assign(all.size(), 0);  // a config wider than this GPU's shared memory is never offered
    for (size_t i = 0; i < all.size(); ++i) {
      const OsplitInstance& in = all[i];
      if (in.smem > size_t(smem_optin)) continue;
      const auto* fn = reinterpret_cast<const void*>(in.kernel);
      SCN_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(in.smem)));
      int bps = 0;
      SCN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, fn, in.cfg.warps * 32, in.smem));
      l.blocks_per_sm[i] = bps;
    }
    return l;
  });
}

bool osplit_fits_device(int id) { return current_limits().blocks_per_sm.at(size_t(id)) > 0; }

void launch_osplit(int id, const ConvArgs& a, int sm_count, cudaStream_t st, bool pdl) {
  const OsplitInstance& in = instances().at(size_t(id));
  const LaunchLimits& lim = current_limits();
  const int blocks_per_sm = lim.blocks_per_sm[size_t(id)];
  SCN_CHECK(blocks_per_sm > 0, "CUDA kernel '", in.cfg.name, "' does not fit on this GPU (", in.smem,
            " bytes of shared memory, ", in.cfg.warps * 32, " threads)");
  SCN_CHECK(osplit_config_fits(id, a), "CUDA kernel '", in.cfg.name, "' cannot run this convolution (cin_p ", a.cin_p,
            ", cout_p ", a.cout_p, ", K ", a.K, ", mode ", a.q ? "int8-aware" : "fp16", "): it needs cin_p ",
            in.cfg.cin, ", cout_p ", in.cfg.cout, ", K 27, ", in.cfg.mode == kF16 ? "fp16" : "int8 operands");
  const int64_t teams = in.cfg.warps / in.cfg.groups;
  const int64_t slabs = (a.cap_out + in.cfg.rows - 1) / in.cfg.rows;
  const int64_t need = (slabs + teams - 1) / teams;
  const int64_t resident = int64_t(sm_count) * blocks_per_sm;
  const int64_t gx = need < resident ? need : resident;
  const unsigned blocks = unsigned(gx < 1 ? 1 : gx), threads = unsigned(in.cfg.warps * 32);
  launch_kernel(in.kernel, dim3(blocks), dim3(threads), in.smem, st, pdl, a);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
