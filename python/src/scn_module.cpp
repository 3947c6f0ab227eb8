// scn._scn — the nanobind extension behind the `scn` Python package (python/scn/).
//
// It only moves tensors across the language boundary: DLPack arrays in (read in place: a view of
// the caller's memory is handed to Engine::set_input, never copied here), views of the engine's
// outputs out. Output lifetime, torch streams and argument parsing live in python/scn/_engine.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scn/engine.h"
#include "scn/onnx.h"

namespace nb = nanobind;

namespace {

using Array = nb::ndarray<nb::ro>;

const char* dlpack_dtype_name(nb::dlpack::dtype t) {
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

nb::dlpack::dtype to_dlpack(scn::DType d) {
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

/// What an output array keeps alive: the scn::Tensor (shares its buffer) and the Python engine.
struct Kept {
  scn::Tensor tensor;
  nb::object engine;
};

/// One engine and the Python objects whose memory its bound inputs point into.
class PyEngine {
 public:
  PyEngine(const std::string& path, const std::string& device, const std::string& precision, int64_t max_voxels,
           int max_batch, bool cuda_graph, int device_index, int num_threads, const std::string& capacity, bool grow,
           double capacity_margin, const std::string& tuning_cache) {
    scn::BuildOptions o;
    o.backend = scn::parse_backend(device);
    o.precision = scn::parse_precision(precision);
    SCN_CHECK(max_voxels >= 0, path, ": max_voxels must be positive (got ", max_voxels, ")");
    SCN_CHECK(max_batch >= 1, path, ": max_batch must be at least 1 (got ", max_batch, ")");
    SCN_CHECK(device_index >= 0, path, ": CUDA device index must be >= 0 (got ", device_index, ")");
    o.max_input_voxels = max_voxels;
    o.max_batch = max_batch;
    o.cuda_graph = cuda_graph;
    o.device = device_index;
    o.num_threads = num_threads;
    SCN_CHECK(capacity == "bounds" || capacity == "first_frame", path, ": capacity = '", capacity,
              "' is not 'bounds' (every level at its bound) or 'first_frame' (fitted to the first frame)");
    o.capacity_source = capacity == "first_frame" ? scn::CapacitySource::FirstFrame : scn::CapacitySource::Bounds;
    o.on_capacity_overflow = grow ? scn::CapacityOverflow::Grow : scn::CapacityOverflow::Error;
    if (capacity_margin > 0.0) o.capacity_margin = capacity_margin;  // 0: the BuildOptions default
    o.cuda.tuning_cache = tuning_cache;
    nb::gil_scoped_release nogil;
    engine_ = scn::load_engine_from_onnx(path, o);
    cuda_ = engine_->backend() == scn::Backend::Cuda;
    device_index_ = device_index;
    kept_.resize(size_t(engine_->num_inputs()));
  }

  std::string backend() const { return scn::backend_name(engine_->backend()); }
  std::string precision() const { return scn::precision_name(engine_->precision()); }
  int device_index() const { return cuda_ ? device_index_ : -1; }
  size_t workspace_bytes() const { return engine_->workspace_bytes(); }
  std::vector<std::string> input_names() const { return names(engine_->num_inputs(), true); }
  std::vector<std::string> output_names() const { return names(engine_->num_outputs(), false); }
  std::vector<int> input_channels() const {
    std::vector<int> c;
    for (int v : engine_->graph().inputs) c.push_back(engine_->graph().values[size_t(v)].channels);
    return c;
  }
  std::vector<bool> output_sparse() const {
    std::vector<bool> s;
    for (int i = 0; i < engine_->num_outputs(); ++i) s.push_back(engine_->output_is_sparse(i));
    return s;
  }

  /// Binds input `index` (no copy of device tensors; host tensors are copied by the engine).
  void set_input(int index, nb::handle features, nb::handle indices, const scn::Int3& grid, int batch_size) {
    const std::string& name = engine_->input_name(index);
    Array f = as_array(features, "features", name);
    Array i = as_array(indices, "indices", name);
    const scn::Tensor tf = as_tensor(f, "features", name, true);
    const scn::Tensor ti = as_tensor(i, "indices", name, false);
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      engine_->set_input(index, tf, ti, grid, batch_size);
    }
    // The engine reads device inputs when the forward runs (in stream order): keep their owners
    // alive until the next binding so the memory cannot be freed and reused before that.
    kept_[size_t(index)] = {std::move(f), std::move(i)};
  }

  /// Enqueues the forward on `stream` (a cudaStream_t as an integer; 0 = the engine's own stream).
  void forward(uintptr_t stream) {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    engine_->forward(reinterpret_cast<void*>(stream));
  }

  /// set_input(0, ...) and forward(stream) in one call (one GIL release: the hot path).
  void run(nb::handle features, nb::handle indices, const scn::Int3& grid, int batch_size, uintptr_t stream) {
    SCN_CHECK(engine_->num_inputs() == 1, engine_->graph().source, ": the model has ", engine_->num_inputs(),
              " inputs; bind each with set_input() and call forward()");
    const std::string& name = engine_->input_name(0);
    Array f = as_array(features, "features", name);
    Array i = as_array(indices, "indices", name);
    const scn::Tensor tf = as_tensor(f, "features", name, true);
    const scn::Tensor ti = as_tensor(i, "indices", name, false);
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      engine_->set_input(0, tf, ti, grid, batch_size);
      engine_->forward(reinterpret_cast<void*>(stream));
    }
    kept_[0] = {std::move(f), std::move(i)};
  }

  /// Output `index` as a view of the engine's buffer (valid until the next forward; the view keeps
  /// the engine alive). wait=false: dense outputs in stream order without a host wait
  /// (Engine::output_async); sparse outputs always wait (their row count is read on the host).
  /// part 0: features / dense tensor, 1: indices of a sparse output.
  template <typename Framework>
  nb::ndarray<Framework> view(nb::handle self, int index, int part, bool wait) {
    scn::Tensor t;
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      t = part == 1 ? engine_->output_indices(index) : wait ? engine_->output(index) : engine_->output_async(index);
    }
    // The array owns a reference to the tensor (backends may return memory the Tensor owns) and to
    // the engine (whose buffers a view points into).
    auto* keep = new Kept{t, nb::borrow(self)};
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Kept*>(p); });
    return wrap<Framework>(t, owner);
  }

  /// Where a dense output's view would point and its shape, without building the view (Engine::output_async,
  /// no host wait): the package reuses the view it made while both are unchanged (a torch tensor from DLPack costs
  /// more host time than the forward's launch).
  std::pair<uintptr_t, std::vector<int64_t>> view_key(int index) {
    std::lock_guard<std::mutex> lock(mutex_);
    SCN_CHECK(!engine_->output_is_sparse(index), "output '", engine_->output_name(index),
              "' is sparse: its view has no fixed shape");
    const scn::Tensor t = engine_->output_async(index);
    return {reinterpret_cast<uintptr_t>(t.data()), t.shape()};
  }

  /// Output `index` copied by scn into memory the returned array owns (for callers without torch;
  /// a CUDA copy waits for the forward).
  template <typename Framework>
  nb::ndarray<Framework> copy(int index, int part) {
    scn::Tensor c;
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      c = (part == 1 ? engine_->output_indices(index) : engine_->output(index)).clone();
    }
    auto* keep = new Kept{c, nb::object()};
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Kept*>(p); });
    return wrap<Framework>(c, owner);
  }

  std::vector<double> time_forward(int warmup, int runs) {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    return engine_->time_forward(warmup, runs);
  }

  /// Engine::profile_layers on the bound input: one forward step by step, (node, op, algorithm, ms, split_k)
  /// per step.
  std::vector<std::tuple<std::string, std::string, std::string, double, int>> profile_layers() {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::tuple<std::string, std::string, std::string, double, int>> steps;
    for (const scn::LayerTiming& t : engine_->profile_layers())
      steps.emplace_back(t.node, t.op, t.algorithm, t.ms, t.split_k);
    return steps;
  }

  void check_errors() {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    engine_->check_errors();
  }

 private:
  std::vector<std::string> names(int n, bool inputs) const {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back(inputs ? engine_->input_name(i) : engine_->output_name(i));
    return v;
  }

  Array as_array(nb::handle obj, const char* role, const std::string& input) const {
    Array a;
    if (!nb::try_cast(obj, a, /*convert=*/false)) {
      std::string type = nb::type_name(obj.type()).c_str();
      SCN_FAIL("input '", input, "' ", role,
               ": expected a tensor with __dlpack__ (torch, numpy >= 1.22, CuPy, "
               "JAX), got ",
               type);
    }
    return a;
  }

  /// Checks dtype, layout and device, and wraps the memory (no copy).
  scn::Tensor as_tensor(const Array& a, const char* role, const std::string& input, bool features) const {
    using C = nb::dlpack::dtype_code;
    const nb::dlpack::dtype t = a.dtype();
    scn::DType dt = scn::DType::Float32;
    if (features && t == nb::dtype<float>()) {
      dt = scn::DType::Float32;
    } else if (features && t.code == uint8_t(C::Float) && t.bits == 16 && t.lanes == 1) {
      dt = scn::DType::Float16;
    } else if (!features && t == nb::dtype<int32_t>()) {
      dt = scn::DType::Int32;
    } else {
      SCN_FAIL("input '", input, "' ", role, ": dtype ", dlpack_dtype_name(t), " is not accepted (",
               features ? "float16 or float32" : "int32", " expected; convert it before the call, e.g. ",
               features ? ".half()" : ".int()", ")");
    }
    std::vector<int64_t> shape;
    for (size_t d = 0; d < a.ndim(); ++d) shape.push_back(int64_t(a.shape(d)));
    int64_t expect = 1;  // C-contiguous: strides are the products of the later sizes
    for (size_t d = a.ndim(); d-- > 0;) {
      SCN_CHECK(a.shape(d) == 1 || a.stride(d) == expect, "input '", input, "' ", role,
                ": the tensor is not contiguous (shape ", shape_text(shape), ", stride ", a.stride(d), " on axis ", d,
                " where ", expect, " is expected); pass .contiguous()");
      expect *= int64_t(a.shape(d));
    }
    const int dev = a.device_type();
    scn::Device where = scn::Device::Host;
    if (dev == nb::device::cuda::value) {
      where = scn::Device::Cuda;
      SCN_CHECK(cuda_, "input '", input, "' ", role, ": a CUDA tensor was given to a ", backend(),
                " engine; move it to the host (.cpu()) or build the engine with device='cuda'");
      SCN_CHECK(a.device_id() == device_index_, "input '", input, "' ", role, ": the tensor is on cuda:", a.device_id(),
                " but the engine runs on cuda:", device_index_);
    } else {
      SCN_CHECK(dev == nb::device::cpu::value || dev == nb::device::cuda_host::value, "input '", input, "' ", role,
                ": DLPack device type ", dev, " is not supported (host or CUDA memory expected)");
    }
    return scn::Tensor::wrap(const_cast<void*>(a.data()), shape, dt, where);
  }

  template <typename Framework>
  nb::ndarray<Framework> wrap(const scn::Tensor& t, nb::handle owner) const {
    std::vector<size_t> shape(t.shape().begin(), t.shape().end());
    const bool dev = t.device() == scn::Device::Cuda;
    return nb::ndarray<Framework>(const_cast<void*>(t.data()), shape.size(), shape.data(), owner, nullptr,
                                  to_dlpack(t.dtype()), dev ? nb::device::cuda::value : nb::device::cpu::value,
                                  dev ? device_index_ : 0);
  }

  static std::string shape_text(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }

  std::unique_ptr<scn::Engine> engine_;
  std::vector<std::vector<Array>> kept_;
  std::mutex mutex_;
  bool cuda_ = false;
  int device_index_ = 0;
};

}  // namespace

