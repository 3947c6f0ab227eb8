// Builds a one-conv graph through the installed headers (EngineBuilder) and checks one output value by hand.
#include <scn/engine.h>

#include <cmath>
#include <cstdio>

int main() {
  scn::EngineBuilder b("consumer");
  scn::ConvAttrs c;
  c.kernel_size = {3, 3, 3};
  c.subm = true;
  c.weight = scn::Tensor::empty({1, 3, 3, 3, 1}, scn::DType::Float32);
  for (int i = 0; i < 27; ++i) c.weight.ptr<float>()[i] = float(i + 1);  // center tap = 14
  b.push_output(b.push_sparse_conv("conv0", b.push_input("0", 1), c));
  scn::BuildOptions o;
  o.backend = scn::Backend::Cpu;
  o.precision = scn::Precision::Fp32;
  auto e = b.build(o);
  const float f[2] = {2.f, 3.f};
  const int32_t idx[8] = {0, 1, 1, 1, 0, 1, 1, 2};  // (1,1,2) is the +x neighbour of (1,1,1)
  e->set_input(0, scn::Tensor::from_host(f, {2, 1}, scn::DType::Float32),
               scn::Tensor::from_host(idx, {2, 4}, scn::DType::Int32), {3, 3, 3});
  e->forward();
  const float y0 = e->output(0).ptr<float>()[0];
  // out(1,1,1) = W[center]*2 + W[offset (1,1,2)]*3 = 14*2 + 15*3 = 73
  std::printf("consumer: y0 = %g\n", y0);
  return std::fabs(y0 - 73.f) < 1e-4f ? 0 : 1;
}
