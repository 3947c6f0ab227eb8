// Shared by the robustness tests (soak, concurrency, determinism): a small model with the shape
// of a LiDAR backbone (submanifold + strided convs, a dense tail), synthetic frames, bitwise
// output comparison and the process's resident memory.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <array>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <unistd.h>

#include "core/half.h"
#include "engine/test_helpers.h"
#include "scn/engine.h"

#ifdef SCN_HAVE_SYNTH
#include "synthetic_frame.h"
#endif

namespace scn::robust {

/// The nuScenes grid (z, y, x) of CenterPoint.
inline Int3 lidar_grid() { return {41, 1440, 1440}; }

/// A small backbone on the 41 x 1440 x 1440 grid, 5 input channels:
///   conv0 subm k3 5->8 ReLU -> conv1 k3 s2 p1 8->16 ReLU (41x1440x1440 -> 21x720x720)
///   -> conv2 subm k3 16->16 ReLU -> add0(conv2, conv1) -> conv3 k3 s4 p1 16->16 ReLU
///   (-> 6x180x180) -> conv4 k(3,1,1) s(2,1,1) 16->16 (-> 2x180x180)
///   -> scatter0 [1, 16, 2, 180, 180] -> reshape0 [1, 32, 180, 180].
inline EngineBuilder small_backbone() {
  using test::random_conv;
  EngineBuilder b("<small_backbone>");
  ValueId x = b.push_input("0", 5);
  x = b.push_sparse_conv("conv0", x, random_conv(5, 8, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true, 11,
                                                 Activation::ReLU));
  ValueId y = b.push_sparse_conv("conv1", x, random_conv(8, 16, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1},
                                                         false, 12, Activation::ReLU));
  ValueId z = b.push_sparse_conv("conv2", y, random_conv(16, 16, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1},
                                                         true, 13, Activation::ReLU));
  z = b.push_add("add0", z, y);
  z = b.push_sparse_conv("conv3", z, random_conv(16, 16, {3, 3, 3}, {4, 4, 4}, {1, 1, 1}, {1, 1, 1}, false,
                                                 14, Activation::ReLU));
  z = b.push_sparse_conv("conv4", z, random_conv(16, 16, {3, 1, 1}, {2, 1, 1}, {0, 0, 0}, {1, 1, 1}, false,
                                                 15, Activation::None));
  DenseAttrs d;
  d.input_spatial_shape = {2, 180, 180};
  d.output_shape = {1, 16, 2, 180, 180};
  z = b.push_dense("scatter0", z, d);
  z = b.push_reshape("reshape0", z, {1, 32, 180, 180});
  b.push_output(z);
  return b;
}

struct Frame {
  Tensor features;  ///< [N, 5] float16
  Tensor indices;   ///< [N, 4] int32
  Int3 grid;
};

/// Random sites clustered around a few centres (objects) plus a ground-like sheet, distinct,
/// in the LiDAR grid; fp16 features in a LiDAR-like range. Used when scn_synth is absent.
inline Frame clustered_frame(int64_t voxels, uint64_t seed) {
  const Int3 g = lidar_grid();
  std::mt19937_64 rng(seed);
  std::unordered_set<int64_t> used;
  used.reserve(size_t(voxels) * 2);
  Frame f;
  f.grid = g;
  f.features = Tensor::empty({voxels, 5}, DType::Float16);
  f.indices = Tensor::empty({voxels, 4}, DType::Int32);
  int32_t* idx = f.indices.ptr<int32_t>();
  std::vector<std::array<int, 3>> centres;
  for (int c = 0; c < 64; ++c)
    centres.push_back({int(rng() % uint64_t(g[0])), int(rng() % uint64_t(g[1])), int(rng() % uint64_t(g[2]))});
  std::normal_distribution<double> spread(0.0, 40.0);
  int64_t n = 0;
  while (n < voxels) {
    int z, y, x;
    if (rng() % 3 == 0) {  // ground sheet
      z = 3 + int(rng() % 3);
      y = int(rng() % uint64_t(g[1]));
      x = int(rng() % uint64_t(g[2]));
    } else {
      const auto& c = centres[rng() % centres.size()];
      z = c[0] + int(spread(rng) / 10.0);
      y = c[1] + int(spread(rng));
      x = c[2] + int(spread(rng));
    }
    if (z < 0 || z >= g[0] || y < 0 || y >= g[1] || x < 0 || x >= g[2]) continue;
    const int64_t key = (int64_t(z) * g[1] + y) * g[2] + x;
    if (!used.insert(key).second) continue;
    idx[4 * n] = 0;
    idx[4 * n + 1] = z;
    idx[4 * n + 2] = y;
    idx[4 * n + 3] = x;
    uint16_t* feat = f.features.ptr<uint16_t>() + 5 * n;
    feat[0] = float_to_half(float(x) * 0.075f - 54.f);
    feat[1] = float_to_half(float(y) * 0.075f - 54.f);
    feat[2] = float_to_half(float(z) * 0.2f - 5.f);
    feat[3] = float_to_half(float(rng() % 256));
    feat[4] = float_to_half(float(rng() % 10) * 0.05f);
    ++n;
  }
  return f;
}

