// Point files: raw float32 / float16 .bin, .tensor and PCD (ascii, binary), and every malformed
// case named by file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/comma_locale.h"
#include "core/half.h"
#include "scn/error.h"
#include "scn/points.h"

namespace {

using namespace scn;
namespace fs = std::filesystem;

std::string dir() {
  static const std::string d = [] {
    const fs::path p = fs::temp_directory_path() / ("scn_point_files_" + std::to_string(getpid()));
    fs::create_directories(p);
    return p.string();
  }();
  return d;
}

std::string write(const std::string& name, const std::string& bytes) {
  const std::string p = dir() + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// Expects scn::Error whose message holds every fragment.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const std::string& s : fragments) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
  }
}

TEST(PointFiles, BinFloat32RoundTripAndColumns) {
  const std::vector<float> v = {1.f, 2.f, 3.f, 4.f, 5.f, -6.f, 7.5f, 8.f, 9.f, 10.f};
  const std::string p = write("a.bin", raw(v));
  PointFileOptions o;
  o.columns = 5;
  const Tensor t = read_points(p, o);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.ptr<float>()[5], -6.f);
  o.columns = 4;  // 40 bytes is not a multiple of 16
  expect_error([&] { read_points(p, o); }, {p, "40 bytes", "16-byte row"});
  o.columns = 0;
  expect_error([&] { read_points(p, o); }, {p, "column count"});
  const std::string q = dir() + "/w.bin";
  write_points_bin(q, t);
  o.columns = 5;
  EXPECT_EQ(raw(v), std::string(reinterpret_cast<const char*>(read_points(q, o).data()), 40));
}

TEST(PointFiles, BinFloat16AsNvidiaWorkspace) {
  std::vector<uint16_t> h;
  for (float f : {1.5f, -2.f, 0.25f, 30.f, 0.f, 4.f, 5.f, 6.f, 7.f, 0.5f}) h.push_back(float_to_half(f));
  const std::string p = write("nv.bin", raw(h));
  PointFileOptions o;
  o.format = PointFormat::BinF16;
  o.columns = 5;
  const Tensor t = read_points(p, o);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(t.dtype(), DType::Float16);
  EXPECT_EQ(half_to_float(t.ptr<uint16_t>()[3]), 30.f);
  const std::string odd = write("odd.bin", raw(h).substr(0, 18));
  expect_error([&] { read_points(odd, o); }, {odd, "18 bytes", "10-byte row"});
}

TEST(PointFiles, TensorFiles) {
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::string p = dir() + "/p.tensor";
  Tensor::from_host(v.data(), {2, 4}, DType::Float32).save(p);
  PointFileOptions o;
  EXPECT_EQ(read_points(p, o).shape(), (std::vector<int64_t>{2, 4}));
  o.columns = 5;
  expect_error([&] { read_points(p, o); }, {p, "4 columns, 5 expected"});
  const std::vector<int32_t> ints = {1, 2, 3, 4};
  const std::string q = dir() + "/i.tensor";
  Tensor::from_host(ints.data(), {1, 4}, DType::Int32).save(q);
  expect_error([&] { read_points(q, {}); }, {q, "int32"});
  expect_error([&] { read_points(dir() + "/missing.tensor", {}); }, {"missing.tensor"});
  expect_error([&] { read_points(dir() + "/cloud.xyz", {}); }, {"cloud.xyz", "format"});
  expect_error([&] { parse_point_format("ply"); }, {"ply"});
}

const char* kHeader =
    "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS x y z ring intensity\nSIZE 4 4 4 2 1\n"
    "TYPE F F F U U\nCOUNT 1 1 1 1 1\nWIDTH 3\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 3\n";

