// DLPack arrays across the language boundary, for the bindings of scn._scn: a caller's array wrapped as an
// scn::Tensor (its memory, no copy; dtype, layout and device checked with errors that name the argument) and an
// scn::Tensor handed out as an array of a framework (torch, numpy, or a bare DLPack capsule) that keeps its owner
// alive.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "scn/engine.h"
#include "scn/tensor.h"

namespace scn::py {

namespace nb = nanobind;

using Array = nb::ndarray<nb::ro>;

/// What an output array keeps alive: the scn::Tensor (shares its buffer) and the Python object whose buffers
/// the tensor points into (an engine, a voxelizer).
struct Kept {
  scn::Tensor tensor;
  nb::object owner;
};

/// Where an imported array may live: the host, or CUDA device `device_index` when the consumer runs on CUDA
/// (`consumer` names it in the error for a CUDA array given to a CPU one, e.g. "a cpu engine").
struct Placement {
  bool cuda = false;
  int device_index = 0;
  std::string consumer;
};

inline const char* dlpack_dtype_name(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return "a vector dtype";
  switch (static_cast<C>(t.code)) {
    case C::Float:
      return t.bits == 16 ? "float16" : t.bits == 32 ? "float32" : t.bits == 64 ? "float64" : "float";
    case C::Int:
      return t.bits == 8 ? "int8" : t.bits == 16 ? "int16" : t.bits == 32 ? "int32" : "int64";
    case C::UInt:
      return t.bits == 8 ? "uint8" : "an unsigned integer dtype";
    case C::Bfloat:
      return "bfloat16";
    case C::Bool:
      return "bool";
    default:
      return "an unsupported dtype";
  }
}

inline nb::dlpack::dtype to_dlpack(scn::DType d) {
  using C = nb::dlpack::dtype_code;
  switch (d) {
    case scn::DType::Float16:
      return {uint8_t(C::Float), 16, 1};
    case scn::DType::Float32:
      return {uint8_t(C::Float), 32, 1};
    case scn::DType::Int32:
      return {uint8_t(C::Int), 32, 1};
    case scn::DType::Int64:
      return {uint8_t(C::Int), 64, 1};
    case scn::DType::Int8:
      return {uint8_t(C::Int), 8, 1};
    case scn::DType::UInt8:
      return {uint8_t(C::UInt), 8, 1};
    case scn::DType::UInt32:
      return {uint8_t(C::UInt), 32, 1};
    case scn::DType::UInt64:
      return {uint8_t(C::UInt), 64, 1};
  }
  throw scn::Error("scn: internal: unknown dtype");
}

/// The caller's object as a DLPack array (no copy); `label` and `role` name it in the error ("input 'x'",
/// "features": joined only when there is one).
inline Array as_array(nb::handle obj, const std::string& label, const char* role) {
  Array a;
  if (!nb::try_cast(obj, a, /*convert=*/false)) {
    std::string type = nb::type_name(obj.type()).c_str();
    SCN_FAIL(label, " ", role, ": expected a tensor with __dlpack__ (torch, numpy >= 1.22, CuPy, JAX), got ", type);
  }
  return a;
}

/// Wraps an array's memory as an scn::Tensor after checking its dtype (one of `accepted`; `convert_hint` says
/// how to convert, e.g. ".half()"), C-contiguity and device. `label` and `role` as for as_array.
inline scn::Tensor as_tensor(const Array& a, const std::string& label, const char* role,
                             std::initializer_list<scn::DType> accepted, const char* convert_hint,
                             const Placement& where) {
  const nb::dlpack::dtype t = a.dtype();
  scn::DType dt = scn::DType::Float32;
  bool ok = false;
  for (scn::DType d : accepted) {
    const nb::dlpack::dtype want = to_dlpack(d);
    if (t.code == want.code && t.bits == want.bits && t.lanes == 1) {
      dt = d;
      ok = true;
      break;
    }
  }
  if (!ok) {  // the accepted dtypes' names only for the message
    std::string names;
    for (scn::DType d : accepted) names += (names.empty() ? "" : " or ") + std::string(dlpack_dtype_name(to_dlpack(d)));
    SCN_FAIL(label, " ", role, ": dtype ", dlpack_dtype_name(t), " is not accepted (", names,
             " expected; convert it before the call, e.g. ", convert_hint, ")");
  }
  std::vector<int64_t> shape;
  bool empty = false;  // no elements: any strides describe the same (no) memory; torch gives [0, C] stride 1
  for (size_t d = 0; d < a.ndim(); ++d) {
    shape.push_back(int64_t(a.shape(d)));
    empty = empty || a.shape(d) == 0;
  }
  int64_t expect = 1;  // C-contiguous: strides are the products of the later sizes
  for (size_t d = a.ndim(); !empty && d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expect)  // the shape's text (Tensor::shape_string) only for the message
      SCN_FAIL(label, " ", role, ": the tensor is not contiguous (shape ",
               scn::Tensor::wrap(nullptr, shape, dt, scn::Device::Host).shape_string(), ", stride ", a.stride(d),
               " on axis ", d, " where ", expect, " is expected); pass .contiguous()");
    expect *= int64_t(a.shape(d));
  }
  const int dev = a.device_type();
  scn::Device device = scn::Device::Host;
  if (dev == nb::device::cuda::value) {
    device = scn::Device::Cuda;
    SCN_CHECK(where.cuda, label, " ", role, ": a CUDA tensor was given to ", where.consumer,
              "; move it to the host (.cpu()) or use device='cuda'");
    SCN_CHECK(a.device_id() == where.device_index, label, " ", role, ": the tensor is on cuda:", a.device_id(), " but ",
              where.consumer, " runs on cuda:", where.device_index);
  } else {
    SCN_CHECK(dev == nb::device::cpu::value || dev == nb::device::cuda_host::value, label, " ", role,
              ": DLPack device type ", dev, " is not supported (host or CUDA memory expected)");
  }
  return scn::Tensor::wrap(const_cast<void*>(a.data()), shape, dt, device);
}

/// An scn::Tensor as an array of `Framework` owned by `owner` (a capsule holding a Kept).
template <typename Framework>
nb::ndarray<Framework> wrap(const scn::Tensor& t, nb::handle owner, int device_index) {
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  const bool dev = t.device() == scn::Device::Cuda;
  return nb::ndarray<Framework>(const_cast<void*>(t.data()), shape.size(), shape.data(), owner, nullptr,
                                to_dlpack(t.dtype()), dev ? nb::device::cuda::value : nb::device::cpu::value,
                                dev ? device_index : 0);
}

/// `t` as an array of the framework picked by `framework` (0: a DLPack capsule, 1: numpy, 2: torch) that keeps
/// `t` and `owner` alive.
inline nb::object export_tensor(const scn::Tensor& t, nb::object owner, int framework, int device_index) {
  auto* keep = new Kept{t, std::move(owner)};
  nb::capsule cap(keep, [](void* p) noexcept { delete static_cast<Kept*>(p); });
  if (framework == 2) return nb::cast(wrap<nb::pytorch>(t, cap, device_index));
  if (framework == 1) return nb::cast(wrap<nb::numpy>(t, cap, device_index));
  return nb::cast(wrap<nb::no_framework>(t, cap, device_index));
}

}  // namespace scn::py
