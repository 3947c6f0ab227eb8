// A batch made of copies of one frame (`scn bench --batch-sweep` with --features/--indices): the
// frame's rows repeated once per batch index, so every sample of the batch is the real frame.
#pragma once

#include <string>

#include "scn/tensor.h"

namespace scn::cli {

struct FrameBatch {
  Tensor features;  ///< [batch x N, C], the frame's dtype
  Tensor indices;   ///< int32 [batch x N, 4], column 0 = the copy's batch index
};

/// `batch` copies of the frame (features [N, C], int32 indices [N, 4] whose batch column is 0 in every
/// row). A frame that already holds several samples (a non-zero batch index) is an error naming
/// `indices_label` and the row; so are shapes that do not pair up.
FrameBatch batch_of_copies(const Tensor& features, const Tensor& indices, int batch, const std::string& features_label,
                           const std::string& indices_label);

}  // namespace scn::cli