TEST(PointFiles, PcdAsciiFieldsByName) {
  const std::string p = write("a.pcd", std::string(kHeader) + "DATA ascii\n1 2 3 7 200\n-4.5 5 6 8 17\nnan 0 0 9 0\n");
  PointFileOptions o;
  o.fields = {"intensity", "x", "y", "z"};
  const Tensor t = read_points(p, o);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{3, 4}));
  const float* f = t.ptr<float>();
  EXPECT_EQ(f[0], 200.f);
  EXPECT_EQ(f[1], 1.f);
  EXPECT_EQ(f[4], 17.f);
  EXPECT_EQ(f[5], -4.5f);
  EXPECT_TRUE(std::isnan(f[9]));
}

TEST(PointFiles, PcdBinaryMixedTypes) {
  std::string body;
  for (int i = 0; i < 3; ++i) {
    const float xyz[3] = {float(i), float(i) * 2.f, -float(i)};
    const uint16_t ring = uint16_t(i + 1);
    const uint8_t inten = uint8_t(100 + i);
    body += std::string(reinterpret_cast<const char*>(xyz), 12);
    body += std::string(reinterpret_cast<const char*>(&ring), 2);
    body += std::string(reinterpret_cast<const char*>(&inten), 1);
  }
  const std::string p = write("b.pcd", std::string(kHeader) + "DATA binary\n" + body);
  PointFileOptions o;
  o.fields = {"x", "y", "z", "intensity", "ring"};
  const Tensor t = read_points(p, o);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{3, 5}));
  const float* f = t.ptr<float>();
  EXPECT_EQ(f[5 + 1], 2.f);
  EXPECT_EQ(f[5 + 3], 101.f);
  EXPECT_EQ(f[10 + 4], 3.f);
  const std::string cut = write("cut.pcd", std::string(kHeader) + "DATA binary\n" + body.substr(0, 40));
  expect_error([&] { read_points(cut, o); }, {cut, "truncated", "40 bytes"});
  const std::string extra = write("extra.pcd", std::string(kHeader) + "DATA binary\n" + body + "xx");
  expect_error([&] { read_points(extra, o); }, {extra, "2 bytes beyond"});
}

TEST(PointFiles, PcdErrorsNameTheFile) {
  PointFileOptions o;
  const std::string unk = write("u.pcd", std::string(kHeader) + "DATA ascii\n1 2 3 7 200\n1 2 3 7 200\n1 2 3 7 200\n");
  o.fields = {"x", "y", "z", "time"};
  expect_error([&] { read_points(unk, o); }, {unk, "no field 'time'", "x y z ring intensity"});
  o.fields = {"x", "y", "z", "intensity"};
  const std::string shortp = write("s.pcd", std::string(kHeader) + "DATA ascii\n1 2 3 7 200\n");
  expect_error([&] { read_points(shortp, o); }, {shortp, "truncated", "12 bytes", "3 points of 5 values"});
  // bytes enough for three points (blank lines), lines for one
  const std::string blank = write("sb.pcd", std::string(kHeader) + "DATA ascii\n1 2 3 7 200\n" + std::string(40, '\n'));
  expect_error([&] { read_points(blank, o); }, {blank, "truncated", "1 of 3"});
  const std::string comp = write("c.pcd", std::string(kHeader) + "DATA binary_compressed\n....");
  expect_error([&] { read_points(comp, o); }, {comp, "binary_compressed", "not supported"});
  const std::string bad = write("bad.pcd", std::string(kHeader) + "DATA ascii\n1 2 3 7 200\n1 x 3 7 200\n1 2 3 7 1\n");
  expect_error([&] { read_points(bad, o); }, {bad, "'x'", "not a number"});
  const std::string cols = write("cols.pcd", std::string(kHeader) + "DATA ascii\n1 2 3 7\n1 2 3 7 1\n1 2 3 7 1\n");
  expect_error([&] { read_points(cols, o); }, {cols, "4 values, 5 expected"});
  const std::string nodata = write("n.pcd", std::string(kHeader));
  expect_error([&] { read_points(nodata, o); }, {nodata, "DATA"});
  const std::string multi =
      write("m.pcd", "FIELDS x y z normal\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 3\nWIDTH 0\nHEIGHT 1\nDATA ascii\n");
  o.fields = {"x", "normal"};
  expect_error([&] { read_points(multi, o); }, {multi, "'normal' has COUNT 3"});
  o.fields = {"x", "y", "z"};
  EXPECT_EQ(read_points(multi, o).dim(0), 0);
  const std::string badtype = write("t.pcd", "FIELDS x\nSIZE 3\nTYPE F\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1\n");
  o.fields = {"x"};
  expect_error([&] { read_points(badtype, o); }, {badtype, "SIZE 3"});
}

