// Element-wise comparison of two tensors in float64 (`scn compare`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scn/tensor.h"

namespace scn::cli {

struct ValueStats {
  double absmax = 0, min = 0, max = 0, mean = 0, stddev = 0;  ///< over finite values
  int64_t nonfinite = 0;                                      ///< NaN or +-inf values
};

struct DiffEntry {
  int64_t flat = 0;                ///< flat element index
  std::vector<int64_t> index;      ///< multi-dimensional index
  double a = 0, b = 0, diff = 0;   ///< diff = |a - b| (NaN when either is NaN)
};

struct Bucket {
  std::string label;
  int64_t count = 0;
};

struct CompareResult {
  int64_t numel = 0;
  double max_abs = 0;   ///< NaN when any difference is NaN
  double mean_abs = 0;
  double sum_abs = 0;
  double cosine = 1;    ///< a.b / (|a| |b|); 1 when both are all zero, 0 when only one is
  double rel_l2 = 0;    ///< |a - b| / |b|; 0 when both are zero, inf when only b is
  ValueStats a, b;
  int64_t exact = 0;    ///< elements with a == b
  /// Shares of the maximum difference (> 75 %, > 50 %, > 25 %, > 0, = 0), as NVIDIA's compare.py.
  std::vector<Bucket> relative_buckets;
  /// Decades of the absolute difference: = 0, (0, 1e-6], (1e-6, 1e-5], ..., (1, inf), non-finite.
  std::vector<Bucket> decade_buckets;
  std::vector<DiffEntry> top;  ///< largest differences first (NaN counts as largest)
};

/// Compares two tensors of the same shape (float16, float32 or int32, host). Throws scn::Error
/// when the shapes differ or a dtype is not supported; `name_a` / `name_b` label the messages.
CompareResult compare_tensors(const Tensor& a, const Tensor& b, int top_k = 10,
                              const std::string& name_a = "A", const std::string& name_b = "B");

/// Reorders the rows of sparse features `b` [N, C] (sites `b_indices` [N, 4]) to the site order of
/// `a_indices`. Throws scn::Error naming the files when the site sets differ.
Tensor align_sparse_rows(const Tensor& a_indices, const Tensor& b, const Tensor& b_indices,
                         const std::string& name_a, const std::string& name_b);

/// A bound check for `scn compare`.
struct BoundCheck {
  std::string name;   ///< "max-abs", "rel-l2", "cosine"
  double value = 0;
  double limit = 0;
  bool upper = true;  ///< value must be <= limit (else >= limit)
  bool pass = false;  ///< NaN never passes
};
BoundCheck check_bound(const std::string& name, double value, double limit, bool upper);

}  // namespace scn::cli
