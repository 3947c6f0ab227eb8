// The one module that checks BuildOptions and reads the environment. Every behaviour is a typed
// BuildOptions field; the only environment variables are diagnostic traces (docs/cuda_backend.md,
// "Diagnostic traces"), read here.
#pragma once

#include <string>
#include <vector>

#include "scn/engine.h"

namespace scn {

/// Checks every field of `options` that does not need a device; throws scn::Error naming the field
/// (e.g. "BuildOptions.cuda.map_lookahead = -1 ...").
void validate(const BuildOptions& options);

/// The CUDA backend's check of CudaOptions::tile and ::tune_skip against the compiled tile names
/// (`compiled`: full names such as "igemm m64n64k32s4t", "igemm-i8 m64n64k32s4t"). A name matches
/// a full name, or its shape after the kernel prefix ("m64n64k32s4t"); tune_skip shapes match
/// every kernel mode; tune_skip may also name an osplit config (`osplit`: "osplit c32x32r32p2s3w20", with or without
/// the prefix). Throws naming the option and listing the valid names.
void validate_cuda_tiles(const CudaOptions& options, const std::vector<std::string>& compiled,
                         const std::vector<std::string>& osplit = {});

/// Diagnostic traces (stderr), from the environment: SCN_CUDA_PLAN_TRACE (the device arena) and
/// SCN_CUDA_AUTOTUNE_TRACE (every autotuner timing). Set and not "0" = on.
bool trace_plan();
bool trace_autotune();

}  // namespace scn
