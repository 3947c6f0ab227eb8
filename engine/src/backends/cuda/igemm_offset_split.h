// Host view of the warp-independent implicit GEMM ("osplit", igemm_offset_split.cuh): a sparse conv
// kernel for 16/32-input-channel layers (16/32 output channels, fp16 also 64) whose warps run their own
// gather pipelines with no block-wide barrier per step, the weights staged once per block. Same ConvArgs
// as launch_igemm.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels.h"

namespace scn::cuda {

struct OsplitConfig {
  int cin, cout;  ///< ConvArgs cin_p / cout_p: 16-bit units per input row (fp16 channels, or pairs of int8
                  ///< channels), output channels
  int rows;       ///< rows per warp (a slab; 32 or 64)
  int groups;     ///< offset groups P: the P warps of a team share a slab, warp g sums the offsets k % P == g
  int stages;     ///< per-warp gather pipeline depth (offsets in flight: stages - 1)
  int warps;      ///< warps per block (teams of P warps)
  int mode;       ///< kernel mode (kernels.h IgemmConfig::mode): 0 fp16; INT8 engines: 1 fp16 operands with the
                  ///< quantization-aware epilogue, 2 int8 operands
  const char* name;
};

/// The compiled configurations.
int osplit_num_configs();
const OsplitConfig& osplit_config(int id);
/// Config id by name ("osplit c32x32r32p1s4w16", "osplit qc16x16r32p2s6w8", "osplit i8c16x16r32p2s6w8",
/// or without the "osplit " prefix), -1 when absent.
int osplit_find_config(const char* name);
/// True when config `id` runs this conv: cin_p / cout_p equal to the config's, K = 27, and an fp16
/// config for an fp16-mode conv (no QEpilogue), a mode 1 or 2 config for one with a QEpilogue (the
/// caller keeps each mode's configs to its convs, as with launch_igemm's modes).
bool osplit_config_fits(int id, const ConvArgs& a);
/// Blocks per SM of config `id` on the current device (after osplit_init).
int osplit_blocks_per_sm(int id);
/// Dynamic shared memory of config `id` in bytes.
size_t osplit_smem_bytes(int id);
/// Prepares the kernels for the current device once (shared-memory limits, occupancy: a table per
/// device, immutable afterwards; thread-safe). Configs that need more shared memory than the device
/// has are marked as not fitting, not an error.
void osplit_init();
/// True when config `id` runs on the current device (after osplit_init).
bool osplit_fits_device(int id);
/// Launches config `id` (persistent grid sized for cap_out). Throws scn::Error when it does not fit.
/// `pdl`: as a programmatic dependent launch (sm_90 images), under launch_igemm's contract: a.n_out and
/// a.out_in must not be written by the kernel before it on `st`.
/// fp16 operands (modes 0 and 1): results are bitwise those of every other config of the same mode and
/// `groups`; with groups == 1 they are the summation order of launch_igemm's tiles (offsets ascending,
/// channels ascending per element). int8: exact int32 sums, so every config gives the int8 tiles' bits.
void launch_osplit(int id, const ConvArgs& a, int sm_count, cudaStream_t st, bool pdl = false);

}  // namespace scn::cuda
