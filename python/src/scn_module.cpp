// scn._scn — the nanobind extension behind the `scn` Python package (python/scn/): the engine (here) and the
// voxelizer (voxelizer_binding.cpp).
//
// It only moves tensors across the language boundary: DLPack arrays in (read in place: a view of
// the caller's memory is handed to Engine::set_input, never copied here), views of the engine's
// outputs out. Output lifetime, torch streams and argument parsing live in python/scn/ (_engine.py, _device.py).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "arrays.h"
#include "scn/engine.h"
#include "scn/inspect.h"
#include "scn/onnx.h"
#include "scn/points_to_bev.h"
#include "voxelizer_binding.h"

namespace nb = nanobind;

namespace {

using scn::py::Array;

/// One engine and the Python objects whose memory its bound inputs point into.
class PyEngine {
 public:
  /// max_voxels / capacity_margin: None keeps the BuildOptions default; a given value must be positive.
  PyEngine(const std::string& path, const std::string& device, const std::string& precision,
           std::optional<int64_t> max_voxels, int max_batch, bool cuda_graph, int device_index, int num_threads,
           const std::string& capacity, bool grow, std::optional<double> capacity_margin,
           const std::string& tuning_cache) {
    scn::BuildOptions o;
    o.backend = scn::parse_backend(device);
    o.precision = scn::parse_precision(precision);
    SCN_CHECK(!max_voxels || *max_voxels > 0, path, ": max_voxels must be positive, got ", max_voxels.value_or(0),
              " (None: the graph's largest bound)");
    SCN_CHECK(max_batch >= 1, path, ": max_batch must be at least 1 (got ", max_batch, ")");
    SCN_CHECK(device_index >= 0, path, ": CUDA device index must be >= 0 (got ", device_index, ")");
    if (max_voxels) o.max_input_voxels = *max_voxels;
    o.max_batch = max_batch;
    o.cuda_graph = cuda_graph;
    o.device = device_index;
    o.num_threads = num_threads;
    SCN_CHECK(capacity == "bounds" || capacity == "first_frame", path, ": capacity = '", capacity,
              "' is not 'bounds' (every level at its bound) or 'first_frame' (fitted to the first frame)");
    o.capacity_source = capacity == "first_frame" ? scn::CapacitySource::FirstFrame : scn::CapacitySource::Bounds;
    o.on_capacity_overflow = grow ? scn::CapacityOverflow::Grow : scn::CapacityOverflow::Error;
    SCN_CHECK(!capacity_margin || *capacity_margin > 0.0, path, ": capacity_margin must be positive, got ",
              capacity_margin.value_or(0.0), " (None: scn's default)");
    if (capacity_margin) o.capacity_margin = *capacity_margin;
    o.cuda.tuning_cache = tuning_cache;
    nb::gil_scoped_release nogil;
    engine_ = scn::load_engine_from_onnx(path, o);
    cuda_ = engine_->backend() == scn::Backend::Cuda;
    device_index_ = device_index;
    kept_.resize(size_t(engine_->num_inputs()));
    for (int k = 0; k < engine_->num_inputs(); ++k) input_labels_.push_back("input '" + engine_->input_name(k) + "'");
    where_ = {cuda_, device_index_, "a " + backend() + " engine"};
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
    check_inputs_held();
    Binding b;
    const auto [tf, ti] = import_input(index, features, indices, &b);
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      bound_voxelizer_ = nullptr;
      engine_->set_input(index, tf, ti, grid, batch_size);
    }
    // The engine reads device inputs when the forward runs (in stream order): keep their owners
    // alive until the next binding so the memory cannot be freed and reused before that.
    keep(index, std::move(b));
  }

  /// Enqueues the forward on `stream` (a cudaStream_t as an integer; 0 = the engine's own stream).
  void forward(uintptr_t stream) {
    check_inputs_held();
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    engine_->forward(reinterpret_cast<void*>(stream));
  }

