// How closely an INT8 engine's values follow the FP32 engine's: float64 sums for the cosine, the relative
// L2 error and the largest difference. The one definition of these figures for `evaluate_int8` (per layer
// and per output) and `search_int8_plan` (its bound), so a plan is judged by what the report prints.
#pragma once

#include <algorithm>
#include <cmath>

#include "scn/tensor.h"

namespace scn {

struct Agreement {
  double dot = 0, na = 0, nb = 0, diff = 0, max_abs = 0;

  /// One value `x` against its reference `r`.
  void add(double x, double r) {
    dot += x * r;
    na += x * x;
    nb += r * r;
    diff += (x - r) * (x - r);
    max_abs = std::max(max_abs, std::fabs(x - r));
  }
  /// Two all-zero tensors agree exactly; one all-zero tensor against a non-zero one has cosine 0.
  double cosine() const {
    if (na == 0 && nb == 0) return 1.0;
    return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0;
  }
  double rel_l2() const { return nb > 0 ? std::sqrt(diff / nb) : (diff > 0 ? INFINITY : 0.0); }
};

/// The agreement of float32 tensor `x` with float32 reference `r` (the same element count, checked by the
/// caller, which can name the output).
inline Agreement agreement(const Tensor& x, const Tensor& r) {
  Agreement a;
  const float* xp = x.ptr<float>();
  const float* rp = r.ptr<float>();
  for (int64_t k = 0; k < r.numel(); ++k) a.add(double(xp[k]), double(rp[k]));
  return a;
}

}  // namespace scn
