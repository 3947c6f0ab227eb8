// PCD (Point Cloud Library) files, DATA ascii or binary, read field by field into float32.
#pragma once

#include <string>
#include <vector>

#include "scn/tensor.h"

namespace scn::io {

/// The whole file; throws scn::Error naming it when it cannot be read.
std::string read_whole_file(const std::string& path);

/// Host float32 [P, fields.size()] with the named fields in the given order. Throws scn::Error
/// naming the file for a malformed header, a missing field, a field with COUNT > 1, an unsupported
/// DATA type (binary_compressed), bad ASCII values and truncated or oversized data.
Tensor read_pcd(const std::string& path, const std::vector<std::string>& fields);

}  // namespace scn::io
