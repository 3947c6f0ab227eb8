// Registry and launchers of the union-staged implicit GEMM and its per-map plan
// (igemm_union_staged.cuh).
#include <cstring>
#include <mutex>
#include <vector>

#include "backends/cuda/igemm_union_staged.cuh"

namespace scn::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }
int64_t tiles_for(int64_t cap_out, int bm) { return (cap_out + bm - 1) / bm; }

using ustage::make;
using ustage::UstageInstance;

// Name: c{CIN}x{COUT} m{rows per tile} u{staged rows per tile} w{warps per team} t{teams per block}.
// Shared memory: the 27 x COUT x CIN weights + per team (u + 1) x CIN staged halves, the tile's slots
// and its epilogue rows.
std::vector<UstageInstance>& instances() {
  static std::vector<UstageInstance> v = [] {
    std::vector<UstageInstance> all;
    // 16 -> 16 (level 0)
    all.push_back(make<16, 16, 64, 512, 4, 4, false>("ustage c16x16m64u512w4t4"));
    all.push_back(make<16, 16, 64, 512, 2, 6, false>("ustage c16x16m64u512w2t6"));
    all.push_back(make<16, 16, 64, 512, 1, 8, false>("ustage c16x16m64u512w1t8"));
    all.push_back(make<16, 16, 128, 1024, 8, 2, false>("ustage c16x16m128u1024w8t2"));
    all.push_back(make<16, 16, 128, 1024, 4, 3, false>("ustage c16x16m128u1024w4t3"));
    // 32 -> 32 (level 1)
    all.push_back(make<32, 32, 64, 512, 4, 3, false>("ustage c32x32m64u512w4t3"));
    all.push_back(make<32, 32, 64, 512, 2, 4, false>("ustage c32x32m64u512w2t4"));
    all.push_back(make<32, 32, 64, 512, 1, 4, false>("ustage c32x32m64u512w1t4"));
    all.push_back(make<32, 32, 128, 1024, 4, 2, false>("ustage c32x32m128u1024w4t2"));
    // room for two offsets per tile: most tiles of a real level overflow (the fallback path's check)
    all.push_back(make<32, 32, 64, 128, 4, 4, false>("ustage c32x32m64u128w4t4"));
    // 16 -> 32 (the strided conv into level 1)
    all.push_back(make<16, 32, 64, 512, 4, 2, false>("ustage c16x32m64u512w4t2"));
    all.push_back(make<16, 32, 64, 512, 2, 4, false>("ustage c16x32m64u512w2t4"));
    all.push_back(make<16, 32, 64, 512, 1, 6, false>("ustage c16x32m64u512w1t6"));
#if SCN_CUDA_WGMMA
    ustage::add_instances_wgmma(all);
#endif
    return all;
  }();
  return v;
}

template <int BM>
void launch_plan_bm(const int32_t* out_in, const int* n_out, const StagePlan& p, int sm_count, cudaStream_t st) {
  const int64_t tiles = tiles_for(p.cap_out, BM);
  const size_t smem = size_t(ustage::plan_table_size(BM)) * 2 * sizeof(int32_t);
  static const bool attr_set = [&] {
    SCN_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&ustage::stage_plan_kernel<BM>),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    return true;
  }();
  (void)attr_set;
  const int64_t resident = int64_t(sm_count) * (BM <= 64 ? 6 : 3);
  const unsigned blocks = unsigned(tiles < resident ? (tiles < 1 ? 1 : tiles) : resident);
  ustage::stage_plan_kernel<BM><<<blocks, 4 * BM, smem, st>>>(out_in, n_out, p);
}

}  // namespace

size_t stage_plan_bytes(int64_t cap_out, int bm, int ucap) {
  const size_t tiles = size_t(tiles_for(cap_out, bm));
  return align_up(tiles * size_t(bm) * ustage::kK * 2) + align_up(tiles * size_t(ucap) * 4) + align_up(tiles * 4);
}

StagePlan stage_plan_at(void* base, int64_t cap_out, int bm, int ucap) {
  const size_t tiles = size_t(tiles_for(cap_out, bm));
  auto* b = static_cast<uint8_t*>(base);
  StagePlan p;
  p.slots = reinterpret_cast<uint16_t*>(b);
  b += align_up(tiles * size_t(bm) * ustage::kK * 2);
  p.rows = reinterpret_cast<int32_t*>(b);
  b += align_up(tiles * size_t(ucap) * 4);
  p.count = reinterpret_cast<int32_t*>(b);
  p.bm = bm;
  p.ucap = ucap;
  p.cap_out = cap_out;
  return p;
}

