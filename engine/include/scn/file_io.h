// scn — writing files all or nothing. Every file scn writes (tensors, calibrated models, CLI
// reports) goes through write_file_atomic, so a failed or interrupted write never leaves a
// half-written target: readers see the old file or the complete new one.
#pragma once

#include <string>

namespace scn {

/// Writes `bytes` to `<path>.partial` in the same folder, fsyncs it, then renames it over `path`
/// (atomic on POSIX file systems). On any failure the temporary file is removed, `path` is left
/// as it was, and scn::Error names `path` and the system's reason.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace scn
