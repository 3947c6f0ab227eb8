// Validation of a bound sparse input on the host, shared by every backend and the host-side planning
// tools: dtypes, shapes, coordinates inside the grid, batch indices, duplicate sites. Messages name
// the label (the file).
#pragma once

#include "scn/engine.h"

namespace scn {

/// The contents of features [N, C] (float16/float32) and indices [N, 4] int32 held on the host, whose
/// shapes and dtypes check_sparse_input_shapes has accepted: the coordinates (check_sparse_indices) and
/// finite features; with fp16_activations (an Fp16 / Int8 engine) also within what float16 holds (|x| < 65520,
/// which rounds to at most 65504; a larger float32 feature became an infinity in the first layer).
void check_sparse_input_values(const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                               const std::string& input_name, const InputLabels& labels, bool fp16_activations);

/// The smallest magnitude float16 rounds (to nearest) to infinity.
constexpr float kFp16Overflow = 65520.f;

/// The coordinates of indices [N, 4] int32 on the host: batch index in 0..batch_size-1, every
/// coordinate inside the grid, no site twice. Messages read "<label>: <what>: row i ...".
void check_sparse_indices(const Tensor& indices, const Int3& grid, int batch_size, const std::string& what,
                          const std::string& label);

/// A grid and batch size any frame or plan takes: batch >= 1, every axis >= 1, at most 2^40 cells and 2^62 sites
/// (linear site keys fit int64). Messages read "<what>: ...".
void check_grid_and_batch(const Int3& grid, int batch_size, const std::string& what);

/// Shape and dtype checks only (for device tensors whose contents are checked on the device).
void check_sparse_input_shapes(const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                               int32_t channels, const std::string& input_name, const InputLabels& labels);

}  // namespace scn
