// `scn viz`: the maps computed from tensors, and the PNG files the binary writes, decoded with
// libpng and checked pixel by pixel against the tensors they were drawn from.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "png_image.h"
#include "scn/error.h"
#include "scn/tensor.h"
#include "viz_maps.h"
#include "viz_render.h"

namespace {

using scn::DType;
using scn::Tensor;
using namespace scn::cli;
using scn::test::CliResult;

std::string q(const std::string& s) { return scn::test::shell_quote(s); }
CliResult scn_cli(const std::string& args) { return scn::test::run_cli(SCN_CLI_EXE, args, "viz"); }

const Rgb kBlack{0, 0, 0};

// The colour of cell (row, col) in a picture laid out as `l` (its centre pixel).
Rgb cell(const RgbImage& img, const MapLayout& l, int64_t row, int64_t col) {
  return img.at(l.map_x + int(col) * l.cell + l.cell / 2, l.map_y + int(row) * l.cell + l.cell / 2);
}

// A frame on the zyx grid 4 x 5 x 6: a column of 3 voxels over (y, x) = (1, 2), one voxel at
// (4, 5), and a voxel of batch 1 at (0, 0) that batch 0's map must not show.
std::vector<int32_t> frame_zyx() { return {0, 0, 1, 2, 0, 1, 1, 2, 0, 3, 1, 2, 0, 2, 4, 5, 1, 1, 0, 0}; }

TEST(VizMaps, OccupancyCountsVoxelsPerBevCellInEitherOrder) {
  const std::vector<int32_t> zyx = frame_zyx();
  std::vector<int32_t> xyz = zyx;
  for (size_t i = 0; i < xyz.size(); i += 4) std::swap(xyz[i + 1], xyz[i + 3]);
  const Map2D a = occupancy_map(Tensor::from_host(zyx.data(), {5, 4}, DType::Int32), {4, 5, 6}, "zyx", 0, "f");
  const Map2D b = occupancy_map(Tensor::from_host(xyz.data(), {5, 4}, DType::Int32), {6, 5, 4}, "xyz", 0, "f");
  ASSERT_EQ(a.height, 5);
  ASSERT_EQ(a.width, 6);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.at(1, 2), 3.0);
  EXPECT_EQ(a.at(4, 5), 1.0);
  EXPECT_EQ(a.at(0, 0), 0.0);  // batch 1's voxel
  double total = 0;
  for (double v : a.values) total += v;
  EXPECT_EQ(total, 4.0);
  const Map2D b1 = occupancy_map(Tensor::from_host(zyx.data(), {5, 4}, DType::Int32), {4, 5, 6}, "zyx", 1, "f");
  EXPECT_EQ(b1.at(0, 0), 1.0);
}

TEST(VizMaps, OccupancyRejectsRowsOutsideTheGrid) {
  const std::vector<int32_t> zyx = frame_zyx();
  EXPECT_THROW(occupancy_map(Tensor::from_host(zyx.data(), {5, 4}, DType::Int32), {4, 5, 5}, "zyx", 0, "f"),
               scn::Error);
}

// A frame with rows of other samples only is not drawn as an empty one; an empty frame is
TEST(VizMaps, OccupancyOfABatchIndexWithNoRowIsAnError) {
  const std::vector<int32_t> zyx = frame_zyx();
  try {
    occupancy_map(Tensor::from_host(zyx.data(), {5, 4}, DType::Int32), {4, 5, 6}, "zyx", 5, "f.tensor");
    ADD_FAILURE() << "no error";
  } catch (const scn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("f.tensor: no row has batch index 5 (the 5 rows have batch indices 0..1)"),
              std::string::npos)
        << e.what();
  }
  const Map2D empty = occupancy_map(Tensor::empty({0, 4}, DType::Int32), {4, 5, 6}, "zyx", 0, "e");
  for (double v : empty.values) EXPECT_EQ(v, 0.0);
}