  /// At interpreter exit (the package's atexit handler), before the interpreter tears objects down: waits for the
  /// last forward and lets go of the bound inputs' owners. Released then, a torch tensor that views another
  /// nanobind object's memory (a voxelizer's outputs="view") frees normally; held until the engine itself is torn
  /// down, CUDA tensors of that kind were never freed and nanobind reported their owner as leaked. The engine runs
  /// no forward afterwards (its inputs' memory is no longer kept).
  void release_inputs() {
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      engine_->synchronize();
      bound_voxelizer_ = nullptr;
      inputs_released_ = true;
    }
    for (Binding& b : kept_) b = Binding{};
    held_after_failure_.clear();
  }

  /// set_input(0, ...) and forward(stream) in one call (one GIL release: the hot path).
  void run(nb::handle features, nb::handle indices, const scn::Int3& grid, int batch_size, uintptr_t stream) {
    check_inputs_held();
    check_one_input("bind each with set_input() and call forward()");
    Binding b;
    const auto [tf, ti] = import_input(0, features, indices, &b);
    try {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      bound_voxelizer_ = nullptr;
      engine_->set_input(0, tf, ti, grid, batch_size);
      engine_->forward(reinterpret_cast<void*>(stream));
    } catch (...) {
      hold_after_failure(std::move(b));
      throw;
    }
    keep(0, std::move(b));
  }

  /// Points through `voxelizer` into the model's input, then the forward, all on `stream`. `points`: one frame, or a
  /// list / tuple of frames as a batch (Voxelizer::run_batch; batch size = their count). CUDA: the voxelizer's
  /// buffers are bound once as a device-count input (Engine::set_input_device_count: the voxel count stays on the
  /// device, no host wait); CPU: its voxels are bound as host inputs. The grid is the model's declared input grid
  /// (input_spatial_shape), else the voxelizer's model grid, checked against the voxel grid either way.
  void run_points(nb::handle voxelizer, nb::handle points, uintptr_t stream) {
    check_inputs_held();
    check_one_input("give each input's voxels with set_input()");
    scn::py::PyVoxelizer& v = nb::cast<scn::py::PyVoxelizer&>(voxelizer);
    check_same_device(v);
    scn::py::PyVoxelizer::PointsCall call = v.import_points(points);
    SCN_CHECK(
        call.batch || v.config().batch_index == 0, engine_->graph().source, ": voxelizer batch_index ",
        v.config().batch_index,
        ": run_points binds one frame (batch size 1), whose batch index is 0 (give a list of frames for a batch)");
    const int frames_bound = call.batch ? int(call.frames.size()) : 0;  // 0: run() (a single frame)
    Binding b;
    b.voxelizer = nb::borrow(voxelizer);  // the bound buffers are the voxelizer's
    try {
      nb::gil_scoped_release nogil;
      std::scoped_lock lock(mutex_, v.mutex());
      scn::Voxelizer& vox = v.get();
      // Stream 0 (a caller without torch): both the voxelizer and the forward on cudaStreamLegacy (0x1; this file has
      // no CUDA headers), where the engine replays its graph, so that what the caller enqueues next on stream 0 (the
      // outputs' copies) follows the forward; a forward given no stream would run on the engine's own stream.
      const uintptr_t s = cuda_ && stream == 0 ? uintptr_t(1) : stream;
      v.enqueue(call, reinterpret_cast<void*>(s));
      const int batch_size = std::max(1, frames_bound);
      if (!cuda_) {
        bound_voxelizer_ = nullptr;
        engine_->set_input(0, vox.features(), vox.indices(), points_grid(v.config()), batch_size);
      } else if (bound_voxelizer_ != &v || bound_frames_ != frames_bound) {
        // a voxelizer's config is fixed at its creation: checked once per binding
        bound_voxelizer_ = nullptr;
        engine_->set_input_device_count(0, vox.features_buffer(), vox.indices_buffer(), vox.device_count(),
                                        points_grid(v.config()), batch_size);
        bound_voxelizer_ = &v;
        bound_frames_ = frames_bound;
      }
      engine_->forward(reinterpret_cast<void*>(s));
    } catch (...) {
      v.keep_points(std::move(call));  // the voxelizer may have enqueued work on them
      hold_after_failure(std::move(b));
      throw;
    }
    v.keep_points(std::move(call));
    keep(0, std::move(b));
  }

  /// Output `index` as a view of the engine's buffer (valid until the next forward; the view keeps
  /// the engine alive). wait=false: dense outputs in stream order without a host wait
  /// (Engine::output_async); sparse outputs always wait (their row count is read on the host).
  /// part 0: features / dense tensor, 1: indices of a sparse output.
  nb::object view(nb::handle self, int index, int part, bool wait, int framework) {
    scn::Tensor t;
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      t = part == 1 ? engine_->output_indices(index) : wait ? engine_->output(index) : engine_->output_async(index);
    }
    // The array owns a reference to the tensor (backends may return memory the Tensor owns) and to
    // the engine (whose buffers a view points into).
    return scn::py::export_tensor(t, nb::borrow(self), framework, device_index_);
  }

  /// Where a dense output's view would point and its shape, without building the view (Engine::output_async,
  /// no host wait): the package reuses the view it made while both are unchanged (a torch tensor from DLPack costs
  /// more host time than the forward's launch).
  std::pair<uintptr_t, std::vector<int64_t>> view_key(int index) {
    std::lock_guard<std::mutex> lock(mutex_);
    SCN_CHECK(!engine_->output_is_sparse(index), engine_->graph().source, ": output '", engine_->output_name(index),
              "' is sparse: its view has no fixed shape");
    const scn::Tensor t = engine_->output_async(index);
    return {reinterpret_cast<uintptr_t>(t.data()), t.shape()};
  }

  /// Output `index` copied by scn into memory the returned array owns (for callers without torch;
  /// a CUDA copy waits for the forward).
  nb::object copy(int index, int part, int framework) {
    scn::Tensor c;
    {
      nb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      c = (part == 1 ? engine_->output_indices(index) : engine_->output(index)).clone();
    }
    return scn::py::export_tensor(c, nb::object(), framework, device_index_);
  }

  /// scn::time_points_to_bev: `points` (one frame, or a list / tuple of frames as one batch) through `voxelizer`
  /// and the forward, `runs` times after `warmup`, as (total, voxelizer alone, network alone, upload alone, upload and
  /// total) milliseconds per run and the voxel count (the upload's lists: CUDA with host frames, else empty). CUDA:
  /// each measurement one CUDA graph on a stream of the library's. Leaves the engine bound to the voxelizer's output
  /// (as run_points does).
  using PointsTimes = std::tuple<std::vector<double>, std::vector<double>, std::vector<double>, std::vector<double>,
                                 std::vector<double>, int64_t>;
  PointsTimes time_points(nb::handle voxelizer, nb::handle points, int warmup, int runs) {
    check_inputs_held();
    check_one_input("time each input's voxels with set_input() and time_forward()");
    scn::py::PyVoxelizer& v = nb::cast<scn::py::PyVoxelizer&>(voxelizer);
    check_same_device(v);
    scn::py::PyVoxelizer::PointsCall call = v.import_points(points);
    // time_points_to_bev voxelizes one frame with run() (the config's batch index), several with run_batch()
    const bool batch = call.frames.size() > 1;
    SCN_CHECK(batch || v.config().batch_index == 0, engine_->graph().source, ": voxelizer batch_index ",
              v.config().batch_index, ": one frame is timed as batch size 1, whose batch index is 0");
    scn::PointsToBevTiming t;
    Binding b;
    b.voxelizer = nb::borrow(voxelizer);
    try {
      nb::gil_scoped_release nogil;
      std::scoped_lock lock(mutex_, v.mutex());
      bound_voxelizer_ = nullptr;
      t = scn::time_points_to_bev(*engine_, v.get(), call.frames, points_grid(v.config()), warmup, runs);
      if (cuda_) {
        bound_voxelizer_ = &v;
        bound_frames_ = batch ? int(call.frames.size()) : 0;
      }
    } catch (...) {
      v.keep_points(std::move(call));
      hold_after_failure(std::move(b));
      throw;
    }
    v.keep_points(std::move(call));
    keep(0, std::move(b));
    return {t.total_ms, t.voxelizer_ms, t.network_ms, t.upload_ms, t.from_host_ms, t.voxels};
  }

  std::vector<double> time_forward(int warmup, int runs) {
    check_inputs_held();
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    return engine_->time_forward(warmup, runs);
  }

  /// Engine::profile_layers on the bound input: one forward step by step, (node, op, algorithm, ms, split_k)
  /// per step.
  std::vector<std::tuple<std::string, std::string, std::string, double, int>> profile_layers() {
    check_inputs_held();
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

  /// What keeps a bound input's memory alive until the next binding: the caller's arrays, or the voxelizer whose
  /// buffers are bound.
  struct Binding {
    std::vector<Array> arrays;
    nb::object voxelizer;
  };

  void check_inputs_held() const {
    SCN_CHECK(!inputs_released_, engine_->graph().source,
              ": this engine released its inputs at interpreter exit and runs no more forwards");
  }

  /// What input `index` is now bound to: its owners are kept until its next binding (and what failed calls held is
  /// let go: a successful binding replaced theirs).
  void keep(int index, Binding&& b) {
    kept_[size_t(index)] = std::move(b);
    held_after_failure_.clear();
  }

  /// A call that failed after it may have bound the engine (a forward, a voxelizer run or a timing that raised once
  /// the binding was made) keeps its arrays or voxelizer beside the previous binding's, until a call succeeds: the
  /// engine may point at either, and the caller may drop theirs.
  void hold_after_failure(Binding&& b) { held_after_failure_.push_back(std::move(b)); }

  void check_one_input(const char* otherwise) const {
    SCN_CHECK(engine_->num_inputs() == 1, engine_->graph().source, ": the model has ", engine_->num_inputs(),
              " inputs; ", otherwise);
  }

  /// Features [N, C] float16 / float32 and indices [N, 4] int32 of input `index` over the caller's memory; their
  /// arrays go to `b`.
  std::pair<scn::Tensor, scn::Tensor> import_input(int index, nb::handle features, nb::handle indices, Binding* b) {
    SCN_CHECK(index >= 0 && index < int(input_labels_.size()), engine_->graph().source, ": input index ", index,
              " is outside the model's ", input_labels_.size(), " inputs");
    const std::string& label = input_labels_[size_t(index)];
    Array f = scn::py::as_array(features, label, "features");
    Array i = scn::py::as_array(indices, label, "indices");
    scn::Tensor tf =
        scn::py::as_tensor(f, label, "features", {scn::DType::Float16, scn::DType::Float32}, ".half()", where_);
    scn::Tensor ti = scn::py::as_tensor(i, label, "indices", {scn::DType::Int32}, ".int()", where_);
    b->arrays = {std::move(f), std::move(i)};
    return {std::move(tf), std::move(ti)};
  }

  void check_same_device(const scn::py::PyVoxelizer& v) const {
    SCN_CHECK(v.cuda() == cuda_ && (!cuda_ || v.device_index() == device_index_), engine_->graph().source,
              ": the engine runs on ", cuda_ ? "cuda:" + std::to_string(device_index_) : std::string("the cpu"),
              " but ", v.label(), " elsewhere; create both with the same device");
  }

  /// The grid a voxelizer's output is bound with (run_points), after checking its index order and voxel grid
  /// against what the model states.
  scn::Int3 points_grid(const scn::VoxelizerConfig& c) const {
    const scn::InputLayout in = scn::expected_input(engine_->graph());
    const std::string order = scn::py::voxel_order_name(c.order);
    SCN_CHECK(!in.order_stated || in.order == order, engine_->graph().source, ": the voxelizer '", c.name,
              "' writes indices in ", order, " order but the model reads ", in.order, " (set order='", in.order, "')");
    const scn::Int3 grid = in.grid != scn::Int3{0, 0, 0} ? in.grid : scn::model_grid(c);
    scn::check_grid(c, grid);
    return grid;
  }

  std::unique_ptr<scn::Engine> engine_;
  std::vector<Binding> kept_;
  std::vector<Binding> held_after_failure_;
  std::vector<std::string> input_labels_;                  ///< "input 'x'": what the import errors name
  scn::py::Placement where_;                               ///< where this engine reads input arrays
  const scn::py::PyVoxelizer* bound_voxelizer_ = nullptr;  ///< whose buffers input 0 is bound to (CUDA), if any
  int bound_frames_ = 0;  ///< and for how many frames of its run_batch (0: its run(), the frame's count)
  std::mutex mutex_;
  bool cuda_ = false;
  bool inputs_released_ = false;  ///< release_inputs() ran (interpreter exit): no more bindings or forwards
  int device_index_ = 0;
};

}  // namespace

