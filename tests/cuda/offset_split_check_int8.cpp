// offset_split_check, INT8 engines: int8-operand osplit configs with the quantization-aware epilogue against the int8
// tiles (bitwise) and a host reference of docs/int8.md's arithmetic.
#include "cuda/offset_split_check.h"

namespace scn::osplit_check {
namespace {

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

}  // namespace

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
          id, p.n, [&](int sms) { return launch_clean([&] { launch_osplit(id, a, sms, st); }); }, got);
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

}  // namespace scn::osplit_check