// Maps beyond 16384 cells a side or 2^26 cells are errors naming the file (a 1 x 2^26 grid passed the old cell cap
// and ended in std::bad_alloc); a channel listed twice is an error, not counted twice
TEST(VizMaps, MapsTooLargeToDrawAndRepeatedChannels) {
  const std::vector<int32_t> one = {0, 0, 0, 5};
  EXPECT_THROW(occupancy_map(Tensor::from_host(one.data(), {1, 4}, DType::Int32), {1, 1, 67108864}, "zyx", 0, "o"),
               scn::Error);
  try {
    channel_norm_map(Tensor::empty({1, 1, 1, 20000}, DType::Float32), {}, 0, "wide.tensor");
    ADD_FAILURE() << "no error";
  } catch (const scn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("wide.tensor: the map 1 x 20000 is too large to draw"), std::string::npos)
        << e.what();
  }
  std::vector<float> v = {0, 1, 2, 3, 4, 5, 3, 3, 3, 3, 3, 3};
  const Tensor t = Tensor::from_host(v.data(), {1, 2, 2, 3}, DType::Float32);
  EXPECT_THROW(channel_norm_map(t, {0, 0}, 0, "t"), scn::Error);
  EXPECT_NO_THROW(channel_norm_map(t, {1, 0}, 0, "t"));
}

TEST(VizMaps, ChannelNormAndDiff) {
  // [1, 2, 2, 3]: channel 0 = 0..5, channel 1 = 3 everywhere.
  std::vector<float> v = {0, 1, 2, 3, 4, 5, 3, 3, 3, 3, 3, 3};
  const Tensor t = Tensor::from_host(v.data(), {1, 2, 2, 3}, DType::Float32);
  const Map2D all = channel_norm_map(t, {}, 0, "t");
  EXPECT_DOUBLE_EQ(all.at(1, 1), 5.0);  // sqrt(4^2 + 3^2)
  EXPECT_DOUBLE_EQ(all.at(0, 0), 3.0);
  const Map2D c0 = channel_norm_map(t, {0}, 0, "t");
  EXPECT_DOUBLE_EQ(c0.at(1, 2), 5.0);
  EXPECT_THROW(channel_norm_map(t, {2}, 0, "t"), scn::Error);
  std::vector<float> w = v;
  w[4] += 2;  // (row 1, col 1) of channel 0
  const Map2D d = diff_norm_map(t, Tensor::from_host(w.data(), {1, 2, 2, 3}, DType::Float32), {}, 0, "a", "b");
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) EXPECT_DOUBLE_EQ(d.at(r, c), r == 1 && c == 1 ? 2.0 : 0.0);
  EXPECT_EQ(parse_channel_list("0, 5,7"), (std::vector<int64_t>{0, 5, 7}));
  EXPECT_THROW(parse_channel_list("0,,5"), scn::Error);
  EXPECT_THROW(parse_channel_list("-1"), scn::Error);
}

class VizCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!png_supported()) GTEST_SKIP() << "this build has no libpng: scn viz is unavailable";
    dir_ = scn::test::temp_dir();
  }
  std::string dir_;
};

TEST_F(VizCli, OccupancyPictureLightsOccupiedCellsOnly) {
  const std::vector<int32_t> zyx = frame_zyx();
  const std::string idx = dir_ + "/viz_idx.tensor", png = dir_ + "/viz_occ.png";
  Tensor::from_host(zyx.data(), {5, 4}, DType::Int32).save(idx);
  const CliResult r = scn_cli("viz occupancy " + q(idx) + " --grid 4x5x6 -o " + q(png));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("range      0 .. 3, max at row 1, column 2; 2 non-zero cells"), std::string::npos) << r.out;
  const RgbImage img = read_png(png);
  // The expected counts, written out independently of occupancy_map.
  Map2D want;
  want.height = 5, want.width = 6, want.values.assign(30, 0.0);
  want.values[1 * 6 + 2] = 3, want.values[4 * 6 + 5] = 1;
  MapLayout l;
  const RgbImage expected = render_map(want, &l);
  ASSERT_EQ(img.width, expected.width);
  ASSERT_EQ(img.height, expected.height);
  for (int64_t row = 0; row < 5; ++row)
    for (int64_t col = 0; col < 6; ++col) {
      const Rgb c = cell(img, l, row, col);
      if (want.at(row, col) > 0)
        EXPECT_NE(c, kBlack) << "occupied cell (" << row << ", " << col << ") is not lit";
      else
        EXPECT_EQ(c, kBlack) << "empty cell (" << row << ", " << col << ") is lit";
    }
  EXPECT_EQ(cell(img, l, 1, 2), colormap(1.0));  // the fullest cell has the hottest colour
  EXPECT_EQ(cell(img, l, 4, 5), colormap(1.0 / 3.0));
  // Colour bar: hottest at the top, black at the bottom; the numbers are drawn beside it.
  EXPECT_EQ(img.at(l.bar_x + l.bar_w / 2, l.bar_y), colormap(1.0));
  EXPECT_EQ(img.at(l.bar_x + l.bar_w / 2, l.bar_y + l.bar_h - 1), colormap(0.0));
  int ink = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = l.bar_x + l.bar_w + 2; x < img.width; ++x) ink += img.at(x, y) == kBlack;
  EXPECT_GT(ink, 20) << "no range numbers beside the colour bar";
  EXPECT_EQ(img.pixels, expected.pixels);
}

