// scn — tensors: a shape, a dtype and one buffer on the host or on a CUDA device,
// plus the NVIDIA `.tensor` file format (int32 magic 0x33ff1101, ndim, dtype code,
// int32 dims, raw little-endian data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace scn {

/// Element types; the values are the dtype codes of the `.tensor` format.
enum class DType : int32_t {
  Int32 = 1,
  Float16 = 2,
  Float32 = 3,
  Int64 = 4,
  UInt64 = 5,
  UInt32 = 6,
  Int8 = 7,
  UInt8 = 8,
};

enum class Device { Host, Cuda };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
/// True when code is one of the dtype codes above.
bool is_valid_dtype_code(int32_t code);

/// A dense tensor. Copies share the buffer (like a shared_ptr); use clone() for a deep copy.
class Tensor {
 public:
  Tensor() = default;

  /// Allocates an uninitialised tensor.
  static Tensor empty(const std::vector<int64_t>& shape, DType dtype, Device device = Device::Host);
  /// Copies `bytes` of host memory into a new host tensor of the given shape and dtype.
  static Tensor from_host(const void* data, const std::vector<int64_t>& shape, DType dtype);
  /// Wraps memory the caller owns (host or device); the caller keeps it alive.
  static Tensor wrap(void* data, const std::vector<int64_t>& shape, DType dtype, Device device);
  /// Wraps memory that `owner` keeps alive: the tensor and its copies share `owner` (an engine's buffer handed out
  /// as a view stays valid after the engine moves to a larger one).
  static Tensor wrap_shared(void* data, const std::vector<int64_t>& shape, DType dtype, Device device,
                            std::shared_ptr<void> owner);

  /// Reads a `.tensor` file. Throws scn::Error naming the file on any malformation.
  static Tensor load(const std::string& path);
  /// Writes a `.tensor` file (device tensors are copied to the host first). The file is
  /// written to a temporary name and renamed, so a failure leaves no partial file behind.
  void save(const std::string& path) const;

  const std::vector<int64_t>& shape() const { return shape_; }
  /// Dimension i, 0 <= i < ndim() (else an scn::Error). Inline: loops read it per row.
  int64_t dim(int i) const {
    if (i < 0 || i >= ndim()) fail_dim(i);
    return shape_[static_cast<size_t>(i)];
  }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool defined() const { return !shape_.empty(); }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T>
  T* ptr() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* ptr() const {
    return static_cast<const T*>(data_);
  }

  /// A copy on the given device (the same tensor when it is already there).
  Tensor to(Device device) const;
  Tensor clone() const;
  /// The same buffer with another shape of the same element count.
  Tensor reshaped(const std::vector<int64_t>& shape) const;
  /// Converts float16 <-> float32 (host only).
  Tensor to_dtype(DType dtype) const;

  std::string shape_string() const;

 private:
  [[noreturn]] void fail_dim(int i) const;  ///< the scn::Error of dim(i) out of range
  std::vector<int64_t> shape_;
  DType dtype_ = DType::Float32;
  Device device_ = Device::Host;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

}  // namespace scn
