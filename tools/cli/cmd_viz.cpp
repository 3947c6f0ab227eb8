// scn viz occupancy|heatmap|diff: PNG pictures of a frame's BEV occupancy, a dense output's
// per-cell channel norm, and the per-cell |A - B| of two outputs (viz_maps.h, viz_render.h).
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "png_image.h"
#include "viz_maps.h"
#include "viz_render.h"

namespace scn::cli {

CLI::App* add_viz(CLI::App& app, VizArgs& a) {
  CLI::App* c = app.add_subcommand("viz", "PNG pictures: BEV occupancy of a frame, heat map of an output, |A-B|");
  c->require_subcommand(1, 1);
  a.occupancy = c->add_subcommand("occupancy", "Voxels per BEV cell (summed over the height axis) of a frame");
  a.occupancy->add_option("indices", a.inputs, "Indices [N, 4] int32 .tensor")->required()->expected(1);
  a.occupancy->add_option("--grid", a.grid, "Grid in the index order, e.g. 41x1440x1440")
      ->required()
      ->check(grid_validator());
  a.occupancy->add_option("--order", a.order, "Index order of the indices and grid")
      ->capture_default_str()
      ->check(CLI::IsMember({"zyx", "xyz"}));
  a.heatmap = c->add_subcommand("heatmap", "Per-cell L2 norm over the channels of a dense output [N, C, H, W]");
  a.heatmap->add_option("tensor", a.inputs, "Dense .tensor (float16 / float32)")->required()->expected(1);
  a.diff = c->add_subcommand("diff", "Per-cell |A - B| (L2 norm over the channels of A - B) of two dense outputs");
  a.diff->add_option("tensors", a.inputs, "A.tensor B.tensor (same shape)")->required()->expected(2);
  for (CLI::App* s : {a.occupancy, a.heatmap, a.diff}) {
    s->add_option("-o,--output", a.output, "PNG file to write")->required();
    s->add_option("--batch-index", a.batch_index, "Which batch item to draw")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
  }
  for (CLI::App* s : {a.heatmap, a.diff})
    s->add_option("--channels", a.channels, "Only these channels, e.g. 0,5 (default: all)");
  return c;
}

int run_viz(const VizArgs& a) {
  check_output_file("--output", a.output);
  Map2D map;
  std::string what;
  if (a.occupancy->parsed()) {
    const Tensor idx = Tensor::load(a.inputs.at(0));
    map = occupancy_map(idx, parse_grid(a.grid), a.order, a.batch_index, a.inputs[0]);
    what = "occupancy (voxels per BEV cell) of " + a.inputs[0];
  } else {
    const std::vector<int64_t> channels = a.channels.empty() ? std::vector<int64_t>{} : parse_channel_list(a.channels);
    const std::string ch = a.channels.empty() ? "all channels" : "channels " + a.channels;
    if (a.heatmap->parsed()) {
      map = channel_norm_map(Tensor::load(a.inputs.at(0)), channels, a.batch_index, a.inputs[0]);
      what = "L2 norm over " + ch + " of " + a.inputs[0];
    } else {
      map = diff_norm_map(Tensor::load(a.inputs.at(0)), Tensor::load(a.inputs.at(1)), channels, a.batch_index,
                          a.inputs[0], a.inputs[1]);
      what = "|A - B| (L2 over " + ch + ") of " + a.inputs[0] + " - " + a.inputs[1];
    }
  }
  double vmax = 0;
  int64_t at = -1, nonzero = 0;
  for (size_t i = 0; i < map.values.size(); ++i) {
    if (map.values[i] > vmax || at < 0) vmax = map.values[i], at = int64_t(i);
    nonzero += map.values[i] != 0;
  }
  write_png(a.output, render_map(map));
  std::printf("map        %s\n", what.c_str());
  std::printf("size       %lld x %lld cells (rows = y, columns = x), batch index %d\n",
              static_cast<long long>(map.height), static_cast<long long>(map.width), a.batch_index);
  std::printf("range      0 .. %s, max at row %lld, column %lld; %lld non-zero cells\n", range_label(vmax).c_str(),
              static_cast<long long>(at / map.width), static_cast<long long>(at % map.width),
              static_cast<long long>(nonzero));
  std::printf("wrote      %s\n", a.output.c_str());
  return 0;
}

}  // namespace scn::cli
