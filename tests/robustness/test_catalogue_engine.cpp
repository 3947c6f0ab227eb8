// The catalogue of hostile inputs, engine and API use (E), and the check that the catalogue and docs/errors.md list
// the same ids (catalogue_util.h: what every case checks).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <set>
#include <string>

#include "robustness/catalogue_util.h"
#include "scn/voxelize.h"

namespace scn::test {
namespace {

using namespace catalogue;

// ---- E: engine and API use ------------------------------------------------------------------------

TEST(Catalogue, E01_DenseOutputTooLarge) {
  // A ScatterDense whose output_shape product overflows int64 / exceeds 2^60 elements.
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 16);
  DenseAttrs d;
  d.input_spatial_shape = {1 << 20, 1 << 20, 1 << 20};
  d.output_shape = {1, 16, 1 << 20, 1 << 20, 1 << 20};
  EXPECT_HAS(error_of([&] { b.push_dense("scatter0", x, d); }), "api: node 'scatter0' (ScatterDense)",
             "output_shape [1, 16, 1048576, 1048576, 1048576] is too large");
}

TEST(Catalogue, E02_CudaWithoutCuda) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present: this case is about builds / machines without one";
  BuildOptions o = cpu();
  o.backend = Backend::Cuda;
  const std::string msg = error_of([&] { parse_onnx(write_case_model(small_centerpoint())).build(o); });
  EXPECT_HAS(msg, "CUDA");
}

TEST(Catalogue, E03_BuilderBadValueAndDuplicateNames) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 5);
  EXPECT_HAS(error_of([&] { b.push_relu("r", 42); }), "api: node 'r'", "input refers to no value (id 42)");
  b.push_relu("r", x);
  EXPECT_HAS(error_of([&] { b.push_relu("r", x, "other"); }), "node name 'r' is used twice");
  EXPECT_HAS(error_of([&] { EngineBuilder("empty").build(cpu()); }), "empty: the graph has no input");
  EXPECT_HAS(error_of([&] { b.build(cpu()); }), "api: the graph has no output");
}

TEST(Catalogue, E04_ConcatChannelOverflow) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", std::numeric_limits<int32_t>::max());
  EXPECT_HAS(error_of([&] { b.push_concat("cat", {x, x}); }), "node 'cat' (Concat)", "channel count overflows int32");
}

TEST(Catalogue, E05_TensorShapeOverflow) {
  EXPECT_HAS(error_of([&] {
               Tensor::empty({int64_t(1) << 40, int64_t(1) << 40}, DType::Float32);
             }),
             "[1099511627776, 1099511627776]", "too large");
  EXPECT_HAS(error_of([&] { Tensor::empty({4, -1}, DType::Float32); }), "negative tensor dimension -1");
}

/// A 1x1x1 conv of 2 -> 2 channels with weights 0.5, for the API cases.
ConvAttrs one_by_one_conv() {
  ConvAttrs c;
  c.kernel_size = {1, 1, 1};
  c.weight = Tensor::empty({2, 1, 1, 1, 2}, DType::Float32);
  for (int i = 0; i < 4; ++i) c.weight.ptr<float>()[i] = 0.5f;
  return c;
}

TEST(Catalogue, E06_NonFiniteWeightsThroughTheApi) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 2);
  ConvAttrs c = one_by_one_conv();
  c.weight.ptr<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("c", x, c); }), "api: node 'c' (SparseConvolution)",
             "weight value [3] is nan", "finite");
}

TEST(Catalogue, E07_EnumValuesOutOfRange) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 2);
  ConvAttrs c = one_by_one_conv();
  c.activation = Activation(42);
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("c", x, c); }), "api: node 'c' (SparseConvolution)",
             "activation = 42 is not an Activation");
  c.activation = Activation::ReLU;
  QuantAttrs q;
  q.precision = Precision::Fp32;
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("c", x, c, q); }), "precision = 0 is not a node precision");
  q = {};
  q.output_precision = Precision(7);
  EXPECT_HAS(error_of([&] { b.push_sparse_conv("c", x, c, q); }), "output_precision = 7 is not a node precision");
  EXPECT_NO_THROW(b.push_sparse_conv("c", x, c));
  VoxelizerConfig v = voxelizer_preset("nuscenes-centerpoint");
  v.order = VoxelOrder(7);
  EXPECT_HAS(error_of([&] { validate(v); }), "voxelizer config 'nuscenes-centerpoint': order = 7 is not a VoxelOrder");
  v.order = VoxelOrder::Zyx;
  v.reduction = VoxelReduction(7);
  EXPECT_HAS(error_of([&] { Voxelizer::create(v, Backend::Cpu, 100); }), "reduction = 7 is not a VoxelReduction");
}

// ---- the catalogue and docs/errors.md list the same cases ----------------------------------------

TEST(Catalogue, EveryCaseIsDocumented) {
  std::set<std::string> tested;
  const ::testing::UnitTest& ut = *::testing::UnitTest::GetInstance();
  const std::regex id_re("^([OTIEC][0-9][0-9])_.*");
  for (int s = 0; s < ut.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *ut.GetTestSuite(s);
    if (std::string(suite.name()) != "Catalogue") continue;
    for (int t = 0; t < suite.total_test_count(); ++t) {
      std::smatch m;
      const std::string name = suite.GetTestInfo(t)->name();
      if (std::regex_match(name, m, id_re)) tested.insert(m[1]);
    }
  }
  const std::string doc_path = std::string(SCN_SOURCE_DIR) + "/docs/errors.md";
  std::ifstream f(doc_path);
  ASSERT_TRUE(f.good()) << doc_path;
  std::set<std::string> documented;
  const std::regex row_re("^\\| *\\*\\*([OTIEC][0-9][0-9])\\*\\* *\\|.*");
  for (std::string line; std::getline(f, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row_re)) documented.insert(m[1]);
  }
  for (const std::string& id : tested)
    EXPECT_TRUE(documented.count(id)) << id << " is tested but not in docs/errors.md";
  for (const std::string& id : documented)
    EXPECT_TRUE(tested.count(id)) << id << " is in docs/errors.md but not tested";
  EXPECT_GE(tested.size(), 30u);
}

}  // namespace
}  // namespace scn::test
