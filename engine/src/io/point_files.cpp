// Point files: format choice, raw .bin (float32 / float16) and .tensor; PCD is in pcd_reader.cpp.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "io/pcd_reader.h"
#include "scn/error.h"
#include "scn/file_io.h"
#include "scn/points.h"

namespace scn {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Tensor read_bin(const std::string& path, const PointFileOptions& o, DType dtype) {
  SCN_CHECK(o.columns > 0, path,
            ": the column count of a raw .bin point file must be given (--columns or a preset): "
            "nothing in the file says it");
  const std::string bytes = io::read_whole_file(path);
  const size_t row = size_t(o.columns) * dtype_size(dtype);
  SCN_CHECK(bytes.size() % row == 0, path, ": ", bytes.size(), " bytes is not a multiple of the ", row, "-byte row (",
            o.columns, " x ", dtype_name(dtype), "); wrong --columns or --format, or a truncated file");
  const int64_t n = int64_t(bytes.size() / row);
  return Tensor::from_host(bytes.data(), {n, o.columns}, dtype);
}

Tensor read_tensor_points(const std::string& path, const PointFileOptions& o) {
  const Tensor t = Tensor::load(path);
  SCN_CHECK(t.ndim() == 2, path, ": point tensor must be 2-D [P, C], got ", t.shape_string());
  SCN_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::Float16, path, ": point tensor is ",
            dtype_name(t.dtype()), "; float32 or float16 expected");
  SCN_CHECK(o.columns <= 0 || t.dim(1) == o.columns, path, ": point tensor has ", t.dim(1), " columns, ", o.columns,
            " expected");
  return t;
}

}  // namespace

PointFormat parse_point_format(const std::string& name) {
  if (name == "auto") return PointFormat::Auto;
  if (name == "bin") return PointFormat::Bin;
  if (name == "bin-f16") return PointFormat::BinF16;
  if (name == "tensor") return PointFormat::Tensor;
  if (name == "pcd") return PointFormat::Pcd;
  SCN_FAIL("unknown point format '", name, "' (auto, bin, bin-f16, tensor, pcd)");
}

const char* point_format_name(PointFormat f) {
  switch (f) {
    case PointFormat::Auto:
      return "auto";
    case PointFormat::Bin:
      return "bin";
    case PointFormat::BinF16:
      return "bin-f16";
    case PointFormat::Tensor:
      return "tensor";
    case PointFormat::Pcd:
      return "pcd";
  }
  return "?";
}

Tensor read_points(const std::string& path, const PointFileOptions& o) {
  PointFormat f = o.format;
  if (f == PointFormat::Auto) {
    if (ends_with(path, ".bin"))
      f = PointFormat::Bin;
    else if (ends_with(path, ".tensor"))
      f = PointFormat::Tensor;
    else if (ends_with(path, ".pcd"))
      f = PointFormat::Pcd;
    else
      SCN_FAIL(path,
               ": cannot tell the point format from the name (.bin, .tensor, .pcd); give the format "
               "(bin, bin-f16, tensor, pcd)");
  }
  switch (f) {
    case PointFormat::Bin:
      return read_bin(path, o, DType::Float32);
    case PointFormat::BinF16:
      return read_bin(path, o, DType::Float16);
    case PointFormat::Tensor:
      return read_tensor_points(path, o);
    case PointFormat::Pcd:
      return io::read_pcd(path, o.fields);
    case PointFormat::Auto:
      break;
  }
  SCN_FAIL(path, ": no point format");
}

void write_points_bin(const std::string& path, const Tensor& points) {
  SCN_CHECK(points.ndim() == 2 && points.device() == Device::Host &&
                (points.dtype() == DType::Float32 || points.dtype() == DType::Float16),
            path, ": points to write must be a host float [P, C] tensor, got ",
            points.defined() ? points.shape_string() : std::string("no tensor"));
  const Tensor f = points.dtype() == DType::Float32 ? points : points.to_dtype(DType::Float32);
  write_file_atomic(path, std::string(static_cast<const char*>(f.data()), f.bytes()));
}

}  // namespace scn
