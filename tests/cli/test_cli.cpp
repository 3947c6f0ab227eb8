// The `scn` binary end to end: exit codes, messages that name the file at fault, outputs written
// all or nothing. Models are written with the ONNX test writer of tests/onnx_parser.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cli/bev_model.h"
#include "cli/cli_runner.h"
#include "core/half.h"
#include "onnx_parser/onnx_writer.h"
#include "scn/tensor.h"

namespace {

namespace fs = std::filesystem;
using scn::DType;
using scn::Tensor;

using Result = scn::test::CliResult;
using scn::test::read_file;

std::string quote(const std::string& s) { return scn::test::shell_quote(s); }

Result scn_cli(const std::string& args) { return scn::test::run_cli(SCN_CLI_EXE, args, "cli_out"); }

bool exists(const std::string& p) { return fs::exists(p); }

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// --- inputs -------------------------------------------------------------------------------------

constexpr int kRows = 60;

// Distinct sites in the 9 x 8 x 8 grid of small_centerpoint, batch 0, and varied finite features.
std::vector<int32_t> good_indices() {
  std::vector<int32_t> idx;
  std::vector<bool> used(9 * 8 * 8, false);
  uint32_t x = 12345;
  while (int(idx.size()) < 4 * kRows) {
    x = x * 1664525u + 1013904223u;
    const int cell = int((x >> 8) % (9 * 8 * 8));
    if (used[size_t(cell)]) continue;
    used[size_t(cell)] = true;
    idx.insert(idx.end(), {0, cell / 64, (cell / 8) % 8, cell % 8});
  }
  return idx;
}

// Small values: the test model's random weights grow activations ~10^6-fold, beyond float16 for
// inputs of order 1.
std::vector<float> good_features(int channels = 5, int rows = kRows) {
  std::vector<float> f;
  for (int i = 0; i < rows * channels; ++i) f.push_back((float((i * 37) % 23) / 7.0f - 1.3f) * 0.01f);
  return f;
}

Tensor half_tensor(const std::vector<float>& v, std::vector<int64_t> shape) {
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(scn::float_to_half(x));
  return Tensor::from_host(h.data(), shape, DType::Float16);
}

Tensor index_tensor(const std::vector<int32_t>& v, int64_t cols = 4) {
  return Tensor::from_host(v.data(), {int64_t(v.size()) / cols, cols}, DType::Int32);
}

// The model on the full nuScenes grid for synthetic frames (cli/bev_model.h).
scn::test::ModelDef nuscenes_grid_model() { return scn::test::bev_model(); }

// subm 5->4 and a (1,8,8)-strided conv with a sparse output: fits any grid.
scn::test::ModelDef sparse_model() {
  using namespace scn::test;
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 5}});
  ConvSpec c;
  c.name = "conv0", c.x = "0", c.y = "1", c.cin = 5, c.cout = 4, c.rulebook = "subm0";
  add_conv(m, c);
  c = {};
  c.name = "conv1", c.x = "1", c.y = "2", c.cin = 4, c.cout = 4, c.kernel = {1, 8, 8}, c.stride = {1, 8, 8};
  c.padding = {0, 0, 0}, c.subm = false, c.seed = 2;
  add_conv(m, c);
  m.outputs.push_back({"2", 10, {-1, 4}});
  return m;
}

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scn::test::temp_dir();
    model_ = scn::test::write_model(scn::test::small_centerpoint(), "small.onnx");
    features_ = dir_ + "/good.features.tensor";
    indices_ = dir_ + "/good.indices.tensor";
    half_tensor(good_features(), {kRows, 5}).save(features_);
    index_tensor(good_indices()).save(indices_);
  }

  static std::string run_args(const std::string& features, const std::string& indices, const std::string& out,
                              const std::string& extra = "") {
    return "run " + quote(model_) + " --features " + quote(features) + " --indices " + quote(indices) +
           " --grid 9x8x8 --device cpu --output " + quote(out) + " " + extra;
  }

  // Runs with one bad input file and checks: exit 1, one line "scn run: ..." naming `bad_file`
  // and containing one of `keywords`, and no output (or temporary) file left.
  static void expect_rejected(const std::string& features, const std::string& indices, const std::string& bad_file,
                              const std::vector<std::string>& keywords, const std::string& extra = "") {
    const std::string out = dir_ + "/rejected.tensor";
    fs::remove(out);
    const Result r = scn_cli(run_args(features, indices, out, extra));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("scn run: ", 0), 0u) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(bad_file), std::string::npos) << "message does not name " << bad_file << ": " << r.err;
    bool found = false;
    for (const std::string& k : keywords) found = found || r.err.find(k) != std::string::npos;
    EXPECT_TRUE(found) << r.err;
    EXPECT_FALSE(exists(out));
    EXPECT_FALSE(exists(out + ".partial"));
  }

  static std::string dir_, model_, features_, indices_;
};

