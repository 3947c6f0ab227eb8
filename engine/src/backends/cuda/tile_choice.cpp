#include "backends/cuda/tile_choice.h"

#include "backends/cuda/igemm_offset_split.h"
#include "backends/cuda/kernels.h"

namespace scn::cuda {

namespace {

/// A tile by its fields (mode 0), as IgemmConfig holds them.
struct TileKey {
  int bm, bn, bk, stages;
  bool tma;
  int warps, group, min_blocks, split;
  bool wgmma;
};

bool matches(const IgemmConfig& c, const TileKey& k) {
  return c.mode == 0 && c.bm == k.bm && c.bn == k.bn && c.bk == k.bk && c.stages == k.stages && c.tma == k.tma &&
         c.warps_m * c.warps_n == k.warps && c.group == k.group && c.min_blocks == k.min_blocks && c.split == k.split &&
         c.wgmma == k.wgmma && !c.ws;
}

/// One preference of the heuristic: for convs of this split class and output width class (16, 32,
/// 64, 128), and (when cin_p_exact > 0) exactly this many padded input channels.
struct Preference {
  int split, width, cin_p_exact;
  TileKey tile;
};

constexpr bool T = true, F = false;

// Measured on the CenterPoint frame (docs/benchmarks.md): the N tile follows the output channels,
// the K tile the input channels, and 64+ output channels take their weights through TMA bulk copies
// on sm_90. The first row that fits wins; tiles that do not fit the GPU or the channels (TMA below
// sm_90, BK not dividing cin_p) are skipped. A split class without a fitting tile falls back to the
// unsplit rows.
// clang-format off
constexpr Preference kPreferences[] = {
    //  split width cin   bm   bn   bk  st  tma warps g  r  x  wgmma
    {2, 128, 0, {64, 128, 64, 2, T, 4, 1, 1, 2, T}},
    {2, 128, 0, {64, 128, 64, 3, T, 4, 1, 1, 2, F}},
    {2, 64, 0, {128, 64, 64, 3, T, 4, 1, 1, 2, F}},
    {2, 32, 0, {128, 32, 32, 3, F, 4, 1, 1, 2, F}},
    {2, 16, 0, {128, 16, 16, 4, F, 4, 1, 1, 2, F}},
    {1, 16, 0, {128, 16, 16, 4, T, 4, 1, 1, 1, F}},
    {1, 16, 0, {128, 16, 16, 4, F, 4, 1, 1, 1, F}},
    {1, 16, 0, {128, 16, 32, 3, F, 4, 1, 1, 1, F}},
    {1, 32, 0, {128, 32, 32, 3, T, 8, 1, 4, 1, F}},
    {1, 32, 0, {128, 32, 32, 4, T, 4, 1, 1, 1, F}},
    {1, 32, 16, {128, 32, 16, 4, F, 8, 1, 1, 1, F}},
    {1, 32, 0, {128, 32, 32, 4, F, 4, 1, 1, 1, F}},
    {1, 32, 0, {128, 32, 16, 4, F, 4, 1, 1, 1, F}},
    {1, 64, 0, {64, 64, 32, 4, T, 4, 1, 1, 1, F}},
    {1, 64, 0, {64, 64, 32, 3, F, 4, 1, 1, 1, F}},
    {1, 64, 0, {64, 64, 16, 3, F, 4, 1, 1, 1, F}},
    {1, 128, 0, {32, 128, 64, 3, T, 4, 1, 1, 1, F}},
    {1, 128, 0, {32, 128, 32, 4, T, 4, 1, 1, 1, F}},
    {1, 128, 0, {64, 128, 64, 3, F, 4, 1, 1, 1, F}},
    {1, 128, 0, {64, 128, 16, 3, F, 4, 1, 1, 1, F}},
};
// clang-format on

/// The N tile class of an output width: 16, 32, 64 or 128.
int width_class(int cout_p) {
  int bn = 16;
  while (bn < cout_p && bn < 128) bn *= 2;
  return bn;
}

int find_key(const TileKey& k) {
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (matches(igemm_config(id), k)) return id;
  return -1;
}

int choose_fp16(const ConvShape& c, int cc, int split) {
  const int width = width_class(c.cout_p);
  for (int pass = 0; pass < 2; ++pass) {
    const int want = pass == 0 ? split : 1;
    if (pass == 1 && split == 1) break;
    for (const Preference& p : kPreferences) {
      if (p.split != want || p.width != width || (p.cin_p_exact && p.cin_p_exact != c.cin_p)) continue;
      const int id = find_key(p.tile);
      if (id >= 0 && igemm_config_fits(id, c.cin_p, cc, c.K)) return id;
    }
  }
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (igemm_config(id).split == 1 && igemm_config_fits(id, c.cin_p, cc, c.K)) return id;
  return -1;
}

std::string shape_of(const char* full) {
  const std::string n = full;
  const size_t sp = n.find(' ');
  return sp == std::string::npos ? n : n.substr(sp + 1);
}

}  // namespace

bool same_split_class(const IgemmConfig& k, const ConvShape& c, int split) {
  return exact_sums(c.mode) || k.split == split;
}

int split_for(const ConvShape& c, int cc_major, int split_override, int max_batch) {
  if (cc_major < 9 || c.K > 32 || c.mode != 0) return 1;
  if (split_override > 0) return c.cout_p >= 64 ? split_override : 1;
  // One frame's deepest level leaves SMs idle under unsplit tiles (CenterPoint: 10k rows, 81 tiles of 128 rows
  // for 132 SMs), so its 128-channel convs split their offsets over two CTAs. An engine planned for several frames
  // has tiles for every SM, and there the split's cluster reduction costs more than it saves.
  return max_batch == 1 && c.cin_p >= 128 && c.cout_p >= 128 && c.K >= 27 ? 2 : 1;
}

std::vector<int> tune_candidates(const ConvShape& c, int cc, int split) {
  const int bn = width_class(c.cout_p);
  std::vector<int> v;
  for (int id = 0; id < igemm_num_configs(); ++id) {
    const IgemmConfig& k = igemm_config(id);
    if (!same_split_class(k, c, split) || !igemm_config_fits(id, c.cin_p, cc, c.K, c.mode)) continue;
    if (k.bn == bn || (k.bn * 2 == bn && k.bn >= 16)) v.push_back(id);
  }
  return v;
}

int choose_config(const ConvShape& c, int cc, int split) {
  if (c.mode == 0) return choose_fp16(c, cc, split);
  // INT8 engines' kernels: the first candidate, preferring TMA weights on sm_90; any config of the
  // mode that fits otherwise (the autotuner normally replaces the pick)
  const std::vector<int> cands = tune_candidates(c, cc, 1);
  for (int id : cands)
    if (igemm_config(id).tma == (cc >= 9)) return id;
  if (!cands.empty()) return cands[0];
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (igemm_config_fits(id, c.cin_p, cc, c.K, c.mode)) return id;
  return -1;
}

int find_tile(const std::string& name) {
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (name == igemm_config(id).name) return id;
  int any = -1;
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (shape_of(igemm_config(id).name) == name) {
      if (igemm_config(id).mode == 0) return id;
      if (any < 0) any = id;
    }
  return any;
}

std::vector<int> find_tiles(const std::string& name) {
  std::vector<int> v;
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (name == igemm_config(id).name || shape_of(igemm_config(id).name) == name) v.push_back(id);
  return v;
}

int tiled_layout(int id) {
  const IgemmConfig& c = igemm_config(id);
  for (int k = 0; k < id; ++k) {
    const IgemmConfig& o = igemm_config(k);
    if (o.tma && o.bk == c.bk && o.bn == c.bn && o.wgmma == c.wgmma) return k;
  }
  return id;
}

std::vector<std::string> compiled_tile_names() {
  std::vector<std::string> v;
  for (int id = 0; id < igemm_num_configs(); ++id) v.push_back(igemm_config(id).name);
  return v;
}

std::vector<std::string> compiled_osplit_names() {
  std::vector<std::string> v;
  for (int id = 0; id < osplit_num_configs(); ++id) v.push_back(osplit_config(id).name);
  return v;
}

int osplit_groups_for(const ConvShape& c, int cc_major, int option) {
  // the shapes measured faster than the best tile (docs/benchmarks.md): the 16/32-channel levels and
  // the strided 16 -> 32 conv into level 1 (32 -> 64 runs the tiles' class, its osplit configs summing in
  // the tiles' order: osplit_tile_order_candidates); in
  // fp16 and, for the INT8 engines, with the quantizing epilogue (mode 1) or int8 operands (mode 2;
  // cin_p counts pairs of channels)
  const int cin = c.mode == 2 ? 2 * c.cin_p : c.cin_p;
  const bool shape = (cin == c.cout_p && (cin == 16 || cin == 32)) || (cin == 16 && c.cout_p == 32);
  if (option == 1 || c.K != 27 || !shape) return 0;
  if (option == 0 && cc_major != 9) return 0;
  return osplit_candidates(c, 2).empty() ? 0 : 2;
}

std::vector<int> osplit_tile_order_candidates(const ConvShape& c, int cc_major, int option) {
  std::vector<int> v;
  if (option != 0 || cc_major != 9 || c.mode != 0 || c.K != 27 || osplit_groups_for(c, cc_major, option) > 0) return v;
  for (int id = 0; id < osplit_num_configs(); ++id) {
    const OsplitConfig& k = osplit_config(id);
    if (k.mode == 0 && k.groups == 1 && k.cin == c.cin_p && k.cout == c.cout_p && osplit_fits_device(id))
      v.push_back(id);
  }
  return v;
}

std::vector<int> osplit_candidates(const ConvShape& c, int groups) {
  // the fastest of each width on the real nuScenes frame (H200, docs/benchmarks.md)
  static const char* const kPicks[] = {
      "osplit c16x16r32p2s6w8",   "osplit c32x32r32p2s3w20",  "osplit c16x32r32p2s6w8",
      "osplit qc16x16r32p2s6w8",  "osplit qc32x32r32p2s3w20", "osplit qc16x32r32p2s6w8",
      "osplit i8c16x16r32p2s6w8", "osplit i8c32x32r32p2s6w8", "osplit i8c16x32r32p2s8w8"};
  std::vector<int> v;
  // int8 sums are exact: every offset-group count gives the same bits, so all are candidates
  auto fits = [&](int id) {
    const OsplitConfig& k = osplit_config(id);
    return k.mode == c.mode && c.K == 27 && k.cin == c.cin_p && k.cout == c.cout_p &&
           (k.groups == groups || exact_sums(c.mode)) && osplit_fits_device(id);
  };
  for (const char* name : kPicks) {
    const int id = osplit_find_config(name);
    if (id >= 0 && fits(id)) v.push_back(id);
  }
  for (int id = 0; id < osplit_num_configs(); ++id)
    if (fits(id) && (v.empty() || v[0] != id)) v.push_back(id);
  return v;
}

}  // namespace scn::cuda
