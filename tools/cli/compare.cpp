#include "compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "scn/half.h"
#include "scn/error.h"

namespace scn::cli {

namespace {

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float16: return double(half_to_float(t.ptr<uint16_t>()[i]));
    case DType::Float32: return double(t.ptr<float>()[i]);
    case DType::Int32: return double(t.ptr<int32_t>()[i]);
    default: return 0;
  }
}

void check_comparable(const Tensor& t, const std::string& name) {
  SCN_CHECK(t.defined(), name, ": empty tensor");
  SCN_CHECK(t.device() == Device::Host, name, ": compare needs a host tensor");
  SCN_CHECK(t.dtype() == DType::Float16 || t.dtype() == DType::Float32 || t.dtype() == DType::Int32, name,
            ": cannot compare ", dtype_name(t.dtype()), " tensors (float16, float32 and int32 are supported)");
}

// Largest first; NaN above everything; ties by the lower index.
bool bigger(const DiffEntry& x, const DiffEntry& y) {
  const bool xn = std::isnan(x.diff), yn = std::isnan(y.diff);
  if (xn != yn) return xn;
  if (!xn && x.diff != y.diff) return x.diff > y.diff;
  return x.flat < y.flat;
}

ValueStats value_stats(const Tensor& t) {
  ValueStats s;
  const int64_t n = t.numel();
  double sum = 0, sq = 0;
  int64_t finite = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  for (int64_t i = 0; i < n; ++i) {
    const double v = element(t, i);
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      continue;
    }
    ++finite;
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    s.absmax = std::max(s.absmax, std::abs(v));
  }
  if (finite == 0) {
    s.min = s.max = 0;
    return s;
  }
  s.mean = sum / double(finite);
  for (int64_t i = 0; i < n; ++i) {
    const double v = element(t, i);
    if (std::isfinite(v)) sq += (v - s.mean) * (v - s.mean);
  }
  s.stddev = std::sqrt(sq / double(finite));
  return s;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0e", v);
  return buf;
}

}  // namespace

