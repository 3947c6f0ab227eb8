// Host view of osplit chains (igemm_osplit_chain.cuh): the consecutive fp16 submanifold convs of one
// kernel map (a level's SparseBasicBlocks) in one persistent kernel, each (conv, slab) started as soon as
// the slabs of the conv before it that it reads are done, instead of one launch per conv.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels.h"

namespace scn::cuda {

/// The most convs one chain launch takes.
constexpr int kMaxChainConvs = 8;

struct ChainArgs {
  ConvArgs conv[kMaxChainConvs];  ///< in order; one map (out_in), one row count, conv j + 1 reads conv j's y
  int count = 0;
  int64_t max_slabs = 0;  ///< done flags per conv: slabs of the planned capacity
  /// [2 + count * max_slabs] ints, zero between launches (the grid's last block clears them): the work
  /// counter, the count of blocks done, then per conv and slab the done flag.
  int* sync = nullptr;
};

struct OsplitChainConfig {
  int cin, cout;  ///< channels (fp16): input row units and output channels, as ConvArgs cin_p / cout_p
  int rows;       ///< rows per warp (a slab)
  int groups;     ///< offset groups P (the osplit class: bitwise the osplit configs of this P)
  int stages;     ///< per-warp gather pipeline depth
  int warps;      ///< warps per block
  int slots;      ///< convs whose weights a block holds at once (a later conv's replace the oldest)
  const char* name;
};

int osplit_chain_num_configs();
const OsplitChainConfig& osplit_chain_config(int id);
/// The chain config for convs of cin_p -> cout_p channels in the osplit class `groups` that runs on the
/// current device (after osplit_init), -1 when none.
int osplit_chain_for(int cin_p, int cout_p, int groups);
/// Rows per slab of config `id` (the done flags' unit).
int osplit_chain_rows(int id);
/// Launches config `id` over a.count convs. `pdl`: as launch_osplit's.
void launch_osplit_chain(int id, const ChainArgs& a, int sm_count, cudaStream_t st, bool pdl);

}  // namespace scn::cuda
