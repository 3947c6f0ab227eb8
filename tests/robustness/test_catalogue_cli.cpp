// The catalogue of hostile inputs, the `scn run` command line (C): each bad file or argument with the exit status,
// message and (absent) outputs it must give, under the id docs/errors.md gives it (catalogue_util.h: what every
// case checks).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "robustness/catalogue_util.h"

namespace scn::test {
namespace {

using namespace catalogue;
namespace fs = std::filesystem;

// ---- C: the `scn run` command line ---------------------------------------------------------------

#ifdef SCN_CLI_EXE
using CliResult = test::CliResult;

std::string q(const std::string& s) { return test::shell_quote(s); }

CliResult scn_cli(const std::string& args) {
  const CliResult r = test::run_cli(SCN_CLI_EXE, args, "catalogue_cli");
  std::printf("[exit %d] %s", r.code, r.err.c_str());
  return r;
}

/// A fresh directory for one CLI case's inputs and outputs.
std::string case_dir() {
  const std::string d = case_file(".d");
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

struct CliCase {
  std::string dir, model, features, indices;
};

CliCase cli_case(const Input& in = good_input()) {
  CliCase c;
  c.dir = case_dir();
  c.model = c.dir + "/model.onnx";
  write_bytes(c.model, encode_model(small_centerpoint()));
  c.features = c.dir + "/features.tensor";
  c.indices = c.dir + "/indices.tensor";
  in.features.save(c.features);
  in.indices.save(c.indices);
  return c;
}

std::string run_args(const CliCase& c, const std::string& grid = "9x8x8") {
  return "run " + q(c.model) + " --features " + q(c.features) + " --indices " + q(c.indices) + " --grid " + grid +
         " --device cpu --threads 2 --output " + q(c.dir + "/out/map.tensor") + " --output-dir " + q(c.dir + "/out");
}

/// Nothing but the inputs is left in the case directory: no output, no temporary file.
void expect_no_output(const CliCase& c) {
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(c.dir)) {
    const std::string p = e.path().string();
    if (p != c.model && p != c.features && p != c.indices && p != c.dir + "/out") left.push_back(p);
  }
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left.front());
}

CliCase prepared(const Input& in = good_input()) {
  CliCase c = cli_case(in);
  fs::create_directories(c.dir + "/out");
  return c;
}

TEST(Catalogue, C01_CliGoodRunWritesOutputs) {
  // The control case: the same files and flags as the failing cases below, succeeding.
  const CliCase c = prepared();
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(c.dir + "/out/map.tensor"));
  EXPECT_TRUE(fs::exists(c.dir + "/out/9.tensor"));
}

TEST(Catalogue, C02_CliBadModel) {
  const CliCase c = prepared();
  const std::string full = encode_model(small_centerpoint());
  write_bytes(c.model, full.substr(0, full.size() / 2));
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "scn run: " + c.model + ": not a valid ONNX model");
  expect_no_output(c);
  ModelDef m = small_centerpoint();
  m.node("conv3").set(attr_ints("stride", {0, 2, 2}));
  write_bytes(c.model, encode_model(m));
  const CliResult s = scn_cli(run_args(c));
  EXPECT_EQ(s.code, 1);
  EXPECT_HAS(s.err, c.model, "node 'conv3'", "attribute 'stride'");
  expect_no_output(c);
}

TEST(Catalogue, C03_CliBadTensorFile) {
  const CliCase c = prepared();
  write_bytes(c.features, std::string("\x01\x02\x03\x04garbage-not-a-tensor", 24));
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "scn run: " + c.features + ": not a .tensor file");
  expect_no_output(c);
}

TEST(Catalogue, C04_CliBadIndices) {
  Input in = good_input();
  set_index(in, 5, {0, 9, 0, 0});
  const CliCase c = prepared(in);
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, c.indices, "row 5 coordinate (9, 0, 0) lies outside the grid 9x8x8");
  expect_no_output(c);
}

TEST(Catalogue, C05_CliNonFiniteFeatures) {
  Input in = good_input();
  in.features.ptr<uint16_t>()[17] = 0x7c00;
  const CliCase c = prepared(in);
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, c.features, "feature [3, 2] is inf");
  expect_no_output(c);
}

TEST(Catalogue, C06_CliBadGridArgument) {
  const CliCase c = prepared();
  for (const char* g : {"9x8", "9x0x8", "9x8x-8", "ninexeight"}) {
    const CliResult r = scn_cli(run_args(c, g));
    EXPECT_NE(r.code, 0) << g;
    EXPECT_HAS(r.err, "grid");
    expect_no_output(c);
  }
  // A well-formed grid the model does not fit.
  const CliResult r = scn_cli(run_args(c, "9x8x10"));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, "node 'scatter0' (ScatterDense)", "does not match the spatial shape");
  expect_no_output(c);
}

TEST(Catalogue, C07_CliMissingFiles) {
  const CliCase c = prepared();
  fs::remove(c.indices);
  const CliResult r = scn_cli(run_args(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_HAS(r.err, c.indices, "cannot open");
  fs::remove(c.model);
  const CliResult s = scn_cli(run_args(c));
  EXPECT_NE(s.code, 0);
  EXPECT_HAS(s.err, c.model);
  expect_no_output(c);
}
#else
TEST(Catalogue, C01_CliGoodRunWritesOutputs) { GTEST_SKIP() << "the scn CLI is not built (SCN_BUILD_TOOLS=OFF)"; }
TEST(Catalogue, C02_CliBadModel) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C03_CliBadTensorFile) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C04_CliBadIndices) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C05_CliNonFiniteFeatures) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C06_CliBadGridArgument) { GTEST_SKIP() << "the scn CLI is not built"; }
TEST(Catalogue, C07_CliMissingFiles) { GTEST_SKIP() << "the scn CLI is not built"; }
#endif

}  // namespace
}  // namespace scn::test
