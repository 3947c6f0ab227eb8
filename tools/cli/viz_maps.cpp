#include "viz_maps.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

#include "scn/error.h"
#include "scn/half.h"

namespace scn::cli {

namespace {

double element(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? double(half_to_float(t.ptr<uint16_t>()[i])) : double(t.ptr<float>()[i]);
}

// The dense tensor's geometry: batches, channels (C, or C * D for 5-D), height, width.
struct Dense {
  int64_t n = 0, c = 0, h = 0, w = 0;
};

Dense dense_geometry(const Tensor& t, const std::string& name) {
  SCN_CHECK(t.device() == Device::Host, name, ": needs a host tensor");
  SCN_CHECK(t.dtype() == DType::Float16 || t.dtype() == DType::Float32, name,
            ": a dense map must be float16 or float32, got ", dtype_name(t.dtype()));
  SCN_CHECK(t.ndim() == 4 || t.ndim() == 5, name, ": a dense map must be [N, C, H, W] or [N, C, D, H, W], got ",
            t.shape_string(), " (a sparse output's features [N, C] have no map: use scn viz occupancy on its indices)");
  Dense d;
  d.n = t.dim(0);
  d.c = t.ndim() == 4 ? t.dim(1) : t.dim(1) * t.dim(2);
  d.h = t.dim(t.ndim() - 2);
  d.w = t.dim(t.ndim() - 1);
  SCN_CHECK(d.n > 0 && d.c > 0 && d.h > 0 && d.w > 0, name, ": empty tensor ", t.shape_string());
  return d;
}

// A map drawn one pixel or more per cell: at most kMaxSide cells along a side and kMaxCells in all (a
// 1 x 67108864 grid once passed the cell cap and failed with a bare std::bad_alloc in the renderer).
void check_drawable(int64_t height, int64_t width, const std::string& name) {
  constexpr int64_t kMaxSide = 16384, kMaxCells = int64_t(1) << 26;
  SCN_CHECK(height <= kMaxSide && width <= kMaxSide && height * width <= kMaxCells, name, ": the map ", height, " x ",
            width, " is too large to draw (at most ", kMaxSide, " cells a side, ", kMaxCells, " in all)");
}

// Channel indices (of the flattened C or C * D) to sum over.
std::vector<int64_t> selected(const Tensor& t, const Dense& d, const std::vector<int64_t>& channels,
                              const std::string& name) {
  std::vector<int64_t> out;
  if (channels.empty()) {
    for (int64_t c = 0; c < d.c; ++c) out.push_back(c);
    return out;
  }
  const int64_t depth = t.ndim() == 5 ? t.dim(2) : 1;
  std::set<int64_t> seen;
  for (int64_t c : channels) {
    SCN_CHECK(c >= 0 && c < t.dim(1), name, ": channel ", c, " does not exist (", t.dim(1), " channels)");
    SCN_CHECK(seen.insert(c).second, name, ": channel ", c, " is listed twice (it would count twice in the norm)");
    for (int64_t k = 0; k < depth; ++k) out.push_back(c * depth + k);
  }
  return out;
}

Map2D norm_map(const Tensor& a, const Tensor* b, const std::vector<int64_t>& channels, int batch,
               const std::string& name) {
  const Dense d = dense_geometry(a, name);
  SCN_CHECK(batch >= 0 && batch < d.n, name, ": batch index ", batch, " outside 0..", d.n - 1);
  const std::vector<int64_t> cs = selected(a, d, channels, name);
  check_drawable(d.h, d.w, name);
  Map2D m;
  m.height = d.h;
  m.width = d.w;
  m.values.assign(size_t(d.h * d.w), 0.0);
  const int64_t plane = d.h * d.w;
  for (int64_t c : cs) {
    const int64_t base = (int64_t(batch) * d.c + c) * plane;
    for (int64_t p = 0; p < plane; ++p) {
      const double v = element(a, base + p) - (b ? element(*b, base + p) : 0.0);
      m.values[size_t(p)] += v * v;
    }
  }
  for (double& v : m.values) v = std::sqrt(v);
  return m;
}

}  // namespace

Map2D occupancy_map(const Tensor& idx, const Int3& grid, const std::string& order, int batch, const std::string& name) {
  SCN_CHECK(order == "zyx" || order == "xyz", "index order must be zyx or xyz, got '", order, "'");
  SCN_CHECK(idx.device() == Device::Host && idx.dtype() == DType::Int32 && idx.ndim() == 2 && idx.dim(1) == 4, name,
            ": indices must be int32 [N, 4] (batch, i0, i1, i2), got ", dtype_name(idx.dtype()), " ",
            idx.shape_string());
  // Column of y and x, and the grid sizes along them.
  const bool zyx = order == "zyx";
  const int col_y = 2, col_x = zyx ? 3 : 1;
  Map2D m;
  m.height = grid[1];
  m.width = zyx ? grid[2] : grid[0];
  check_drawable(m.height, m.width, name);
  m.values.assign(size_t(m.height * m.width), 0.0);
  const int32_t* p = idx.ptr<int32_t>();
  int64_t drawn = 0;
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (int64_t i = 0; i < idx.dim(0); ++i) {
    const int32_t* r = p + 4 * i;
    for (int d = 0; d < 3; ++d)
      SCN_CHECK(r[d + 1] >= 0 && r[d + 1] < grid[d], name, ": row ", i, " coordinate (", r[1], ", ", r[2], ", ", r[3],
                ") lies outside the grid ", int3_string(grid), " (", order, ")");
    lo = std::min(lo, r[0]);
    hi = std::max(hi, r[0]);
    if (r[0] != batch) continue;
    m.values[size_t(int64_t(r[col_y]) * m.width + r[col_x])] += 1.0;
    ++drawn;
  }
  // an empty frame draws an empty map; rows of other samples only would draw one as if the frame were empty
  SCN_CHECK(drawn > 0 || idx.dim(0) == 0, name, ": no row has batch index ", batch, " (the ", idx.dim(0),
            " rows have batch indices ", lo, "..", hi, ")");
  return m;
}

Map2D channel_norm_map(const Tensor& t, const std::vector<int64_t>& channels, int batch, const std::string& name) {
  return norm_map(t, nullptr, channels, batch, name);
}

Map2D diff_norm_map(const Tensor& a, const Tensor& b, const std::vector<int64_t>& channels, int batch,
                    const std::string& name_a, const std::string& name_b) {
  dense_geometry(b, name_b);
  SCN_CHECK(a.shape() == b.shape(), "shapes differ: ", name_a, " is ", a.shape_string(), ", ", name_b, " is ",
            b.shape_string());
  return norm_map(a, &b, channels, batch, name_a + " - " + name_b);
}

std::vector<int64_t> parse_channel_list(const std::string& text) {
  std::vector<int64_t> out;
  std::string cur;
  auto flush = [&] {
    SCN_CHECK(!cur.empty() && cur.size() <= 9 && cur.find_first_not_of("0123456789") == std::string::npos,
              "channel list '", text, "' must be comma-separated non-negative integers, e.g. 0,5");
    out.push_back(std::stoll(cur));
    cur.clear();
  };
  for (char c : text) {
    if (c == ',')
      flush();
    else if (c != ' ')
      cur.push_back(c);
  }
  flush();
  return out;
}

}  // namespace scn::cli