NB_MODULE(_scn, m) {
  m.doc() = "scn engine bindings (use the `scn` package, not this module)";
  nb::exception<scn::Error>(m, "Error", PyExc_RuntimeError);

  m.def("cuda_available", &scn::cuda_available, "True when scn has the CUDA backend and a GPU is visible");
  scn::py::bind_voxelizer(m);
  nb::class_<PyEngine>(m, "_Engine")
      .def(nb::init<const std::string&, const std::string&, const std::string&, std::optional<int64_t>, int, bool, int,
                    int, const std::string&, bool, std::optional<double>, const std::string&>(),
           nb::arg("path"), nb::arg("device"), nb::arg("precision"), nb::arg("max_voxels").none(), nb::arg("max_batch"),
           nb::arg("cuda_graph"), nb::arg("device_index"), nb::arg("num_threads"), nb::arg("capacity"), nb::arg("grow"),
           nb::arg("capacity_margin").none(), nb::arg("tuning_cache"))
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
      .def("run_points", &PyEngine::run_points)
      // framework 0: a DLPack capsule, 1: numpy, 2: torch
      .def("view", [](nb::handle self, int index, int part, bool wait,
                      int framework) { return nb::cast<PyEngine&>(self).view(self, index, part, wait, framework); })
      .def("view_key", &PyEngine::view_key)
      .def("copy", &PyEngine::copy)
      .def("time_forward", &PyEngine::time_forward)
      .def("time_points", &PyEngine::time_points)
      .def("profile_layers", &PyEngine::profile_layers)
      .def("check_errors", &PyEngine::check_errors)
      .def("release_inputs", &PyEngine::release_inputs);
}