void launch_stage_plan(const int32_t* out_in, const int* n_out, const StagePlan& p, int sm_count, cudaStream_t st) {
  SCN_CHECK(p.ucap > 0 && p.ucap < kStageZeroSlot, "stage plan: room for ", p.ucap, " rows per tile out of range");
  if (p.bm == 64)
    launch_plan_bm<64>(out_in, n_out, p, sm_count, st);
  else if (p.bm == 128)
    launch_plan_bm<128>(out_in, n_out, p, sm_count, st);
  else
    SCN_CHECK(false, "stage plan: tiles of ", p.bm, " rows are not built (64 or 128)");
  SCN_CUDA_LAUNCHED();
}

int ustage_num_configs() { return int(instances().size()); }

const UstageConfig& ustage_config(int id) { return instances().at(size_t(id)).cfg; }

int ustage_find_config(const char* name) {
  for (int i = 0; i < ustage_num_configs(); ++i) {
    const char* n = ustage_config(i).name;
    if (std::strcmp(n, name) == 0 || std::strcmp(n + 7, name) == 0) return i;  // "ustage " prefix optional
  }
  return -1;
}

bool ustage_config_fits(int id, const ConvArgs& a) {
  const UstageConfig& c = ustage_config(id);
  return a.q == nullptr && a.K == ustage::kK && a.cin_p == c.cin && a.cout_p == c.cout && a.cout <= c.cout &&
         a.cout_w >= c.cout;
}

int ustage_blocks_per_sm(int id) { return instances().at(size_t(id)).blocks_per_sm; }

size_t ustage_smem_bytes(int id) { return instances().at(size_t(id)).smem; }

void ustage_init() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int device = 0, smem_optin = 0;
  SCN_CUDA_CHECK(cudaGetDevice(&device));
  SCN_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const bool wgmma = igemm_wgmma_device();
  for (UstageInstance& in : instances()) {
    in.blocks_per_sm = 0;
    if (in.smem > size_t(smem_optin) || (in.cfg.wgmma && !wgmma)) continue;
    const auto* fn = reinterpret_cast<const void*>(in.kernel);
    SCN_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(in.smem)));
    int bps = 0;
    SCN_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, fn, in.cfg.warps * in.cfg.teams * 32, in.smem));
    in.blocks_per_sm = bps;
    cudaFuncAttributes fa{};
    SCN_CUDA_CHECK(cudaFuncGetAttributes(&fa, fn));
    in.pdl = fa.binaryVersion >= 90;
  }
}

bool ustage_fits_device(int id) { return instances().at(size_t(id)).blocks_per_sm > 0; }

void launch_ustage(int id, const ConvArgs& a, const StagePlan& p, int sm_count, cudaStream_t st, bool pdl) {
  const UstageInstance& in = instances().at(size_t(id));
  SCN_CHECK(in.blocks_per_sm > 0, "CUDA kernel '", in.cfg.name, "' does not fit on this GPU (", in.smem,
            " bytes of shared memory) or ustage_init() was not called");
  SCN_CHECK(ustage_config_fits(id, a), "CUDA kernel '", in.cfg.name, "' cannot run this convolution (cin_p ", a.cin_p,
            ", cout_p ", a.cout_p, ", K ", a.K, ", mode ", a.q ? "int8-aware" : "fp16", "): it needs cin_p ",
            in.cfg.cin, ", cout_p ", in.cfg.cout, ", K 27, fp16");
  SCN_CHECK(p.bm == in.cfg.bm && p.ucap == in.cfg.ucap && p.cap_out >= a.cap_out, "CUDA kernel '", in.cfg.name,
            "' needs a stage plan of ", in.cfg.bm, "-row tiles with room for ", in.cfg.ucap, " rows and ", a.cap_out,
            " output rows; got ", p.bm, " / ", p.ucap, " / ", p.cap_out);
  const int64_t tiles = tiles_for(a.cap_out, in.cfg.bm);
  const int64_t need = (tiles + in.cfg.teams - 1) / in.cfg.teams;
  const int64_t resident = int64_t(sm_count) * in.blocks_per_sm;
  const int64_t gx = need < resident ? need : resident;
  const unsigned blocks = unsigned(gx < 1 ? 1 : gx), threads = unsigned(in.cfg.warps * in.cfg.teams * 32);
  if (!(pdl && in.pdl)) {
    in.kernel<<<blocks, threads, in.smem, st>>>(a, p);
  } else {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = in.smem;
    cfg.stream = st;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    SCN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, in.kernel, a, p));
  }
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
