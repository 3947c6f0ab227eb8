// libFuzzer target: bytes -> Tensor::load (the .tensor reader), and a loaded tensor bound as the
// indices or the features of a small engine (input validation, then a forward). Every problem
// must surface as scn::Error; any other exception, a crash or a sanitizer report is a finding.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_common.h"

namespace {

constexpr int64_t kMaxRows = 4096;

// conv0 subm 3x3x3 5->4 ReLU -> conv1 3x3x3 stride 2 pad 1 4->4 -> ScatterDense [1, 4, 5, 4, 4].
// One engine for the whole run: it also sees every frame after every other one.
scn::Engine& engine() {
  static std::unique_ptr<scn::Engine> e = [] {
    scn::EngineBuilder b("<fuzz_tensor>");
    scn::ValueId x = b.push_input("0", 5);
    auto conv = [](int cin, int cout, scn::Int3 stride, scn::Int3 pad, bool subm) {
      scn::ConvAttrs c;
      c.kernel_size = {3, 3, 3};
      c.stride = stride;
      c.padding = pad;
      c.subm = subm;
      c.activation = scn::Activation::ReLU;
      c.weight = scn::fuzz::fuzz_features(int64_t(cout) * 27, cin).reshaped({cout, 3, 3, 3, cin});
      c.bias = scn::fuzz::fuzz_features(1, cout).reshaped({cout});
      return c;
    };
    x = b.push_sparse_conv("conv0", x, conv(5, 4, {1, 1, 1}, {0, 0, 0}, true));
    x = b.push_sparse_conv("conv1", x, conv(4, 4, {2, 2, 2}, {1, 1, 1}, false));
    scn::DenseAttrs d;
    d.input_spatial_shape = {5, 4, 4};
    d.output_shape = {1, 4, 5, 4, 4};
    b.push_output(b.push_dense("scatter0", x, d));
    scn::BuildOptions o;
    o.backend = scn::Backend::Cpu;
    o.num_threads = 1;
    return b.build(o);
  }();
  return *e;
}

void bind_and_run(const scn::Tensor& t) {
  if (t.ndim() != 2 || t.dim(0) > kMaxRows) return;
  scn::Engine& e = engine();
  const int64_t rows = t.dim(0);
  if (t.dtype() == scn::DType::Int32) {
    // As indices (the file's coordinates, batch column included) with fixed features; the grid
    // and batch size come from the first row so that in-range files get through validation.
    int batch = 1;
    if (rows > 0 && t.dim(1) == 4) batch = std::max(1, std::min(4, t.ptr<int32_t>()[0] + 1));
    e.set_input(0, scn::fuzz::fuzz_features(rows, 5), t, scn::fuzz::fuzz_grid(), batch);
  } else {
    // As features with fixed distinct sites.
    e.set_input(0, t, scn::fuzz::fuzz_indices(rows), scn::fuzz::fuzz_grid());
  }
  e.forward();
  scn::fuzz::touch_outputs(e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static scn::fuzz::MemFile file("scn_fuzz_tensor");
  const std::string& path = file.write(data, size);
  try {
    const scn::Tensor t = scn::Tensor::load(path);
    // A loaded tensor is exactly as large as its shape says.
    if (size_t(t.numel()) * scn::dtype_size(t.dtype()) != t.bytes()) std::abort();
    if (12 + 4 * size_t(t.ndim()) + t.bytes() != size) std::abort();
    bind_and_run(t);
    if (scn::fuzz::debug()) std::fprintf(stderr, "[fuzz] ok\n");
  } catch (const scn::Error& e) {
    if (scn::fuzz::debug()) std::fprintf(stderr, "[fuzz] scn::Error: %s\n", e.what());
    // expected for hostile files and frames
  }
  return 0;
}