std::string Cli::dir_, Cli::model_, Cli::features_, Cli::indices_;

// --- scn run ------------------------------------------------------------------------------------

TEST_F(Cli, RunWritesTheDenseOutput) {
  const std::string out = dir_ + "/run.tensor";
  const Result r = scn_cli(run_args(features_, indices_, out, "--repeat 3"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("backend     cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 3 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("float16 [60, 5]"), std::string::npos) << r.out;
  const Tensor t = Tensor::load(out);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, 32, 4, 4}));
  EXPECT_EQ(t.dtype(), DType::Float16);
  int nonzero = 0;
  for (int64_t i = 0; i < t.numel(); ++i) nonzero += scn::half_to_float(t.ptr<uint16_t>()[i]) != 0.f;
  EXPECT_GT(nonzero, 0);
}

TEST_F(Cli, CudaTuningFlags) {
  // --no-autotune changes nothing on the CPU; --tile forces a CUDA tile, which a CPU engine cannot honour
  const std::string out = dir_ + "/run_flags.tensor";
  const Result ok = scn_cli(run_args(features_, indices_, out, "--no-autotune"));
  EXPECT_EQ(ok.code, 0) << ok.err;
  fs::remove(out);
  const Result bad = scn_cli(run_args(features_, indices_, out, "--tile m64n64k32s4t"));
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("BuildOptions.cuda.tile = 'm64n64k32s4t'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("CPU"), std::string::npos) << bad.err;
  EXPECT_FALSE(exists(out));
}

TEST_F(Cli, Fp32RunWritesFloat32AndAgreesWithFp16) {
  const std::string o32 = dir_ + "/run32.tensor", o16 = dir_ + "/run16.tensor";
  ASSERT_EQ(scn_cli(run_args(features_, indices_, o32, "--precision fp32")).code, 0);
  ASSERT_EQ(scn_cli(run_args(features_, indices_, o16, "--precision fp16")).code, 0);
  EXPECT_EQ(Tensor::load(o32).dtype(), DType::Float32);
  const Result c = scn_cli("compare " + quote(o16) + " " + quote(o32) + " --max-rel-l2 0.02 --min-cosine 0.999");
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("PASS"), std::string::npos) << c.out;
}

TEST_F(Cli, OutputDirNamesFilesAfterTheOutputs) {
  const std::string d = dir_ + "/outdir";
  fs::create_directories(d);
  const Result r = scn_cli("run " + quote(model_) + " --features " + quote(features_) + " --indices " +
                           quote(indices_) + " --grid 9x8x8 --device cpu --output-dir " + quote(d));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Tensor::load(d + "/9.tensor").shape(), (std::vector<int64_t>{1, 32, 4, 4}));
}

TEST_F(Cli, SparseOutputWritesFeaturesAndIndices) {
  scn::test::ModelDef m = scn::test::small_centerpoint();
  m.nodes.resize(m.nodes.size() - 2);  // drop scatter0 and reshape0: conv4's output "7" is the output
  m.outputs = {{"7", 10, {-1, 16}}};
  const std::string model = scn::test::write_model(m, "sparse_out.onnx");
  const std::string out = dir_ + "/sparse.tensor";
  const Result r = scn_cli("run " + quote(model) + " --features " + quote(features_) + " --indices " + quote(indices_) +
                           " --grid 9x8x8 --device cpu --output " + quote(out));
  ASSERT_EQ(r.code, 0) << r.err;
  const Tensor f = Tensor::load(out);
  const Tensor i = Tensor::load(dir_ + "/sparse.indices.tensor");
  ASSERT_EQ(f.ndim(), 2);
  EXPECT_EQ(f.dim(1), 16);
  EXPECT_EQ(i.shape(), (std::vector<int64_t>{f.dim(0), 4}));
  EXPECT_GT(f.dim(0), 0);
  for (int64_t k = 0; k < i.dim(0); ++k) {  // level 2 grid: 2 x 4 x 4
    EXPECT_LT(i.ptr<int32_t>()[4 * k + 1], 2);
    EXPECT_LT(i.ptr<int32_t>()[4 * k + 2], 4);
    EXPECT_LT(i.ptr<int32_t>()[4 * k + 3], 4);
  }
}

