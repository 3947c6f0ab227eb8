#include "scn/tensor.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/half.h"
#include "scn/error.h"
#include "scn/file_io.h"

#ifdef SCN_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace scn {

namespace {
constexpr int32_t kTensorMagic = 0x33ff1101;
constexpr int32_t kMaxDims = 16;

#ifdef SCN_WITH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  SCN_CHECK(e == cudaSuccess, what, ": ", cudaGetErrorString(e));
}
#endif

void* allocate(size_t bytes, Device device, std::shared_ptr<void>& owner) {
  const size_t n = bytes == 0 ? 1 : bytes;
  if (device == Device::Host) {
    void* p = std::malloc(n);
    SCN_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
    owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    return p;
  }
#ifdef SCN_WITH_CUDA
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, n), "cudaMalloc");
  owner = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
  return p;
#else
  SCN_FAIL("a CUDA tensor was requested but scn was built without CUDA");
#endif
}

void copy_bytes(void* dst, Device dd, const void* src, Device sd, size_t bytes) {
  if (bytes == 0) return;
  if (dd == Device::Host && sd == Device::Host) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef SCN_WITH_CUDA
  cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
#else
  SCN_FAIL("a CUDA copy was requested but scn was built without CUDA");
#endif
}
}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Int32: case DType::Float32: case DType::UInt32: return 4;
    case DType::Float16: return 2;
    case DType::Int64: case DType::UInt64: return 8;
    case DType::Int8: case DType::UInt8: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Int32: return "int32";
    case DType::Float16: return "float16";
    case DType::Float32: return "float32";
    case DType::Int64: return "int64";
    case DType::UInt64: return "uint64";
    case DType::UInt32: return "uint32";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
  }
  return "?";
}

bool is_valid_dtype_code(int32_t code) { return code >= 1 && code <= 8; }