// Header counts that would wrap a size computation or allocate without bound are errors naming the file and the
// header entry, found before any allocation (a wrapped product once passed the size check and crashed the copy).
TEST(PointFiles, PcdHeaderCountsOutOfRange) {
  PointFileOptions o;
  o.fields = {"x", "y", "z", "intensity"};
  const std::string fields = "FIELDS x y z intensity\nSIZE 4 4 4 4\nTYPE F F F F\n";
  // 2^62 points of 16 bytes: the byte count wraps to 0 in 64 bits, as the output's element count did
  const std::string wrap = write("wrap.pcd", fields + "WIDTH 4611686018427387904\nHEIGHT 1\nDATA binary\n");
  expect_error([&] { read_points(wrap, o); }, {wrap, "WIDTH", "4611686018427387904", "is above"});
  const std::string wrap_a = write("wrap_a.pcd", fields + "WIDTH 4611686018427387904\nHEIGHT 1\nDATA ascii\n1 2 3 4\n");
  expect_error([&] { read_points(wrap_a, o); }, {wrap_a, "WIDTH", "is above"});
  // WIDTH x HEIGHT past 63 bits
  const std::string prod = write("prod.pcd", fields + "WIDTH 1099511627776\nHEIGHT 1099511627776\nDATA binary\n");
  expect_error([&] { read_points(prod, o); }, {prod, "WIDTH x HEIGHT", "is above"});
  // 10^11 points with no data: the truncation error, not an allocation failure
  const std::string big = write("big.pcd", fields + "WIDTH 100000000000\nHEIGHT 1\nDATA binary\n");
  expect_error([&] { read_points(big, o); }, {big, "truncated", "100000000000 points"});
  const std::string big_a = write("big_a.pcd", fields + "WIDTH 1000000000\nHEIGHT 1\nDATA ascii\n1 2 3 4\n");
  expect_error([&] { read_points(big_a, o); }, {big_a, "ascii data is truncated", "1000000000 points"});
  // SIZE and COUNT are not cut to 32 bits (4294967300 once read as SIZE 4, 4294967297 as COUNT 1)
  const std::string size = write("size.pcd", "FIELDS x\nSIZE 4294967300\nTYPE F\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1\n");
  expect_error([&] { read_points(size, o); }, {size, "SIZE 4294967300", "is above"});
  const std::string count =
      write("count.pcd", "FIELDS x\nSIZE 4\nTYPE F\nCOUNT 4294967297\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1\n");
  expect_error([&] { read_points(count, o); }, {count, "COUNT 4294967297", "is above"});
}

// Ascii values parse the same under any locale: with strtod, a comma locale stopped "1.5" at the '.' and the file
// was rejected as "not a number".
TEST(PointFiles, PcdAsciiValuesIgnoreTheLocale) {
  const std::string p = write("loc.pcd", std::string(kHeader) +
                                             "DATA ascii\n1.5 -2.25 3e2 7 200\n+4.75 0.1 -0 8 17\n"
                                             "inf -inf 1.17549435e-38 9 0\n");
  PointFileOptions o;
  o.fields = {"x", "y", "z", "intensity"};
  Tensor t;
  {
    const test::CommaLocale comma;
    if (!comma.active()) GTEST_SKIP() << "no comma locale here (none installed, localedef failed)";
    t = read_points(p, o);
  }
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{3, 4}));
  const float* f = t.ptr<float>();
  const std::vector<float> want = {1.5f, -2.25f, 300.f, 200.f, 4.75f, 0.1f, -0.f, 17.f};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(f[k], want[k]) << "value " << k;
  EXPECT_TRUE(std::signbit(f[6]));
  EXPECT_EQ(f[8], INFINITY);
  EXPECT_EQ(f[9], -INFINITY);
  EXPECT_EQ(f[10], 1.17549435e-38f);
}

