// Registry and launcher of osplit chains (igemm_osplit_chain.cuh).
#include <vector>

#include "backends/cuda/igemm_osplit_chain.cuh"
#include "backends/cuda/per_device.h"

namespace scn::cuda {

namespace {

struct ChainInstance {
  OsplitChainConfig cfg;
  void (*kernel)(const ChainArgs);
  size_t smem;
};

template <int CIN, int COUT, int WR, int P, int S, int W, int SLOTS>
ChainInstance make(const char* name) {
  using CC = osplit::ChainCfg<CIN, COUT, WR, P, S, W, SLOTS>;
  return ChainInstance{{CIN, COUT, WR, P, S, W, SLOTS, name}, &osplit::chain_kernel<CIN, COUT, WR, P, S, W, SLOTS>,
                       CC::kSmem};
}

// Name: chain c{CIN}x{COUT} r{rows} p{groups} s{stages} w{warps} n{weight slots}. The first config of a
// shape that fits the device is the one used. 16 -> 16: all five level-0 convs' weights (67.5 KiB) fit
// beside osplit's level-0 stages; 32 -> 32: two convs' (108 KiB) beside 16 warps of three stages.
std::vector<ChainInstance>& instances() {
  static std::vector<ChainInstance> v = [] {
    std::vector<ChainInstance> all;
    all.push_back(make<16, 16, 32, 2, 6, 8, 5>("chain c16x16r32p2s6w8n5"));
    all.push_back(make<32, 32, 32, 2, 3, 18, 2>("chain c32x32r32p2s3w18n2"));
    all.push_back(make<32, 32, 32, 2, 3, 16, 2>("chain c32x32r32p2s3w16n2"));
    return all;
  }();
  return v;
}

struct Limits {
  std::vector<int> blocks_per_sm;  ///< 0: does not fit this GPU
};

PerDevice<Limits>& limits() {
  static PerDevice<Limits> t;
  return t;
}

const Limits& current_limits() {
  const int device = current_cuda_device();
  return limits().get_or_make(device, [device] {
    int smem_optin = 0;
    SCN_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    Limits l;
    l.blocks_per_sm.assign(instances().size(), 0);
    for (size_t i = 0; i < instances().size(); ++i) {
      const ChainInstance& in = instances()[i];
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

}  // namespace

int osplit_chain_num_configs() { return int(instances().size()); }

const OsplitChainConfig& osplit_chain_config(int id) { return instances().at(size_t(id)).cfg; }

int osplit_chain_for(int cin_p, int cout_p, int groups) {
  const Limits& l = current_limits();
  for (int i = 0; i < osplit_chain_num_configs(); ++i) {
    const OsplitChainConfig& c = osplit_chain_config(i);
    if (c.cin == cin_p && c.cout == cout_p && c.groups == groups && l.blocks_per_sm[size_t(i)] > 0) return i;
  }
  return -1;
}

int osplit_chain_rows(int id) { return osplit_chain_config(id).rows; }

void launch_osplit_chain(int id, const ChainArgs& a, int sm_count, cudaStream_t st, bool pdl) {
  const ChainInstance& in = instances().at(size_t(id));
  const int blocks_per_sm = current_limits().blocks_per_sm.at(size_t(id));
  SCN_CHECK(blocks_per_sm > 0, "CUDA kernel '", in.cfg.name, "' does not fit on this GPU");
  SCN_CHECK(a.count >= 1 && a.count <= kMaxChainConvs && a.sync, "osplit chain of ", a.count, " convs");
  for (int j = 0; j < a.count; ++j)
    SCN_CHECK(a.conv[j].q == nullptr && a.conv[j].K == 27 && a.conv[j].cin_p == in.cfg.cin &&
                  a.conv[j].cout_p == in.cfg.cout && a.conv[j].out_in == a.conv[0].out_in &&
                  a.conv[j].n_out == a.conv[0].n_out,
              "CUDA kernel '", in.cfg.name, "' cannot run conv ", j, " of the chain");
  const int teams = in.cfg.warps / in.cfg.groups;
  const int64_t items = (a.conv[0].cap_out + in.cfg.rows - 1) / in.cfg.rows * a.count;
  const int64_t need = (items + teams - 1) / teams;
  const int64_t resident = int64_t(sm_count) * blocks_per_sm;
  const int64_t gx = need < resident ? need : resident;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(gx < 1 ? 1 : gx));
  cfg.blockDim = dim3(unsigned(in.cfg.warps * 32));
  cfg.dynamicSmemBytes = in.smem;
  cfg.stream = st;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  SCN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, in.kernel, a));
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