TEST_F(Cli, RejectsWrongMagic) {
  const std::string f = dir_ + "/bad_magic.tensor";
  std::string bytes = read_file(features_);
  bytes[0] = 0x42;
  scn::test::write_bytes(f, bytes);
  expect_rejected(f, indices_, f, {"magic"});
}

TEST_F(Cli, RejectsTruncatedData) {
  const std::string f = dir_ + "/truncated.tensor";
  const std::string bytes = read_file(features_);
  scn::test::write_bytes(f, bytes.substr(0, bytes.size() - 3));
  expect_rejected(f, indices_, f, {"size", "truncated"});
}

TEST_F(Cli, RejectsMissingFile) {
  const std::string f = dir_ + "/does_not_exist.tensor";
  expect_rejected(f, indices_, f, {"cannot open", "No such"});
}

TEST_F(Cli, RejectsFloatIndices) {
  const std::string f = dir_ + "/float_indices.tensor";
  std::vector<float> v;
  for (int32_t x : good_indices()) v.push_back(float(x));
  Tensor::from_host(v.data(), {kRows, 4}, DType::Float32).save(f);
  expect_rejected(features_, f, f, {"int32"});
}

TEST_F(Cli, RejectsIndicesNotNx4) {
  const std::string f = dir_ + "/indices_n3.tensor";
  std::vector<int32_t> v;
  const std::vector<int32_t> g = good_indices();
  for (size_t i = 0; i < g.size(); i += 4) v.insert(v.end(), {g[i + 1], g[i + 2], g[i + 3]});
  index_tensor(v, 3).save(f);
  expect_rejected(features_, f, f, {"[N, 4]"});
}

TEST_F(Cli, RejectsCoordinatesOutsideTheGrid) {
  const std::string f = dir_ + "/outside.tensor";
  std::vector<int32_t> v = good_indices();
  v[4 * 5 + 1] = 9;  // z = 9 in a grid of depth 9
  index_tensor(v).save(f);
  expect_rejected(features_, f, f, {"outside the grid"});
}

TEST_F(Cli, RejectsNegativeCoordinates) {
  const std::string f = dir_ + "/negative.tensor";
  std::vector<int32_t> v = good_indices();
  v[4 * 7 + 3] = -1;
  index_tensor(v).save(f);
  expect_rejected(features_, f, f, {"outside the grid", "negative"});
}

TEST_F(Cli, RejectsBatchIndexNotBelowBatchSize) {
  const std::string f = dir_ + "/batch.tensor";
  std::vector<int32_t> v = good_indices();
  v[4 * 3] = 1;
  index_tensor(v).save(f);
  expect_rejected(features_, f, f, {"batch"}, "--batch 1");
}

TEST_F(Cli, RejectsRowCountMismatch) {
  const std::string f = dir_ + "/rows59.tensor";
  half_tensor(good_features(5, kRows - 1), {kRows - 1, 5}).save(f);
  expect_rejected(f, indices_, f, {"rows"});
}

TEST_F(Cli, RejectsWrongChannelCount) {
  const std::string f = dir_ + "/channels4.tensor";
  half_tensor(good_features(4), {kRows, 4}).save(f);
  expect_rejected(f, indices_, f, {"channels"});
}

TEST_F(Cli, RejectsDuplicateCoordinates) {
  const std::string f = dir_ + "/duplicates.tensor";
  std::vector<int32_t> v = good_indices();
  std::copy(v.begin() + 4 * 10, v.begin() + 4 * 11, v.begin() + 4 * 11);
  index_tensor(v).save(f);
  expect_rejected(features_, f, f, {"same site", "duplicate"});
}

TEST_F(Cli, RejectsNonFiniteFeatures) {
  const std::string f = dir_ + "/nan.tensor";
  std::vector<float> v = good_features();
  v[17] = std::numeric_limits<float>::quiet_NaN();
  half_tensor(v, {kRows, 5}).save(f);
  expect_rejected(f, indices_, f, {"finite"});
}