// Binary data too: an F8 value beyond float32 is an error (it became an infinity and the point was dropped as
// non-finite), a NaN in the file stays a NaN; a field read by name that FIELDS lists twice is an error (the last one
// was read), while repeated padding names ("_") not read are fine.
TEST(PointFiles, PcdBinaryValuesOutOfRangeAndRepeatedFields) {
  PointFileOptions o;
  o.fields = {"x", "y", "z", "intensity"};
  const std::string head =
      "FIELDS x y z intensity _ _\nSIZE 8 4 4 4 1 1\nTYPE F F F F U U\nWIDTH 2\nHEIGHT 1\n"
      "POINTS 2\nDATA binary\n";
  auto record = [](double x, float y, float z, float i) {
    std::string r(22, '\0');
    std::memcpy(&r[0], &x, 8);
    std::memcpy(&r[8], &y, 4);
    std::memcpy(&r[12], &z, 4);
    std::memcpy(&r[16], &i, 4);
    return r;
  };
  const std::string good = write("f8.pcd", head + record(1.5, 2, 3, 4) + record(std::nan(""), 5, 6, 7));
  const Tensor t = read_points(good, o);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(t.ptr<float>()[0], 1.5f);
  EXPECT_TRUE(std::isnan(t.ptr<float>()[4]));
  const std::string big = write("f8big.pcd", head + record(1.5, 2, 3, 4) + record(1e300, 5, 6, 7));
  expect_error([&] { read_points(big, o); }, {big, "point 1", "field 'x'", "beyond the float32 range"});
  const std::string twice = write("twice.pcd",
                                  "FIELDS x y z x\nSIZE 4 4 4 4\nTYPE F F F F\nWIDTH 1\nHEIGHT 1\n"
                                  "DATA ascii\n1 2 3 4\n");
  o.fields = {"x", "y", "z"};
  expect_error([&] { read_points(twice, o); }, {twice, "field 'x' appears more than once"});
}

// A value float32 cannot hold is an error naming it, not an infinity; malformed signs are not numbers.
TEST(PointFiles, PcdAsciiValuesOutOfRange) {
  PointFileOptions o;
  o.fields = {"x", "y", "z", "intensity"};
  const std::string rows = "1 2 3 7 200\n1 2 3 7 200\n";
  const std::string f32 = write("f32.pcd", std::string(kHeader) + "DATA ascii\n" + rows + "1 2 1e39 7 200\n");
  expect_error([&] { read_points(f32, o); }, {f32, "line", "'1e39'", "field 'z'", "beyond the float32 range"});
  const std::string f64 = write("f64.pcd", std::string(kHeader) + "DATA ascii\n" + rows + "1e999 2 3 7 200\n");
  expect_error([&] { read_points(f64, o); }, {f64, "'1e999'", "field 'x'", "out of range"});
  const std::string sign = write("sign.pcd", std::string(kHeader) + "DATA ascii\n" + rows + "1 +-2 3 7 200\n");
  expect_error([&] { read_points(sign, o); }, {sign, "'+-2'", "field 'y'", "not a number"});
  const std::string comma = write("comma.pcd", std::string(kHeader) + "DATA ascii\n" + rows + "1 2,5 3 7 200\n");
  expect_error([&] { read_points(comma, o); }, {comma, "'2,5'", "not a number"});
}

}  // namespace
