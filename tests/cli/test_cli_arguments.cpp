// Arguments the `scn` binary once misread or ignored, end to end: integers read as octal or hex and 64-bit values
// saturated (CLI11 2.1), NaN bounds that disabled `compare`'s checks, voxelizer options given without --points,
// options a mode does not use, `calibrate` writing over its input model, and outputs written in part.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "onnx_parser/onnx_writer.h"
#include "scn/tensor.h"

namespace {

namespace fs = std::filesystem;
using scn::DType;
using scn::Tensor;
using scn::test::CliResult;

std::string q(const std::string& s) { return scn::test::shell_quote(s); }
CliResult scn_cli(const std::string& args) { return scn::test::run_cli(SCN_CLI_EXE, args, "arguments"); }
using scn::test::has;

class Arguments : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scn::test::temp_dir() + "/arguments";
    fs::create_directories(dir_);
    model_ = scn::test::write_model(scn::test::small_centerpoint(), "arguments_small.onnx");
    std::vector<int32_t> idx;
    std::vector<float> f;
    for (int cell = 0; cell < 9 * 64; cell += 5) idx.insert(idx.end(), {0, cell / 64, (cell / 8) % 8, cell % 8});
    const int64_t rows = int64_t(idx.size() / 4);
    for (int64_t i = 0; i < rows * 5; ++i) f.push_back(float((i * 37) % 23) * 0.01f - 0.1f);
    Tensor::from_host(f.data(), {rows, 5}, DType::Float32).save(features_ = dir_ + "/f.tensor");
    Tensor::from_host(idx.data(), {rows, 4}, DType::Int32).save(indices_ = dir_ + "/i.tensor");
    const CliResult p = scn_cli("synth --voxels 300 --seed 2 --points " + q(points_ = dir_ + "/p.bin") + " --quiet");
    ASSERT_EQ(p.code, 0) << p.err;
  }
  static std::string frame() { return " --features " + q(features_) + " --indices " + q(indices_) + " --grid 9x8x8"; }
  /// The synth frame's voxel count, from its summary line ("voxels    N (...").
  static int64_t synth_voxels(const std::string& args) {
    const CliResult r =
        scn_cli("synth " + args + " --features " + q(dir_ + "/s_f.tensor") + " --indices " + q(dir_ + "/s_i.tensor"));
    EXPECT_EQ(r.code, 0) << r.err;
    return Tensor::load(dir_ + "/s_i.tensor").dim(0);
  }
  static std::string dir_, model_, features_, indices_, points_;
};
std::string Arguments::dir_, Arguments::model_, Arguments::features_, Arguments::indices_, Arguments::points_;

TEST_F(Arguments, IntegersAreDecimalAndWithinTheirType) {
  EXPECT_EQ(synth_voxels("--voxels 0100 --seed 1"), 100);  // not octal 64
  EXPECT_EQ(synth_voxels("--voxels 100 --seed +1"), 100);
  for (const char* bad :
       {"--voxels 0x100", "--voxels 1e3", "--voxels 12abc", "--voxels -", "--voxels +-5", "--voxels 100 --seed -1",
        "--voxels 100 --seed 18446744073709551616", "--voxels 100 --seed 99999999999999999999999"}) {
    const CliResult r = scn_cli(std::string("synth ") + bad + " --features " + q(dir_ + "/b_f.tensor") + " --indices " +
                                q(dir_ + "/b_i.tensor"));
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "is not a") || has(r.err, "is out of range")) << bad << "\n" << r.err;
  }
  const CliResult big = scn_cli("synth --voxels 100 --seed 18446744073709551616 --features x --indices y");
  EXPECT_TRUE(has(big.err, "--seed") && has(big.err, "out of range (0..18446744073709551615)")) << big.err;
  // the largest seed is a seed like any other (not where out-of-range values used to land)
  EXPECT_EQ(synth_voxels("--voxels 50 --seed 18446744073709551615"), 50);
}

TEST_F(Arguments, FloatingBoundsMustBeFinite) {
  for (const char* bound : {"--max-rel-l2 nan", "--max-abs inf", "--min-cosine -nan", "--max-rel-l2 1e999"}) {
    const CliResult r = scn_cli("compare " + q(features_) + " " + q(features_) + " " + bound);
    EXPECT_EQ(r.code, 2) << bound << "\n" << r.out << r.err;
    EXPECT_TRUE(has(r.err, "is not a finite number") || has(r.err, "is out of range")) << bound << "\n" << r.err;
  }
  EXPECT_EQ(scn_cli("compare " + q(features_) + " " + q(features_) + " --max-rel-l2 1e-3").code, 0);
}

TEST_F(Arguments, VoxelizerOptionsNeedPoints) {
  for (const char* opt : {"--order xyz", "--range 0,0,0,1,1,1", "--max-voxels 5", "--dtype fp32", "--batch-index 7",
                          "--preset kitti-second", "--fields x,y,z"}) {
    const CliResult r = scn_cli("run " + q(model_) + frame() + " --device cpu " + opt);
    EXPECT_EQ(r.code, 2) << opt << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "requires --points") || has(r.err, "excludes")) << opt << "\n" << r.err;
  }
  const CliResult sweep = scn_cli("bench " + q(model_) + " --device cpu --sweep 100,200 --range 1,2,3,4,5,6");
  EXPECT_EQ(sweep.code, 2) << sweep.err;
  EXPECT_TRUE(has(sweep.err, "--range requires --points")) << sweep.err;
  // several point files are one batch: frame b gets batch index b, a --batch-index would be ignored
  const CliResult two = scn_cli("run " + q(model_) + " --device cpu --points " + q(points_) + " --points " +
                                q(points_) + " --batch-index 5");
  EXPECT_EQ(two.code, 2) << two.err;
  EXPECT_TRUE(has(two.err, "--batch-index") && has(two.err, "several --points are one batch")) << two.err;
}