TEST_F(Cli, FailedRunKeepsAnExistingOutputFile) {
  const std::string out = dir_ + "/keep.tensor";
  Tensor::from_host(std::vector<float>{1, 2, 3}.data(), {3}, DType::Float32).save(out);
  const std::string f = dir_ + "/channels4b.tensor";
  half_tensor(good_features(4), {kRows, 4}).save(f);
  EXPECT_EQ(scn_cli(run_args(f, indices_, out)).code, 1);
  EXPECT_EQ(Tensor::load(out).numel(), 3);  // untouched
}

TEST_F(Cli, UsageErrorsExitWith2) {
  const std::string out = dir_ + "/usage.tensor";
  EXPECT_EQ(scn_cli("").code, 2);
  EXPECT_EQ(scn_cli("frobnicate").code, 2);
  const std::string base = "run " + quote(model_) + " --features " + quote(features_) + " --indices " + quote(indices_);
  Result r = scn_cli(base + " --output " + quote(out));  // no --grid
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--grid"), std::string::npos) << r.err;
  r = scn_cli(base + " --grid 9x8 --output " + quote(out));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("D0xD1xD2"), std::string::npos) << r.err;
  EXPECT_EQ(scn_cli(base + " --grid 9x8x8 --precision fp8").code, 2);
  EXPECT_EQ(scn_cli(base + " --grid 9x8x8 --device tpu").code, 2);
  EXPECT_FALSE(exists(out));
  EXPECT_EQ(scn_cli("--help").code, 0);
  EXPECT_EQ(scn_cli("run --help").code, 0);
}

// --- scn compare --------------------------------------------------------------------------------

TEST_F(Cli, CompareBoundsDecideTheExitCode) {
  const std::string a = dir_ + "/cmp_a.tensor", b = dir_ + "/cmp_b.tensor";
  std::vector<float> va(1000), vb(1000);
  for (int i = 0; i < 1000; ++i) va[size_t(i)] = vb[size_t(i)] = float(i % 17) - 8.f;
  vb[123] += 0.5f;
  Tensor::from_host(va.data(), {10, 100}, DType::Float32).save(a);
  half_tensor(vb, {10, 100}).save(b);
  Result r = scn_cli("compare " + quote(a) + " " + quote(b) + " --max-abs 0.6 --min-cosine 0.999");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = scn_cli("compare " + quote(a) + " " + quote(b) + " --max-abs 0.4 --max-rel-l2 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("max-abs 0.5 > 0.4"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rel-L2"), std::string::npos) << r.err;  // that bound passed
  r = scn_cli("compare " + quote(a) + " " + quote(b) + " --detail");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("[1, 23]"), std::string::npos) << r.out;  // where the difference is
  EXPECT_NE(r.out.find("> 75% of max"), std::string::npos) << r.out;
}

TEST_F(Cli, CompareFailsOnNaNAndShapeMismatch) {
  const std::string a = dir_ + "/cmp_nan.tensor", b = dir_ + "/cmp_ref.tensor", c = dir_ + "/cmp_other.tensor";
  std::vector<float> v(8, 1.f);
  Tensor::from_host(v.data(), {8}, DType::Float32).save(b);
  v[2] = std::numeric_limits<float>::quiet_NaN();
  Tensor::from_host(v.data(), {8}, DType::Float32).save(a);
  Tensor::from_host(v.data(), {2, 4}, DType::Float32).save(c);
  Result r = scn_cli("compare " + quote(a) + " " + quote(b) + " --max-abs 1e9");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NaN"), std::string::npos) << r.err;
  r = scn_cli("compare " + quote(b) + " " + quote(c));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("shapes differ"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(c), std::string::npos) << r.err;
}

