// The catalogue of hostile inputs, .tensor files (T) and input frames (I): each with the error it must give, under
// the id docs/errors.md gives it (catalogue_util.h: what every case checks).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "robustness/catalogue_util.h"

namespace scn::test {
namespace {

using namespace catalogue;

// ---- T: .tensor files ---------------------------------------------------------------------------

std::string load_error(const std::string& path) {
  return error_of([&] { Tensor::load(path); });
}

TEST(Catalogue, T01_TensorWrongMagic) {
  const std::string p = write_tensor_words({0x12345678, 1, 3, 2}, 8);
  EXPECT_HAS(load_error(p), p, "not a .tensor file", "magic 0x12345678", "expected 0x33ff1101");
}

TEST(Catalogue, T02_TensorHugeNdim) {
  const std::string p = write_tensor_words({kMagic, 1000000, 3});
  EXPECT_HAS(load_error(p), p, "ndim 1000000 out of range 1..16");
  const std::string q = write_tensor_words({kMagic, 0, 3});
  EXPECT_HAS(load_error(q), q, "ndim 0 out of range");
}

TEST(Catalogue, T03_TensorNegativeDim) {
  const std::string p = write_tensor_words({kMagic, 2, 3, 4, -5});
  EXPECT_HAS(load_error(p), p, "negative dimension -5");
}

TEST(Catalogue, T04_TensorOverflowingDims) {
  const std::string p = write_tensor_words({kMagic, 3, 3, 0x7fffffff, 0x7fffffff, 0x7fffffff});
  EXPECT_HAS(load_error(p), p, "dimensions overflow");
}

TEST(Catalogue, T05_TensorTruncatedOrPaddedData) {
  const std::string p = write_tensor_words({kMagic, 2, 3, 4, 5}, 4 * 20 - 3);
  EXPECT_HAS(load_error(p), p, "data size 77 bytes does not match shape [4,5] of float32 (80 bytes)");
  const std::string q = write_tensor_words({kMagic, 2, 3, 4, 5}, 4 * 20 + 1);
  EXPECT_HAS(load_error(q), q, "data size 81 bytes does not match");
}

TEST(Catalogue, T06_TensorTruncatedHeader) {
  const std::string p = write_tensor_words({kMagic, 2});
  EXPECT_HAS(load_error(p), p, "truncated tensor header (8 bytes, need at least 12)");
  const std::string q = write_tensor_words({kMagic, 3, 3, 4});
  EXPECT_HAS(load_error(q), q, "truncated tensor header (dims)");
}

TEST(Catalogue, T07_TensorUnknownDtype) {
  const std::string p = write_tensor_words({kMagic, 1, 99, 4}, 16);
  EXPECT_HAS(load_error(p), p, "unknown dtype code 99");
}

TEST(Catalogue, T08_TensorNotAFile) {
  const std::string missing = temp_dir() + "/no_such.tensor";
  EXPECT_HAS(load_error(missing), missing, "cannot open tensor file");
  EXPECT_HAS(load_error(temp_dir()), temp_dir(), "cannot open tensor file (it is a directory)");
}

TEST(Catalogue, T09_TensorWrongDtypeForRole) {
  Input in = good_input();
  in.indices = Tensor::empty({60, 4}, DType::Float32);
  EXPECT_HAS(set_input_error(in), "idx.tensor", "input '0'", "indices must be int32, got float32");
  in = good_input();
  in.features = Tensor::empty({60, 5}, DType::Int32);
  EXPECT_HAS(set_input_error(in), "feats.tensor", "features must be float16 or float32, got int32");
}

TEST(Catalogue, T10_TensorWrongShapeForRole) {
  Input in = good_input();
  in.indices = Tensor::empty({60, 3}, DType::Int32);
  EXPECT_HAS(set_input_error(in), "idx.tensor", "indices must be [N, 4] (batch, i0, i1, i2), got [60, 3]");
  in = good_input();
  in.features = in.features.reshaped({60, 5, 1});
  EXPECT_HAS(set_input_error(in), "feats.tensor", "features must be [N, C], got [60, 5, 1]");
}

// ---- I: input frames ----------------------------------------------------------------------------

TEST(Catalogue, I01_IndexOutsideGrid) {
  Input in = good_input();
  set_index(in, 7, {0, 3, 8, 1});  // axis 1 has size 8
  EXPECT_HAS(set_input_error(in), "idx.tensor", "input '0'", "row 7 coordinate (3, 8, 1) lies outside the grid 9x8x8",
             "on axis 1");
}

TEST(Catalogue, I02_NegativeIndex) {
  Input in = good_input();
  set_index(in, 0, {0, -1, 2, 2});
  EXPECT_HAS(set_input_error(in), "idx.tensor", "row 0 coordinate (-1, 2, 2) lies outside the grid", "axis 0");
}

TEST(Catalogue, I03_BatchIndexOutOfRange) {
  Input in = good_input();
  set_index(in, 12, {1, 0, 0, 0});
  EXPECT_HAS(set_input_error(in), "idx.tensor", "row 12 has batch index 1, outside 0..0 for batch size 1");
  set_index(in, 12, {-1, 0, 0, 0});
  EXPECT_HAS(set_input_error(in, 2), "row 12 has batch index -1, outside 0..1 for batch size 2");
}

TEST(Catalogue, I04_DuplicateSites) {
  Input in = good_input();
  std::memcpy(in.indices.ptr<int32_t>() + 4 * 40, in.indices.ptr<int32_t>() + 4 * 3, 16);
  EXPECT_HAS(set_input_error(in), "idx.tensor", "rows 3 and 40 are the same site", "duplicate coordinates");
}

TEST(Catalogue, I05_NaNFeature) {
  Input in = good_input();
  in.features.ptr<uint16_t>()[5 * 9 + 2] = 0x7e00;
  EXPECT_HAS(set_input_error(in), "feats.tensor", "feature [9, 2] is nan", "finite");
  Input f32 = good_input();
  f32.features = f32.features.to_dtype(DType::Float32);
  f32.features.ptr<float>()[0] = std::nanf("");
  EXPECT_HAS(set_input_error(f32), "feature [0, 0] is nan");
}

TEST(Catalogue, I06_InfFeature) {
  Input in = good_input();
  in.features.ptr<uint16_t>()[5 * 59 + 4] = 0xfc00;
  EXPECT_HAS(set_input_error(in), "feats.tensor", "feature [59, 4] is -inf", "finite");
  Input f32 = good_input();
  f32.features = f32.features.to_dtype(DType::Float32);
  f32.features.ptr<float>()[7] = std::numeric_limits<float>::infinity();
  EXPECT_HAS(set_input_error(f32), "feature [1, 2] is inf");
  // a finite float32 feature float16 rounds to an infinity, in an engine with float16 activations (it became an
  // infinity in the first layer); 65519 rounds to 65504 and is taken; an Fp32 engine takes 1e5
  Input big = good_input();
  big.features = big.features.to_dtype(DType::Float32);
  big.features.ptr<float>()[11] = 1e5f;
  EXPECT_HAS(set_input_error(big), "feats.tensor", "feature [2, 1] is 100000", "beyond the float16 activations");
  big.features.ptr<float>()[11] = -65520.f;
  EXPECT_HAS(set_input_error(big), "feature [2, 1] is -65520", "beyond the float16 activations");
  big.features.ptr<float>()[11] = 65519.f;
  auto fp16 = small_engine();
  EXPECT_NO_THROW(fp16->set_input(0, big.features, big.indices, big.grid, 1));
  big.features.ptr<float>()[11] = 1e5f;
  auto fp32 = parse_onnx(write_case_model(small_centerpoint())).build(cpu(Precision::Fp32));
  EXPECT_NO_THROW(fp32->set_input(0, big.features, big.indices, big.grid, 1));
}

TEST(Catalogue, I07_RowCountMismatch) {
  Input in = good_input();
  in.features = good_input(59).features;
  EXPECT_HAS(set_input_error(in), "feats.tensor", "59 feature rows but 60 index rows in idx.tensor");
}

TEST(Catalogue, I08_ChannelMismatch) {
  Input in = good_input(60, 4);
  EXPECT_HAS(set_input_error(in), "feats.tensor", "features have 4 channels, the model's input has 5");
}

TEST(Catalogue, I09_GridNotPositiveOrTooLarge) {
  Input in = good_input();
  in.grid = {9, 0, 8};
  EXPECT_HAS(set_input_error(in), "input '0'", "grid 9x0x8 must be positive on every axis");
  in.grid = {1 << 20, 1 << 20, 1 << 20};
  EXPECT_HAS(set_input_error(in), "grid 1048576x1048576x1048576 is too large");
  in.grid = {1 << 22, 1 << 21, 1 << 21};  // 2^64 cells: wraps to 0 in int64
  EXPECT_HAS(set_input_error(in), "grid 4194304x2097152x2097152 is too large");
}

TEST(Catalogue, I10_BatchTimesGridOverflows) {
  // Each alone is allowed; together the linear site keys (b, i0, i1, i2) would overflow int64.
  Input in = good_input();
  in.grid = {1 << 13, 1 << 13, 1 << 14};
  EXPECT_HAS(set_input_error(in, 1 << 24), "input '0'", "batch size 16777216", "grid 8192x8192x16384", "too large");
}

TEST(Catalogue, I11_GridTooSmallForTheModel) {
  Input in = good_input(1);
  set_index(in, 0, {0, 0, 0, 0});
  in.grid = {1, 1, 1};  // conv4: kernel 3x1x1, stride 2, no padding on a 1-deep input
  EXPECT_HAS(forward_error(in), "node 'conv4' (SparseConvolution)",
             "input spatial shape 1x1x1 is too small for kernel 3x1x1");
}

TEST(Catalogue, I12_GridDisagreesWithTheDenseTail) {
  Input in = good_input();
  in.grid = {9, 8, 10};  // the model's ScatterDense expects 2x4x4 from 9x8x8
  EXPECT_HAS(forward_error(in), "node 'scatter0' (ScatterDense)", "attribute 'input_spatial_shape' 2x4x4",
             "does not match the spatial shape 2x4x5 of its input");
}

TEST(Catalogue, I13_MoreVoxelsThanPlannedCapacityCpu) {
  // The CPU backend sizes every buffer for the frame it is given: max_input_voxels is a CUDA
  // capacity and is not a limit here. (The CUDA case is in tests/cuda.)
  const std::string path = write_case_model(small_centerpoint());
  BuildOptions small = cpu();
  small.max_input_voxels = 10;
  auto limited = parse_onnx(path).build(small);
  auto unlimited = parse_onnx(path).build(cpu());
  const Input in = good_input(300);
  limited->set_input(0, in.features, in.indices, in.grid);
  limited->forward();
  unlimited->set_input(0, in.features, in.indices, in.grid);
  unlimited->forward();
  const Tensor a = limited->output(0), b = unlimited->output(0);
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0);
}

TEST(Catalogue, I14_EmptyFrame) {
  // Zero voxels is a valid (if strange) frame: the map is all zeros, nothing throws.
  auto e = small_engine();
  const Tensor f = Tensor::empty({0, 5}, DType::Float16), idx = Tensor::empty({0, 4}, DType::Int32);
  e->set_input(0, f, idx, {9, 8, 8});
  e->forward();
  const Tensor out = e->output(0).to_dtype(DType::Float32);
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{1, 32, 4, 4}));
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.ptr<float>()[i], 0.f);
}

