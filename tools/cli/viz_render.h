// Drawing `scn viz` pictures: a 2-D map of non-negative values as a colour image (colour map from
// black at 0 to pale yellow at the maximum), a colour bar beside it and the value range written
// with a small built-in bitmap font (digits and . - + e).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "png_image.h"

namespace scn::cli {

/// Values on a height x width grid, row-major (row 0 is drawn at the top).
struct Map2D {
  int64_t height = 0, width = 0;
  std::vector<double> values;
  double at(int64_t row, int64_t col) const { return values[size_t(row * width + col)]; }
};

/// The colour of t in [0, 1] (clamped): black at 0, through purple, red and orange, to pale yellow
/// at 1 (an inferno-like ramp; every t > 0 is brighter than black).
Rgb colormap(double t);

/// Text in the built-in 5 x 7 font (digits, '.', '-', '+', 'e'; other characters are left blank),
/// each font pixel drawn as a scale x scale square with its top-left corner at (x, y).
void draw_text(RgbImage& image, int x, int y, const std::string& text, Rgb color, int scale = 2);
/// Width in pixels of `text` drawn by draw_text.
int text_width(const std::string& text, int scale = 2);

/// Layout of a rendered map: where each cell's pixels start and how large they are.
struct MapLayout {
  int map_x = 0, map_y = 0;  ///< top-left pixel of cell (0, 0)
  int cell = 1;              ///< pixels per cell side
  int bar_x = 0, bar_y = 0, bar_w = 0, bar_h = 0;
};

/// Renders the map over [0, max] (max = the largest value; all black when it is 0) with a colour
/// bar and the numbers 0 and max beside it. Small maps are magnified so the picture is at least
/// ~512 pixels on its long side. `layout` (optional) receives the geometry.
RgbImage render_map(const Map2D& map, MapLayout* layout = nullptr);

/// "%.4g" of v: the text printed for the range.
std::string range_label(double v);

}  // namespace scn::cli
