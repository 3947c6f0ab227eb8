// RGB images and their PNG files (libpng), for `scn viz`.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace scn::cli {

using Rgb = std::array<uint8_t, 3>;

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  ///< row-major, 3 bytes per pixel

  RgbImage() = default;
  RgbImage(int w, int h, Rgb fill);
  Rgb at(int x, int y) const;
  void set(int x, int y, Rgb c);  ///< ignored outside the image
  void fill_rect(int x, int y, int w, int h, Rgb c);
};

/// True when this build has libpng (else write_png / read_png throw scn::Error saying so).
bool png_supported();
/// Writes an 8-bit RGB PNG atomically (temporary file renamed into place); scn::Error names the path.
void write_png(const std::string& path, const RgbImage& image);
/// Reads an 8-bit RGB PNG written by write_png (tests); scn::Error names the path.
RgbImage read_png(const std::string& path);

}  // namespace scn::cli