TEST_F(Cli, SparseCompareMatchesRowsBySite) {
  const std::string fa = dir_ + "/sp_a.tensor", ia = dir_ + "/sp_a.idx.tensor";
  const std::string fb = dir_ + "/sp_b.tensor", ib = dir_ + "/sp_b.idx.tensor";
  Tensor::from_host(std::vector<float>{1, 2, 3, 4, 5, 6}.data(), {3, 2}, DType::Float32).save(fa);
  index_tensor({0, 1, 1, 1, 0, 2, 2, 2, 0, 3, 3, 3}).save(ia);
  Tensor::from_host(std::vector<float>{5, 6, 1, 2, 3, 4}.data(), {3, 2}, DType::Float32).save(fb);
  index_tensor({0, 3, 3, 3, 0, 1, 1, 1, 0, 2, 2, 2}).save(ib);
  EXPECT_EQ(scn_cli("compare " + quote(fa) + " " + quote(fb) + " --max-abs 0").code, 1);  // row by row
  const Result r = scn_cli("compare " + quote(fa) + " " + quote(fb) + " --indices-a " + quote(ia) + " --indices-b " +
                           quote(ib) + " --max-abs 0");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(scn_cli("compare " + quote(fa) + " " + quote(fb) + " --indices-a " + quote(ia)).code, 2);
}

// --- scn inspect --------------------------------------------------------------------------------

