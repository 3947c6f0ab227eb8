#include "core/input_check.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/half.h"

namespace scn {

namespace {

// When some rows lie outside `grid` but every row lies inside the reversed grid (s2, s1, s0), the
// indices are most likely in the other index order (xyz rows for a zyx model or the reverse):
// the text that says so, else "".
std::string index_order_hint(const Tensor& idx, const Int3& grid) {
  const Int3 rev{grid[2], grid[1], grid[0]};
  if (rev == grid) return "";
  const int32_t* p = idx.ptr<int32_t>();
  for (int64_t i = 0; i < idx.dim(0); ++i)
    for (int d = 0; d < 3; ++d)
      if (p[4 * i + 1 + d] < 0 || p[4 * i + 1 + d] >= rev[d]) return "";
  return "; every row lies inside the reversed grid " + int3_string(rev) +
         ": the indices look like they are in the other index order (xyz vs zyx) than the grid and the "
         "model; reverse the columns i0, i2 of the indices (scn inspect shows the model's order)";
}

}  // namespace

void check_sparse_input_shapes(const Tensor& f, const Tensor& idx, const Int3& grid, int batch_size, int32_t channels,
                               const std::string& input_name, const InputLabels& l) {
  const std::string in = "input '" + input_name + "'";
  SCN_CHECK(f.defined(), l.features, ": ", in, ": no features given");
  SCN_CHECK(idx.defined(), l.indices, ": ", in, ": no indices given");
  // int32 features beside float indices: the two files were given the wrong way round.
  const bool float_indices = idx.dtype() == DType::Float16 || idx.dtype() == DType::Float32;
  SCN_CHECK(!(f.dtype() == DType::Int32 && float_indices), l.features, ": ", in,
            ": features must be float16 or float32, got int32 ", f.shape_string(), " while ", l.indices, " holds ",
            dtype_name(idx.dtype()), " ", idx.shape_string(),
            ": the features and indices look swapped (features [N, C] float, indices [N, 4] int32)");
  SCN_CHECK(f.dtype() == DType::Float16 || f.dtype() == DType::Float32, l.features, ": ", in,
            ": features must be float16 or float32, got ", dtype_name(f.dtype()));
  SCN_CHECK(idx.dtype() == DType::Int32, l.indices, ": ", in, ": indices must be int32, got ", dtype_name(idx.dtype()));
  SCN_CHECK(f.ndim() == 2, l.features, ": ", in, ": features must be [N, C], got ", f.shape_string());
  SCN_CHECK(idx.ndim() == 2 && idx.dim(1) == 4, l.indices, ": ", in,
            ": indices must be [N, 4] (batch, i0, i1, i2), got ", idx.shape_string());
  SCN_CHECK(f.dim(0) == idx.dim(0), l.features, ": ", in, ": ", f.dim(0), " feature rows but ", idx.dim(0),
            " index rows in ", l.indices);
  SCN_CHECK(f.dim(1) == channels, l.features, ": ", in, ": features have ", f.dim(1),
            " channels, the model's input has ", channels);
  check_grid_and_batch(grid, batch_size, in);
}

void check_grid_and_batch(const Int3& grid, int batch_size, const std::string& in) {
  SCN_CHECK(batch_size >= 1, in, ": batch size must be >= 1, got ", batch_size);
  for (int d = 0; d < 3; ++d)
    SCN_CHECK(grid[d] >= 1, in, ": grid ", int3_string(grid), " must be positive on every axis");
  // Three int32 axes can overflow int64 (2^22 * 2^21 * 2^21 wraps to 0): multiply with checks.
  int64_t cells = 0;
  SCN_CHECK(
      !__builtin_mul_overflow(int64_t(grid[0]) * grid[1], int64_t(grid[2]), &cells) && cells <= (int64_t(1) << 40), in,
      ": grid ", int3_string(grid), " is too large");
  // Linear site keys ((b * s0 + i0) * s1 + i1) * s2 + i2 must fit int64.
  int64_t sites = 0;
  SCN_CHECK(!__builtin_mul_overflow(int64_t(batch_size), cells, &sites) && sites <= (int64_t(1) << 62), in,
            ": batch size ", batch_size, " times the grid ", int3_string(grid), " is too large (more than 2^62 sites)");
}

void check_sparse_indices(const Tensor& idx, const Int3& grid, int batch_size, const std::string& what,
                          const std::string& label) {
  SCN_CHECK(idx.device() == Device::Host && idx.dtype() == DType::Int32 && idx.ndim() == 2 && idx.dim(1) == 4, label,
            ": ", what, ": indices must be a host int32 tensor [N, 4], got ", dtype_name(idx.dtype()), " ",
            idx.shape_string());
  const int64_t n = idx.dim(0);
  const int32_t* p = idx.ptr<int32_t>();
  std::vector<int64_t> keys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t* r = p + 4 * i;
    SCN_CHECK(r[0] >= 0 && r[0] < batch_size, label, ": ", what, ": row ", i, " has batch index ", r[0],
              ", outside 0..", batch_size - 1, " for batch size ", batch_size);
    for (int d = 0; d < 3; ++d)
      SCN_CHECK(r[d + 1] >= 0 && r[d + 1] < grid[d], label, ": ", what, ": row ", i, " coordinate (", r[1], ", ", r[2],
                ", ", r[3], ") lies outside the grid ", int3_string(grid), " on axis ", d, index_order_hint(idx, grid));
    keys[size_t(i)] = ((int64_t(r[0]) * grid[0] + r[1]) * grid[1] + r[2]) * grid[2] + r[3];
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return keys[size_t(a)] != keys[size_t(b)] ? keys[size_t(a)] < keys[size_t(b)] : a < b;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    if (keys[size_t(order[i])] == keys[size_t(order[i - 1])]) {
      const int32_t* r = p + 4 * order[i];
      SCN_FAIL(label, ": ", what, ": rows ", order[i - 1], " and ", order[i], " are the same site (", r[0], ", ", r[1],
               ", ", r[2], ", ", r[3], "); duplicate coordinates are not allowed");
    }
  }
}

void check_sparse_input_values(const Tensor& f, const Tensor& idx, const Int3& grid, int batch_size,
                               const std::string& input_name, const InputLabels& l, bool fp16_activations) {
  SCN_CHECK(f.device() == Device::Host && idx.device() == Device::Host, "check_sparse_input_values needs host tensors");
  const std::string in = "input '" + input_name + "'";
  check_sparse_indices(idx, grid, batch_size, in, l.indices);
  const int64_t ne = f.numel();
  for (int64_t i = 0; i < ne; ++i) {
    const float v = f.dtype() == DType::Float16 ? half_to_float(f.ptr<uint16_t>()[i]) : f.ptr<float>()[i];
    SCN_CHECK(std::isfinite(v), l.features, ": ", in, ": feature [", i / f.dim(1), ", ", i % f.dim(1), "] is ", v,
              "; features must be finite");
    SCN_CHECK(!fp16_activations || std::fabs(v) < kFp16Overflow, l.features, ": ", in, ": feature [", i / f.dim(1),
              ", ", i % f.dim(1), "] is ", v, ", beyond the float16 activations of this engine (|x| < 65520)");
  }
}

}  // namespace scn
