#include "batch_frames.h"

#include <cstring>

#include "scn/error.h"

namespace scn::cli {

FrameBatch batch_of_copies(const Tensor& features, const Tensor& indices, int batch, const std::string& features_label,
                           const std::string& indices_label) {
  SCN_CHECK(batch >= 1, "a batch of copies needs a batch size of at least 1, got ", batch);
  SCN_CHECK(indices.dtype() == DType::Int32 && indices.ndim() == 2 && indices.dim(1) == 4, indices_label,
            ": indices must be int32 [N, 4] (batch, spatial...), got ", dtype_name(indices.dtype()), " of rank ",
            indices.ndim());
  SCN_CHECK(features.ndim() == 2 && features.dim(0) == indices.dim(0), features_label,
            ": features must be [N, C] with N = ", indices.dim(0), " rows (", indices_label, "), got rank ",
            features.ndim(),
            features.ndim() >= 1 ? " with " + std::to_string(features.dim(0)) + " rows" : std::string());
  const Tensor f = features.to(Device::Host);
  const Tensor i = indices.to(Device::Host);
  const int64_t n = i.dim(0);
  const int32_t* rows = i.ptr<int32_t>();
  for (int64_t r = 0; r < n; ++r)
    SCN_CHECK(rows[4 * r] == 0, indices_label, ": row ", r, " has batch index ", rows[4 * r],
              "; a batch of copies repeats one frame (batch index 0 in every row)");
  FrameBatch out;
  out.features = Tensor::empty({n * batch, f.dim(1)}, f.dtype());
  out.indices = Tensor::empty({n * batch, 4}, DType::Int32);
  auto* fo = static_cast<char*>(out.features.data());
  int32_t* io = out.indices.ptr<int32_t>();
  for (int b = 0; b < batch; ++b) {
    if (f.bytes() > 0) std::memcpy(fo + size_t(b) * f.bytes(), f.data(), f.bytes());
    if (i.bytes() > 0) std::memcpy(io + size_t(b) * size_t(n) * 4, rows, i.bytes());
    for (int64_t r = 0; r < n; ++r) io[(int64_t(b) * n + r) * 4] = b;
  }
  return out;
}

}  // namespace scn::cli
