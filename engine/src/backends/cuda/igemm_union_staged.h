// Host view of the union-staged implicit GEMM ("ustage", igemm_union_staged.cuh): a sparse conv kernel
// whose row tiles load the distinct input rows they need once, into shared memory, and read every
// kernel offset's A operand from there by slot. The deduplication is done once per kernel map by
// launch_stage_plan (beside the map build, shared by every conv that reuses the map), not on the
// conv's chain. Same ConvArgs as launch_igemm, plus the map's StagePlan.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels.h"

namespace scn::cuda {

/// Slot of an entry without a neighbour (reads the team's zero row).
constexpr uint16_t kStageZeroSlot = 0xffffu;

/// Per tile of `bm` output rows of one K = 27 map: the distinct input rows of its entries and, per
/// entry, the index of its row among them. Built by launch_stage_plan, read by launch_ustage.
struct StagePlan {
  uint16_t* slots = nullptr;  ///< [tiles][bm][27] slot of each entry, kStageZeroSlot where none
  int32_t* rows = nullptr;    ///< [tiles][ucap] the distinct input rows, in order of first use
  int32_t* count = nullptr;   ///< [tiles] how many (-1: more than ucap; the tile then reads the map)
  int bm = 64;
  int ucap = 512;
  int64_t cap_out = 0;  ///< output rows the plan has room for
  uint64_t* trace = nullptr;  ///< EXPERIMENT
};

/// Bytes of the three arrays of a plan for cap_out rows (each 256-byte aligned), and their layout.
size_t stage_plan_bytes(int64_t cap_out, int bm, int ucap);
StagePlan stage_plan_at(void* base, int64_t cap_out, int bm, int ucap);

/// Builds `p` from the map out_in [cap_out][27] (rows < *n_out; entries are input rows or -1).
/// Deterministic: a tile's rows are listed in order of first use over its [row][offset] entries.
void launch_stage_plan(const int32_t* out_in, const int* n_out, const StagePlan& p, int sm_count, cudaStream_t st);

struct UstageConfig {
  int cin, cout;  ///< channels (= ConvArgs cin_p / cout_p)
  int bm;         ///< output rows per tile (= the plan's bm)
  int ucap;       ///< staged rows a tile has room for (= the plan's ucap)
  int warps;      ///< warps of a team (one tile at a time; BM / warps rows each)
  int teams;      ///< teams per block (they share the block's weights)
  const char* name;
  bool wgmma = false;  ///< one warpgroup per tile, wgmma with A in registers (sm_90a object; compute capability 9.0)
};

int ustage_num_configs();
const UstageConfig& ustage_config(int id);
/// Config id by name ("ustage c32x32m64u512w4t4" or without the "ustage " prefix), -1 when absent.
int ustage_find_config(const char* name);
/// True when config `id` runs this conv: fp16, cin_p / cout_p equal to the config's, K = 27.
bool ustage_config_fits(int id, const ConvArgs& a);
int ustage_blocks_per_sm(int id);
size_t ustage_smem_bytes(int id);
/// Prepares the kernels (shared-memory limits, occupancy) on the current device; configs wider than
/// its shared memory are marked as not fitting.
void ustage_init();
bool ustage_fits_device(int id);
/// Launches config `id` on plan `p` (whose bm / ucap must be the config's; throws scn::Error
/// otherwise). Persistent grid sized for cap_out. Results are bitwise those of launch_igemm's tiles
/// (offsets ascending, channels ascending per output element). `pdl` as for launch_osplit.
void launch_ustage(int id, const ConvArgs& a, const StagePlan& p, int sm_count, cudaStream_t st, bool pdl = false);

}  // namespace scn::cuda
