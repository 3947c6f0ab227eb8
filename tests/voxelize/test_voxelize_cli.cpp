// `scn voxelize`, `scn run --points` and `scn synth --points` end to end: outputs equal to the
// library's, the grid check wired into run, errors naming the file. The model is the small
// CenterPoint-like one of the ONNX test writer (declared input grid 9 x 8 x 8).
#include <gtest/gtest.h>

#include <cstring>

#include "cli/cli_runner.h"
#include "onnx_parser/onnx_writer.h"
#include "scn/engine.h"
#include "scn/points.h"
#include "voxelize/voxelize_test_util.h"

namespace {

using namespace scn;
using test::CliResult;

CliResult scn_cli(const std::string& args) { return test::run_cli(SCN_CLI_EXE, args, "vox_cli"); }
std::string q(const std::string& s) { return test::shell_quote(s); }

// Voxel grid z, y, x = 8 x 8 x 8: the model's 9 x 8 x 8 with one z plane more.
const char* kSmallVoxels = "--preset nuscenes-centerpoint --range 0,0,0,8,8,4 --voxel-size 1,1,0.5";

VoxelizerConfig small_config() {
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  c.range = {0.f, 0.f, 0.f, 8.f, 8.f, 4.f};
  c.voxel_size = {1.f, 1.f, 0.5f};
  return c;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

class VoxelizeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir();
    model_ = test::write_model(test::small_centerpoint(), "vox_small.onnx");
    points_ = dir_ + "/cloud.bin";
    write_points_bin(points_, voxtest::make_cloud(small_config(), 3000, 11));
  }
  static std::string dir_, model_, points_;
};
std::string VoxelizeCli::dir_, VoxelizeCli::model_, VoxelizeCli::points_;