NB_MODULE(_scn, m) {
  m.doc() = "scn engine bindings (use the `scn` package, not this module)";
  nb::exception<scn::Error>(m, "Error", PyExc_RuntimeError);

  m.def("cuda_available", &scn::cuda_available, "True when scn has the CUDA backend and a GPU is visible");
  nb::class_<PyEngine>(m, "_Engine")
      .def(nb::init<const std::string&, const std::string&, const std::string&, int64_t, int, bool, int, int,
                    const std::string&, bool, double, const std::string&>(),
           nb::arg("path"), nb::arg("device"), nb::arg("precision"), nb::arg("max_voxels"), nb::arg("max_batch"),
           nb::arg("cuda_graph"), nb::arg("device_index"), nb::arg("num_threads"), nb::arg("capacity"),
           nb::arg("grow"), nb::arg("capacity_margin"), nb::arg("tuning_cache"))
      .def_prop_ro("backend", &PyEngine::backend)
      .def_prop_ro("precision", &PyEngine::precision)
      .def_prop_ro("device_index", &PyEngine::device_index)
      .def_prop_ro("workspace_bytes", &PyEngine::workspace_bytes)
      .def_prop_ro("input_names", &PyEngine::input_names)
      .def_prop_ro("input_channels", &PyEngine::input_channels)
      .def_prop_ro("output_names", &PyEngine::output_names)
      .def_prop_ro("output_sparse", &PyEngine::output_sparse)
      .def("set_input", &PyEngine::set_input)
      .def("forward", &PyEngine::forward)
      .def("run", &PyEngine::run)
      // framework 0: a DLPack capsule, 1: numpy, 2: torch
      .def("view",
           [](nb::handle self, int index, int part, bool wait, int framework) -> nb::object {
             PyEngine& e = nb::cast<PyEngine&>(self);
             if (framework == 2) return nb::cast(e.view<nb::pytorch>(self, index, part, wait));
             if (framework == 1) return nb::cast(e.view<nb::numpy>(self, index, part, wait));
             return nb::cast(e.view<nb::no_framework>(self, index, part, wait));
           })
      .def("view_key", &PyEngine::view_key)
      .def("copy",
           [](PyEngine& e, int index, int part, int framework) -> nb::object {
             if (framework == 1) return nb::cast(e.copy<nb::numpy>(index, part));
             return nb::cast(e.copy<nb::no_framework>(index, part));
           })
      .def("time_forward", &PyEngine::time_forward)
      .def("profile_layers", &PyEngine::profile_layers)
      .def("check_errors", &PyEngine::check_errors);
}
