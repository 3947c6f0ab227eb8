// Implicit-GEMM registry and launcher (the kernel is in implicit_gemm.cuh, its instances in
// igemm_fp16_*.cu and igemm_int8*.cu).
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "backends/cuda/device_check.h"
#include "backends/cuda/implicit_gemm.cuh"
#include "backends/cuda/per_device.h"

namespace scn::cuda {

namespace {

using igemm::Instance;

std::vector<Instance>& instances() {
  static std::vector<Instance> v = [] {
    std::vector<Instance> all;
    igemm::add_instances_fp16_n16(all);
    igemm::add_instances_fp16_n32(all);
    igemm::add_instances_fp16_n64(all);
    igemm::add_instances_fp16_n128(all);
    igemm::add_instances_fp16_split(all);
    igemm::add_instances_fp16_latency(all);
    igemm::add_instances_int8_fp16_operands(all);
    igemm::add_instances_int8(all);
#if SCN_CUDA_WGMMA
    igemm::add_instances_fp16_wgmma(all);
    igemm::add_instances_fp16_wgmma_ws(all);
    igemm::add_instances_int8_wgmma(all);
#endif
    // names derived from the fields, kept alive with the registry (IgemmConfig::name points into it)
    static std::deque<std::string> names;
    for (Instance& in : all) {
      names.push_back(igemm_config_name(in.cfg));
      in.cfg.name = names.back().c_str();
    }
    return all;
  }();
  return v;
}

/// What a launch needs to know of each config on one GPU (igemm_init).
struct LaunchLimits {
  std::vector<int> blocks_per_sm;  ///< occupancy calculator (at least 1)
  std::vector<int> max_clusters;   ///< split > 1: clusters of `split` CTAs the GPU holds at once; else 0
};

PerDevice<LaunchLimits>& limits() {
  static PerDevice<LaunchLimits> t;
  return t;
}

const LaunchLimits& current_limits() { return limits().get(current_cuda_device(), "igemm_init"); }

}  // namespace

int igemm_num_configs() { return int(instances().size()); }

const IgemmConfig& igemm_config(int id) { return instances().at(size_t(id)).cfg; }

bool igemm_config_fits(int id, int cin_p, int cc_major, int K, int mode) {
  const IgemmConfig& c = igemm_config(id);
  return c.mode == mode && cin_p % c.bk == 0 && (c.group == 1 || cin_p == c.bk) && (!c.tma || cc_major >= 9) &&
         (c.split == 1 || (cc_major >= 9 && K <= 32)) && (!c.wgmma || cc_major == 9) && (!c.ws || K <= igemm::kMaxMapK);
}

int igemm_find_config(const char* name) {
  for (int i = 0; i < igemm_num_configs(); ++i) {
    const char* n = igemm_config(i).name;
    if (std::strcmp(n, name) == 0 || (std::strncmp(n, "igemm ", 6) == 0 && std::strcmp(n + 6, name) == 0)) return i;
  }
  return -1;
}

int igemm_blocks_per_sm(int id) { return current_limits().blocks_per_sm.at(size_t(id)); }

std::vector<uint16_t> igemm_tile_weights(int id, const std::vector<uint16_t>& w, int K, int cout_w, int cin_p,
                                         int cout_p) {
  const IgemmConfig& c = igemm_config(id);
  const int lds = igemm_smem_row(c.bk, c.wgmma);
  const int chunks = cin_p / c.bk;
  const int ny = (cout_p + c.bn - 1) / c.bn;
  std::vector<uint16_t> t(size_t(K) * size_t(chunks) * size_t(ny) * size_t(c.bn) * size_t(lds), 0);
  for (int k = 0; k < K; ++k)
    for (int ch = 0; ch < chunks; ++ch)
      for (int j = 0; j < ny; ++j) {
        uint16_t* slice = t.data() + ((size_t(k) * chunks + ch) * ny + j) * size_t(c.bn) * lds;
        for (int r = 0; r < c.bn; ++r) {
          const int co = j * c.bn + r;
          if (co >= cout_w) continue;
          const uint16_t* src = w.data() + (size_t(k) * cout_w + co) * cin_p + size_t(ch) * c.bk;
          if (!c.wgmma) {
            std::memcpy(slice + size_t(r) * lds, src, size_t(c.bk) * 2);
            continue;
          }
          for (int q = 0; q < c.bk / 8; ++q)  // the swizzle of the wgmma tiles (implicit_gemm.cuh)
            std::memcpy(slice + size_t(r) * lds + size_t(wg_swizzle_chunk(q, r, c.bk) * 8), src + q * 8, 16);
        }
      }
  return t;
}

bool igemm_wgmma_device() {
  int dev = 0, major = 0, minor = 0;
  const bool ok = cudaGetDevice(&dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess;
  if (!ok) cudaGetLastError();  // no device: clear the sticky error
  return ok && major == 9 && minor == 0;
}

cudaError_t probe_kernel_image() {
  cudaFuncAttributes fa{};
  const cudaError_t e = cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(instances().at(0).kernel));
  if (e != cudaSuccess) cudaGetLastError();  // clear it: the caller reports it
  return e;
}

void igemm_init() {
  limits().get_or_make(current_cuda_device(), [] {
    const bool wgmma = igemm_wgmma_device();
    const std::vector<Instance>& all = instances();
    LaunchLimits l;
    l.blocks_per_sm.assign(all.size(), 1);
    l.max_clusters.assign(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
      const Instance& in = all[i];
      // sm_90a code has no image for other GPUs (igemm_config_fits never picks it there)
      if (in.cfg.wgmma && !wgmma) continue;
      const auto* fn = reinterpret_cast<const void*>(in.kernel);
      SCN_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(in.smem)));
      int bps = 0;
      SCN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, fn, in.threads, in.smem));
      l.blocks_per_sm[i] = bps < 1 ? 1 : bps;
      if (in.cfg.split > 1) {
        // a cluster needs `split` SMs of one GPC with room for a block each, so fewer clusters may fit than
        // blocks_per_sm * SMs / split; the persistent grid must not exceed what is resident at once
        cudaLaunchConfig_t lc{};
        lc.gridDim = dim3(1, 1, unsigned(in.cfg.split));
        lc.blockDim = dim3(unsigned(in.threads));
        lc.dynamicSmemBytes = in.smem;
        cudaLaunchAttribute cl = cluster_z_attribute(unsigned(in.cfg.split));
        lc.attrs = &cl;
        lc.numAttrs = 1;
        SCN_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&l.max_clusters[i], fn, &lc));
      }
    }
    return l;
  });
}

void launch_igemm(int id, const ConvArgs& a, int sm_count, cudaStream_t st, bool pdl) {
  const Instance& in = instances().at(size_t(id));
  const LaunchLimits& lim = current_limits();
  const int max_clusters = lim.max_clusters[size_t(id)];
  const int64_t tiles = (a.cap_out + in.cfg.bm - 1) / in.cfg.bm;
  const int ny = (a.cout_p + in.cfg.bn - 1) / in.cfg.bn;
  const int split = in.cfg.split;
  int64_t resident = int64_t(sm_count) * lim.blocks_per_sm[size_t(id)] / (ny * split);
  if (max_clusters > 0 && resident > max_clusters / ny) resident = max_clusters / ny;
  if (resident < 1) resident = 1;
  const int64_t gx = tiles < resident ? tiles : resident;
  dim3 grid(unsigned(gx < 1 ? 1 : gx), unsigned(ny), unsigned(split));
  pdl = pdl && pdl_image();
  if (split == 1 && !pdl)
    in.kernel<<<grid, in.threads, in.smem, st>>>(a);
  else
    launch_ex(in.kernel, grid, dim3(unsigned(in.threads)), in.smem, st, pdl, unsigned(split), a);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
