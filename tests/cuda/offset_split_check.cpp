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
// bitwise equal, and equal on a grid of four SMs (osplit's slabs by rounds, not in even runs). INT8 engines (int8 rows
// of the same channels, random non-zero int8 inputs and weights, three quantization-aware epilogues: int8 y; int8 Add
// of an int8 residual; fp16 y with a second int8 output): every int8 osplit config bitwise equal to the int8 tiles (and
// to a host reference of docs/int8.md's arithmetic for the first epilogue). Timing: CUDA events around each launch,
// back to back after warm-up, median of --runs. Exit 77 (ctest: skipped) without a GPU or without the frame.
//
//   offset_split_check [--data DIR] [--runs N] [--quick]
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

using namespace scn;
using namespace scn::cuda;

namespace {

#define CK(expr)                                                                                           \
  do {                                                                                                     \
    const cudaError_t e_ = (expr);                                                                         \
    if (e_ != cudaSuccess)                                                                                 \
      throw scn::Error(std::string("CUDA error in ") + #expr + ": " + cudaGetErrorString(e_) + " (line " + \
                       std::to_string(__LINE__) + ")");                                                    \
  } while (0)

// SMs of the small grids: far more slabs than two rounds of their teams on either level (checked per config)
constexpr int kFewSms = 4;

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

/// True when a launch of osplit config `id` on `sm_count` SMs over `rows` rows must deal its slabs round by
/// round: more slabs than two rounds of the largest grid it can get (sm_count x blocks per SM x teams), the
/// kernel's switch from even runs per block (igemm_offset_split.cuh).
bool slabs_by_rounds(int id, int64_t rows, int sm_count) {
  const OsplitConfig& c = osplit_config(id);
  const int64_t slabs = (rows + c.rows - 1) / c.rows;
  const int64_t teams = int64_t(c.warps / c.groups) * osplit_blocks_per_sm(id) * sm_count;
  return slabs > 2 * teams;
}

/// Osplit config `id` on the grid of kFewSms SMs over `rows` rows: it must take its slabs by rounds, and `run` (the
/// launch there, returning the output) must give `want`, the full grid's bits (a slab is summed the same way wherever
/// it runs).
template <class Run, class Out>
void check_few_sms(int id, int64_t rows, const Run& run, const Out& want) {
  const std::string name = osplit_config(id).name, grid = " on the grid of " + std::to_string(kFewSms) + " SMs";
  check(slabs_by_rounds(id, rows, kFewSms), name + " takes its slabs by rounds" + grid);
  check(run() == want, name + " bitwise equal" + grid + " (slabs by rounds)");
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

std::vector<uint16_t> random_halves(size_t n, float scale, std::mt19937& rng) {
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

struct Epi {
  const char* name;
  Act act;
  bool residual;
  bool relu_after;
};

constexpr int kK = 27;
constexpr int kCoutW = 128;

/// CPU fp32 reference with the engine's output rounding: y = half(act(acc + b)), + residual, ReLU.
std::vector<float> reference(const Problem& p, const std::vector<uint16_t>& w, const std::vector<float>& bias,
                             const Epi& e, const std::vector<uint16_t>& res) {
  std::vector<float> wf(w.size());
  for (size_t i = 0; i < w.size(); ++i) wf[i] = half_to_float(w[i]);
  std::vector<float> xf(p.x.size());
  for (size_t i = 0; i < p.x.size(); ++i) xf[i] = half_to_float(p.x[i]);
  std::vector<float> y(size_t(p.n) * p.cout), acc(size_t(p.cout));
  for (int64_t o = 0; o < p.n; ++o) {
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int k = 0; k < kK; ++k) {
      const int32_t in = p.map[size_t(o) * kK + size_t(k)];
      if (in < 0) continue;
      const float* xr = xf.data() + size_t(in) * size_t(p.cin);
      for (int c = 0; c < p.cout; ++c) {
        const float* wr = wf.data() + (size_t(k) * kCoutW + size_t(c)) * size_t(p.cin);
        float s = 0.f;
        for (int ci = 0; ci < p.cin; ++ci) s += xr[ci] * wr[ci];
        acc[size_t(c)] += s;
      }
    }
    for (int c = 0; c < p.cout; ++c) {
      float v = acc[size_t(c)] + bias[size_t(c)];
      if (e.act == Act::ReLU) v = v > 0.f ? v : 0.f;
      v = round_to_half(v);
      if (e.residual) v = round_to_half(v + half_to_float(res[size_t(o) * size_t(p.cout) + size_t(c)]));
      if (e.relu_after) v = v > 0.f ? v : 0.f;
      y[size_t(o) * size_t(p.cout) + size_t(c)] = v;
    }
  }
  return y;
}

double rel_l2(const std::vector<uint16_t>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(half_to_float(got[i])) - want[i];
    num += d * d;
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

double cosine(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = half_to_float(a[i]), y = half_to_float(b[i]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return ab / std::sqrt(aa * bb + 1e-300);
}

/// Median and minimum of `runs` launches timed one by one with events (back to back on one stream).
template <typename F>
std::pair<double, double> time_kernel(F launch, int runs, cudaStream_t st) {
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

void run_problem(const Problem& p, int runs, bool quick, int sm, int cc_major, cudaStream_t st, std::mt19937& rng,
                 std::vector<Row>& table) {
  const size_t out_elems = size_t(p.n) * size_t(p.cout);
  // weights [27][128][cin] (rows >= cout zero), bias [128]
  std::vector<uint16_t> w(size_t(kK) * kCoutW * size_t(p.cin), 0);
  const float wscale = 1.f / std::sqrt(float(kK * p.cin) * 0.3f);
  for (int k = 0; k < kK; ++k)
    for (int c = 0; c < p.cout; ++c) {
      auto r = random_halves(size_t(p.cin), wscale, rng);
      std::copy(r.begin(), r.end(), w.begin() + long((size_t(k) * kCoutW + size_t(c)) * size_t(p.cin)));
    }
  std::vector<float> bias(kCoutW, 0.f);
  for (int c = 0; c < p.cout; ++c) bias[size_t(c)] = half_to_float(random_halves(1, 0.2f, rng)[0]);
  std::vector<uint16_t> res = random_halves(out_elems, 1.f, rng);
  Buf d_w(w.size() * 2), d_bias(bias.size() * 4), d_res(res.size() * 2);
  d_w.up(w);
  d_bias.up(bias);
  d_res.up(res);

  const Epi epis[] = {{"relu", Act::ReLU, false, false}, {"sbb(+res,relu)", Act::None, true, true}};
  for (const Epi& e : epis) {
    std::printf("\n== %s: %lld rows, %d -> %d channels, epilogue %s\n", p.level, (long long)p.n, p.cin, p.cout, e.name);
    const std::vector<float> want = reference(p, w, bias, e, res);
    ConvArgs a;
    a.x = p.d_x;
    a.out_in = p.d_map;
    a.w = d_w.p;
    a.bias = d_bias.as<float>();
    a.residual = e.residual ? d_res.p : nullptr;
    a.n_out = p.d_count;
    a.cap_out = p.cap;
    a.K = kK;
    a.cin_p = p.cin;
    a.cout = p.cout;
    a.cout_p = p.cout;
    a.cout_w = kCoutW;
    a.act = e.act;
    a.relu_after = e.relu_after;
    Buf y(out_elems * 2);
    auto result = [&]() {
      CK(cudaStreamSynchronize(st));
      return y.down<uint16_t>(out_elems);
    };

    // the implicit-GEMM tiles the autotuner would time for this conv (split class 1)
    std::vector<uint16_t> igemm_out;
    for (const int id : tune_candidates(ConvShape{p.cin, p.cout, kK, 0}, cc_major, 1)) {
      const IgemmConfig& c = igemm_config(id);
      const char* nm = c.name;
      Buf wt(c.tma ? igemm_tile_weights(id, w, kK, kCoutW, p.cin, p.cout).size() * 2 : 16);
      if (c.tma) wt.up(igemm_tile_weights(id, w, kK, kCoutW, p.cin, p.cout));
      a.w_tma = wt.p;
      a.y = y.p;
      CK(cudaMemset(y.p, 0xff, y.bytes));
      launch_igemm(id, a, sm, st);
      const std::vector<uint16_t> got = result();
      const double rl = rel_l2(got, want);
      check(rl < 1e-3, std::string(nm) + " vs CPU fp32: rel-L2 " + std::to_string(rl));
      if (igemm_out.empty())
        igemm_out = got;
      else
        check(got == igemm_out, std::string(nm) + " bitwise equal to the first igemm tile");
      const auto t = time_kernel([&] { launch_igemm(id, a, sm, st); }, runs, st);
      table.push_back({p.level, e.name, c.name, 0, t.first, t.second, igemm_blocks_per_sm(id)});
    }
    a.w_tma = nullptr;

    // osplit configs: per class P the first output is the class's reference
    std::vector<std::pair<int, std::vector<uint16_t>>> per_class;
    for (int id = 0; id < osplit_num_configs(); ++id) {
      if (!osplit_config_fits(id, a) || !osplit_fits_device(id)) continue;
      const OsplitConfig& c = osplit_config(id);
      a.y = y.p;
      CK(cudaMemset(y.p, 0xff, y.bytes));
      launch_osplit(id, a, sm, st);
      const std::vector<uint16_t> got = result();
      const double rl = rel_l2(got, want);
      check(rl < 1e-3, std::string(c.name) + " vs CPU fp32: rel-L2 " + std::to_string(rl));
      if (!igemm_out.empty()) {
        const double cs = cosine(got, igemm_out);
        check(cs > 0.99999, std::string(c.name) + " vs igemm: cosine " + std::to_string(cs));
        if (c.groups == 1) check(got == igemm_out, std::string(c.name) + " bitwise equal to igemm (same order)");
      }
      CK(cudaMemset(y.p, 0xff, y.bytes));
      launch_osplit(id, a, sm, st);
      check(result() == got, std::string(c.name) + " bitwise equal run to run");
      check_few_sms(
          id, p.n,
          [&] {
            CK(cudaMemset(y.p, 0xff, y.bytes));
            launch_osplit(id, a, kFewSms, st);
            return result();
          },
          got);
      auto cls = std::find_if(per_class.begin(), per_class.end(), [&](const auto& q) { return q.first == c.groups; });
      if (cls == per_class.end())
        per_class.emplace_back(c.groups, got);
      else
        check(got == cls->second,
              std::string(c.name) + " bitwise equal to the first config of class P=" + std::to_string(c.groups));
      const auto t = time_kernel([&] { launch_osplit(id, a, sm, st); }, runs, st);
      table.push_back({p.level, e.name, c.name, c.groups, t.first, t.second, osplit_blocks_per_sm(id)});
    }

    // INT8 engines' fp16 convs with the quantizing epilogue (mode 1), here an fp16 y and a second, int8
    // output: y bitwise the fp16 config's of the same class P (P = 1: the tiles'), y2 = quantize(y)
    if (e.residual) continue;
    QEpilogue qe;
    qe.y_stride = p.cout;
    qe.y2_stride = p.cout;
    qe.y2_inv = 127.f / 1.5f;
    Buf d_q(sizeof(QEpilogue)), y2(out_elems);
    qe.y2 = y2.p;
    d_q.up(std::vector<QEpilogue>{qe});
    ConvArgs aq = a;
    aq.q = d_q.as<QEpilogue>();
    aq.y = y.p;
    for (int id = 0; id < osplit_num_configs(); ++id) {
      const OsplitConfig& c = osplit_config(id);
      if (c.mode != 1 || !osplit_config_fits(id, aq) || !osplit_fits_device(id)) continue;
      CK(cudaMemset(y.p, 0xff, y.bytes));
      CK(cudaMemset(y2.p, 0x5a, y2.bytes));
      launch_osplit(id, aq, sm, st);
      const std::vector<uint16_t> got = result();
      const auto cls =
          std::find_if(per_class.begin(), per_class.end(), [&](const auto& q) { return q.first == c.groups; });
      const std::vector<uint16_t>* want_y = c.groups == 1 && !igemm_out.empty() ? &igemm_out
                                            : cls != per_class.end()            ? &cls->second
                                                                                : nullptr;
      check(want_y && got == *want_y,
            std::string(c.name) + " y bitwise equal to the fp16 kernels of class P=" + std::to_string(c.groups));
      const std::vector<int8_t> q2 = y2.down<int8_t>(out_elems);
      size_t bad = 0;
      for (size_t i = 0; i < out_elems; ++i) bad += q2[i] != int8_t(int8::quantize(half_to_float(got[i]), qe.y2_inv));
      check(bad == 0, std::string(c.name) + " y2 = quantize(y) (" + std::to_string(bad) + " differ)");
      const auto t = time_kernel([&] { launch_osplit(id, aq, sm, st); }, runs, st);
      table.push_back(
          {p.level, "q " + std::string(e.name), c.name, c.groups, t.first, t.second, osplit_blocks_per_sm(id)});
    }
    if (quick) break;  // one epilogue per level
  }
}

// ---- INT8 engines: int8 operands (mode 2), the quantization-aware epilogue -----------------------

std::vector<int8_t> random_int8(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> u(1, 127);
  std::bernoulli_distribution sign(0.5);
  std::vector<int8_t> v(n);
  for (auto& q : v) q = int8_t(sign(rng) ? -u(rng) : u(rng));  // never zero
  return v;
}

struct QEpi {
  const char* name;
  Act act;
  float alpha;
  bool residual, relu_after;
  QEpilogue q;  // pointers filled in per run
};

/// Every int8 osplit config against the int8 tiles (bitwise: int32 sums are exact and the epilogue is
/// the same code), the first epilogue also against a host reference of docs/int8.md's arithmetic;
/// int8 rows of p.cin channels (16-byte or 32-byte rows), random non-zero int8 inputs and weights.
void run_problem_int8(const Problem& p, int runs, bool quick, int sm, int cc_major, cudaStream_t st, std::mt19937& rng,
                      std::vector<Row>& table) {
  const int cin = p.cin, cout = p.cout, cin_u = cin / 2;  // 16-bit units of two int8 channels
  const int64_t n_in = int64_t(p.x.size()) / cin;
  const std::vector<int8_t> x = random_int8(size_t(n_in) * size_t(cin), rng);
  std::vector<int8_t> w(size_t(kK) * kCoutW * size_t(cin), 0);  // [27][128][cin], rows >= cout zero
  for (int k = 0; k < kK; ++k)
    for (int c = 0; c < cout; ++c) {
      const std::vector<int8_t> r = random_int8(size_t(cin), rng);
      std::copy(r.begin(), r.end(), w.begin() + long((size_t(k) * kCoutW + size_t(c)) * size_t(cin)));
    }
  // y = acc * mult + bias of order one: |acc| ~ sqrt(pairs * cin) * 127^2 / 3
  std::uniform_real_distribution<float> um(0.5f, 1.5f), ub(-0.3f, 0.3f);
  std::vector<float> mult(kCoutW, 0.f), bias(kCoutW, 0.f);
  for (int c = 0; c < cout; ++c) {
    mult[size_t(c)] = um(rng) / (std::sqrt(14.f * float(cin)) * 127.f * 127.f / 3.f);
    bias[size_t(c)] = ub(rng);
  }
  const std::vector<int8_t> res_q = random_int8(size_t(p.n) * size_t(cout), rng);
  const std::vector<uint16_t> res_h = random_halves(size_t(p.n) * size_t(cout), 1.f, rng);
  Buf d_x(x.size()), d_w(w.size()), d_mult(mult.size() * 4), d_bias(bias.size() * 4), d_resq(res_q.size()),
      d_resh(res_h.size() * 2), d_q(sizeof(QEpilogue));
  d_x.up(x);
  d_w.up(w);
  d_mult.up(mult);
  d_bias.up(bias);
  d_resq.up(res_q);
  d_resh.up(res_h);
  const size_t y_bytes = size_t(p.n) * size_t(cout) * 2, y2_bytes = size_t(p.n) * size_t(cout);
  Buf y(y_bytes), y2(y2_bytes);

  // int8 y; int8 Add with an int8 residual, ReLU after; fp16 y with an fp16 Add of the conv's int8
  // grid value and a second int8 output, LeakyReLU
  QEpi epis[3] = {{"q relu", Act::ReLU, 0.f, false, false, {}},
                  {"q sbb(int8 add)", Act::None, 0.f, true, true, {}},
                  {"f16 leaky+y2", Act::LeakyReLU, 0.1f, true, false, {}}};
  for (QEpi& e : epis) {
    e.q.mult = d_mult.as<float>();
    e.q.y_stride = cout;
    e.q.res_stride = cout;
  }
  epis[0].q.y_q = true;
  epis[0].q.y_inv = 127.f / 2.f;
  epis[1].q.y_q = true;
  epis[1].q.y_inv = 127.f / 3.f;
  epis[1].q.res_q = true;
  epis[1].q.res_s = 2.5f / 127.f;
  epis[1].q.add_q = true;
  epis[1].q.add_inv_a = 127.f / 2.f;
  epis[1].q.add_sa = 2.f / 127.f;
  epis[1].q.add_inv_b = 127.f / 2.5f;
  epis[1].q.add_sb = 2.5f / 127.f;
  epis[2].q.conv_q = true;
  epis[2].q.conv_inv = 127.f / 2.f;
  epis[2].q.conv_s = 2.f / 127.f;
  epis[2].q.y2 = y2.p;
  epis[2].q.y2_inv = 127.f / 2.5f;
  epis[2].q.y2_stride = cout;

  for (QEpi& e : epis) {
    std::printf("\n== %s int8: %lld rows, %d -> %d channels, epilogue %s\n", p.level, (long long)p.n, cin, cout,
                e.name);
    d_q.up(std::vector<QEpilogue>{e.q});
    ConvArgs a;
    a.x = d_x.p;
    a.out_in = p.d_map;
    a.w = d_w.p;
    a.bias = d_bias.as<float>();
    a.residual = e.residual ? (e.q.res_q ? d_resq.p : d_resh.p) : nullptr;
    a.n_out = p.d_count;
    a.cap_out = p.cap;
    a.K = kK;
    a.cin_p = cin_u;
    a.cout = cout;
    a.cout_p = cout;
    a.cout_w = kCoutW;
    a.act = e.act;
    a.alpha = e.alpha;
    a.relu_after = e.relu_after;
    a.q = d_q.as<QEpilogue>();
    a.y = y.p;
    auto result = [&]() {
      CK(cudaStreamSynchronize(st));
      std::vector<uint8_t> out = y.down<uint8_t>(e.q.y_q ? y2_bytes : y_bytes);
      if (e.q.y2) {
        const std::vector<uint8_t> o2 = y2.down<uint8_t>(y2_bytes);
        out.insert(out.end(), o2.begin(), o2.end());
      }
      return out;
    };
    auto launch_clean = [&](auto&& launch) {
      CK(cudaMemset(y.p, 0x5a, y.bytes));
      CK(cudaMemset(y2.p, 0x5a, y2.bytes));
      launch();
      return result();
    };

    std::vector<uint8_t> ref;
    std::string ref_name;
    if (&e == &epis[0]) {  // host reference: exact int32 sums, then the CPU oracle's epilogue and quantize
      ref.assign(size_t(p.n) * size_t(cout), 0);
      for (int64_t o = 0; o < p.n; ++o)
        for (int c = 0; c < cout; ++c) {
          int32_t acc = 0;
          for (int k = 0; k < kK; ++k) {
            const int32_t in = p.map[size_t(o) * kK + size_t(k)];
            if (in < 0) continue;
            const int8_t* xr = x.data() + size_t(in) * size_t(cin);
            const int8_t* wr = w.data() + (size_t(k) * kCoutW + size_t(c)) * size_t(cin);
            for (int ci = 0; ci < cin; ++ci) acc += int32_t(xr[ci]) * int32_t(wr[ci]);
          }
          const float v = cpu::int8_epilogue(acc, mult[size_t(c)], bias[size_t(c)], Activation::ReLU, 0.f);
          ref[size_t(o) * size_t(cout) + size_t(c)] = uint8_t(int8_t(int8::quantize(v, e.q.y_inv)));
        }
      ref_name = "host reference";
    }
    for (const int id : tune_candidates(ConvShape{cin_u, cout, kK, 2}, cc_major, 1)) {
      const IgemmConfig& c = igemm_config(id);
      if (c.tma) continue;  // the pre-tiled weight layouts are the engine's business; plain-weight tiles suffice
      const std::vector<uint8_t> got = launch_clean([&] { launch_igemm(id, a, sm, st); });
      if (ref.empty()) {
        ref = got;
        ref_name = c.name;
        continue;
      }
      check(got == ref, std::string(c.name) + " bitwise equal to " + ref_name);
      if (quick) break;
    }
    SCN_CHECK(!ref.empty(), "no int8 tile fits ", p.level);
    int configs = 0;
    for (int id = 0; id < osplit_num_configs(); ++id) {
      const OsplitConfig& c = osplit_config(id);
      if (c.mode != 2 || !osplit_config_fits(id, a) || !osplit_fits_device(id)) continue;
      ++configs;
      const std::vector<uint8_t> got = launch_clean([&] { launch_osplit(id, a, sm, st); });
      size_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += got[i] != ref[i];
      check(differ == 0, std::string(c.name) + " bitwise equal to " + ref_name + " (" + std::to_string(differ) +
                             " of " + std::to_string(got.size()) + " bytes differ)");
      check(launch_clean([&] { launch_osplit(id, a, sm, st); }) == got,
            std::string(c.name) + " bitwise equal run to run");
      check_few_sms(
          id, p.n, [&] { return launch_clean([&] { launch_osplit(id, a, kFewSms, st); }); }, got);
      const auto t = time_kernel([&] { launch_osplit(id, a, sm, st); }, runs, st);
      table.push_back(
          {std::string(p.level) + " i8", e.name, c.name, c.groups, t.first, t.second, osplit_blocks_per_sm(id)});
    }
    check(configs > 0, std::string("an int8 osplit config runs ") + p.level);
    for (const int id : tune_candidates(ConvShape{cin_u, cout, kK, 2}, cc_major, 1)) {
      const IgemmConfig& c = igemm_config(id);
      if (c.tma) continue;
      const auto t = time_kernel([&] { launch_igemm(id, a, sm, st); }, runs, st);
      table.push_back({std::string(p.level) + " i8", e.name, c.name, 0, t.first, t.second, igemm_blocks_per_sm(id)});
    }
    if (quick) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string data;
  if (const char* d = std::getenv("SCN_DATA_DIR")) data = d;
#ifdef SCN_SHARED_DATA_DIR
  if (data.empty()) data = std::string(SCN_SHARED_DATA_DIR) + "/nuscenes-centerpoint";
#endif
  int runs = 300;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--data" && i + 1 < argc) {
      data = argv[++i];
    } else if (s == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (s == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--data DIR] [--runs N] [--quick]\n", argv[0]);
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
    const int64_t n0 = idx.dim(0);
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
