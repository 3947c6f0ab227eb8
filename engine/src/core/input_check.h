// Validation of a bound sparse input on the host, shared by every backend and the host-side planning
// tools: dtypes, shapes, coordinates inside the grid, batch indices, duplicate sites. Messages name
// the label (the file).
#pragma once

#include "scn/engine.h"

namespace scn {

/// The contents of features [N, C] (float16/float32) and indices [N, 4] int32 held on the host, whose
/// shapes and dtypes check_sparse_input_shapes has accepted: the coordinates (check_sparse_indices) and
/// finite features.
void check_sparse_input_values(const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                               const std::string& input_name, const InputLabels& labels);

/// The coordinates of indices [N, 4] int32 on the host: batch index in 0..batch_size-1, every
/// coordinate inside the grid, no site twice. Messages read "<label>: <what>: row i ...".
void check_sparse_indices(const Tensor& indices, const Int3& grid, int batch_size, const std::string& what,
                          const std::string& label);

/// Shape and dtype checks only (for device tensors whose contents are checked on the device).
void check_sparse_input_shapes(const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                               int32_t channels, const std::string& input_name, const InputLabels& labels);

}  // namespace scn