TEST_F(VizCli, HeatmapHasItsHottestColourAtTheMaximum) {
  // [1, 3, 6, 8]: smooth channel values with the largest norm at (4, 6); channel 2 alone peaks at (1, 1).
  std::vector<float> v(3 * 6 * 8);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) {
        const double d = c == 2 ? std::hypot(y - 1, x - 1) : std::hypot(y - 4, x - 6);
        v[size_t((c * 6 + y) * 8 + x)] = float((c == 2 ? 3.0 : 10.0) / (1.0 + d));
      }
  const std::string t = dir_ + "/viz_heat.tensor", png = dir_ + "/viz_heat.png", png2 = dir_ + "/viz_heat2.png";
  Tensor::from_host(v.data(), {1, 3, 6, 8}, DType::Float32).to_dtype(DType::Float16).save(t);
  ASSERT_EQ(scn_cli("viz heatmap " + q(t) + " -o " + q(png)).code, 0);
  ASSERT_EQ(scn_cli("viz heatmap " + q(t) + " --channels 2 -o " + q(png2)).code, 0);
  Map2D shape;
  shape.height = 6, shape.width = 8, shape.values.assign(48, 1.0);
  MapLayout l;
  render_map(shape, &l);
  for (const auto& [file, peak] : {std::pair<std::string, std::pair<int, int>>{png, {4, 6}}, {png2, {1, 1}}}) {
    const RgbImage img = read_png(file);
    int hottest = 0;
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) {
        const bool is_peak = y == peak.first && x == peak.second;
        hottest += cell(img, l, y, x) == colormap(1.0);
        if (is_peak) {
          EXPECT_EQ(cell(img, l, y, x), colormap(1.0)) << file;
        } else {
          EXPECT_NE(cell(img, l, y, x), kBlack) << file << ": every cell has a non-zero value";
        }
      }
    EXPECT_EQ(hottest, 1) << file;
  }
}

TEST_F(VizCli, DiffIsZeroColouredWhereTheOutputsAgree) {
  std::vector<float> a(2 * 4 * 5), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) - 2.5f;
  b = a;
  b[size_t((0 * 4 + 2) * 5 + 3)] += 4.0f;  // channel 0, (2, 3)
  b[size_t((1 * 4 + 0) * 5 + 1)] -= 1.0f;  // channel 1, (0, 1)
  const std::string ta = dir_ + "/viz_a.tensor", tb = dir_ + "/viz_b.tensor", png = dir_ + "/viz_diff.png";
  Tensor::from_host(a.data(), {1, 2, 4, 5}, DType::Float32).save(ta);
  Tensor::from_host(b.data(), {1, 2, 4, 5}, DType::Float32).save(tb);
  const CliResult r = scn_cli("viz diff " + q(ta) + " " + q(tb) + " -o " + q(png));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("range      0 .. 4, max at row 2, column 3; 2 non-zero cells"), std::string::npos) << r.out;
  Map2D shape;
  shape.height = 4, shape.width = 5, shape.values.assign(20, 4.0);
  MapLayout l;
  render_map(shape, &l);
  const RgbImage img = read_png(png);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x) {
      if (y == 2 && x == 3)
        EXPECT_EQ(cell(img, l, y, x), colormap(1.0));
      else if (y == 0 && x == 1)
        EXPECT_EQ(cell(img, l, y, x), colormap(0.25));
      else
        EXPECT_EQ(cell(img, l, y, x), kBlack) << "(" << y << ", " << x << ") where A == B";
    }
}

TEST_F(VizCli, RejectsASparseFeatureTensorAndAMissingFolder) {
  std::vector<float> f(12, 1.0f);
  const std::string t = dir_ + "/viz_sparse.tensor";
  Tensor::from_host(f.data(), {3, 4}, DType::Float32).save(t);
  CliResult r = scn_cli("viz heatmap " + q(t) + " -o " + q(dir_ + "/viz_sparse.png"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("[N, C, H, W]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(t), std::string::npos) << r.err;
  r = scn_cli("viz heatmap " + q(t) + " -o " + q(dir_ + "/no_such_folder/x.png"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no_such_folder"), std::string::npos) << r.err;
}

}  // namespace
