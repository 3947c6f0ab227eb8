// offset_split_check (the osplit kernel against a CPU reference and the implicit-GEMM tiles on the real frame's
// sites): what its fp16 and INT8 parts share — checks counted as failures, device buffers and site sets, random
// non-zero inputs, a conv problem on a level, timing by events — and the two parts' entry points.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/int8_conv.h"
#include "backends/cuda/igemm_offset_split.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/tile_choice.h"
#include "core/half.h"
#include "cuda/device_site_set.h"
#include "plan/int8_arith.h"
#include "scn/error.h"
#include "scn/tensor.h"
#include "scn/timing.h"

namespace scn::osplit_check {

using namespace scn::cuda;

#define CK(expr)                                                                                           \
  do {                                                                                                     \
    const cudaError_t e_ = (expr);                                                                         \
    if (e_ != cudaSuccess)                                                                                 \
      throw scn::Error(std::string("CUDA error in ") + #expr + ": " + cudaGetErrorString(e_) + " (line " + \
                       std::to_string(__LINE__) + ")");                                                    \
  } while (0)

// SMs of the small grids at most: far more slabs than two rounds of their teams on either level of the full frame
// (a smaller frame, --voxels, gets fewer: few_sms)
inline constexpr int kFewSms = 4;

inline int failures = 0;
inline void check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

/// True when a launch of osplit config `id` on `sm_count` SMs over `rows` rows must deal its slabs round by
/// round: more slabs than two rounds of the largest grid it can get (sm_count x blocks per SM x teams), the
/// kernel's switch from even runs per block (igemm_offset_split.cuh).
inline bool slabs_by_rounds(int id, int64_t rows, int sm_count) {
  const OsplitConfig& c = osplit_config(id);
  const int64_t slabs = (rows + c.rows - 1) / c.rows;
  const int64_t teams = int64_t(c.warps / c.groups) * osplit_blocks_per_sm(id) * sm_count;
  return slabs > 2 * teams;
}

/// The SMs of config `id`'s small grid over `rows` rows: the most, up to kFewSms, on which it deals its slabs by
/// rounds (1 when none does: check_few_sms then fails its premise).
inline int few_sms(int id, int64_t rows) {
  int sms = kFewSms;
  while (sms > 1 && !slabs_by_rounds(id, rows, sms)) --sms;
  return sms;
}

/// Osplit config `id` on a grid of few SMs (few_sms) over `rows` rows: it must take its slabs by rounds, and `run(sms)`
/// (the launch there, returning the output) must give `want`, the full grid's bits (a slab is summed the same way
/// wherever it runs).
template <class Run, class Out>
void check_few_sms(int id, int64_t rows, const Run& run, const Out& want) {
  const int sms = few_sms(id, rows);
  const std::string name = osplit_config(id).name, grid = " on the grid of " + std::to_string(sms) + " SMs";
  check(slabs_by_rounds(id, rows, sms), name + " takes its slabs by rounds" + grid);
  check(run(sms) == want, name + " bitwise equal" + grid + " (slabs by rounds)");
}

/// A device buffer freed on scope exit.
struct Buf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Buf(size_t n) : bytes(n) { CK(cudaMalloc(&p, n < 16 ? 16 : n)); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
  template <typename T>
  void up(const std::vector<T>& v) {
    CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  template <typename T>
  std::vector<T> down(size_t n) const {
    std::vector<T> v(n);
    CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
};

/// A site set over an s0 x s1 x s2 grid (one frame) with its buffers, its bitmap cleared.
struct Sites : cudatest::DeviceSiteSet {
  Sites(int s0, int s1, int s2, int64_t cap, bool with_perm) : DeviceSiteSet({1, s0, s1, s2}, cap, with_perm) {
    if (!ok()) {
      std::fprintf(stderr, "offset_split_check: out of device memory for a %dx%dx%d site set\n", s0, s1, s2);
      std::exit(1);
    }
    CK(cudaMemset(bits.p, 0, size_t(s.words) * 8));
  }
  /// The device row count.
  int rows() const {
    int n = 0;
    CK(cudaMemcpy(&n, count.p, sizeof n, cudaMemcpyDeviceToHost));
    return n;
  }
};

inline std::vector<uint16_t> random_halves(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.05f, 1.f);
  std::bernoulli_distribution sign(0.5);
  std::vector<uint16_t> v(n);
  for (auto& h : v) h = float_to_half((sign(rng) ? -1.f : 1.f) * u(rng) * scale);  // never zero
  return v;
}

/// One conv problem: rows n of a map, input rows, channels.
struct Problem {
  const char* level;
  int64_t n = 0, cap = 0;
  int cin = 16, cout = 16;
  const int32_t* d_map = nullptr;
  const int* d_count = nullptr;
  std::vector<int32_t> map;  // host copy [n][27]
  std::vector<uint16_t> x;   // host copy [n_in][cin]
  const void* d_x = nullptr;
};

inline constexpr int kK = 27;
inline constexpr int kCoutW = 128;

/// Median and minimum of `runs` launches timed one by one with events (back to back on one stream).
template <typename F>
inline std::pair<double, double> time_kernel(F launch, int runs, cudaStream_t st) {
  for (int i = 0; i < 20; ++i) launch();
  std::vector<cudaEvent_t> ev(size_t(runs) + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  CK(cudaEventRecord(ev[0], st));
  for (int i = 0; i < runs; ++i) {
    launch();
    CK(cudaEventRecord(ev[size_t(i) + 1], st));
  }
  CK(cudaStreamSynchronize(st));
  std::vector<double> t(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, ev[size_t(i)], ev[size_t(i) + 1]));
    t[size_t(i)] = ms * 1000.0;
  }
  for (auto& e : ev) CK(cudaEventDestroy(e));
  const scn::TimingStats s = scn::summarize_timings(t);
  return {s.median, s.min};
}

struct Row {
  std::string level, epi, kernel;
  int groups;
  double median_us, min_us;
  int bps;
};

/// The fp16 osplit configs (and the INT8 engines' fp16-operand ones) on problem p, against the CPU reference and
/// the tiles; rows of their timings appended to `table` (offset_split_check_fp16.cpp).
void run_problem(const Problem& p, int runs, bool quick, int sm, int cc_major, cudaStream_t st, std::mt19937& rng,
                 std::vector<Row>& table);
/// The int8-operand osplit configs on problem p against the int8 tiles (offset_split_check_int8.cpp).
void run_problem_int8(const Problem& p, int runs, bool quick, int sm, int cc_major, cudaStream_t st, std::mt19937& rng,
                      std::vector<Row>& table);

}  // namespace scn::osplit_check
