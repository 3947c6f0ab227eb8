// Standalone GPU check and timing of the warp-independent implicit GEMM (osplit, igemm_offset_split.cuh)
// against a CPU fp32 reference and against the implicit-GEMM tiles of launch_igemm, on the real
// nuScenes frame's sites:
//   level 0: the frame's 79,745 input sites (input kernel, rank, perm), the 3x3x3 submanifold map,
//            16 channels;
//   level 1: the 3x3x3 stride-2 output sites of level 0 (strided mark, rank, coordinates, as the engine
//            builds them: 69,276 sites on the frame) and their submanifold map, 32 channels;
//   the strided conv between them: 16 -> 32 from level 0 to level 1, as CenterPoint's conv5.
// Features, weights, biases and residuals are random (seeded, non-zero). Each level runs two epilogues:
// ReLU, and the SparseBasicBlock form (no activation, residual add, ReLU after).
// Checks (exit 1 on any failure): every kernel vs the CPU reference (rel-L2 < 1e-3 with the same fp16
// rounding of the output); osplit vs the igemm tiles (cosine > 0.99999; bitwise for P = 1, whose
// summation order is theirs); all osplit configs of one offset-group class P bitwise equal; two runs
// bitwise equal, and equal on a grid of four SMs (fewer for a small --voxels frame: osplit's slabs by rounds, not in
// even runs). INT8 engines (int8 rows of the same channels, random non-zero int8 inputs and weights, three
// quantization-aware epilogues: int8 y; int8 Add of an int8 residual; fp16 y with a second int8 output): every int8
// osplit config bitwise equal to the int8 tiles (and to a host reference of docs/int8.md's arithmetic for the first
// epilogue). Timing: CUDA events around each launch, back to back after warm-up, median of --runs. Exit 77 (ctest:
// skipped) without a GPU or without the frame.
//
//   offset_split_check [--data DIR] [--runs N] [--quick] [--voxels N]
// --voxels N takes the frame's first N voxels only (compute-sanitizer's racecheck runs every config on them:
// scripts/gpu_sanitize.sh).
#include "cuda/offset_split_check.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace scn;
using namespace scn::cuda;
using namespace scn::osplit_check;