TEST(Catalogue, I15_ForwardOrOutputOutOfOrder) {
  auto e = small_engine();
  EXPECT_HAS(error_of([&] { e->forward(); }), "forward() before set_input() for input '0'");
  EXPECT_HAS(error_of([&] { e->profile_layers(); }), "profile_layers() before set_input() for input '0'");
  EXPECT_HAS(error_of([&] { e->output(0); }), "output(0) requested before forward()");
  EXPECT_HAS(error_of([&] { e->output(3); }), "output index 3 out of range (1 outputs)");
  const Input in = good_input();
  EXPECT_HAS(error_of([&] { e->set_input(2, in.features, in.indices, in.grid); }),
             "input index 2 out of range (1 inputs)");
  EXPECT_HAS(error_of([&] { e->input_index("voxels"); }), "the model has no input named 'voxels'");
  e->set_input(0, in.features, in.indices, in.grid);
  e->forward();
  EXPECT_HAS(error_of([&] { e->output_indices(0); }), "output '9' is dense and has no indices");
  e->output(0);
  // a binding ends the last forward's outputs (the CUDA twin: CudaEngineOutputs.ABindingEndsTheLastForwardsOutputs)
  e->set_input(0, in.features, in.indices, in.grid);
  EXPECT_HAS(error_of([&] { e->output(0); }), "output(0) requested before forward()");
}

}  // namespace
}  // namespace scn::test