/// A LiDAR-like frame with exactly `voxels` voxels: scn_synth's rotating-sensor scene when it is
/// built, else clustered random sites.
inline Frame make_frame(int64_t voxels, uint64_t seed) {
#ifdef SCN_HAVE_SYNTH
  synth::FrameOptions o = synth::FrameOptions::nuscenes();
  o.voxels = voxels;
  o.seed = seed;
  const synth::Frame s = synth::generate_frame(o);
  Frame f;
  f.features = synth::features_tensor(s);
  f.indices = synth::indices_tensor(s);
  f.grid = {s.grid[0], s.grid[1], s.grid[2]};
  return f;
#else
  return clustered_frame(voxels, seed);
#endif
}

inline const char* frame_source() {
#ifdef SCN_HAVE_SYNTH
  return "scn_synth (rotating multi-beam sensor scene)";
#else
  return "clustered random sites (scn_synth not built)";
#endif
}

inline BuildOptions options_for(Backend backend, int64_t max_voxels, int threads = 2) {
  BuildOptions o;
  o.backend = backend;
  o.precision = Precision::Fp16;
  o.num_threads = threads;
  o.max_input_voxels = max_voxels;
  return o;
}

/// Every output of the engine after forward(), copied to the host (dense ones and sparse
/// features; sparse outputs also their indices).
inline std::vector<Tensor> host_outputs(Engine& e) {
  e.check_errors();
  std::vector<Tensor> out;
  for (int i = 0; i < e.num_outputs(); ++i) {
    out.push_back(e.output(i).to(Device::Host).clone());
    if (e.output_is_sparse(i)) out.push_back(e.output_indices(i).to(Device::Host).clone());
  }
  return out;
}

inline std::vector<Tensor> run_once(Engine& e, const Frame& f) {
  e.set_input(0, f.features, f.indices, f.grid);
  e.forward();
  return host_outputs(e);
}

/// "" when equal bit for bit, else what differs.
inline std::string bitwise_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return "different number of outputs";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape())
      return "output " + std::to_string(i) + ": shape " + a[i].shape_string() + " vs " + b[i].shape_string();
    if (a[i].dtype() != b[i].dtype()) return "output " + std::to_string(i) + ": dtype differs";
    if (a[i].bytes() && std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0) {
      const auto* pa = static_cast<const unsigned char*>(a[i].data());
      const auto* pb = static_cast<const unsigned char*>(b[i].data());
      size_t k = 0;
      while (pa[k] == pb[k]) ++k;
      return "output " + std::to_string(i) + ": first differing byte at " + std::to_string(k) + " of " +
             std::to_string(a[i].bytes());
    }
  }
  return "";
}

/// Resident set size of this process in bytes (/proc/self/statm), 0 where unavailable.
inline int64_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * int64_t(::sysconf(_SC_PAGESIZE)) : 0;
}

inline std::string backend_label(const ::testing::TestParamInfo<Backend>& p) {
  return p.param == Backend::Cpu ? "Cpu" : "Cuda";
}

/// Skips the test visibly when the backend is CUDA and no CUDA device is usable.
#define SCN_SKIP_WITHOUT_BACKEND(backend)                                                               \
  do {                                                                                                  \
    if ((backend) == ::scn::Backend::Cuda && !::scn::cuda_available())                                  \
      GTEST_SKIP() << "no CUDA device: this build of scn has no CUDA backend or no GPU is visible; "     \
                      "the CUDA variant of this test runs on a GPU machine";                            \
  } while (0)

}  // namespace scn::robust