TEST_F(Cli, InspectListsNodesAndTheKernelMapPlan) {
  const Result r = scn_cli("inspect " + quote(model_) + " --grid 9x8x8");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* s : {"conv0", "conv4", "add0", "scatter0", "reshape0", "subm1", "spconv3", "5->8", "3x1x1",
                        "kernel-map plan", "no validation errors", "5x4x4", "2x4x4"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // conv0..conv2 share one submanifold map.
  EXPECT_NE(r.out.find("3: conv0,conv1,conv2"), std::string::npos) << r.out;
  // The input the model expects: index order and grid (from conv0's input_spatial_shape).
  EXPECT_NE(r.out.find("order    zyx (indices: batch, then the grid axes in this order"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grid     9x8x8 (zyx, from the input_spatial_shape of node 'conv0'"), std::string::npos)
      << r.out;
}

// --memory: the CUDA arena planned on the host, at the bounds and fitted to the frame's rows per level.
TEST_F(Cli, InspectMemoryPrintsTheArenaAtTheBoundsAndFittedToAFrame) {
  const Result r = scn_cli("inspect " + quote(model_) + " --grid 9x8x8 --memory --max-voxels 1000 --frame " +
                           quote(indices_) + " --capacity-margin 1.5");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* s : {"CUDA device arena (FP16, grid 9x8x8, batch 1", "fitted (x1.500)",
                        "arena at the bounds:", "arena fitted to the frame:", "buffers of the fitted arena",
                        "sites0 coords", "sites0 bitmap", "map0 (conv0)"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // the input set: 1000 rows at the bounds, the frame's kRows measured, x 1.5 (at least 256) fitted
  const size_t at = r.out.find("\n  s0 ");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream row(r.out.substr(at + 5, r.out.find('\n', at + 1) - at - 5));
  int64_t bound = 0, measured = 0, fitted = 0;
  row >> bound >> measured >> fitted;
  EXPECT_EQ(bound, 1000) << r.out;
  EXPECT_EQ(measured, kRows) << r.out;
  EXPECT_EQ(fitted, std::max<int64_t>(256, (kRows * 3 + 1) / 2)) << r.out;
  // --memory needs --grid
  EXPECT_EQ(scn_cli("inspect " + quote(model_) + " --memory").code, 2);
  // --site-order: only a generated set that a submanifold conv reads is put in neighbour-row order, and this
  // model has none (its generated sets feed strided convs), so no set gets a perm or the order's temporaries
  // (the sets that do: ArenaLayout.NeighbourRowOrderBuffers); an unknown order is a usage error
  const std::string base = "inspect " + quote(model_) + " --grid 9x8x8 --memory --frame " + quote(indices_);
  const Result ordered = scn_cli(base + " --site-order neighbour-rows");
  ASSERT_EQ(ordered.code, 0) << ordered.out << ordered.err;
  EXPECT_NE(ordered.out.find("sites1 coords"), std::string::npos) << ordered.out;
  EXPECT_EQ(ordered.out.find("sites1 perm"), std::string::npos) << ordered.out;
  EXPECT_EQ(ordered.out.find("order: keys"), std::string::npos) << ordered.out;
  EXPECT_EQ(scn_cli(base + " --site-order sorted").code, 2);
  EXPECT_EQ(scn_cli("inspect " + quote(model_) + " --site-order bitmap").code, 2) << "--site-order needs --memory";
}

TEST_F(Cli, InspectReportsEveryValidationError) {
  scn::test::ModelDef m = scn::test::small_centerpoint();
  m.node("conv1").set(scn::test::attr_int("groups", 2));
  m.node("conv3").erase("kernel_size");
  const std::string model = scn::test::write_model(m, "two_errors.onnx");
  const Result r = scn_cli("inspect " + quote(model));
  EXPECT_EQ(r.code, 1);
  const size_t at = r.out.find("validation error");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string errors = r.out.substr(at);
  EXPECT_NE(errors.find("'conv1'"), std::string::npos) << errors;
  EXPECT_NE(errors.find("groups"), std::string::npos) << errors;
  EXPECT_NE(errors.find("'conv3'"), std::string::npos) << errors;
  // The nodes that did import are still listed.
  EXPECT_NE(r.out.find("conv0"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("two_errors.onnx"), std::string::npos) << r.err;
}

TEST_F(Cli, InspectRejectsAFileThatIsNotOnnx) {
  const std::string f = dir_ + "/garbage.onnx";
  scn::test::write_bytes(f, "this is not a protobuf\xff\xff\xff");
  const Result r = scn_cli("inspect " + quote(f));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(f), std::string::npos) << r.out;
}

// --- scn synth ----------------------------------------------------------------------------------

TEST_F(Cli, SynthWritesExactAndReproducibleFrames) {
  const std::string f1 = dir_ + "/s1.f.tensor", i1 = dir_ + "/s1.i.tensor";
  const std::string f2 = dir_ + "/s2.f.tensor", i2 = dir_ + "/s2.i.tensor";
  ASSERT_EQ(
      scn_cli("synth --voxels 12345 --seed 9 --order xyz --features " + quote(f1) + " --indices " + quote(i1)).code, 0);
  ASSERT_EQ(
      scn_cli("synth --voxels 12345 --seed 9 --order xyz --quiet --features " + quote(f2) + " --indices " + quote(i2))
          .code,
      0);
  EXPECT_EQ(read_file(f1), read_file(f2));
  EXPECT_EQ(read_file(i1), read_file(i2));
  const Tensor idx = Tensor::load(i1);
  EXPECT_EQ(idx.shape(), (std::vector<int64_t>{12345, 4}));
  int32_t max_last = 0;
  for (int64_t k = 0; k < idx.dim(0); ++k) max_last = std::max(max_last, idx.ptr<int32_t>()[4 * k + 3]);
  EXPECT_LT(max_last, 41);  // xyz: z last
  EXPECT_EQ(Tensor::load(f1).shape(), (std::vector<int64_t>{12345, 5}));
}

// --- scn bench ----------------------------------------------------------------------------------

TEST_F(Cli, BenchWritesPerRunLatencies) {
  const std::string csv = dir_ + "/runs.csv";
  const Result r =
      scn_cli("bench " + quote(model_) + " --features " + quote(features_) + " --indices " + quote(indices_) +
              " --grid 9x8x8 --device cpu --warmup 1 --runs 4 --layers --csv " + quote(csv));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
  const std::string text = read_file(csv);
  EXPECT_EQ(text.rfind("voxels,run,ms\n", 0), 0u) << text;
  EXPECT_EQ(count_lines(text), 5) << text;
  EXPECT_NE(text.find("\n60,3,"), std::string::npos) << text;
}

TEST_F(Cli, BenchSweepRunsSyntheticFramesThroughOneEngine) {
  const std::string model = scn::test::write_model(nuscenes_grid_model(), "nuscenes_grid.onnx");
  const std::string csv = dir_ + "/sweep.csv";
  const Result r = scn_cli("bench " + quote(model) +
                           " --device cpu --warmup 0 --runs 2 --sweep 1000,2000,...,3000 "
                           "--sweep-csv " +
                           quote(csv));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string text = read_file(csv);
  EXPECT_EQ(text.rfind("voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms\n", 0), 0u) << text;
  EXPECT_EQ(count_lines(text), 4) << text;
  EXPECT_NE(text.find("\n1000,2,"), std::string::npos) << text;
  EXPECT_NE(text.find("\n3000,2,"), std::string::npos) << text;
  EXPECT_NE(r.out.find("bind ms"), std::string::npos) << r.out;  // set_input time (CUDA: tuning a new size bucket)
}

TEST_F(Cli, BenchSweepKeepsTheResultsBeforeAFailingPoint) {
  // The far 41 x 64 x 64 corner of the nuScenes grid holds some 70 voxels: the third point fails.
  const std::string model = scn::test::write_model(sparse_model(), "sparse_any_grid.onnx");
  const std::string csv = dir_ + "/sweep_partial.csv";
  const Result r = scn_cli("bench " + quote(model) +
                           " --device cpu --warmup 0 --runs 1 --grid 41x64x64 "
                           "--sweep 20,40,2000 --sweep-csv " +
                           quote(csv));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("sweep stopped at 2000 voxels"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot reach 2000 voxels"), std::string::npos) << r.err;
  const std::string text = read_file(csv);
  EXPECT_EQ(count_lines(text), 3) << text;
  EXPECT_NE(text.find("\n40,1,"), std::string::npos) << text;
}

// --batch-sweep: each batch size through one engine; a file frame is copied once per batch index, and frames/s is
// the batch over the median
TEST_F(Cli, BenchBatchSweepRunsCopiesOfTheFrameThroughOneEngine) {
  const std::string csv = dir_ + "/batches.csv";
  const Result r =
      scn_cli("bench " + quote(model_) + " --features " + quote(features_) + " --indices " + quote(indices_) +
              " --grid 9x8x8 --device cpu --warmup 0 --runs 3 --batch-sweep 1,3,2 " + "--batch-csv " + quote(csv));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("max batch 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x batch 1"), std::string::npos) << r.out;
  std::istringstream text(read_file(csv));
  std::string line;
  std::getline(text, line);
  EXPECT_EQ(line, "batch,voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms,frames_per_s");
  std::vector<int> batches;
  while (std::getline(text, line)) {
    std::vector<double> v;
    std::istringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stod(f));
    ASSERT_EQ(v.size(), 9u) << line;
    batches.push_back(int(v[0]));
    EXPECT_EQ(v[1], kRows * v[0]) << line;  // the frame's rows once per copy
    EXPECT_EQ(v[2], 3) << line;
    ASSERT_GT(v[3], 0) << line;
    EXPECT_NEAR(v[8], 1000.0 * v[0] / v[3], 1e-3 * v[8]) << line;
  }
  EXPECT_EQ(batches, (std::vector<int>{1, 3, 2}));
}

TEST_F(Cli, BenchBatchSweepIsChecked) {
  const std::string base = "bench " + quote(model_) + " --device cpu --warmup 0 --runs 1 ";
  const std::string files = "--features " + quote(features_) + " --indices " + quote(indices_) + " --grid 9x8x8 ";
  EXPECT_EQ(scn_cli(base + files + "--batch-sweep 1,2 --batch 2").code, 2);
  EXPECT_EQ(scn_cli(base + files + "--batch-sweep 1,2 --layers").code, 2);
  EXPECT_EQ(scn_cli(base + files + "--batch-csv x.csv").code, 2);  // without --batch-sweep
  EXPECT_EQ(scn_cli(base + files + "--batch-sweep 1,0").code, 2);
  const Result none = scn_cli(base + "--batch-sweep 1,2");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("--batch-sweep needs a frame"), std::string::npos) << none.err;
  // a file that is already a batch is not copied silently
  std::vector<int32_t> idx = good_indices();
  idx[4 * 7] = 1;
  const std::string two = dir_ + "/two_samples.indices.tensor";
  index_tensor(idx).save(two);
  const Result batch =
      scn_cli(base + "--features " + quote(features_) + " --indices " + quote(two) + " --grid 9x8x8 --batch-sweep 1,2");
  EXPECT_EQ(batch.code, 1);
  EXPECT_NE(batch.err.find(two + ": row 7 has batch index 1"), std::string::npos) << batch.err;
  // synthetic frames: B different frames of N voxels each
  const std::string csv = dir_ + "/batches_synthetic.csv";
  const std::string model = scn::test::write_model(nuscenes_grid_model(), "nuscenes_grid_batches.onnx");
  const Result syn = scn_cli("bench " + quote(model) + " --device cpu --warmup 0 --runs 1 --synthetic 1000 " +
                             "--batch-sweep 2,1 --batch-csv " + quote(csv));
  ASSERT_EQ(syn.code, 0) << syn.out << syn.err;
  const std::string text = read_file(csv);
  EXPECT_NE(text.find("\n2,2000,1,"), std::string::npos) << text;
  EXPECT_NE(text.find("\n1,1000,1,"), std::string::npos) << text;
}

TEST_F(Cli, PlotScriptDrawsBothPanels) {
  if (std::system((quote(SCN_PYTHON) + " -c 'import matplotlib' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "matplotlib is not installed for " << SCN_PYTHON;
  const std::string runs = dir_ + "/plot_runs.csv", sweep = dir_ + "/plot_sweep.csv", png = dir_ + "/plot.png";
  std::ofstream(runs) << "voxels,run,ms\n80000,0,5.1\n80000,1,5.3\n80000,2,4.9\n";
  std::ofstream(sweep) << "voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms\n10000,3,1.0,1.2,1.1,0.9,1.2\n"
                          "20000,3,1.9,2.2,2.0,1.8,2.2\n";
  const std::string cmd = quote(SCN_PYTHON) + " " + quote(std::string(SCN_SOURCE_DIR) + "/tools/bench/plot_bench.py") +
                          " --runs " + quote(runs) + " --sweep " + quote(sweep) + " -o " + quote(png) + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_file(png).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // A CSV without the expected columns is an error, not an empty plot.
  std::ofstream(sweep) << "a,b\n1,2\n";
  EXPECT_NE(std::system((cmd + " 2>/dev/null").c_str()), 0);
}

// `scn bench` of the sparse model (written to `file`) on the CPU, one run of a 20-voxel synthetic frame: the base
// command of the option checks below.
std::string quick_cpu_bench(const std::string& file) {
  const std::string model = scn::test::write_model(sparse_model(), file);
  return "bench " + quote(model) + " --device cpu --warmup 0 --runs 1 --grid 41x64x64 --synthetic 20 ";
}

// A usage error (exit 2) whose message names `flag`.
void expect_usage_error(const Result& r, const std::string& flag) {
  EXPECT_EQ(r.code, 2);
  EXPECT_NE((r.out + r.err).find(flag), std::string::npos) << r.out << r.err;
}

// --tune-bucket-factor: in the range of CudaOptions::tune_bucket_factor, and not with --tune-once (one bucket)
TEST_F(Cli, BenchTuneBucketFactorIsCheckedAndExcludesTuneOnce) {
  const std::string base = quick_cpu_bench("sparse_factor.onnx");
  expect_usage_error(scn_cli(base + "--tune-bucket-factor 1.05"), "--tune-bucket-factor");
  EXPECT_EQ(scn_cli(base + "--tune-bucket-factor 1.25 --tune-once").code, 2);
  const Result ok = scn_cli(base + "--tune-bucket-factor 1.25");
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
}

// --map-lookahead: a count of map slots (CudaOptions::map_lookahead >= 0); the scheduling flags run on any device
TEST_F(Cli, BenchMapLookaheadIsChecked) {
  const std::string base = quick_cpu_bench("sparse_lookahead.onnx");
  expect_usage_error(scn_cli(base + "--map-lookahead -1"), "--map-lookahead");
  for (const char* flags : {"--map-lookahead 0 --no-stream-priorities", "--map-lookahead 2 --stream-priorities"}) {
    const Result ok = scn_cli(base + flags);
    EXPECT_EQ(ok.code, 0) << flags << ": " << ok.out << ok.err;
  }
}

// --split: the split-K class (CudaOptions::split, 0..2); --tune-skip: tile names the tuner leaves out, comma-separated
// (an empty name is a BuildOptions error naming the field, not a silently ignored entry)
TEST_F(Cli, BenchSplitAndTuneSkipAreChecked) {
  const std::string base = quick_cpu_bench("sparse_split.onnx");
  expect_usage_error(scn_cli(base + "--split 3"), "--split");
  const Result empty = scn_cli(base + "--tune-skip ''");
  EXPECT_NE(empty.code, 0);
  EXPECT_NE((empty.out + empty.err).find("tune_skip"), std::string::npos) << empty.out << empty.err;
  const Result ok = scn_cli(base + "--split 1 --tune-skip m64n64k32s4t,m128n64k64s3tw12wgws");
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
}

TEST_F(Cli, BenchNeedsAnInput) {
  EXPECT_NE(scn_cli("bench " + quote(model_) + " --device cpu").code, 0);
  EXPECT_EQ(scn_cli("bench " + quote(model_) + " --synthetic 10 --features " + quote(features_) + " --indices " +
                    quote(indices_))
                .code,
            2);
}

}  // namespace
