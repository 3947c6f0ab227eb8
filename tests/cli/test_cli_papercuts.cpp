// What a new user hit (issue 18 item 7), end to end through the `scn` binary: --version, output
// paths checked before the work, the --output-dir manifest, index order / swapped files named in
// the messages, bench's CPU defaults and its progress line (only on a terminal).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/bev_model.h"
#include "cli/cli_runner.h"
#include "onnx_parser/onnx_writer.h"
#include "scn/tensor.h"

namespace {

namespace fs = std::filesystem;
using scn::DType;
using scn::Tensor;
using scn::test::CliResult;

std::string q(const std::string& s) { return scn::test::shell_quote(s); }
CliResult scn_cli(const std::string& args) { return scn::test::run_cli(SCN_CLI_EXE, args, "papercut"); }
using scn::test::has;

class Papercuts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scn::test::temp_dir();
    small_ = scn::test::write_model(scn::test::small_centerpoint(), "papercut_small.onnx");
    bev_ = scn::test::write_model(scn::test::bev_model(), "papercut_bev.onnx");
    // A zyx frame on the 9 x 8 x 8 grid of small_centerpoint, and the same frame in xyz order.
    std::vector<int32_t> zyx, xyz;
    std::vector<float> f;
    for (int cell = 0; cell < 9 * 64; cell += 7) {
      const int z = cell / 64, y = (cell / 8) % 8, x = cell % 8;
      zyx.insert(zyx.end(), {0, z, y, x});
      xyz.insert(xyz.end(), {0, x, y, z});
    }
    rows_ = int64_t(zyx.size() / 4);
    for (int64_t i = 0; i < rows_ * 5; ++i) f.push_back(float((i * 37) % 23) * 0.001f - 0.01f);
    Tensor::from_host(f.data(), {rows_, 5}, DType::Float32).save(features_ = dir_ + "/pc_f.tensor");
    Tensor::from_host(zyx.data(), {rows_, 4}, DType::Int32).save(zyx_ = dir_ + "/pc_zyx.tensor");
    Tensor::from_host(xyz.data(), {rows_, 4}, DType::Int32).save(xyz_ = dir_ + "/pc_xyz.tensor");
    // The xyz frame must hold a row with z = 8 (outside x < 8 of the zyx grid's last axis).
    bool z8 = false;
    for (size_t i = 0; i < zyx.size(); i += 4) z8 = z8 || zyx[i + 1] == 8;
    ASSERT_TRUE(z8);
    // A nuScenes-grid frame for bench.
    const CliResult s = scn_cli("synth --voxels 3000 --seed 3 --features " + q(dir_ + "/pc_bev_f.tensor") +
                                " --indices " + q(dir_ + "/pc_bev_i.tensor") + " --quiet");
    ASSERT_EQ(s.code, 0) << s.err;
  }

  static std::string run_small(const std::string& features, const std::string& indices, const std::string& extra,
                               const std::string& grid = "9x8x8") {
    return "run " + q(small_) + " --features " + q(features) + " --indices " + q(indices) + " --grid " + grid +
           " --device cpu " + extra;
  }

  static std::string dir_, small_, bev_, features_, zyx_, xyz_;
  static int64_t rows_;
};
std::string Papercuts::dir_, Papercuts::small_, Papercuts::bev_, Papercuts::features_, Papercuts::zyx_, Papercuts::xyz_;
int64_t Papercuts::rows_ = 0;

TEST_F(Papercuts, VersionPrintsTheProjectVersion) {
  const CliResult r = scn_cli("--version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(std::string("scn ") + SCN_PROJECT_VERSION, 0), 0u) << r.out;
}

TEST_F(Papercuts, OutputIntoAMissingFolderFailsBeforeTheInputsAreRead) {
  // The features file does not exist either: the output check must come first.
  const std::string out = dir_ + "/no_such_folder/out.tensor";
  const CliResult r = scn_cli(run_small(dir_ + "/missing_features.tensor", zyx_, "--output " + q(out)));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "--output")) << r.err;
  EXPECT_TRUE(has(r.err, dir_ + "/no_such_folder")) << r.err;
  EXPECT_TRUE(has(r.err, "does not exist")) << r.err;
  EXPECT_FALSE(has(r.err, "missing_features")) << r.err;
}

TEST_F(Papercuts, OutputDirMustExistUpFront) {
  const CliResult r =
      scn_cli(run_small(dir_ + "/missing_features.tensor", zyx_, "--output-dir " + q(dir_ + "/no_such_dir")));
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, "no_such_dir")) << r.err;
  EXPECT_FALSE(has(r.err, "missing_features")) << r.err;
}

TEST_F(Papercuts, BenchCsvIntoAMissingFolderFailsBeforeTheMeasurement) {
  const CliResult r =
      scn_cli("bench " + q(small_) + " --features " + q(dir_ + "/missing_features.tensor") + " --indices " + q(zyx_) +
              " --grid 9x8x8 --device cpu --csv " + q(dir_ + "/no_such_folder/runs.csv"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "--csv")) << r.err;
  EXPECT_FALSE(has(r.err, "missing_features")) << r.err;
}

