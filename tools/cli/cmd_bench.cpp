// scn bench MODEL.onnx: latency statistics, per-layer profile, a voxel-count sweep and a batch sweep (--points:
// bench_points.cpp).
//
// CSV files:
//   --csv PATH        one row per timed forward: voxels,run,ms
//   --sweep-csv PATH  one row per sweep point:   voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms
//   --batch-csv PATH  one row per batch size:    batch,voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms,frames_per_s
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "batch_frames.h"
#include "commands.h"
#include "common.h"
#include "progress.h"
#include "scn/onnx.h"
#include "scn/timing.h"
#include "synthetic_frame.h"

namespace scn::cli {

CLI::App* add_bench(CLI::App& app, BenchArgs& a) {
  CLI::App* c = app.add_subcommand("bench", "Time a model: latency statistics, per-layer times, voxel-count sweep");
  c->add_option("model", a.model, "ONNX model")->required()->check(CLI::ExistingFile);
  CLI::Option* f = c->add_option("--features", a.features, "Input features .tensor");
  CLI::Option* i = c->add_option("--indices", a.indices, "Input indices .tensor");
  c->add_option("--grid", a.grid,
                "Grid in the model's index order (default for --synthetic: "
                "the preset's grid)")
      ->check(grid_validator());
  CLI::Option* s = c->add_option("--synthetic", a.synthetic, "Use a synthetic frame of N voxels instead of files")
                       ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  CLI::Option* seed = c->add_option("--seed", a.seed, "Seed of the synthetic frames")->capture_default_str();
  std::vector<std::string> presets = synth::FrameOptions::preset_names();
  std::string vox_presets;
  for (const std::string& n : voxelizer_preset_names()) {
    presets.push_back(n);
    vox_presets += (vox_presets.empty() ? "" : ", ") + n;
  }
  CLI::Option* preset =
      c->add_option("--preset", a.preset,
                    "Synthetic scene: nuscenes or kitti (default: by the model's input channels); with --points the "
                    "voxelizer preset: " +
                        vox_presets + " (default nuscenes-centerpoint)")
          ->check(CLI::IsMember(presets));
  // a frame from files has neither a seed nor a scene preset (given, they would be ignored)
  seed->excludes(f);
  preset->excludes(f);
  CLI::Option* pts =
      c->add_option("--points", a.points,
                    "Time raw points -> outputs: point files voxelized on the engine's backend and run (CUDA: the "
                    "voxelizer and the network in one CUDA graph); several --points are one batch. Voxelizer "
                    "settings as in scn run (--preset, --range, ...)")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->check(CLI::ExistingFile);
  add_voxel_options(c, a.vox, pts, false);
  c->add_option("--parallel-frames", a.parallel_frames,
                "With several --points: frames the CUDA voxelizer works on at once, each in a workspace of its own "
                "(0: all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024))
      ->needs(pts);
  CLI::Option* b = c->add_option("--batch", a.batch, "Batch size (synthetic: B frames)")
                       ->capture_default_str()
                       ->check(CLI::Range(1, 1024));
  c->add_option("--precision", a.precision, "Activation precision")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "int8"}));
  c->add_option("--device", a.device, "Backend")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  c->add_option("--warmup", a.warmup, "Untimed forwards first (default: 20 on CUDA, 2 on the CPU)")
      ->check(CLI::Range(0, 1000000));
  c->add_option("--runs", a.runs, "Timed forwards (default: 200 on CUDA, 10 on the CPU)")
      ->check(CLI::Range(1, 10000000));
  c->add_option("--threads", a.threads, "CPU backend threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  CLI::Option* sw =
      c->add_option("--sweep", a.sweep, "Synthetic voxel counts run through one engine, e.g. 10000,20000,...,300000")
          ->check(count_list_validator());
  c->add_option("--csv", a.csv, "Per-run latencies: voxels,run,ms");
  c->add_option("--sweep-csv", a.sweep_csv, "Sweep results: voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms")
      ->needs(sw);
  CLI::Option* bs = c->add_option("--batch-sweep", a.batch_sweep,
                                  "Batch sizes run through one engine built for the largest, e.g. 1,2,4,8: latency "
                                  "and frames/s per batch (--synthetic N: B synthetic frames of N voxels; "
                                  "--features/--indices: B copies of the frame)")
                        ->check(count_list_validator());
  c->add_option("--batch-csv", a.batch_csv,
                "Batch sweep results: batch,voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms,frames_per_s")
      ->needs(bs);
  CLI::Option* layers = c->add_flag("--layers", a.layers, "Per-layer times (Engine::profile_layers)");
  c->add_flag("--no-cuda-graph", a.no_cuda_graph, "CUDA: launch kernels directly instead of replaying a CUDA graph");
  c->add_flag("--no-autotune", a.no_autotune, "CUDA: keep the heuristic tile per conv (no timing at the first input)");
  c->add_option("--tile", a.tile,
                "CUDA: force this tile configuration where it fits (e.g. m64n64k32s4t; no autotuning)");
  add_offset_groups_option(c, a.offset_groups);
  add_site_order_option(c, a.site_order);
  c->add_option("--split", a.split,
                "CUDA: split-K class of the fp16 convs with >= 64 output channels: 0 = by layer shape and planned "
                "batch, 1 = unsplit, "
                "2 = split in two")
      ->capture_default_str()
      ->check(CLI::Range(0, 2));
  c->add_option("--tune-skip", a.tune_skip,
                "CUDA: tile names (or shapes) and osplit configs (e.g. c32x32r32p2s3w20) the autotuner leaves out, "
                "comma-separated")
      ->delimiter(',');
  c->add_option("--tuning-cache", a.tuning_cache,
                "CUDA: read the autotuner's decisions from FILE when its key matches, else tune and write it");
  CLI::Option* once =
      c->add_flag("--tune-once", a.tune_once,
                  "CUDA: tune the tiles on the first frame only and keep them for every size (one size bucket)");
  c->add_option("--tune-bucket-factor", a.tune_bucket_factor,
                "CUDA: size buckets of the autotuner grow by this factor (default 1.5; see --tune-once)")
      ->check(CLI::Range(1.1, 16.0))
      ->excludes(once);
  c->add_option("--map-lookahead", a.map_lookahead,
                "CUDA: kernel maps built this many map slots ahead on a second stream (default 3; 0 = every map on "
                "the main stream)")
      ->check(CLI::Range(0, 64));
  c->add_option(
       "--strided-sites", a.strided_sites,
       "CUDA: how a strided conv's site set is found: bitmap (from the input bitmap's words), rows (one thread "
       "per input row, atomics) or auto (bitmap where the conv reads a generated set, rows where it reads the input "
       "voxels)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bitmap", "rows"}));
  c->add_flag("--sites-ahead", a.sites_ahead,
              "CUDA: build the site sets made from a generated level's bitmap on a third stream during the first "
              "levels (more memory alive at once; faster only with --stream-priorities)");
  c->add_flag("--stream-priorities,!--no-stream-priorities", a.stream_priorities,
              "CUDA: the convs' graph nodes above the map stream's (by default all at one priority)")
      ->capture_default_str();
  c->add_flag("--fit-capacities", a.fit_capacities,
              "CUDA: plan every level's rows from the first frame (measured) x the margin, not the bounds");
  c->add_flag("--grow", a.grow, "CUDA: a frame larger than the plan grows it (re-plan, re-run) instead of an error");
  c->add_option("--capacity-margin", a.capacity_margin,
                "CUDA: rows planned per measured row (--fit-capacities, --grow)")
      ->check(CLI::Range(1.0, 16.0));
  f->needs(i);
  i->needs(f);
  f->excludes(s);
  f->excludes(sw);
  s->excludes(sw);
  bs->excludes(b);
  bs->excludes(sw);
  bs->excludes(layers);
  sw->excludes(layers);  // a sweep prints a row per count, no layer table
  for (CLI::Option* o : {f, i, s, sw, bs, layers, b, seed}) pts->excludes(o);
  return c;
}

