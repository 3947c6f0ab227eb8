// Helpers for the CUDA backend tests: run a builder graph on the CPU reference (fp32) and on the
// CUDA engine (fp16), bring both outputs to the host as float and compare them per site.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "cuda/test_autotune.h"
#include "engine/test_helpers.h"
#include "scn/engine.h"

namespace scn::cudatest {

/// The real nuScenes frame as CenterPoint's input (zyx indices, grid 41x1440x1440), from SCN_DATA_DIR
/// or ../shared's copy (SCN_SHARED_DATA_DIR); false when it is not there (`dir` says where it looked).
inline bool load_real_frame(test::SparseInput* in, std::string* dir) {
  const char* env = std::getenv("SCN_DATA_DIR");
#ifdef SCN_SHARED_DATA_DIR
  *dir = env ? env : std::string(SCN_SHARED_DATA_DIR) + "/nuscenes-centerpoint";
#else
  *dir = env ? env : std::string("nuscenes-centerpoint");
#endif
  if (!std::ifstream(*dir + "/in_features.torch.fp16.tensor")) return false;
  in->features = Tensor::load(*dir + "/in_features.torch.fp16.tensor");
  in->indices = Tensor::load(*dir + "/in_indices_zyx.torch.int32.tensor");
  in->grid = {41, 1440, 1440};
  in->batch = 1;
  return true;
}

#define SCN_REQUIRE_CUDA()                                                                               \
  do {                                                                                                   \
    if (!::scn::cuda_available())                                                                        \
      GTEST_SKIP() << "no CUDA device: this build of scn has no CUDA backend or no GPU is visible; the " \
                      "CUDA backend tests run on a GPU machine (scripts/gpu_check.sh)";                  \
  } while (0)

inline BuildOptions cpu_options(Precision p = Precision::Fp32) {
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = p;
  return o;
}

inline BuildOptions cuda_options(bool graph = true, int64_t max_input_voxels = 0, int max_batch = 1) {
  BuildOptions o;
  o.backend = Backend::Cuda;
  o.precision = Precision::Fp16;
  o.cuda.autotune = test_autotune();
  o.cuda_graph = graph;
  o.max_input_voxels = max_input_voxels;
  o.max_batch = max_batch;
  return o;
}

/// `o` with CudaOptions::tile forced to `tile` (which turns the autotuner off).
inline BuildOptions with_tile(BuildOptions o, const std::string& tile) {
  o.cuda.tile = tile;
  return o;
}

/// Host float copy of any tensor (float16 / float32, host or device).
inline std::vector<float> to_floats(const Tensor& t) {
  const Tensor h = t.to(Device::Host);
  std::vector<float> v(size_t(h.numel()));
  if (h.dtype() == DType::Float16) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = half_to_float(h.ptr<uint16_t>()[i]);
  } else {
    std::memcpy(v.data(), h.data(), v.size() * 4);
  }
  return v;
}

inline std::vector<int32_t> to_ints(const Tensor& t) {
  const Tensor h = t.to(Device::Host);
  return std::vector<int32_t>(h.ptr<int32_t>(), h.ptr<int32_t>() + h.numel());
}

/// Raw bytes of a (device) tensor, for bitwise comparisons.
inline std::vector<uint8_t> to_bytes(const Tensor& t) {
  const Tensor h = t.to(Device::Host);
  const auto* p = static_cast<const uint8_t*>(h.data());
  return std::vector<uint8_t>(p, p + h.bytes());
}

struct Metrics {
  double rel_l2 = 0, cosine = 1, max_abs = 0, ref_max = 0;
  int64_t n = 0;
};

inline Metrics compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Metrics m;
  m.n = int64_t(ref.size());
  double num = 0, den = 0, dot = 0, gg = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double a = got[i], b = ref[i];
    num += (a - b) * (a - b);
    den += b * b;
    dot += a * b;
    gg += a * a;
    m.max_abs = std::max(m.max_abs, std::fabs(a - b));
    m.ref_max = std::max(m.ref_max, std::fabs(b));
    if (!std::isfinite(a)) m.max_abs = INFINITY;
  }
  m.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  m.cosine = (den > 0 && gg > 0) ? dot / std::sqrt(den * gg) : (num == 0 ? 1.0 : 0.0);
  return m;
}

