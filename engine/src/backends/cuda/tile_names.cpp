// Tile configuration names derived from their fields (kernels.h, igemm_config_name), the way CUTLASS
// derives procedural_name(): an instance never carries a hand-typed name, and the heuristic table
// (tile_choice.cpp) refers to tiles by their fields, not by strings.
#include <string>

#include "backends/cuda/kernels.h"

namespace scn::cuda {

std::string igemm_config_name(const IgemmConfig& c) {
  std::string n = c.mode == 0 ? "igemm" : c.mode == 1 ? "igemm-q" : "igemm-i8";
  n += " m" + std::to_string(c.bm) + "n" + std::to_string(c.bn) + "k" + std::to_string(c.bk) + "s" +
       std::to_string(c.stages);
  if (c.tma) n += "t";
  const int warps = c.warps_m * c.warps_n;
  if (warps != 4) n += "w" + std::to_string(warps);
  if (c.group > 1) n += "g" + std::to_string(c.group);
  if (c.min_blocks > 1) n += "r" + std::to_string(c.min_blocks);
  if (c.split > 1) n += "x" + std::to_string(c.split);
  if (c.wgmma) n += "wg";
  if (c.ws) n += "ws";
  if (c.map_ahead) n += "a";
  return n;
}

}  // namespace scn::cuda