namespace {

struct Input {
  Tensor features, indices;
  Int3 grid{0, 0, 0};
  std::string label;
  int batch = 1;
};

synth::FrameOptions synth_options(const BenchArgs& a, const Graph& graph, const std::string& order) {
  const int32_t channels = graph.inputs.empty() ? 5 : graph.values[size_t(graph.inputs[0])].channels;
  std::string preset = a.preset;
  if (preset.empty()) preset = channels == 4 ? "kitti" : "nuscenes";
  synth::FrameOptions o = synth::FrameOptions::preset(preset);
  SCN_CHECK(channels == 4 || channels == 5, graph.source, ": the model's input has ", channels,
            " channels; synthetic frames have 4 or 5");
  o.channels = channels;
  o.seed = a.seed;
  o.order = order == "xyz" ? synth::IndexOrder::Xyz : synth::IndexOrder::Zyx;
  if (!a.grid.empty()) {
    const Int3 g = parse_grid(a.grid);
    o.grid_zyx = order == "xyz" ? std::array<int32_t, 3>{g[2], g[1], g[0]} : std::array<int32_t, 3>{g[0], g[1], g[2]};
  }
  return o;
}

Input synthetic_input(const synth::FrameOptions& base, int64_t voxels, int batch) {
  synth::FrameOptions o = base;
  o.voxels = voxels;
  const synth::Frame f = batch > 1 ? synth::generate_batch(o, batch) : synth::generate_frame(o);
  Input in;
  in.features = synth::features_tensor(f);
  in.indices = synth::indices_tensor(f);
  in.grid = {f.grid[0], f.grid[1], f.grid[2]};
  in.label = batch > 1 ? std::to_string(batch) + " synthetic frames of " + std::to_string(voxels) + " voxels"
                       : "synthetic frame of " + std::to_string(voxels) + " voxels";
  in.label += " (seed " + std::to_string(base.seed) + ")";
  in.batch = batch;
  return in;
}

std::string ms3(double v) { return fixed(v, 3); }

// Engine::time_forward in chunks of about a quarter second, so a progress line (stderr on a
// terminal, see progress.h) can follow a long measurement; each timed run is measured as before.
std::vector<double> timed_forwards(Engine& engine, int warmup, int runs, const std::string& what) {
  Progress progress = Progress::for_stderr(what + ": warm-up + timed runs", warmup + runs);
  int done = 0;
  std::vector<double> ms;
  int chunk = 1;
  while (done < warmup + runs) {
    const int w = std::min(chunk, std::max(0, warmup - done));
    const int r = std::min(chunk - w, runs - int(ms.size()));
    const int64_t t0 = now_ns();
    if (r > 0) {
      const std::vector<double> part = engine.time_forward(w, r);
      ms.insert(ms.end(), part.begin(), part.end());
    } else {  // a chunk of warm-up only (time_forward times at least one run)
      for (int k = 0; k < w; ++k) engine.forward();
      engine.synchronize();
      engine.check_errors();
    }
    done += w + r;
    const double per_forward_ms = ms_since(t0) / double(std::max(1, w + r));
    chunk = std::max(1, std::min(1 << 20, int(250.0 / std::max(per_forward_ms, 1e-3))));
    progress.update(done);
  }
  return ms;
}

/// An input bound to the engine: how long set_input took (on CUDA the first frame of a size bucket is tuned
/// there: counted, not timed) and whether it tuned.
struct Bind {
  double ms = 0;
  bool tuned = false;
};
Bind bind_input(Engine& engine, const Input& in, const InputLabels& labels) {
  Bind b;
  const int passes = engine.autotune_passes();
  const int64_t t_bind = now_ns();
  engine.set_input(0, in.features, in.indices, in.grid, in.batch, labels);
  b.ms = ms_since(t_bind);
  b.tuned = engine.autotune_passes() > passes;
  return b;
}

/// One sweep point: the input bound, then the timed forwards.
struct SweepPoint {
  Bind bind;
  std::vector<double> ms;
};
SweepPoint bind_and_time(Engine& engine, const Input& in, int warmup, int runs, const InputLabels& labels,
                         const std::string& what) {
  SweepPoint p;
  p.bind = bind_input(engine, in, labels);
  p.ms = timed_forwards(engine, warmup, runs, what);
  return p;
}

/// A sweep CSV row's timing fields: runs,median_ms,p99_ms,mean_ms,min_ms,max_ms.
std::string csv_timing_fields(const TimingStats& st) {
  return std::to_string(st.count) + ',' + fixed(st.median, 6) + ',' + fixed(st.p99, 6) + ',' + fixed(st.mean, 6) + ',' +
         fixed(st.min, 6) + ',' + fixed(st.max, 6);
}

/// After a sweep: the tuning passes it took and the engine's device workspace.
void print_sweep_engine(const Engine& engine) {
  if (const int passes = engine.autotune_passes()) std::printf("autotune   %d tuning passes\n", passes);
  if (const size_t ws = engine.workspace_bytes()) std::printf("workspace  %s\n", format_bytes(double(ws)).c_str());
}

/// --batch-sweep: each batch size's input (prepared before the engine was built for the largest) bound and
/// timed in turn on one engine. A failing batch size ends the sweep; the sizes before it are still
/// reported. Returns the error of the failing size, or "".
std::string run_batch_sweep(Engine& engine, const std::vector<Input>& inputs, int warmup, int runs,
                            const InputLabels& labels, std::ostringstream& batch_csv,
                            const std::function<void(int64_t, const std::vector<double>&)>& record_runs) {
  Table t({"batch", "voxels", "median ms", "p99 ms", "frames/s", "x batch " + std::to_string(inputs.front().batch),
           "bind ms", "tuned"});
  batch_csv << "batch,voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms,frames_per_s\n";
  double first_fps = 0;
  for (const Input& in : inputs) {
    SweepPoint p;
    try {
      p = bind_and_time(engine, in, warmup, runs, labels, "batch " + std::to_string(in.batch));
    } catch (const std::exception& e) {
      if (!t.empty()) std::printf("\n%s", t.str("  ").c_str());
      return "batch sweep stopped at batch " + std::to_string(in.batch) + ": " + e.what();
    }
    const std::vector<double>& ms = p.ms;
    const TimingStats st = summarize_timings(ms);
    const double fps = st.median > 0 ? 1000.0 * in.batch / st.median : 0.0;
    const int fps_digits = fps < 100 ? 2 : 0;
    if (first_fps == 0) first_fps = fps;
    const int64_t n = in.indices.dim(0);
    t.add({std::to_string(in.batch), std::to_string(n), ms3(st.median), ms3(st.p99), fixed(fps, fps_digits),
           fixed(first_fps > 0 ? fps / first_fps : 0.0, 2), fixed(p.bind.ms, 1), p.bind.tuned ? "yes" : ""});
    std::printf("  batch %4d: median %s ms, %s frames/s\n", in.batch, ms3(st.median).c_str(),
                fixed(fps, fps_digits).c_str());
    std::fflush(stdout);
    batch_csv << in.batch << ',' << n << ',' << csv_timing_fields(st) << ',' << fixed(fps, 3) << '\n';
    record_runs(n, ms);
  }
  std::printf("\n%s", t.str("  ").c_str());
  return "";
}

/// The engine's options from the command line (the capacities are set by the caller).
BuildOptions build_options(const BenchArgs& a) {
  BuildOptions opts;
  opts.backend = parse_backend(a.device);
  opts.precision = parse_precision(a.precision);
  opts.num_threads = a.threads;
  opts.cuda_graph = !a.no_cuda_graph;
  opts.cuda.autotune = !a.no_autotune;
  opts.cuda.tile = a.tile;
  opts.cuda.tuning_cache = a.tuning_cache;
  opts.cuda.offset_groups = a.offset_groups;
  opts.cuda.site_order = site_order_of(a.site_order);
  opts.cuda.split = a.split;
  opts.cuda.tune_skip = a.tune_skip;
  if (a.tune_once) opts.cuda.tune_bucket_factor = 0.0;
  if (a.tune_bucket_factor > 0) opts.cuda.tune_bucket_factor = a.tune_bucket_factor;
  if (a.map_lookahead >= 0) opts.cuda.map_lookahead = a.map_lookahead;
  opts.cuda.strided_sites = a.strided_sites == "rows"     ? CudaStridedSites::FromRows
                            : a.strided_sites == "bitmap" ? CudaStridedSites::FromBitmap
                                                          : CudaStridedSites::Auto;
  opts.cuda.stream_priorities = a.stream_priorities;
  if (a.sites_ahead) opts.cuda.sites_ahead = true;
  if (a.fit_capacities) opts.capacity_source = CapacitySource::FirstFrame;
  if (a.grow) opts.on_capacity_overflow = CapacityOverflow::Grow;
  if (a.capacity_margin > 0) opts.capacity_margin = a.capacity_margin;
  return opts;
}

bool is_scene_preset(const std::string& p) {
  const std::vector<std::string>& names = synth::FrameOptions::preset_names();
  return std::find(names.begin(), names.end(), p) != names.end();
}

}  // namespace