inline std::string describe(const Metrics& m) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "rel-L2 %.3e, cosine %.8f, max|diff| %.3e (max|ref| %.3e, %lld values)", m.rel_l2,
                m.cosine, m.max_abs, m.ref_max, static_cast<long long>(m.n));
  return buf;
}

/// A sparse output reordered to the reference's site order (sites must match exactly).
inline std::vector<float> align_sparse(const Tensor& feats, const Tensor& idx, const Tensor& ref_idx, int channels,
                                       std::string* error) {
  const std::vector<float> f = to_floats(feats);
  const std::vector<int32_t> gi = to_ints(idx), ri = to_ints(ref_idx);
  if (gi.size() != ri.size()) {
    *error = "different number of output sites: " + std::to_string(gi.size() / 4) + " vs reference " +
             std::to_string(ri.size() / 4);
    return {};
  }
  std::map<std::tuple<int, int, int, int>, int64_t> row;
  for (size_t i = 0; i < gi.size(); i += 4) row[{gi[i], gi[i + 1], gi[i + 2], gi[i + 3]}] = int64_t(i / 4);
  std::vector<float> out(ri.size() / 4 * size_t(channels));
  for (size_t i = 0; i < ri.size(); i += 4) {
    const auto it = row.find({ri[i], ri[i + 1], ri[i + 2], ri[i + 3]});
    if (it == row.end()) {
      *error = "reference site (" + std::to_string(ri[i]) + ", " + std::to_string(ri[i + 1]) + ", " +
               std::to_string(ri[i + 2]) + ", " + std::to_string(ri[i + 3]) + ") missing from the CUDA output";
      return {};
    }
    std::memcpy(&out[i / 4 * size_t(channels)], &f[size_t(it->second) * size_t(channels)],
                size_t(channels) * sizeof(float));
  }
  return out;
}

struct RunResult {
  std::vector<Tensor> outputs, indices;
};

inline RunResult run(Engine& e, const std::vector<test::SparseInput>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k)
    e.set_input(int(k), inputs[k].features, inputs[k].indices, inputs[k].grid, inputs[k].batch);
  e.forward();
  e.check_errors();
  RunResult r;
  for (int i = 0; i < e.num_outputs(); ++i) {
    r.outputs.push_back(e.output(i).to(Device::Host));
    r.indices.push_back(e.output_is_sparse(i) ? e.output_indices(i).to(Device::Host) : Tensor());
  }
  return r;
}

/// Runs the graph on the CPU (fp32) and CUDA (fp16) and checks every output.
inline void expect_close(const EngineBuilder& b, const std::vector<test::SparseInput>& inputs, double rel_tol = 1e-3,
                         const BuildOptions& gpu_opts = cuda_options(), Metrics* out_metrics = nullptr) {
  auto cpu = b.build(cpu_options());
  auto gpu = b.build(gpu_opts);
  const RunResult rc = run(*cpu, inputs);
  const RunResult rg = run(*gpu, inputs);
  for (int i = 0; i < cpu->num_outputs(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    std::vector<float> ref = to_floats(rc.outputs[size_t(i)]);
    std::vector<float> got;
    if (cpu->output_is_sparse(i)) {
      const int channels = int(rc.outputs[size_t(i)].ndim() == 2 ? rc.outputs[size_t(i)].dim(1) : 0);
      ASSERT_EQ(rg.outputs[size_t(i)].ndim(), 2);
      ASSERT_EQ(rg.outputs[size_t(i)].dim(1), channels);
      std::string err;
      got = align_sparse(rg.outputs[size_t(i)], rg.indices[size_t(i)], rc.indices[size_t(i)], channels, &err);
      ASSERT_TRUE(err.empty()) << err;
    } else {
      ASSERT_EQ(rg.outputs[size_t(i)].shape(), rc.outputs[size_t(i)].shape());
      got = to_floats(rg.outputs[size_t(i)]);
    }
    ASSERT_EQ(got.size(), ref.size());
    const Metrics m = compare(got, ref);
    if (out_metrics) *out_metrics = m;
    EXPECT_LE(m.rel_l2, rel_tol) << describe(m);
    EXPECT_LE(m.max_abs, 8e-3 * std::max(1.0, m.ref_max)) << describe(m);
  }
}

}  // namespace scn::cudatest
