// Size buckets of the CUDA autotuner (docs/cuda_backend.md "Size buckets"): the fastest tile of a conv
// depends on how many rows it covers (waves over the SMs, tail blocks), so an engine keeps one set of
// tile choices per bucket of the bound frame's voxel count and tunes a bucket the first time a frame
// of that size is bound. The buckets follow a geometric ladder (CudaOptions::tune_bucket_base and
// tune_bucket_factor):
//   bucket 0: rows < base;  bucket k >= 1: [e(k-1), e(k)) with e(0) = base, e(k) = round(e(k-1) * factor)
// A factor of 0 puts every count in one bucket (tune on the first frame only). A frame whose count
// lives in device memory (set_input_device_count) has its own bucket: the host does not know its size.
// Plain C++ (no CUDA): the ladder is tested on the CPU.
#pragma once

#include <cstdint>
#include <string>

namespace scn {

struct SizeBucket {
  int index = 0;      ///< position on the ladder; -1 = the device-count bucket
  int64_t lo = 0;     ///< first row count of the bucket
  int64_t hi = 0;     ///< one past its last row count (INT64_MAX when open-ended)
  std::string label;  ///< its name in tuning caches and traces: "rows 8192-12287", "rows all", "device count"
};

/// The bucket of a frame of `rows` voxels (all inputs, all batch entries together) on the ladder of
/// `base` and `factor` (factor 0: one bucket). Throws scn::Error for a ladder that validate() refuses.
SizeBucket size_bucket(int64_t rows, int64_t base, double factor);

/// The bucket of frames whose row count is in device memory.
SizeBucket device_count_bucket();

/// The ladder as text, for the tuning cache key: "base 8192 factor 1.5" or "one bucket".
std::string size_ladder(int64_t base, double factor);

}  // namespace scn
