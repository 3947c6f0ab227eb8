// Whether the CUDA tests' engines run the autotuner: one switch for every CUDA test binary.
#pragma once

#include <cstdlib>
#include <string>

namespace scn::cudatest {

/// SCN_TEST_AUTOTUNE=0 builds the tests' engines with the heuristic tiles (scripts/gpu_sanitize.sh sets it
/// for racecheck, whose host memory grows with every instrumented launch: the tuner's ~200 launches per
/// conv exhaust a 128 GiB host). Any other value, or none, keeps the autotuner on.
inline bool test_autotune() {
  const char* v = std::getenv("SCN_TEST_AUTOTUNE");
  return v == nullptr || std::string(v) != "0";
}

}  // namespace scn::cudatest