TEST_F(Papercuts, OutputDirWritesAManifestOfTheOutputs) {
  const std::string d = dir_ + "/manifest_dir";
  fs::create_directories(d);
  const CliResult r = scn_cli(run_small(features_, zyx_, "--output-dir " + q(d)));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string m = scn::test::read_file(d + "/outputs.txt");
  EXPECT_EQ(m.rfind("file\toutput\tkind\tdtype\tshape\tnode\n", 0), 0u) << m;
  EXPECT_TRUE(has(m, "9.tensor\t9\tdense\tfloat16\t[1, 32, 4, 4]\treshape0\n")) << m;
  EXPECT_EQ(Tensor::load(d + "/9.tensor").shape(), (std::vector<int64_t>{1, 32, 4, 4}));
}

TEST_F(Papercuts, XyzFrameOnAZyxGridSaysIndexOrder) {
  const CliResult r = scn_cli(run_small(features_, xyz_, ""));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.err, "lies outside the grid 9x8x8")) << r.err;  // the message's beginning is kept
  EXPECT_TRUE(has(r.err, "index order")) << r.err;
  EXPECT_TRUE(has(r.err, "reversed grid 8x8x9")) << r.err;
  EXPECT_TRUE(has(r.err, xyz_)) << r.err;
}

TEST_F(Papercuts, OutOfGridRowsThatDoNotFitTheReversedGridGetNoIndexOrderHint) {
  std::vector<int32_t> v = {0, 1, 1, 1, 0, 9, 1, 1};  // z = 9 fits neither 9x8x8 nor 8x8x9
  const std::string f = dir_ + "/pc_far.tensor";
  Tensor::from_host(v.data(), {2, 4}, DType::Int32).save(f);
  std::vector<float> feats(10, 0.5f);
  const std::string ff = dir_ + "/pc_far_f.tensor";
  Tensor::from_host(feats.data(), {2, 5}, DType::Float32).save(ff);
  const CliResult r = scn_cli(run_small(ff, f, ""));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.err, "lies outside the grid")) << r.err;
  EXPECT_FALSE(has(r.err, "index order")) << r.err;
}

TEST_F(Papercuts, XyzFrameWithItsXyzGridOnAZyxModelSaysIndexOrder) {
  // Indices and grid agree (xyz), the model is zyx: the ScatterDense shapes disagree.
  const CliResult r = scn_cli(run_small(features_, xyz_, "", "8x8x9"));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.err, "scatter0")) << r.err;
  EXPECT_TRUE(has(r.err, "index order")) << r.err;
  EXPECT_TRUE(has(r.err, "reversed input grid 9x8x8 fits")) << r.err;
}

TEST_F(Papercuts, SwappedFeaturesAndIndicesFilesAreNamedSwapped) {
  const CliResult r = scn_cli(run_small(zyx_, features_, ""));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.err, "features must be float16 or float32, got int32")) << r.err;
  EXPECT_TRUE(has(r.err, "look swapped")) << r.err;
}

TEST_F(Papercuts, BenchOnTheCpuDefaultsToFewerRuns) {
  const CliResult r = scn_cli("bench " + q(small_) + " --features " + q(features_) + " --indices " + q(zyx_) +
                              " --grid 9x8x8 --device cpu");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "(10 runs after 2 warm-up)")) << r.out;
}

// ~4 s each: enough runs of the nuScenes-grid model to pass the progress line's 3 s quiet period.
std::string long_bench(const std::string& dir, const std::string& model) {
  return "bench " + q(model) + " --features " + q(dir + "/pc_bev_f.tensor") + " --indices " +
         q(dir + "/pc_bev_i.tensor") + " --grid 41x1440x1440 --device cpu --threads 1 --warmup 0 --runs 900";
}

TEST_F(Papercuts, BenchProgressIsQuietWhenStderrIsNotATerminal) {
  const CliResult r = scn_cli(long_bench(dir_, bev_));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(has(r.out, "900 runs")) << r.out;
}

TEST_F(Papercuts, BenchShowsProgressOnATerminal) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no `script` (util-linux) for a pty";
  // script(1) gives the command a pseudo-terminal; stdout goes to a file, stderr stays on the pty.
  const std::string out = dir_ + "/pc_pty.out", log = dir_ + "/pc_pty.log";
  const std::string inner = std::string(SCN_CLI_EXE) + " " + long_bench(dir_, bev_) + " >" + out;
  const std::string cmd = "script -qfec \"" + inner + "\" /dev/null >" + q(log) + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << scn::test::read_file(log);
  const std::string tty = scn::test::read_file(log);
  EXPECT_TRUE(has(tty, "bench: warm-up + timed runs")) << tty;
  EXPECT_TRUE(has(tty, "/900")) << tty;
  EXPECT_TRUE(has(tty, " %")) << tty;
  EXPECT_TRUE(has(scn::test::read_file(out), "900 runs"));
}

}  // namespace
