// .tensor format: round trips and every malformation reported with the file name.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "scn/error.h"
#include "scn/tensor.h"

namespace {

std::string temp_path(const std::string& name) { return std::string(::testing::TempDir()) + "scn_" + name; }

void write_raw(const std::string& path, const std::vector<int32_t>& words, size_t extra_bytes = 0) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4));
  for (size_t i = 0; i < extra_bytes; ++i) f.put(char(i * 7 + 1));
}

std::string load_error(const std::string& path) {
  try {
    scn::Tensor::load(path);
  } catch (const scn::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Tensor, RoundTripFloat16AndInt32) {
  scn::Tensor t = scn::Tensor::empty({3, 5}, scn::DType::Float16);
  for (int i = 0; i < 15; ++i) t.ptr<uint16_t>()[i] = scn::float_to_half(0.25f * float(i) - 1.5f);
  const std::string p = temp_path("rt16.tensor");
  t.save(p);
  scn::Tensor u = scn::Tensor::load(p);
  ASSERT_EQ(u.shape(), t.shape());
  ASSERT_EQ(u.dtype(), scn::DType::Float16);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(u.ptr<uint16_t>()[i], t.ptr<uint16_t>()[i]);

  scn::Tensor idx = scn::Tensor::empty({2, 4}, scn::DType::Int32);
  for (int i = 0; i < 8; ++i) idx.ptr<int32_t>()[i] = i * 1000 - 3;
  idx.save(p);
  scn::Tensor v = scn::Tensor::load(p);
  ASSERT_EQ(v.dtype(), scn::DType::Int32);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v.ptr<int32_t>()[i], i * 1000 - 3);
}

TEST(Tensor, WrongMagicNamesFile) {
  const std::string p = temp_path("magic.tensor");
  write_raw(p, {0x12345678, 1, 3, 2}, 8);
  const std::string e = load_error(p);
  EXPECT_NE(e.find(p), std::string::npos) << e;
  EXPECT_NE(e.find("magic"), std::string::npos) << e;
}

TEST(Tensor, TruncatedDataIsAnError) {
  const std::string p = temp_path("trunc.tensor");
  write_raw(p, {0x33ff1101, 2, 3, 4, 5}, 4 * 20 - 3);
  const std::string e = load_error(p);
  EXPECT_NE(e.find(p), std::string::npos) << e;
  EXPECT_NE(e.find("does not match"), std::string::npos) << e;
}

TEST(Tensor, TruncatedHeaderAndBadFields) {
  const std::string p = temp_path("hdr.tensor");
  write_raw(p, {0x33ff1101, 2});
  EXPECT_NE(load_error(p).find("truncated"), std::string::npos);
  write_raw(p, {0x33ff1101, 1000000, 3});
  EXPECT_NE(load_error(p).find("ndim"), std::string::npos);
  write_raw(p, {0x33ff1101, 1, 99, 4}, 16);
  EXPECT_NE(load_error(p).find("dtype"), std::string::npos);
  write_raw(p, {0x33ff1101, 2, 3, -4, 2});
  EXPECT_NE(load_error(p).find("negative"), std::string::npos);
  write_raw(p, {0x33ff1101, 3, 3, 0x7fffffff, 0x7fffffff, 0x7fffffff});
  EXPECT_NE(load_error(p).find("overflow"), std::string::npos);
  EXPECT_NE(load_error(temp_path("does_not_exist.tensor")).find("cannot open"), std::string::npos);
}

TEST(Tensor, SaveLeavesNoPartialFileOnFailure) {
  const std::string p = temp_path("no_such_dir/x.tensor");
  scn::Tensor t = scn::Tensor::empty({2}, scn::DType::Float32);
  t.ptr<float>()[0] = 1.f;
  t.ptr<float>()[1] = 2.f;
  EXPECT_THROW(t.save(p), scn::Error);
  std::ifstream f(p + ".partial");
  EXPECT_FALSE(f.good());
}

// Shapes and dtypes are checked wherever a tensor is made, wrapped or reshaped (a wrapped {-1, 4} reached set_input
// and ended in std::length_error; reshaped({-3, -2}) of a [4] was accepted and saved a file load() refuses); dim(i)
// beyond the rank is an scn::Error, not std::out_of_range.
TEST(Tensor, ShapesDtypesAndDimsAreChecked) {
  using scn::Device;
  using scn::DType;
  using scn::Tensor;
  float data[4] = {1, 2, 3, 4};
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const scn::Error& e) {
      return e.what();
    }
    return "no error";
  };
  auto has = [](const std::string& m, const std::string& part) { return m.find(part) != std::string::npos; };
  EXPECT_TRUE(has(message([&] {
                    Tensor::wrap(data, {-1, 4}, DType::Float32, Device::Host);
                  }),
                  "Tensor::wrap: negative"));
  EXPECT_TRUE(has(message([&] {
                    Tensor::wrap(data, {int64_t(1) << 62, 4}, DType::Float32, Device::Host);
                  }),
                  "is too large"));
  EXPECT_TRUE(has(message([&] {
                    Tensor::wrap_shared(data, {2, -2}, DType::Float32, Device::Host, nullptr);
                  }),
                  "negative tensor dimension -2"));
  EXPECT_TRUE(has(message([&] { Tensor::empty({3}, DType(42)); }), "dtype 42 is not a DType"));
  const Tensor t = Tensor::from_host(data, {4}, DType::Float32);
  EXPECT_TRUE(has(message([&] { t.reshaped({-2, -2}); }), "Tensor::reshaped: negative"));
  EXPECT_TRUE(has(message([&] { t.reshaped({(int64_t(1) << 62) + 1, 4}); }), "is too large"));
  EXPECT_EQ(t.reshaped({2, 2}).dim(1), 2);
  EXPECT_TRUE(has(message([&] { t.dim(1); }), "Tensor::dim(1) of a tensor of shape [4] (1 dimensions)"));
  EXPECT_TRUE(has(message([&] { t.dim(-1); }), "Tensor::dim(-1)"));
}

TEST(Half, RoundTripAndRounding) {
  for (uint32_t h = 0; h < 0x7c00; ++h) EXPECT_EQ(scn::float_to_half(scn::half_to_float(uint16_t(h))), h);
  EXPECT_EQ(scn::float_to_half(65504.f), 0x7bff);
  EXPECT_EQ(scn::float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(scn::half_to_float(scn::float_to_half(1.0f + 1.0f / 4096.f)), 1.0f);  // ties to even
  EXPECT_EQ(scn::half_to_float(scn::float_to_half(-2.5f)), -2.5f);
}

}  // namespace