int64_t Tensor::numel() const {
  if (shape_.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// What every tensor holds, made (empty), wrapped or reshaped: a known dtype, no negative dimension, and element
/// and byte counts within int64 (a wrapped {-1, 4} once reached set_input and ended in std::length_error).
void check_shape(const std::vector<int64_t>& shape, DType dtype, const char* what) {
  SCN_CHECK(dtype_size(dtype) != 0, what, ": dtype ", int(dtype), " is not a DType");
  int64_t n = 1;
  for (int64_t d : shape) {
    SCN_CHECK(d >= 0, what, ": negative tensor dimension ", d, " in shape ", shape_text(shape));
    SCN_CHECK(!__builtin_mul_overflow(n, d, &n) && n <= std::numeric_limits<int64_t>::max() / 8, what,
              ": tensor shape ", shape_text(shape), " is too large");
  }
}

}  // namespace

Tensor Tensor::empty(const std::vector<int64_t>& shape, DType dtype, Device device) {
  check_shape(shape, dtype, "Tensor::empty");
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.data_ = allocate(t.bytes(), device, t.owner_);
  return t;
}

Tensor Tensor::from_host(const void* data, const std::vector<int64_t>& shape, DType dtype) {
  Tensor t = empty(shape, dtype, Device::Host);
  if (t.bytes()) std::memcpy(t.data_, data, t.bytes());
  return t;
}

Tensor Tensor::wrap(void* data, const std::vector<int64_t>& shape, DType dtype, Device device) {
  check_shape(shape, dtype, "Tensor::wrap");
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.data_ = data;
  return t;
}

Tensor Tensor::wrap_shared(void* data, const std::vector<int64_t>& shape, DType dtype, Device device,
                           std::shared_ptr<void> owner) {
  Tensor t = wrap(data, shape, dtype, device);
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::load(const std::string& path) {
  struct stat st {};
  SCN_CHECK(::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode), path,
            ": cannot open tensor file (it is a directory)");
  std::ifstream f(path, std::ios::binary);
  SCN_CHECK(f.good(), path, ": cannot open tensor file");
  f.seekg(0, std::ios::end);
  const int64_t file_size = f.tellg();
  f.seekg(0, std::ios::beg);
  int32_t head[3];
  SCN_CHECK(file_size >= 12 && f.read(reinterpret_cast<char*>(head), 12), path,
            ": truncated tensor header (", file_size, " bytes, need at least 12)");
  SCN_CHECK(head[0] == kTensorMagic, path, ": not a .tensor file (magic 0x", std::hex, uint32_t(head[0]),
            ", expected 0x33ff1101)");
  const int32_t ndim = head[1];
  SCN_CHECK(ndim >= 1 && ndim <= kMaxDims, path, ": ndim ", ndim, " out of range 1..", kMaxDims);
  SCN_CHECK(is_valid_dtype_code(head[2]), path, ": unknown dtype code ", head[2]);
  std::vector<int32_t> dims(static_cast<size_t>(ndim), 0);
  SCN_CHECK(f.read(reinterpret_cast<char*>(dims.data()), std::streamsize(4 * ndim)), path,
            ": truncated tensor header (dims)");
  const DType dtype = static_cast<DType>(head[2]);
  std::vector<int64_t> shape;
  int64_t numel = 1;
  for (int32_t d : dims) {
    SCN_CHECK(d >= 0, path, ": negative dimension ", d);
    shape.push_back(d);
    SCN_CHECK(d == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / d, path,
              ": dimensions overflow");
    numel *= d;
  }
  const int64_t payload = numel * int64_t(dtype_size(dtype));
  const int64_t header = 12 + 4 * int64_t(ndim);
  SCN_CHECK(file_size - header == payload, path, ": data size ", file_size - header,
            " bytes does not match shape [", [&] {
              std::string s;
              for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
              return s;
            }(), "] of ", dtype_name(dtype), " (", payload, " bytes)");
  Tensor t = empty(shape, dtype, Device::Host);
  SCN_CHECK(payload == 0 || f.read(static_cast<char*>(t.data_), std::streamsize(payload)), path,
            ": read error");
  return t;
}

void Tensor::save(const std::string& path) const {
  SCN_CHECK(defined(), path, ": cannot save an undefined tensor");
  const Tensor host = to(Device::Host);
  std::string bytes;
  bytes.reserve(12 + 4 * shape_.size() + this->bytes());
  const int32_t head[3] = {kTensorMagic, int32_t(shape_.size()), int32_t(dtype_)};
  bytes.append(reinterpret_cast<const char*>(head), 12);
  for (int64_t d : shape_) {
    SCN_CHECK(d <= std::numeric_limits<int32_t>::max(), path, ": dimension ", d,
              " does not fit the int32 dims of the .tensor format");
    const int32_t d32 = int32_t(d);
    bytes.append(reinterpret_cast<const char*>(&d32), 4);
  }
  bytes.append(static_cast<const char*>(host.data_), this->bytes());
  write_file_atomic(path, bytes);
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(shape_, dtype_, device);
  copy_bytes(t.data_, device, data_, device_, bytes());
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device_);
  copy_bytes(t.data_, device_, data_, device_, bytes());
  return t;
}

Tensor Tensor::reshaped(const std::vector<int64_t>& shape) const {
  check_shape(shape, dtype_, "Tensor::reshaped");
  Tensor t = *this;
  t.shape_ = shape;
  SCN_CHECK(t.numel() == numel(), "cannot reshape ", shape_string(), " to ", t.shape_string());
  return t;
}

Tensor Tensor::to_dtype(DType dtype) const {
  if (dtype == dtype_) return *this;
  SCN_CHECK(device_ == Device::Host, "to_dtype needs a host tensor");
  Tensor t = empty(shape_, dtype, Device::Host);
  const int64_t n = numel();
  if (dtype_ == DType::Float16 && dtype == DType::Float32) {
    for (int64_t i = 0; i < n; ++i) t.ptr<float>()[i] = half_to_float(ptr<uint16_t>()[i]);
  } else if (dtype_ == DType::Float32 && dtype == DType::Float16) {
    for (int64_t i = 0; i < n; ++i) t.ptr<uint16_t>()[i] = float_to_half(ptr<float>()[i]);
  } else {
    SCN_FAIL("conversion from ", dtype_name(dtype_), " to ", dtype_name(dtype), " is not supported");
  }
  return t;
}

std::string Tensor::shape_string() const { return shape_text(shape_); }

void Tensor::fail_dim(int i) const {
  SCN_FAIL("Tensor::dim(", i, ") of a tensor of shape ", shape_string(), " (", ndim(), " dimensions)");
}

}  // namespace scn
