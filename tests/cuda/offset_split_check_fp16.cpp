// offset_split_check, fp16: every osplit config of a level against a CPU fp32 reference, the implicit-GEMM tiles and
// each other (bitwise within an offset-group class), on four SMs, and the INT8 engines' fp16-operand configs.
#include "cuda/offset_split_check.h"

namespace scn::osplit_check {
namespace {

struct Epi {
  const char* name;
  Act act;
  bool residual;
  bool relu_after;
};

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

}  // namespace

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
          [&](int sms) {
            CK(cudaMemset(y.p, 0xff, y.bytes));
            launch_osplit(id, a, sms, st);
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

}  // namespace scn::osplit_check
