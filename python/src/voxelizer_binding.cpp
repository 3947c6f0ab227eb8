// scn._scn's voxelizer: the configuration (presets, fields), and _Voxelizer over scn::Voxelizer.
#include "voxelizer_binding.h"

#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <utility>

namespace scn::py {

namespace {

const char* reduction_name(VoxelReduction r) { return r == VoxelReduction::Mean ? "mean" : "first"; }

VoxelReduction parse_reduction(const std::string& s) {
  SCN_CHECK(s == "mean" || s == "first", "voxelizer reduction = '", s, "': expected 'mean' or 'first'");
  return s == "mean" ? VoxelReduction::Mean : VoxelReduction::First;
}
VoxelOrder parse_order(const std::string& s) {
  SCN_CHECK(s == "zyx" || s == "xyz", "voxelizer order = '", s, "': expected 'zyx' or 'xyz'");
  return s == "zyx" ? VoxelOrder::Zyx : VoxelOrder::Xyz;
}
DType parse_feature_dtype(const std::string& s) {
  SCN_CHECK(s == "float16" || s == "float32", "voxelizer feature_dtype = '", s, "': expected 'float16' or 'float32'");
  return s == "float16" ? DType::Float16 : DType::Float32;
}

}  // namespace

PyVoxelizer::PyVoxelizer(const VoxelizerConfig& config, const std::string& device, int64_t max_points, int device_index,
                         int max_batch, int parallel_frames)
    : device_index_(device_index) {
  SCN_CHECK(max_points >= 1, "voxelizer '", config.name, "': max_points must be at least 1 (got ", max_points, ")");
  SCN_CHECK(device_index >= 0, "voxelizer '", config.name, "': CUDA device index must be >= 0 (got ", device_index,
            ")");
  validate(config);
  const Backend backend = parse_backend(device);
  nb::gil_scoped_release nogil;
  vox_ = Voxelizer::create(config, backend, max_points, device_index, max_batch, parallel_frames);
  where_ = {cuda(), device_index_, label()};
}

std::string PyVoxelizer::label() const {
  return cuda() ? "the cuda:" + std::to_string(device_index_) + " voxelizer" : std::string("the cpu voxelizer");
}

PyVoxelizer::PointsCall PyVoxelizer::import_points(nb::handle points) const {
  PointsCall call;
  call.batch = nb::isinstance<nb::list>(points) || nb::isinstance<nb::tuple>(points);
  const auto import_frame = [&](nb::handle f) {
    call.kept.push_back(as_array(f, "voxelizer", "points"));
    // shape and count: checked by the voxelizer's run()
    call.frames.push_back(
        as_tensor(call.kept.back(), "voxelizer", "points", {DType::Float32, DType::Float16}, ".float()", where_));
  };
  if (call.batch)
    for (nb::handle f : nb::borrow<nb::sequence>(points)) import_frame(f);
  else
    import_frame(points);
  return call;
}

void PyVoxelizer::enqueue(const PointsCall& call, void* stream) {
  if (call.batch)
    vox_->run_batch(call.frames, stream);
  else
    vox_->run(call.frames.front(), stream);
}

void PyVoxelizer::run(nb::handle points, uintptr_t stream) {
  PointsCall call = import_points(points);
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    enqueue(call, reinterpret_cast<void*>(stream));
  }
  keep_points(std::move(call));
}

nb::object PyVoxelizer::output(nb::handle self, int part, int framework) {
  scn::Tensor t;
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    t = part == 1 ? vox_->indices() : vox_->features();
  }
  return export_tensor(t, nb::borrow(self), framework, device_index_);
}

int64_t PyVoxelizer::count() {
  nb::gil_scoped_release nogil;
  std::lock_guard<std::mutex> lock(mutex_);
  return vox_->count();
}

std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> PyVoxelizer::stats() {
  VoxelizeStats s;
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    s = vox_->stats();
  }
  return {s.points, s.voxels, s.dropped_out_of_range, s.dropped_non_finite, s.dropped_full};
}

void PyVoxelizer::check_errors() {
  nb::gil_scoped_release nogil;
  std::lock_guard<std::mutex> lock(mutex_);
  vox_->check_errors();
}

void bind_voxelizer(nb::module_& m) {
  nb::class_<VoxelizerConfig>(m, "VoxelizerConfig")
      .def(nb::init<>())
      .def_rw("name", &VoxelizerConfig::name)
      .def_rw("range", &VoxelizerConfig::range)
      .def_rw("voxel_size", &VoxelizerConfig::voxel_size)
      .def_rw("max_points_per_voxel", &VoxelizerConfig::max_points_per_voxel)
      .def_rw("max_voxels", &VoxelizerConfig::max_voxels)
      .def_prop_rw(
          "reduction", [](const VoxelizerConfig& c) { return std::string(reduction_name(c.reduction)); },
          [](VoxelizerConfig& c, const std::string& s) { c.reduction = parse_reduction(s); })
      .def_rw("point_columns", &VoxelizerConfig::point_columns)
      .def_rw("feature_columns", &VoxelizerConfig::feature_columns)
      .def_prop_rw(
          "order", [](const VoxelizerConfig& c) { return std::string(voxel_order_name(c.order)); },
          [](VoxelizerConfig& c, const std::string& s) { c.order = parse_order(s); })
      .def_rw("batch_index", &VoxelizerConfig::batch_index)
      .def_prop_rw(
          "feature_dtype",
          [](const VoxelizerConfig& c) {
            return std::string(c.feature_dtype == DType::Float16 ? "float16" : "float32");
          },
          [](VoxelizerConfig& c, const std::string& s) { c.feature_dtype = parse_feature_dtype(s); })
      .def_rw("model_z_plus_one", &VoxelizerConfig::model_z_plus_one)
      .def("validate", [](const VoxelizerConfig& c) { validate(c); })
      .def_prop_ro("voxel_grid", [](const VoxelizerConfig& c) { return voxel_grid(c); })
      .def_prop_ro("model_grid", [](const VoxelizerConfig& c) { return model_grid(c); });
  m.def("voxelizer_preset", &voxelizer_preset, nb::arg("name"));
  m.def("voxelizer_preset_names", &voxelizer_preset_names);

  nb::class_<PyVoxelizer>(m, "_Voxelizer")
      .def(nb::init<const VoxelizerConfig&, const std::string&, int64_t, int, int, int>(), nb::arg("config"),
           nb::arg("device"), nb::arg("max_points"), nb::arg("device_index"), nb::arg("max_batch"),
           nb::arg("parallel_frames"))
      .def_prop_ro("backend", [](const PyVoxelizer& v) { return std::string(v.cuda() ? "cuda" : "cpu"); })
      .def_prop_ro("config", [](const PyVoxelizer& v) { return v.config(); })
      .def_prop_ro("max_points", [](PyVoxelizer& v) { return v.get().max_points(); })
      .def_prop_ro("max_batch", [](PyVoxelizer& v) { return v.get().max_batch(); })
      .def_prop_ro("parallel_frames", [](PyVoxelizer& v) { return v.get().parallel_frames(); })
      .def_prop_ro("workspace_bytes", [](PyVoxelizer& v) { return v.get().workspace_bytes(); })
      .def("run", &PyVoxelizer::run)
      .def("output", [](nb::handle self, int part,
                        int framework) { return nb::cast<PyVoxelizer&>(self).output(self, part, framework); })
      .def("count", &PyVoxelizer::count)
      .def("stats", &PyVoxelizer::stats)
      .def("check_errors", &PyVoxelizer::check_errors);
}

}  // namespace scn::py