TEST_F(Arguments, BenchOptionsItsModeDoesNotUse) {
  for (const char* opt : {"--seed 3", "--preset kitti"}) {
    const CliResult r = scn_cli("bench " + q(model_) + frame() + " --device cpu --runs 1 " + opt);
    EXPECT_EQ(r.code, 2) << opt << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "excludes")) << opt << "\n" << r.err;
  }
  const CliResult layers = scn_cli("bench " + q(model_) + " --device cpu --sweep 100,200 --layers");
  EXPECT_EQ(layers.code, 2) << layers.err;
  EXPECT_TRUE(has(layers.err, "--sweep excludes --layers")) << layers.err;
}

TEST_F(Arguments, CalibrateNeverWritesOverItsModel) {
  const std::string model = dir_ + "/cal_model.onnx", link = dir_ + "/cal_link.onnx";
  fs::copy_file(model_, model, fs::copy_options::overwrite_existing);
  fs::remove(link);
  fs::create_hard_link(model, link);
  const std::string before = scn::test::read_file(model);
  // "./name" from the model's folder: not the same string, the same file
  const std::string err = dir_ + "/cal_same.err";
  const std::string cmd = "cd " + q(dir_) + " && " + q(SCN_CLI_EXE) +
                          " calibrate cal_model.onnx -o ./cal_model.onnx --synthetic 300 --frames 1 > /dev/null 2> " +
                          q(err);
  EXPECT_NE(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(has(scn::test::read_file(err), "is the input model")) << scn::test::read_file(err);
  // a hard link to it
  const CliResult hard = scn_cli("calibrate " + q(model) + " -o " + q(link) + " --synthetic 300 --frames 1");
  EXPECT_EQ(hard.code, 1) << hard.err;
  EXPECT_TRUE(has(hard.err, "is the input model")) << hard.err;
  EXPECT_EQ(scn::test::read_file(model), before) << "the input model was changed";
  // the output's folder is checked before the calibration runs
  const CliResult missing =
      scn_cli("calibrate " + q(model) + " -o " + q(dir_ + "/no/such/dir/c.onnx") + " --synthetic 300 --frames 1");
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(has(missing.err, "--output") && has(missing.err, "does not exist")) << missing.err;
  // a --frame given one file takes no other option as its second: CLI11 2.1 reads "--grid" as that file (and finds no
  // such file), later releases stop at the option (a --frame of one value)
  const CliResult one =
      scn_cli("calibrate " + q(model) + " -o " + q(dir_ + "/c.onnx") + " --frame " + q(features_) + " --grid 9x8x8");
  EXPECT_EQ(one.code, 2) << one.err;
  EXPECT_TRUE(has(one.err, "--frame") && (has(one.err, "--grid") || has(one.err, "only partially specified")))
      << one.err;
}

TEST_F(Arguments, VoxelizeFeaturesAndIndicesGoTogether) {
  for (const std::string& out : {" --features " + q(dir_ + "/v_f.tensor"), " --indices " + q(dir_ + "/v_i.tensor")}) {
    const CliResult r = scn_cli("voxelize " + q(points_) + out + " --bench 1 --device cpu");
    EXPECT_EQ(r.code, 1) << out << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "--features and --indices go together")) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ + "/v_i.tensor"));
}

TEST_F(Arguments, SynthWritesAllOutputsOrNone) {
  const std::string f = dir_ + "/sp_f.tensor", i = dir_ + "/sp_i.tensor";
  fs::remove(f);
  fs::remove(i);
  const CliResult r = scn_cli("synth --voxels 100 --features " + q(f) + " --indices " + q(i) + " --points " +
                              q(dir_ + "/no/such/dir/p.bin"));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.err, "--points") && has(r.err, "does not exist")) << r.err;
  EXPECT_FALSE(fs::exists(f));
  EXPECT_FALSE(fs::exists(i));
  // the same file twice, spelled two ways
  const CliResult same = scn_cli("synth --voxels 100 --features " + q(f) + " --indices " + q(i) + " --points " +
                                 q(dir_ + "/./sp_f.tensor"));
  EXPECT_EQ(same.code, 1);
  EXPECT_TRUE(has(same.err, "two outputs would be written to this file")) << same.err;
  EXPECT_FALSE(fs::exists(f));
  // all three written together
  const CliResult ok = scn_cli("synth --voxels 100 --seed 4 --features " + q(f) + " --indices " + q(i) + " --points " +
                               q(dir_ + "/sp.bin") + " --quiet");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(Tensor::load(i).dim(0), 100);
  const auto bytes = fs::file_size(dir_ + "/sp.bin");
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(bytes % (5 * sizeof(float)), 0u);  // rows of the nuScenes preset's 5 values
}

}  // namespace