TEST_F(VoxelizeCli, VoxelizeWritesWhatTheLibraryComputes) {
  const std::string f = dir_ + "/v.features.tensor", i = dir_ + "/v.indices.tensor";
  const CliResult r = scn_cli("voxelize " + q(points_) + " " + kSmallVoxels + " --device cpu --features " + q(f) +
                              " --indices " + q(i) + " --bench 3 --warmup 1");
  ASSERT_EQ(r.code, 0) << r.err;
  PointFileOptions po;
  po.columns = 5;
  const VoxelizeResult ref = voxelize(read_points(points_, po), small_config());
  EXPECT_TRUE(same_bytes(Tensor::load(f), ref.features));
  EXPECT_TRUE(same_bytes(Tensor::load(i), ref.indices));
  EXPECT_NE(r.out.find("voxels      " + std::to_string(ref.stats.voxels)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(ref.stats.dropped_out_of_range) + " out of range"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bench       median"), std::string::npos) << r.out;
}

TEST_F(VoxelizeCli, RunFromPointsEqualsRunFromItsVoxels) {
  const std::string f = dir_ + "/r.features.tensor", i = dir_ + "/r.indices.tensor";
  ASSERT_EQ(scn_cli("voxelize " + q(points_) + " " + kSmallVoxels + " --dtype fp32 --device cpu --features " + q(f) +
                    " --indices " + q(i))
                .code,
            0);
  const std::string a = dir_ + "/from_points.tensor", b = dir_ + "/from_voxels.tensor";
  const CliResult rp = scn_cli("run " + q(model_) + " --points " + q(points_) + " " + kSmallVoxels +
                               " --device cpu --precision fp32 --output " + q(a));
  ASSERT_EQ(rp.code, 0) << rp.err;
  EXPECT_NE(rp.out.find("one z plane more"), std::string::npos) << rp.out;
  const CliResult rv = scn_cli("run " + q(model_) + " --features " + q(f) + " --indices " + q(i) +
                               " --grid 9x8x8 --device cpu --precision fp32 --output " + q(b));
  ASSERT_EQ(rv.code, 0) << rv.err;
  const Tensor ta = Tensor::load(a), tb = Tensor::load(b);
  EXPECT_TRUE(same_bytes(ta, tb));
  EXPECT_EQ(ta.shape(), (std::vector<int64_t>{1, 32, 4, 4}));
}

TEST_F(VoxelizeCli, SeveralPointFilesRunAsOneBatch) {
  // the second frame: another cloud, so the batch's two BEV maps differ
  const std::string second = dir_ + "/cloud2.bin";
  write_points_bin(second, voxtest::make_cloud(small_config(), 2000, 12));
  VoxelizerConfig c = small_config();
  c.feature_dtype = DType::Float32;
  auto v = Voxelizer::create(c, Backend::Cpu, 3000, 0, 2);
  PointFileOptions po;
  po.columns = c.point_columns;
  v->run_batch({read_points(points_, po), read_points(second, po)});
  const std::string f = dir_ + "/b.features.tensor", i = dir_ + "/b.indices.tensor";
  v->features().save(f);
  v->indices().save(i);
  const std::string a = dir_ + "/batch_points.tensor", b = dir_ + "/batch_voxels.tensor";
  const CliResult rp = scn_cli("run " + q(model_) + " --points " + q(points_) + " --points " + q(second) + " " +
                               kSmallVoxels + " --dtype fp32 --device cpu --precision fp32 --output " + q(a));
  ASSERT_EQ(rp.code, 0) << rp.err;
  EXPECT_NE(rp.out.find(points_ + ", " + second + ": 5000 points"), std::string::npos) << rp.out;
  EXPECT_NE(rp.out.find("batch 2"), std::string::npos) << rp.out;
  const CliResult rv = scn_cli("run " + q(model_) + " --features " + q(f) + " --indices " + q(i) +
                               " --grid 9x8x8 --batch 2 --device cpu --precision fp32 --output " + q(b));
  ASSERT_EQ(rv.code, 0) << rv.err;
  const Tensor ta = Tensor::load(a), tb = Tensor::load(b);
  EXPECT_TRUE(same_bytes(ta, tb));
  ASSERT_EQ(ta.shape(), (std::vector<int64_t>{2, 32, 4, 4}));
  const size_t half = size_t(ta.numel() / 2) * 4;
  EXPECT_NE(std::memcmp(ta.data(), static_cast<const char*>(ta.data()) + half, half), 0);
  const CliResult bad = scn_cli("run " + q(model_) + " --points " + q(points_) + " --points " + q(second) + " " +
                                kSmallVoxels + " --batch 3 --device cpu");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--batch 3 disagrees with the 2 point files given"), std::string::npos) << bad.err;
}

// scn bench --points: raw points -> outputs timed (two files: one batch), each part alone, the per-run CSV; the
// voxel count is the CPU voxelizer's batch. --preset takes voxelizer presets with --points, scenes without.
TEST_F(VoxelizeCli, BenchTimesPointsToOutputs) {
  const std::string second = dir_ + "/cloud_b.bin", csv = dir_ + "/points_bench.csv";
  write_points_bin(second, voxtest::make_cloud(small_config(), 2500, 13));
  PointFileOptions po;
  po.columns = 5;
  auto v = Voxelizer::create(small_config(), Backend::Cpu, 3000, 0, 2);
  v->run_batch({read_points(points_, po), read_points(second, po)});
  const int64_t voxels = v->count();
  const CliResult r = scn_cli("bench " + q(model_) + " --points " + q(points_) + " --points " + q(second) + " " +
                              kSmallVoxels + " --device cpu --runs 3 --warmup 1 --csv " + q(csv));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(points_ + ", " + second + ": 5500 points, voxelizer 'nuscenes-centerpoint"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("voxels     " + std::to_string(voxels) + " (2 frames, one batch)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency    points -> outputs: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(3 runs after 1 warm-up; wall clock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("voxelizer  alone: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("network    alone on the same voxels: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("throughput "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("from host"), std::string::npos) << "the CPU has no upload to time\n" << r.out;
  const std::string rows = test::read_file(csv);
  EXPECT_EQ(rows.rfind("voxels,run,ms\n", 0), 0u) << rows;
  for (int k = 0; k < 3; ++k)
    EXPECT_NE(rows.find("\n" + std::to_string(voxels) + "," + std::to_string(k) + ","), std::string::npos) << rows;

  const CliResult scene = scn_cli("bench " + q(model_) + " --points " + q(points_) + " --preset nuscenes --device cpu");
  EXPECT_EQ(scene.code, 1);
  EXPECT_NE(
      scene.err.find("--preset nuscenes is a synthetic scene (--synthetic); with --points name a voxelizer preset"),
      std::string::npos)
      << scene.err;
  const CliResult vox_preset =
      scn_cli("bench " + q(model_) + " --synthetic 100 --preset nuscenes-centerpoint --device cpu --runs 1");
  EXPECT_EQ(vox_preset.code, 1);
  EXPECT_NE(vox_preset.err.find("--preset nuscenes-centerpoint is a voxelizer preset (for --points)"),
            std::string::npos)
      << vox_preset.err;
  const CliResult lanes = scn_cli("bench " + q(model_) + " --points " + q(points_) + " " + kSmallVoxels +
                                  " --parallel-frames 2 --device cpu --runs 1");
  EXPECT_EQ(lanes.code, 1);
  EXPECT_NE(lanes.err.find("--parallel-frames 2 exceeds the 1 point files given"), std::string::npos) << lanes.err;
  EXPECT_EQ(scn_cli("bench " + q(model_) + " --points " + q(points_) + " --synthetic 100").code, 2);  // usage
}

// On CUDA the points' upload is timed too: alone, and before the voxelizer and the network in one graph (a GPU test).
TEST_F(VoxelizeCli, BenchTimesTheUploadOfHostPointsOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const CliResult r =
      scn_cli("bench " + q(model_) + " --points " + q(points_) + " " + kSmallVoxels + " --device cuda --runs 5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(5 runs after 20 warm-up; one CUDA graph: voxelizer + network)"), std::string::npos) << r.out;
  const size_t line = r.out.find("from host  upload + points -> outputs: median ");
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ms (the points' copy to the device alone: median ", line), std::string::npos) << r.out;
}

TEST_F(VoxelizeCli, RunChecksTheVoxelGridAgainstTheModel) {
  // z: 4 / 0.4 = 10 planes; the model declares 9.
  const CliResult r = scn_cli("run " + q(model_) + " --points " + q(points_) +
                              " --preset nuscenes-centerpoint --range 0,0,0,8,8,4 --voxel-size 1,1,0.4 --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("9x8x8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("10x8x8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("disagrees"), std::string::npos) << r.err;
  const CliResult g =
      scn_cli("run " + q(model_) + " --points " + q(points_) + " " + kSmallVoxels + " --grid 9x8x9 --device cpu");
  EXPECT_EQ(g.code, 1);
  EXPECT_NE(g.err.find("input_spatial_shape"), std::string::npos) << g.err;
}

TEST_F(VoxelizeCli, BadPointFilesNameTheFile) {
  const std::string bad = dir_ + "/bad.bin";
  test::write_bytes(bad, std::string(22, '\0'));
  const CliResult r = scn_cli("voxelize " + q(bad) + " --preset kitti-second --device cpu --features " +
                              q(dir_ + "/x.tensor") + " --indices " + q(dir_ + "/y.tensor"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("16-byte row"), std::string::npos) << r.err;
  const CliResult over =
      scn_cli("voxelize " + q(points_) + " " + kSmallVoxels + " --max-voxels 5 --device cpu --bench 1");
  EXPECT_EQ(over.code, 1);
  EXPECT_NE(over.err.find("exceed max_voxels = 5"), std::string::npos) << over.err;
}

TEST_F(VoxelizeCli, SynthWritesRawPoints) {
  const std::string p = dir_ + "/synth.bin";
  const CliResult r = scn_cli("synth --seed 3 --sweeps 1 --azimuth-steps 512 --points " + q(p));
  ASSERT_EQ(r.code, 0) << r.err;
  PointFileOptions po;
  po.columns = 5;
  const Tensor t = read_points(p, po);
  EXPECT_GT(t.dim(0), 5000);
  const VoxelizeResult v = voxelize(t, voxelizer_preset("nuscenes-centerpoint"));
  EXPECT_EQ(v.stats.dropped_out_of_range, 0);  // the synthetic scan keeps the points inside the range
  EXPECT_GT(v.stats.voxels, 1000);
  EXPECT_NE(scn_cli("synth --seed 3").code, 0);  // nothing to write
}

}  // namespace
