// The saved autotuner decisions (CudaOptions::tuning_cache): which tile each conv runs in each size
// bucket (plan/size_buckets.h), under a key that says what they were measured for (GPU, compute
// capability, SM count, CUDA runtime and driver, scn version, a digest of the model's contents, a
// digest of the compiled kernel names, the capacities, the bucket ladder and the options that shape
// the candidates). A key that differs, or a
// file of another format version, means re-tuning; a file that cannot be read as a whole is an error
// naming it. Plain C++ (no CUDA): the format is tested on the CPU.
//
//   scn tuning cache 2
//   key<TAB>FIELD<TAB>VALUE                  (one per key field, in order)
//   tile<TAB>BUCKET<TAB>NODE<TAB>TILE NAME   (one per conv and bucket; a bucket's lines together, in node order)
//   end<TAB>COUNT                            (the number of tile lines: a truncated file has no end line)
//
// Format 1 (before size buckets) had tile lines without the bucket; such a file is read as its header
// only (format 1) and re-tuned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scn/error.h"
#include "scn/graph.h"

namespace scn {

/// The format version this build writes (the number in the header line).
constexpr int kTuningCacheFormat = 2;

/// One size bucket's decisions.
struct TuningBucket {
  std::string label;                                       ///< SizeBucket::label
  std::vector<std::pair<std::string, std::string>> tiles;  ///< (conv node name, tile name), in node order
  bool operator==(const TuningBucket& o) const { return label == o.label && tiles == o.tiles; }
};

struct TuningCache {
  int format = kTuningCacheFormat;  ///< the file's format version; another one holds nothing else read
  std::vector<std::pair<std::string, std::string>> key;  ///< (field, value), in order
  std::vector<TuningBucket> buckets;                     ///< in the order they were tuned

  /// The bucket of that label, or nullptr.
  const TuningBucket* bucket(const std::string& label) const;
};

/// 64-bit FNV-1a digest of everything that defines the model: nodes, attributes, weights, biases,
/// quantization ranges, values and graph inputs / outputs (not the file name), as 16 hex digits.
std::string model_digest(const Graph& graph);
/// 64-bit FNV-1a digest of a list of names in order (the compiled kernels a cache's names refer to),
/// as 16 hex digits.
std::string names_digest(const std::vector<std::string>& names);

std::string serialize(const TuningCache& cache);
/// Parses `text` (the contents of `file`); anything malformed or truncated is an scn::Error naming
/// the file and the line. A header of another format version ("scn tuning cache N") gives a cache
/// of that format and nothing else (key_difference reports it; the engine re-tunes).
TuningCache parse_tuning_cache(const std::string& text, const std::string& file);

/// The cache in `path`, or nullopt when the file does not exist; unreadable or malformed: scn::Error.
std::optional<TuningCache> read_tuning_cache(const std::string& path);
/// Writes atomically: a temporary file beside `path`, then rename; scn::Error naming the path on failure.
void write_tuning_cache(const std::string& path, const TuningCache& cache);

/// "" when the format versions and keys are equal, else the first difference: "gpu: 'A' in the file,
/// 'B' here", "format: 1 in the file, 2 here".
std::string key_difference(const TuningCache& file, const TuningCache& now);

/// The scn version compiled into the library (project version).
const char* scn_version();

}  // namespace scn