CompareResult compare_tensors(const Tensor& a, const Tensor& b, int top_k, const std::string& name_a,
                              const std::string& name_b) {
  check_comparable(a, name_a);
  check_comparable(b, name_b);
  SCN_CHECK(a.shape() == b.shape(), "shapes differ: ", name_a, " is ", a.shape_string(), ", ", name_b,
            " is ", b.shape_string());
  CompareResult r;
  const int64_t n = a.numel();
  r.numel = n;
  r.a = value_stats(a);
  r.b = value_stats(b);

  std::vector<double> diff(static_cast<size_t>(n));
  double dot = 0, na = 0, nb = 0, nd = 0;
  bool any_nan = false;
  std::vector<DiffEntry> top;
  for (int64_t i = 0; i < n; ++i) {
    const double x = element(a, i), y = element(b, i);
    // Equal infinities are no difference; everything else non-finite propagates.
    const double d = (x == y) ? 0.0 : std::abs(x - y);
    diff[size_t(i)] = d;
    if (std::isnan(d)) any_nan = true;
    if (x == y) ++r.exact;
    r.sum_abs += d;
    if (!any_nan) r.max_abs = std::max(r.max_abs, d);
    dot += x * y;
    na += x * x;
    nb += y * y;
    nd += (x == y) ? 0.0 : (x - y) * (x - y);
    if (top_k > 0) {
      DiffEntry e;
      e.flat = i;
      e.a = x;
      e.b = y;
      e.diff = d;
      if (int(top.size()) < top_k) {
        top.push_back(e);
        std::push_heap(top.begin(), top.end(), bigger);
      } else if (bigger(e, top.front())) {
        std::pop_heap(top.begin(), top.end(), bigger);
        top.back() = e;
        std::push_heap(top.begin(), top.end(), bigger);
      }
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (any_nan) r.max_abs = nan;
  r.mean_abs = n ? r.sum_abs / double(n) : 0.0;
  if (na == 0 && nb == 0)
    r.cosine = 1;
  else if (na == 0 || nb == 0)
    r.cosine = (std::isnan(na) || std::isnan(nb)) ? nan : 0;
  else
    r.cosine = dot / (std::sqrt(na) * std::sqrt(nb));
  if (nb == 0)
    r.rel_l2 = nd == 0 ? 0 : (std::isnan(nd) ? nan : std::numeric_limits<double>::infinity());
  else
    r.rel_l2 = std::sqrt(nd) / std::sqrt(nb);

  // Relative buckets (shares of the largest finite difference).
  double dmax = 0;
  for (double d : diff)
    if (std::isfinite(d)) dmax = std::max(dmax, d);
  const double shares[3] = {0.75, 0.5, 0.25};
  for (double s : shares) {
    Bucket bk;
    bk.label = "> " + std::to_string(int(s * 100)) + "% of max (" + [&] {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", s * dmax);
      return std::string(buf);
    }() + ")";
    for (double d : diff)
      if (d > s * dmax) ++bk.count;  // NaN compares false: counted in the decade table only
    r.relative_buckets.push_back(bk);
  }
  Bucket pos{"> 0", 0}, zero{"= 0", 0};
  for (double d : diff) {
    if (d > 0) ++pos.count;
    if (d == 0) ++zero.count;
  }
  r.relative_buckets.push_back(pos);
  r.relative_buckets.push_back(zero);

  // Decades of the absolute difference.
  std::vector<Bucket> dec;
  dec.push_back({"= 0", 0});
  dec.push_back({"(0, 1e-06]", 0});
  for (int e = -6; e < 0; ++e) dec.push_back({"(" + sci(std::pow(10.0, e)) + ", " + sci(std::pow(10.0, e + 1)) + "]", 0});
  dec.push_back({"(1e+00, inf)", 0});
  dec.push_back({"non-finite", 0});
  for (double d : diff) {
    size_t k;
    if (d == 0) {
      k = 0;
    } else if (!std::isfinite(d)) {
      k = dec.size() - 1;
    } else if (d <= 1e-6) {
      k = 1;
    } else if (d > 1) {
      k = dec.size() - 2;
    } else {
      static const double kHi[6] = {1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
      k = 2;
      while (k < 7 && d > kHi[k - 2]) ++k;
    }
    ++dec[k].count;
  }
  r.decade_buckets = dec;

  std::sort(top.begin(), top.end(), bigger);
  for (DiffEntry& e : top) {
    e.index.assign(a.shape().size(), 0);
    int64_t rem = e.flat;
    for (size_t d = a.shape().size(); d-- > 0;) {
      const int64_t dim = a.shape()[d];
      e.index[d] = dim ? rem % dim : 0;
      rem = dim ? rem / dim : 0;
    }
  }
  r.top = std::move(top);
  return r;
}

Tensor align_sparse_rows(const Tensor& a_idx, const Tensor& b, const Tensor& b_idx, const std::string& name_a,
                         const std::string& name_b) {
  auto check_idx = [](const Tensor& t, const std::string& name) {
    SCN_CHECK(t.dtype() == DType::Int32 && t.ndim() == 2 && t.dim(1) == 4, name,
              ": indices must be int32 [N, 4], got ", dtype_name(t.dtype()), " ", t.shape_string());
  };
  check_idx(a_idx, name_a);
  check_idx(b_idx, name_b);
  SCN_CHECK(b.ndim() == 2 && b.dim(0) == b_idx.dim(0), name_b, ": features ", b.shape_string(),
            " do not match ", b_idx.dim(0), " index rows");
  const int64_t n = a_idx.dim(0), m = b_idx.dim(0);
  // Rows of each side sorted by site, then merged.
  auto sorted_rows = [](const Tensor& idx) {
    const int32_t* p = idx.ptr<int32_t>();
    std::vector<int64_t> rows(static_cast<size_t>(idx.dim(0)));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
    std::sort(rows.begin(), rows.end(), [p](int64_t x, int64_t y) {
      return std::lexicographical_compare(p + 4 * x, p + 4 * x + 4, p + 4 * y, p + 4 * y + 4);
    });
    return rows;
  };
  const std::vector<int64_t> ra = sorted_rows(a_idx), rb = sorted_rows(b_idx);
  const int32_t* pa = a_idx.ptr<int32_t>();
  const int32_t* pb = b_idx.ptr<int32_t>();
  auto same = [](const int32_t* x, const int32_t* y) { return std::equal(x, x + 4, y); };
  for (size_t i = 1; i < rb.size(); ++i)
    SCN_CHECK(!same(pb + 4 * rb[i - 1], pb + 4 * rb[i]), name_b, ": rows ", rb[i - 1], " and ", rb[i],
              " are the same site");
  std::vector<int64_t> order(static_cast<size_t>(n), -1);
  int64_t only_a = 0, only_b = 0;
  size_t i = 0, j = 0;
  while (i < ra.size() || j < rb.size()) {
    if (j == rb.size() || (i < ra.size() && std::lexicographical_compare(pa + 4 * ra[i], pa + 4 * ra[i] + 4,
                                                                         pb + 4 * rb[j], pb + 4 * rb[j] + 4))) {
      ++only_a, ++i;
    } else if (i == ra.size() || !same(pa + 4 * ra[i], pb + 4 * rb[j])) {
      ++only_b, ++j;
    } else {
      order[size_t(ra[i])] = rb[j];
      ++i, ++j;
    }
  }
  SCN_CHECK(only_a == 0 && only_b == 0, "the site sets differ: ", only_a, " sites only in ", name_a, ", ",
            only_b, " only in ", name_b, " (", n, " vs ", m, " rows)");
  const int64_t c = b.dim(1);
  const size_t row_bytes = size_t(c) * dtype_size(b.dtype());
  Tensor out = Tensor::empty(b.shape(), b.dtype());
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(static_cast<char*>(out.data()) + size_t(r) * row_bytes,
                static_cast<const char*>(b.data()) + size_t(order[size_t(r)]) * row_bytes, row_bytes);
  return out;
}

BoundCheck check_bound(const std::string& name, double value, double limit, bool upper) {
  BoundCheck c;
  c.name = name;
  c.value = value;
  c.limit = limit;
  c.upper = upper;
  c.pass = !std::isnan(value) && (upper ? value <= limit : value >= limit);
  return c;
}

}  // namespace scn::cli
