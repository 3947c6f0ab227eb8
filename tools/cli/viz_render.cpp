#include "viz_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace scn::cli {

namespace {

// 5 x 7 glyphs, one byte per row, bit 4 = leftmost column.
struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph kFont[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}}, {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}}, {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
};

// Control points of the colour ramp (t, r, g, b).
constexpr double kRamp[][4] = {
    {0.00, 0, 0, 0},      {0.15, 40, 11, 84},   {0.35, 120, 28, 109},  {0.55, 200, 55, 70},
    {0.75, 245, 125, 21}, {0.90, 250, 200, 60}, {1.00, 252, 255, 164},
};

constexpr Rgb kBackground{255, 255, 255};
constexpr Rgb kInk{0, 0, 0};
constexpr int kMargin = 10;

}  // namespace

Rgb colormap(double t) {
  if (!(t > 0)) t = 0;  // NaN too
  if (t > 1) t = 1;
  size_t i = 1;
  while (i + 1 < std::size(kRamp) && t > kRamp[i][0]) ++i;
  const double* a = kRamp[i - 1];
  const double* b = kRamp[i];
  const double f = (t - a[0]) / (b[0] - a[0]);
  Rgb c;
  for (int k = 0; k < 3; ++k) c[size_t(k)] = uint8_t(std::lround(a[k + 1] + f * (b[k + 1] - a[k + 1])));
  // Only t == 0 is black: the smallest non-zero value must still show.
  if (t > 0 && c[0] == 0 && c[1] == 0 && c[2] == 0) c[2] = 1;
  return c;
}

int text_width(const std::string& text, int scale) { return int(text.size()) * 6 * scale - scale; }

void draw_text(RgbImage& image, int x, int y, const std::string& text, Rgb color, int scale) {
  for (size_t k = 0; k < text.size(); ++k) {
    const Glyph* g = nullptr;
    for (const Glyph& f : kFont)
      if (f.c == text[k]) g = &f;
    if (!g) continue;
    const int gx = x + int(k) * 6 * scale;
    for (int r = 0; r < 7; ++r)
      for (int c = 0; c < 5; ++c)
        if (g->rows[r] & (0x10 >> c)) image.fill_rect(gx + c * scale, y + r * scale, scale, scale, color);
  }
}

std::string range_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

RgbImage render_map(const Map2D& map, MapLayout* layout) {
  double vmax = 0;
  for (double v : map.values)
    if (std::isfinite(v)) vmax = std::max(vmax, v);
  MapLayout l;
  const int64_t longest = std::max<int64_t>(1, std::max(map.height, map.width));
  l.cell = int(std::max<int64_t>(1, 512 / longest));
  l.map_x = kMargin;
  l.map_y = kMargin;
  const int map_w = int(map.width) * l.cell, map_h = int(map.height) * l.cell;
  const std::string top = range_label(vmax), bottom = "0";
  const int text_h = 7 * 2;
  l.bar_x = l.map_x + map_w + kMargin;
  l.bar_y = l.map_y;
  l.bar_w = 16;
  l.bar_h = std::max(map_h, 3 * text_h);
  const int label_x = l.bar_x + l.bar_w + 6;
  const int width = label_x + std::max(text_width(top), text_width(bottom)) + kMargin;
  const int height = l.map_y + std::max(map_h, l.bar_h) + kMargin;
  RgbImage img(width, height, kBackground);
  for (int64_t r = 0; r < map.height; ++r)
    for (int64_t c = 0; c < map.width; ++c) {
      const double v = map.at(r, c);
      const Rgb col = vmax > 0 ? colormap(v / vmax) : colormap(0);
      img.fill_rect(l.map_x + int(c) * l.cell, l.map_y + int(r) * l.cell, l.cell, l.cell, col);
    }
  // Colour bar: the maximum at the top, 0 at the bottom, framed.
  for (int y = 0; y < l.bar_h; ++y) {
    const double t = l.bar_h > 1 ? 1.0 - double(y) / double(l.bar_h - 1) : 1.0;
    img.fill_rect(l.bar_x, l.bar_y + y, l.bar_w, 1, colormap(t));
  }
  for (int x = l.bar_x - 1; x <= l.bar_x + l.bar_w; ++x)
    img.set(x, l.bar_y - 1, kInk), img.set(x, l.bar_y + l.bar_h, kInk);
  for (int y = l.bar_y - 1; y <= l.bar_y + l.bar_h; ++y)
    img.set(l.bar_x - 1, y, kInk), img.set(l.bar_x + l.bar_w, y, kInk);
  draw_text(img, label_x, l.bar_y, top, kInk);
  draw_text(img, label_x, l.bar_y + l.bar_h - text_h, bottom, kInk);
  if (layout) *layout = l;
  return img;
}

}  // namespace scn::cli
