// scn run MODEL.onnx --features F --indices I --grid G (or --points FILE --preset NAME): one forward, outputs
// written as .tensor.
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "scn/calibrate.h"
#include "scn/onnx.h"
#include "scn/timing.h"

namespace scn::cli {

CLI::App* add_run(CLI::App& app, RunArgs& a) {
  CLI::App* c = app.add_subcommand("run", "Run a model on one sparse input and write its outputs");
  c->add_option("model", a.model, "ONNX model (NVIDIA SCN schema)")->required()->check(CLI::ExistingFile);
  CLI::Option* f = c->add_option("--features", a.features, "Voxel features [N, C], float16 or float32 .tensor");
  CLI::Option* i = c->add_option("--indices", a.indices, "Voxel indices [N, 4] int32 .tensor (batch, i0, i1, i2)");
  CLI::Option* g =
      c->add_option("--grid", a.grid,
                    "Spatial shape in the model's index order, e.g. 41x1440x1440 (with --points: default the model's "
                    "declared input grid, else the preset's)")
          ->check(grid_validator());
  c->add_option("--points", a.points,
                "Point file to voxelize as the input (see scn voxelize; --preset etc.); several --points are one "
                "batch, the b-th file with batch index b")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::ExistingFile)
      ->excludes(f)
      ->excludes(i);
  CLI::Option* pts = c->get_option("--points");
  add_voxel_options(c, a.vox, pts);
  f->needs(i)->needs(g);
  i->needs(f);
  c->callback([&a, c] {
    if (a.points.empty() && a.features.empty())
      throw CLI::RequiredError("--features, --indices and --grid, or --points");
    if (a.points.size() > 1 && c->count("--batch-index") > 0)
      throw CLI::ValidationError("--batch-index", "several --points are one batch: the b-th file gets batch index b");
  });
  c->add_option("--batch", a.batch, "Batch size (indices' column 0 lies in 0..B-1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  c->add_option("--precision", a.precision, "Activation precision")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "int8"}));
  c->add_option("--device", a.device, "Backend")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  c->add_option("--output", a.output,
                "Write output 0 here (float32 for fp32, else float16); a sparse output also writes "
                "<name>.indices.tensor");
  c->add_option("--output-dir", a.output_dir,
                "Write every output to DIR/<output name>.tensor (+ .indices.tensor for sparse ones)")
      ->check(CLI::ExistingDirectory);
  c->add_option("--repeat", a.repeat, "Forward runs to time (median / min are reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  c->add_option("--threads", a.threads, "CPU backend threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  c->add_flag("--no-autotune", a.no_autotune, "CUDA: keep the heuristic tile per conv (no timing at the first input)");
  c->add_option("--tile", a.tile,
                "CUDA: force this tile configuration where it fits (e.g. m64n64k32s4t; no autotuning)");
  add_offset_groups_option(c, a.offset_groups);
  add_site_order_option(c, a.site_order);
  c->add_option("--tuning-cache", a.tuning_cache,
                "CUDA: read the autotuner's decisions from FILE when its key matches, else tune and write it");
  return c;
}

namespace {

// Host copy in the requested file dtype.
Tensor to_file_dtype(const Tensor& t, DType dtype, const std::string& what) {
  const Tensor host = t.to(Device::Host);
  if (host.dtype() == dtype) return host;
  SCN_CHECK(host.dtype() == DType::Float16 || host.dtype() == DType::Float32, what, " is ", dtype_name(host.dtype()),
            "; only float outputs can be converted to ", dtype_name(dtype));
  return host.to_dtype(dtype);
}

}  // namespace

int run_run(const RunArgs& a) {
  // Where the outputs go is checked before the work, not after the forward.
  if (!a.output.empty()) check_output_file("--output", a.output);
  if (!a.output_dir.empty()) check_output_dir("--output-dir", a.output_dir);
  const bool from_points = !a.points.empty();
  SCN_CHECK(from_points || (!a.features.empty() && !a.indices.empty() && !a.grid.empty()),
            "give --features, --indices and --grid, or --points");
  Tensor features, indices;
  Int3 grid{};
  if (!from_points) {
    features = Tensor::load(a.features);
    indices = Tensor::load(a.indices);
    grid = parse_grid(a.grid);
  }

  BuildOptions opts;
  opts.backend = parse_backend(a.device);
  opts.precision = parse_precision(a.precision);
  opts.num_threads = a.threads;
  const int batch = from_points ? int(a.points.size()) : a.batch;
  SCN_CHECK(!from_points || a.batch == 1 || a.batch == batch, "--batch ", a.batch, " disagrees with the ", batch,
            " point files given (--points: one frame per file)");
  opts.max_batch = batch;
  if (indices.ndim() == 2) opts.max_input_voxels = indices.dim(0);
  opts.cuda.autotune = !a.no_autotune;
  opts.cuda.tile = a.tile;
  opts.cuda.tuning_cache = a.tuning_cache;
  opts.cuda.offset_groups = a.offset_groups;
  opts.cuda.site_order = site_order_of(a.site_order);
  if (from_points) opts.max_input_voxels = make_voxelizer_config(a.vox).max_voxels;

  const int64_t t_parse = now_ns();
  EngineBuilder builder = parse_onnx(a.model);
  if (opts.precision == Precision::Int8)  // which nodes run int8 (none: the int8 engine is the fp16 one)
    std::fprintf(stderr, "scn run: %s\n", int8_node_notice(builder.graph()).c_str());
  const double parse_ms = ms_since(t_parse);
  const int64_t t_build = now_ns();
  std::unique_ptr<Engine> engine = builder.build(opts);
  const double build_ms = ms_since(t_build);
  SCN_CHECK(engine->num_inputs() == 1, a.model, ": the model has ", engine->num_inputs(),
            " inputs; scn run binds exactly one");

  InputLabels labels;
  std::string point_files;
  for (const std::string& p : a.points) point_files += (point_files.empty() ? "" : ", ") + p;
  labels.features = from_points ? point_files + " (voxel features)" : a.features;
  labels.indices = from_points ? point_files + " (voxel indices)" : a.indices;
  PointsInput pin;
  if (from_points) {
    pin = voxelize_for_engine(a.points, a.vox, *engine, a.grid);
    features = pin.features;
    indices = pin.indices;
    grid = pin.grid;
  }
  engine->set_input(0, features, indices, grid, batch, labels);

  // The first forward also yields the outputs; later ones only time.
  std::vector<double> times;
  const int64_t t0 = now_ns();
  engine->forward();
  engine->check_errors();
  times.push_back(ms_since(t0));
  if (a.repeat > 1) {
    const std::vector<double> more = engine->time_forward(0, a.repeat - 1);
    times.insert(times.end(), more.begin(), more.end());
  }
  const TimingStats st = summarize_timings(times);

  const DType file_dtype = opts.precision == Precision::Fp32 ? DType::Float32 : DType::Float16;
  OutputSet files;
  std::vector<std::string> output_lines;
  // --output-dir also gets outputs.txt: which file holds which output (ONNX output names are often
  // bare numbers), its kind, dtype, shape and the node that produced it.
  std::string manifest = "file\toutput\tkind\tdtype\tshape\tnode\n";
  for (int i = 0; i < engine->num_outputs(); ++i) {
    const bool to_single = i == 0 && !a.output.empty();
    const bool to_dir = !a.output_dir.empty();
    const std::string name = engine->output_name(i);
    const bool sparse = engine->output_is_sparse(i);
    const std::string what = "output '" + name + "'";
    const Tensor out = to_file_dtype(engine->output(i), file_dtype, what);
    Tensor idx;
    if (sparse) idx = engine->output_indices(i).to(Device::Host);
    std::string line = what + (sparse ? " (sparse)" : "") + ": " + describe_tensor(out);
    if (sparse) line += ", indices " + describe_tensor(idx);
    std::vector<std::string> paths;
    if (to_single) paths.push_back(a.output);
    if (to_dir) paths.push_back(a.output_dir + "/" + file_safe(name) + ".tensor");
    if (to_dir) {
      const int producer = engine->graph().values[size_t(engine->graph().outputs[size_t(i)])].producer;
      manifest += file_safe(name) + ".tensor\t" + name + "\t" + (sparse ? "sparse" : "dense") + "\t" +
                  dtype_name(out.dtype()) + "\t" + out.shape_string() + "\t" +
                  (producer >= 0 ? engine->graph().nodes[size_t(producer)].name : "") + "\n";
    }
    for (const std::string& p : paths) {
      files.add_tensor(p, out);
      line += " -> " + p;
      if (sparse) {
        files.add_tensor(indices_path_for(p), idx);
        line += " + " + indices_path_for(p);
      }
    }
    output_lines.push_back(line);
  }
  if (!a.output_dir.empty()) files.add_text(a.output_dir + "/outputs.txt", manifest);
  files.commit();

  std::printf("model       %s (%zu nodes)\n", a.model.c_str(), engine->graph().nodes.size());
  if (from_points)
    std::printf(
        "points      %s: %lld points -> %lld voxels (dropped %lld out of range, %lld non-finite, %lld beyond "
        "the per-voxel limit) in %.3f ms on %s; %s\n",
        point_files.c_str(), static_cast<long long>(pin.stats.points), static_cast<long long>(pin.stats.voxels),
        static_cast<long long>(pin.stats.dropped_out_of_range), static_cast<long long>(pin.stats.dropped_non_finite),
        static_cast<long long>(pin.stats.dropped_full), pin.voxelize_ms, backend_name(engine->backend()),
        pin.grid_note.c_str());
  std::printf("input '%s'   features %s: %s\n", engine->input_name(0).c_str(), labels.features.c_str(),
              describe_tensor(features).c_str());
  std::printf("            indices  %s: %s, grid %s, batch %d\n", labels.indices.c_str(),
              describe_tensor(indices).c_str(), int3_string(grid).c_str(), batch);
  std::printf("backend     %s, precision %s\n", backend_name(engine->backend()), precision_name(engine->precision()));
  std::printf("build       %.1f ms (parse %.1f ms, build %.1f ms)\n", parse_ms + build_ms, parse_ms, build_ms);
  if (st.count > 1)
    std::printf("forward     median %.3f ms, min %.3f ms over %lld runs (first %.3f ms)\n", st.median, st.min,
                static_cast<long long>(st.count), times.front());
  else
    std::printf("forward     %.3f ms (first run)\n", times.front());
  if (const size_t ws = engine->workspace_bytes()) std::printf("workspace   %s\n", format_bytes(double(ws)).c_str());
  for (const std::string& l : output_lines) std::printf("%s\n", l.c_str());
  return 0;
}

}  // namespace scn::cli
