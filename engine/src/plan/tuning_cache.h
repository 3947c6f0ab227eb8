// The saved autotuner decisions (CudaOptions::tuning_cache): which tile each conv runs, under a key
// that says what they were measured for (GPU, compute capability, SM count, CUDA runtime and driver,
// scn version, a digest of the model's contents, the capacities and the options that shape the
// candidates). A key that differs means re-tuning; a file that cannot be read as a whole is an error
// naming it. Plain C++ (no CUDA): the format is tested on the CPU.
//
//   scn tuning cache 1
//   key<TAB>FIELD<TAB>VALUE          (one per key field, in order)
//   tile<TAB>NODE<TAB>TILE NAME      (one per conv, in node order)
//   end<TAB>COUNT                    (the number of tile lines: a truncated file has no end line)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scn/error.h"
#include "scn/graph.h"

namespace scn {

struct TuningCache {
  std::vector<std::pair<std::string, std::string>> key;    ///< (field, value), in order
  std::vector<std::pair<std::string, std::string>> tiles;  ///< (conv node name, tile name)
};

/// 64-bit FNV-1a digest of everything that defines the model: nodes, attributes, weights, biases,
/// quantization ranges, values and graph inputs / outputs (not the file name), as 16 hex digits.
std::string model_digest(const Graph& graph);

std::string serialize(const TuningCache& cache);
/// Parses `text` (the contents of `file`); anything malformed or truncated is an scn::Error naming
/// the file and the line.
TuningCache parse_tuning_cache(const std::string& text, const std::string& file);

/// The cache in `path`, or nullopt when the file does not exist; unreadable or malformed: scn::Error.
std::optional<TuningCache> read_tuning_cache(const std::string& path);
/// Writes atomically: a temporary file beside `path`, then rename; scn::Error naming the path on failure.
void write_tuning_cache(const std::string& path, const TuningCache& cache);

/// "" when the keys are equal, else the first difference: "gpu: 'A' in the file, 'B' here".
std::string key_difference(const TuningCache& file, const TuningCache& now);

/// The scn version compiled into the library (project version).
const char* scn_version();

}  // namespace scn