int run_bench(const BenchArgs& a) {
  // Where the CSV files go is checked before any work (the measurement can take minutes).
  if (!a.csv.empty()) check_output_file("--csv", a.csv);
  if (!a.sweep_csv.empty()) check_output_file("--sweep-csv", a.sweep_csv);
  if (!a.batch_csv.empty()) check_output_file("--batch-csv", a.batch_csv);
  if (!a.points.empty()) {
    SCN_CHECK(a.preset.empty() || !is_scene_preset(a.preset), "--preset ", a.preset,
              " is a synthetic scene (--synthetic); with --points name a voxelizer preset, e.g. nuscenes-centerpoint");
    const int64_t t_parse = now_ns();
    EngineBuilder builder = parse_onnx(a.model);
    return run_points_bench(a, builder, build_options(a), ms_since(t_parse));
  }
  SCN_CHECK(a.preset.empty() || is_scene_preset(a.preset), "--preset ", a.preset,
            " is a voxelizer preset (for --points); synthetic scenes: nuscenes, kitti");
  SCN_CHECK(a.batch_sweep.empty() || !a.features.empty() || a.synthetic > 0,
            "--batch-sweep needs a frame: --features/--indices/--grid (copied once per batch index) or --synthetic N "
            "(N voxels per frame)");
  SCN_CHECK(!a.features.empty() || a.synthetic > 0 || !a.sweep.empty(),
            "give an input: --features/--indices/--grid, --synthetic N or --sweep N1,N2,...");
  SCN_CHECK(a.features.empty() || !a.grid.empty(), "--features/--indices need --grid");
  const int64_t t_parse = now_ns();
  EngineBuilder builder = parse_onnx(a.model);
  const double parse_ms = ms_since(t_parse);
  const Graph& graph = builder.graph();
  SCN_CHECK(graph.inputs.size() == 1, a.model, ": the model has ", graph.inputs.size(),
            " inputs; scn bench binds exactly one");
  const std::string order = model_index_order(graph);
  const std::vector<int64_t> sweep = a.sweep.empty() ? std::vector<int64_t>{} : parse_count_list(a.sweep);
  const std::vector<int64_t> batches = a.batch_sweep.empty() ? std::vector<int64_t>{} : parse_count_list(a.batch_sweep);
  for (int64_t b : batches)
    SCN_CHECK(b <= 1024, "--batch-sweep '", a.batch_sweep, "': batch size ", b, " is above 1024 (the --batch range)");
  int max_batch = a.batch;
  for (int64_t b : batches) max_batch = std::max(max_batch, int(b));

  // The first input (or every sweep point) is known before building, so capacities fit.
  std::vector<Input> inputs;
  synth::FrameOptions so;
  if (!a.features.empty()) {
    Input in;
    in.features = Tensor::load(a.features);
    in.indices = Tensor::load(a.indices);
    in.grid = parse_grid(a.grid);
    in.label = a.features + " + " + a.indices;
    in.batch = a.batch;
    if (batches.empty()) inputs.push_back(in);
    for (int64_t b : batches) {  // the frame's copies, one per batch index
      const FrameBatch fb = batch_of_copies(in.features, in.indices, int(b), a.features, a.indices);
      Input copies = in;
      copies.features = fb.features;
      copies.indices = fb.indices;
      copies.batch = int(b);
      inputs.push_back(copies);
    }
  } else {
    so = synth_options(a, graph, order);
    if (a.synthetic > 0 && batches.empty()) inputs.push_back(synthetic_input(so, a.synthetic, a.batch));
    for (int64_t b : batches) inputs.push_back(synthetic_input(so, a.synthetic, int(b)));
  }
  int64_t max_voxels = 0;
  for (const Input& in : inputs)
    max_voxels = std::max<int64_t>(max_voxels, in.indices.ndim() == 2 ? in.indices.dim(0) : 0);
  for (int64_t v : sweep) max_voxels = std::max<int64_t>(max_voxels, v * a.batch);

  BuildOptions opts = build_options(a);
  opts.max_batch = max_batch;
  opts.max_input_voxels = max_voxels;
  const int64_t t_build = now_ns();
  std::unique_ptr<Engine> engine = builder.build(opts);
  const double build_ms = ms_since(t_build);

  std::printf("model      %s (%zu nodes, %s order)\n", a.model.c_str(), graph.nodes.size(), order.c_str());
  std::printf("backend    %s, precision %s%s\n", backend_name(engine->backend()), precision_name(engine->precision()),
              engine->backend() == Backend::Cuda ? (opts.cuda_graph ? ", CUDA graph" : ", no CUDA graph") : "");
  std::printf("build      %.1f ms (parse %.1f ms)\n", parse_ms + build_ms, parse_ms);
  // A CPU forward of a real frame takes seconds: fewer runs by default than on the GPU.
  const bool cpu = engine->backend() == Backend::Cpu;
  const int warmup = a.warmup >= 0 ? a.warmup : (cpu ? 2 : 20);
  const int runs = a.runs >= 0 ? a.runs : (cpu ? 10 : 200);

  std::ostringstream runs_csv;
  runs_csv << "voxels,run,ms\n";
  auto record_runs = [&](int64_t voxels, const std::vector<double>& ms) {
    for (size_t r = 0; r < ms.size(); ++r) runs_csv << voxels << ',' << r << ',' << fixed(ms[r], 6) << '\n';
  };
  InputLabels labels;
  labels.features = a.features.empty() ? "synthetic features" : a.features;
  labels.indices = a.indices.empty() ? "synthetic indices" : a.indices;

  OutputSet files;
  std::string sweep_error;
  if (!batches.empty()) {
    const std::string frames = a.features.empty()
                                   ? "synthetic frames of " + std::to_string(a.synthetic) + " voxels each"
                                   : "copies of " + a.features + " + " + a.indices;
    std::printf("batches    %zu batch sizes through one engine (max batch %d): %s, %d warm-up + %d runs each\n",
                batches.size(), max_batch, frames.c_str(), warmup, runs);
    std::ostringstream batch_csv;
    sweep_error = run_batch_sweep(*engine, inputs, warmup, runs, labels, batch_csv, record_runs);
    print_sweep_engine(*engine);
    if (!a.batch_csv.empty()) files.add_text(a.batch_csv, batch_csv.str());
  } else if (sweep.empty()) {
    const Input& in = inputs.front();
    const double bind_ms = bind_input(*engine, in, labels).ms;
    std::printf("input      %s: features %s, indices %s, grid %s, batch %d\n", in.label.c_str(),
                describe_tensor(in.features).c_str(), describe_tensor(in.indices).c_str(), int3_string(in.grid).c_str(),
                in.batch);
    // the first frame plans the arena and (CUDA) tunes the tiles or reads them from --tuning-cache
    const char* tiles = engine->backend() != Backend::Cuda               ? ""
                        : !opts.cuda.tile.empty() || !opts.cuda.autotune ? ", heuristic or forced tiles"
                        : opts.cuda.tuning_cache.empty()                 ? ", autotuning"
                                                                         : ", tuning cache: read, or tuned and written";
    std::printf("first bind %.1f ms (planning%s)\n", bind_ms, tiles);
    const std::vector<double> ms = timed_forwards(*engine, warmup, runs, "bench");
    const TimingStats st = summarize_timings(ms);
    std::printf("latency    %s (%d runs after %d warm-up)\n", latency_text(st).c_str(), runs, warmup);
    if (const size_t ws = engine->workspace_bytes()) std::printf("workspace  %s\n", format_bytes(double(ws)).c_str());
    record_runs(in.indices.dim(0), ms);

    if (a.layers) {
      const std::vector<LayerTiming> layers = engine->profile_layers();
      if (layers.empty()) {
        std::printf("\nlayers     the %s backend does not report per-layer times\n", backend_name(engine->backend()));
      } else {
        double total = 0;
        for (const LayerTiming& l : layers) total += l.ms;
        Table t({"node", "op", "algorithm", "ms", "share"});
        for (const LayerTiming& l : layers)
          t.add({l.node, l.op, l.algorithm, ms3(l.ms), fixed(total > 0 ? 100.0 * l.ms / total : 0.0, 1) + " %"});
        t.add({"total", "", "", ms3(total), "100.0 %"});
        std::printf("\nper-layer times (one profiled forward, step by step):\n%s", t.str("  ").c_str());
      }
    }
  } else {
    std::printf("sweep      %zu synthetic frames (seed %llu, %s), %d warm-up + %d runs each\n", sweep.size(),
                static_cast<unsigned long long>(a.seed), order.c_str(), warmup, runs);
    // CUDA: the first frame of each size bucket is tuned in its set_input ("bind ms", not timed).
    if (engine->backend() == Backend::Cuda && opts.cuda.autotune && opts.cuda.tile.empty())
      std::printf("tiles      %s\n", a.tune_once ? "tuned on the first frame, kept for every size (--tune-once)"
                                                 : "tuned per size bucket, on the first frame of each");
    Table t({"voxels", "median ms", "p99 ms", "mean ms", "min ms", "gen ms", "bind ms", "tuned"});
    std::ostringstream sweep_csv;
    sweep_csv << "voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms\n";
    for (int64_t v : sweep) {
      // A failing point ends the sweep; the points before it are still reported and written.
      Input in;
      double gen_ms = 0;
      SweepPoint p;
      try {
        const int64_t t_gen = now_ns();
        in = synthetic_input(so, v, a.batch);
        gen_ms = ms_since(t_gen);
        p = bind_and_time(*engine, in, warmup, runs, labels, std::to_string(v) + " voxels");
      } catch (const std::exception& e) {
        sweep_error = "sweep stopped at " + std::to_string(v) + " voxels: " + e.what();
        break;
      }
      const std::vector<double>& ms = p.ms;
      const TimingStats st = summarize_timings(ms);
      const int64_t n = in.indices.dim(0);
      t.add({std::to_string(n), ms3(st.median), ms3(st.p99), ms3(st.mean), ms3(st.min), fixed(gen_ms, 1),
             fixed(p.bind.ms, 1), p.bind.tuned ? "yes" : ""});
      std::printf("  %8lld voxels: median %s ms\n", static_cast<long long>(n), ms3(st.median).c_str());
      std::fflush(stdout);
      sweep_csv << n << ',' << csv_timing_fields(st) << '\n';
      record_runs(n, ms);
    }
    if (!t.empty()) std::printf("\n%s", t.str("  ").c_str());
    print_sweep_engine(*engine);
    if (!a.sweep_csv.empty()) files.add_text(a.sweep_csv, sweep_csv.str());
  }
  if (!a.csv.empty()) files.add_text(a.csv, runs_csv.str());
  for (const std::string& p : files.commit()) std::printf("wrote      %s\n", p.c_str());
  if (!sweep_error.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "scn bench: %s\n", sweep_error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace scn::cli
