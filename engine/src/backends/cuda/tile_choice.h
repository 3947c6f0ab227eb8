// Which compiled tile configuration (kernels.h IgemmConfig) runs a conv: the split-K class fixed by
// the layer's shape, the heuristic pick (a table of measured preferences), the autotuner's
// candidates, and the lookup of a tile named in CudaOptions.
#pragma once

#include <string>
#include <vector>

namespace scn::cuda {

/// A conv as the tile choice sees it: padded channels (cin_p in 16-bit units), kernel volume,
/// kernel mode (0 fp16, 1 fp16 + quantizing epilogue, 2 int8 operands).
struct ConvShape {
  int cin_p = 16, cout_p = 16, K = 27, mode = 0;
};

/// Int8 operands (mode 2) sum in int32, exactly: every split class, offset grouping and kernel gives the
/// same bits, so for such convs those are the tuner's choice, not a summation class.
constexpr bool exact_sums(int mode) { return mode == 2; }

/// Split-K class: configs of one class sum in one order (bitwise-identical results), so it is fixed
/// by the layer's shape and the engine's planned batch, never by the tuner. `split_override`
/// (CudaOptions::split): 0 = by shape and batch (128 -> 128-channel or wider 3x3x3 fp16 convs split in two on
/// sm_90 in an engine planned for one frame, `max_batch` 1), 1 or 2 = that class for every fp16 conv with
/// >= 64 output channels.
int split_for(const ConvShape& c, int cc_major, int split_override, int max_batch);

/// True when config `k` sums a conv's partial sums like the configs of split class `split`: of that
/// class in fp16 (modes 0 and 1), any split with int8 operands (mode 2: int32 sums are exact), so the
/// tuner may pick an int8 conv's split as freely as its tile.
struct IgemmConfig;
bool same_split_class(const IgemmConfig& k, const ConvShape& c, int split);

/// The heuristic pick for a conv of split class `split` (mode 0), then for the INT8 modes; -1 when
/// no compiled config fits.
int choose_config(const ConvShape& c, int cc_major, int split);

/// Every compiled config of the conv's mode and split class (same_split_class) that fits, with an N tile of the output
/// width (rounded up to a power of two, at most 128) or half of it: what the autotuner times.
std::vector<int> tune_candidates(const ConvShape& c, int cc_major, int split);

/// Config id of a tile name: a full name ("igemm m64n64k32s4t", "igemm-i8 m64n64k32s4t") or a shape
/// ("m64n64k32s4t": the fp16 config when there is one, else the first of that shape). -1 when none.
int find_tile(const std::string& name);

/// Every config id matching a name or shape, in every kernel mode (tune_skip).
std::vector<int> find_tiles(const std::string& name);

/// The TMA weight layout of config `id` (igemm_tile_weights: its BK, BN and wgmma swizzle), named by
/// the smallest config id of that layout: configs of one layout share one tiled copy of a conv's weights.
int tiled_layout(int id);

/// Every compiled tile name (full names).
std::vector<std::string> compiled_tile_names();
/// Every compiled osplit config's name ("osplit c16x16r32p2s6w8", ...).
std::vector<std::string> compiled_osplit_names();

/// Offset groups of the warp-independent osplit kernel (igemm_offset_split.h) for a conv, 0 when the
/// conv runs the implicit-GEMM tiles. It fits convs of 27 offsets with 16 -> 16, 32 -> 32 or 16 -> 32
/// channels (the strided conv into level 1), fp16 (mode 0), fp16 with the quantizing epilogue (mode 1) or
/// int8 operands (mode 2). `option`
/// (CudaOptions::offset_groups): 0 = by GPU (two groups on sm_90, where they were measured faster;
/// none elsewhere), 1 = none, 2 = two groups wherever it fits. Like the split-K class, this fixes the
/// fp16 summation order, so it is never the tuner's choice (int8 sums are exact: any count gives the
/// int8 tiles' bits).
int osplit_groups_for(const ConvShape& c, int cc_major, int option);

/// osplit configs with one offset group (the tiles' summation order: bitwise the tiles' results) that the
/// tuner times beside the tiles of an unsplit fp16 conv outside the osplit classes (the strided 32 -> 64
/// conv into level 2) on sm_90 with CudaOptions::offset_groups 0; empty elsewhere.
std::vector<int> osplit_tile_order_candidates(const ConvShape& c, int cc_major, int option);

/// The osplit configs with `groups` offset groups (int8: any count) that fit the conv: the heuristic's
/// pick first, then the rest (what the autotuner times). Empty when none fits.
std::vector<int> osplit_candidates(const ConvShape& c, int groups);

}  // namespace scn::cuda
