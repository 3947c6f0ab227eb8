// One sparse conv as a test case (channels, kernel, stride, padding, dilation, kind, activation, batch, voxels,
// grid) and the one-node engine builder with seeded random weights that the CUDA tests run it in.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/test_helpers.h"
#include "scn/engine.h"

namespace scn::cudatest {

struct ConvCase {
  int cin, cout;
  Int3 k, stride, pad, dil;
  bool subm;
  Activation act;
  int batch;
  int64_t n;
  Int3 grid;
  std::string name;
};

inline std::string case_name(const ConvCase& c) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s_c%dto%d_k%d%d%d_s%d%d%d_p%d%d%d_d%d%d%d_b%d_%s_n%lld", c.subm ? "subm" : "conv",
                c.cin, c.cout, c.k[0], c.k[1], c.k[2], c.stride[0], c.stride[1], c.stride[2], c.pad[0], c.pad[1],
                c.pad[2], c.dil[0], c.dil[1], c.dil[2], c.batch, activation_name(c.act), static_cast<long long>(c.n));
  std::string s = buf;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  return s;
}

inline EngineBuilder single_conv(const ConvCase& cc, uint64_t seed) {
  ConvAttrs c = test::random_conv(cc.cin, cc.cout, cc.k, cc.stride, cc.pad, cc.dil, cc.subm, seed, cc.act);
  if (cc.act == Activation::LeakyReLU) c.activation_alpha = 0.1f;
  c.output_bound = 50000;
  EngineBuilder b("single_conv");
  ValueId x = b.push_input("0", cc.cin);
  x = b.push_sparse_conv("conv0", x, c);
  b.push_output(x);
  return b;
}

}  // namespace scn::cudatest