int main(int argc, char** argv) {
  std::string data;
  if (const char* d = std::getenv("SCN_DATA_DIR")) data = d;
#ifdef SCN_SHARED_DATA_DIR
  if (data.empty()) data = std::string(SCN_SHARED_DATA_DIR) + "/nuscenes-centerpoint";
#endif
  // line by line, so a run cut by a time limit (under compute-sanitizer) still shows how far it came
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int runs = 300;
  bool quick = false;
  int64_t max_voxels = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--data" && i + 1 < argc) {
      data = argv[++i];
    } else if (s == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (s == "--quick") {
      quick = true;
    } else if (s == "--voxels" && i + 1 < argc) {
      max_voxels = std::atoll(argv[++i]);
      if (max_voxels <= 0) {
        std::fprintf(stderr, "--voxels takes a positive count, got '%s'\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--data DIR] [--runs N] [--quick] [--voxels N]\n", argv[0]);
      return 2;
    }
  }
  if (quick) runs = std::min(runs, 200);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    cudaGetLastError();
    std::printf("SKIP: no CUDA device visible (offset_split_check runs on a GPU machine)\n");
    return 77;
  }
  const std::string idx_path = data + "/in_indices_zyx.torch.int32.tensor";
  if (!std::ifstream(idx_path)) {
    std::printf("SKIP: the real frame is not at %s (--data DIR or SCN_DATA_DIR)\n", idx_path.c_str());
    return 77;
  }
  try {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sm = prop.multiProcessorCount;
    std::printf("device: %s (cc %d.%d, %d SMs), runs per timing %d%s\n", prop.name, prop.major, prop.minor, sm, runs,
                quick ? " (--quick)" : "");
    if (prop.major < 8) {
      std::printf("SKIP: compute capability %d.%d < 8.0 (mma.sync m16n8k16)\n", prop.major, prop.minor);
      return 77;
    }
    igemm_init();
    osplit_init();
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    std::mt19937 rng(19);

    // ---- level 0: the frame's sites, as the engine's input step builds them
    const Tensor idx = Tensor::load(idx_path);
    SCN_CHECK(idx.ndim() == 2 && idx.dim(1) == 4 && idx.dtype() == DType::Int32, idx_path,
              ": expected int32 [N, 4] indices");
    const int64_t n0 = max_voxels > 0 ? std::min(idx.dim(0), max_voxels) : idx.dim(0);
    if (n0 < idx.dim(0)) std::printf("the frame's first %lld of %lld voxels\n", (long long)n0, (long long)idx.dim(0));
    Buf d_idx(size_t(n0) * 16), d_feat(size_t(n0) * 32), x0(size_t(n0) * 32);
    CK(cudaMemcpy(d_idx.p, idx.data(), size_t(n0) * 16, cudaMemcpyHostToDevice));
    const std::vector<uint16_t> f0 = random_halves(size_t(n0) * 16, 1.f, rng);
    d_feat.up(f0);
    Buf err0(sizeof(ErrSlot) * kNumErrKinds), err1(sizeof(ErrSlot) * kNumErrKinds);
    std::vector<ErrSlot> einit(kNumErrKinds, ErrSlot{0, LLONG_MAX, 0, 0});
    err0.up(einit);
    err1.up(einit);
    Sites s0(41, 1440, 1440, n0, true);
    const int n0i = int(n0);
    CK(cudaMemcpy(s0.count.p, &n0i, 4, cudaMemcpyHostToDevice));
    InputRows rows0;
    rows0.features = d_feat.p;
    rows0.indices = d_idx.as<int32_t>();
    launch_input_sites_features(rows0, false, 16, 16, x0.p, s0.s, err0.as<ErrSlot>(), sm, st);
    launch_rank(s0.s, false, nullptr, sm, st);
    launch_build_perm(s0.s, sm, st);
    const MapGeom subm{3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    Buf map0(size_t(n0) * kK * 4);
    launch_subm_map(s0.s, subm, map0.as<int32_t>(), MapKernel::Rows, sm, st);

    // ---- level 1: the stride-2 output sites (the engine's strided map step), their subm map
    const int64_t cap1 = 2 * n0;
    Sites s1(21, 720, 720, cap1, false);
    const MapGeom down{3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1};
    launch_strided_mark(s0.s, s1.s, down, sm, st);
    launch_rank(s1.s, true, err1.as<ErrSlot>(), sm, st);
    launch_emit_coords(s1.s, sm, st);
    Buf map1(size_t(cap1) * kK * 4);
    launch_subm_map(s1.s, subm, map1.as<int32_t>(), MapKernel::Rows, sm, st);
    CK(cudaStreamSynchronize(st));
    const std::vector<ErrSlot> e0 = err0.down<ErrSlot>(kNumErrKinds), e1 = err1.down<ErrSlot>(kNumErrKinds);
    for (int k = 0; k < kNumErrKinds; ++k)
      SCN_CHECK(e0[size_t(k)].hits == 0 && e1[size_t(k)].hits == 0, "site construction reported error kind ", k);
    const int n1 = s1.rows();
    SCN_CHECK(n1 > 0 && n1 <= cap1, "level-1 site count ", n1, " outside (0, ", cap1, "]");
    Buf x1(size_t(n1) * 64);
    const std::vector<uint16_t> f1 = random_halves(size_t(n1) * 32, 1.f, rng);
    x1.up(f1);

    // a conv on the frame: its map (and a host copy for the reference) over the output sites `out`, whose
    // first n of cap rows are the frame's, and its input rows (host copy x, device d_x)
    auto problem = [&](const char* level, int64_t n, int64_t cap, int cin, int cout, const Buf& map, const Sites& out,
                       const std::vector<uint16_t>& x, const Buf& d_x) {
      Problem p;
      p.level = level;
      p.n = n;
      p.cap = cap;
      p.cin = cin;
      p.cout = cout;
      p.d_map = map.as<int32_t>();
      p.d_count = out.count.p;
      p.map = map.down<int32_t>(size_t(n) * kK);
      p.x = x;
      p.d_x = d_x.p;
      return p;
    };
    const Problem p0 = problem("level0 16ch", n0, n0, 16, 16, map0, s0, x0.down<uint16_t>(size_t(n0) * 16), x0);
    const Problem p1 = problem("level1 32ch", n1, cap1, 32, 32, map1, s1, f1, x1);
    // ---- the strided conv: level 0 -> level 1 (16 -> 32)
    Buf map01(size_t(cap1) * kK * 4);
    launch_strided_map(s0.s, s1.s, down, map01.as<int32_t>(), MapKernel::Rows, sm, st);
    CK(cudaStreamSynchronize(st));
    const Problem p01 = problem("strided 16-32", n1, cap1, 16, 32, map01, s1, p0.x, x0);

    // ---- the strided conv: level 1 -> level 2 (32 -> 64)
    const int64_t cap2 = n1;
    Sites s2(11, 360, 360, cap2, false);
    Buf err2(sizeof(ErrSlot) * kNumErrKinds);
    err2.up(einit);
    launch_strided_mark(s1.s, s2.s, down, sm, st);
    launch_rank(s2.s, true, err2.as<ErrSlot>(), sm, st);
    launch_emit_coords(s2.s, sm, st);
    Buf map12(size_t(cap2) * kK * 4);
    launch_strided_map(s1.s, s2.s, down, map12.as<int32_t>(), MapKernel::Rows, sm, st);
    CK(cudaStreamSynchronize(st));
    const std::vector<ErrSlot> e2 = err2.down<ErrSlot>(kNumErrKinds);
    for (int k = 0; k < kNumErrKinds; ++k) SCN_CHECK(e2[size_t(k)].hits == 0, "level-2 sites reported error kind ", k);
    const int n2 = s2.rows();
    SCN_CHECK(n2 > 0 && n2 <= cap2, "level-2 site count ", n2, " outside (0, ", cap2, "]");
    const Problem p12 = problem("strided 32-64", n2, cap2, 32, 64, map12, s2, p1.x, x1);

    for (const Problem* p : {&p0, &p1, &p01, &p12}) {
      int64_t pairs = 0;
      for (int32_t v : p->map) pairs += v >= 0;
      std::printf("%s: %lld sites, %lld pairs (%.1f per row)\n", p->level, (long long)p->n, (long long)pairs,
                  double(pairs) / double(p->n));
    }

    std::vector<Row> table;
    run_problem(p0, runs, quick, sm, prop.major, st, rng, table);
    run_problem(p1, runs, quick, sm, prop.major, st, rng, table);
    run_problem(p01, runs, quick, sm, prop.major, st, rng, table);
    run_problem(p12, runs, quick, sm, prop.major, st, rng, table);
    run_problem_int8(p0, runs, quick, sm, prop.major, st, rng, table);
    run_problem_int8(p1, runs, quick, sm, prop.major, st, rng, table);
    run_problem_int8(p01, runs, quick, sm, prop.major, st, rng, table);

    std::printf("\n%-12s %-15s %-26s %2s %10s %10s %6s\n", "level", "epilogue", "kernel", "P", "median us", "min us",
                "blk/SM");
    for (const Row& r : table)
      std::printf("%-12s %-15s %-26s %2s %10.2f %10.2f %6d\n", r.level.c_str(), r.epi.c_str(), r.kernel.c_str(),
                  r.groups ? std::to_string(r.groups).c_str() : "-", r.median_us, r.min_us, r.bps);
    for (const char* lv : {"level0 16ch", "level1 32ch", "strided 16-32", "strided 32-64", "level0 16ch i8",
                           "level1 32ch i8", "strided 16-32 i8"}) {
      double best_ig = 1e30, best_os = 1e30;
      std::string nig, nos;
      for (const Row& r : table) {
        if (r.level != lv || (r.epi != "relu" && r.epi != "q relu")) continue;
        if (r.groups == 0 && r.median_us < best_ig) best_ig = r.median_us, nig = r.kernel;
        if (r.groups > 0 && r.median_us < best_os) best_os = r.median_us, nos = r.kernel;
      }
      if (!nig.empty() && !nos.empty())
        std::printf("best %s: %s %.2f us, %s %.2f us (%.2fx)\n", lv, nig.c_str(), best_ig, nos.c_str(), best_os,
                    best_ig / best_os);
    }
    CK(cudaStreamDestroy(st));
  } catch (const std::exception& ex) {
    std::printf("FAIL: %s\n", ex.what());
    return 1;
  }
  std::printf("\n%s: %d failed check(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
