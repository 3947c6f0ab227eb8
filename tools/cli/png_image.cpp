#include "png_image.h"

#include <algorithm>
#include <cstdio>

#include "scn/error.h"
#include "scn/file_io.h"

#ifdef SCN_WITH_PNG
#include <png.h>
#endif

namespace scn::cli {

RgbImage::RgbImage(int w, int h, Rgb fill) : width(w), height(h), pixels(size_t(w) * size_t(h) * 3) {
  for (size_t i = 0; i < pixels.size(); i += 3) std::copy(fill.begin(), fill.end(), pixels.begin() + long(i));
}

Rgb RgbImage::at(int x, int y) const {
  const size_t o = (size_t(y) * size_t(width) + size_t(x)) * 3;
  return {pixels[o], pixels[o + 1], pixels[o + 2]};
}

void RgbImage::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  const size_t o = (size_t(y) * size_t(width) + size_t(x)) * 3;
  pixels[o] = c[0], pixels[o + 1] = c[1], pixels[o + 2] = c[2];
}

void RgbImage::fill_rect(int x, int y, int w, int h, Rgb c) {
  for (int j = y; j < y + h; ++j)
    for (int i = x; i < x + w; ++i) set(i, j, c);
}

#ifdef SCN_WITH_PNG

namespace {

struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

// libpng reports errors through longjmp; the message is kept for the scn::Error.
void on_png_error(png_structp png, png_const_charp msg) {
  *static_cast<std::string*>(png_get_error_ptr(png)) = msg;
  png_longjmp(png, 1);
}
void on_png_warning(png_structp, png_const_charp) {}

}  // namespace

bool png_supported() { return true; }

// libpng writes through this into memory; the file is then written all or nothing.
void append_png_bytes(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}
void flush_nothing(png_structp) {}

void write_png(const std::string& path, const RgbImage& image) {
  SCN_CHECK(image.width > 0 && image.height > 0, path, ": cannot write an empty image");
  std::string error, bytes;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    SCN_FAIL(path, ": libpng could not start");
  }
  std::vector<png_bytep> rows(size_t(image.height));
  for (int y = 0; y < image.height; ++y)
    rows[size_t(y)] = const_cast<png_bytep>(image.pixels.data() + size_t(y) * size_t(image.width) * 3);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    SCN_FAIL(path, ": PNG encoding failed: ", error);
  }
  png_set_write_fn(png, &bytes, append_png_bytes, flush_nothing);
  png_set_IHDR(png, info, png_uint_32(image.width), png_uint_32(image.height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  write_file_atomic(path, bytes);
}

RgbImage read_png(const std::string& path) {
  File file;
  file.f = std::fopen(path.c_str(), "rb");
  SCN_CHECK(file.f, path, ": cannot open");
  std::string error;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_read_struct(&png, &info, nullptr);
    SCN_FAIL(path, ": libpng could not start");
  }
  RgbImage image;
  std::vector<png_bytep> rows;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    SCN_FAIL(path, ": not a readable PNG file: ", error);
  }
  png_init_io(png, file.f);
  png_read_info(png, info);
  const bool rgb8 = png_get_color_type(png, info) == PNG_COLOR_TYPE_RGB && png_get_bit_depth(png, info) == 8;
  if (!rgb8) {
    png_destroy_read_struct(&png, &info, nullptr);
    SCN_FAIL(path, ": expected an 8-bit RGB PNG");
  }
  image = RgbImage(int(png_get_image_width(png, info)), int(png_get_image_height(png, info)), {0, 0, 0});
  rows.resize(size_t(image.height));
  for (int y = 0; y < image.height; ++y) rows[size_t(y)] = image.pixels.data() + size_t(y) * size_t(image.width) * 3;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return image;
}

#else

bool png_supported() { return false; }
void write_png(const std::string& path, const RgbImage&) {
  SCN_FAIL(path, ": this scn was built without libpng (install libpng-dev and re-run cmake)");
}
RgbImage read_png(const std::string& path) {
  SCN_FAIL(path, ": this scn was built without libpng (install libpng-dev and re-run cmake)");
}

#endif

}  // namespace scn::cli
