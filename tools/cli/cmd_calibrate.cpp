// scn calibrate MODEL.onnx -o MODEL.int8.onnx (--frame F I ... --grid G | --synthetic N --frames K):
// post-training INT8 calibration. Runs the float32 CPU engine over the frames collecting |x|
// statistics of every activation, turns them into dynamic ranges (absmax, percentile or mse), takes
// per-output-channel weight ranges from the weights, and writes a copy of the model with
// precision / output_precision / input_dynamic_range / weight_dynamic_ranges (and Add's
// input0/1_dynamic_range, ScatterDense's input_dynamic_range) set. The copy is re-imported and built
// as an INT8 engine before the command succeeds; --eval reports INT8 vs FP32 on a frame.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "compare.h"
#include "scn/calibrate.h"
#include "scn/inspect.h"
#include "scn/onnx.h"
#include "synthetic_frame.h"

namespace scn::cli {

CLI::App* add_calibrate(CLI::App& app, CalibrateArgs& a) {
  CLI::App* c = app.add_subcommand(
      "calibrate", "Post-training INT8 calibration: write a copy of the model with INT8 ranges and precisions");
  c->add_option("model", a.model, "ONNX model (NVIDIA SCN schema)")->required()->check(CLI::ExistingFile);
  c->add_option("-o,--output", a.output, "ONNX file to write (may not be the input model)")->required();
  // (each value an existing file: a pair given one file would take the next option as its second)
  CLI::Option* fr = c->add_option("--frame", a.frames, "A calibration frame: FEATURES.tensor INDICES.tensor (repeat)")
                        ->check(CLI::ExistingFile);
  c->add_option("--grid", a.grid,
                "Grid in the model's index order (needed with --frame; synthetic default: the preset's grid)")
      ->check(grid_validator());
  CLI::Option* sy = c->add_option("--synthetic", a.synthetic, "Calibrate on synthetic frames of N voxels")
                        ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  c->add_option("--frames", a.num_frames, "Number of synthetic frames (seeds --seed, --seed+1, ...)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  c->add_option("--seed", a.seed, "Seed of the first synthetic frame")->capture_default_str();
  c->add_option("--preset", a.preset, "Synthetic scene: nuscenes or kitti (default: by the model's input channels)")
      ->check(CLI::IsMember(synth::FrameOptions::preset_names()));
  c->add_option("--method", a.method, "Activation range: absmax, percentile (of |x|, zeros included) or mse")
      ->capture_default_str()
      ->check(CLI::IsMember({"absmax", "percentile", "mse"}));
  c->add_option("--percentile", a.percentile, "Percentile of |x| for --method percentile")
      ->capture_default_str()
      ->check(CLI::Range(50.0, 100.0));
  c->add_option("--bins", a.bins, "Histogram bins per activation")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  c->add_option("--keep-fp16", a.keep_fp16, "Comma-separated SparseConvolution / Add node names that stay fp16");
  c->add_option("--keep-fp16-first", a.keep_fp16_first, "The first N SparseConvolution nodes stay fp16")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  c->add_flag("--int8-scatter", a.int8_scatter,
              "Let the layer feeding ScatterDense store int8 (default: fp16, which keeps the output more exact)");
  c->add_option("--eval", a.eval, "After writing, compare INT8 with FP32 on this frame: FEATURES.tensor INDICES.tensor")
      ->expected(2);
  c->add_option("--threads", a.threads, "CPU threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  c->add_option("--min-cosine", a.min_cosine,
                "Choose the fp16 layers by measured sensitivity so that the INT8 cosine vs FP32 on --eval is at "
                "least this, keeping as much INT8 work as possible; fails when no plan reaches it")
      ->check(CLI::Range(1e-6, 1.0));
  c->add_option("--time-on", a.time_on,
                "With --min-cosine: weigh each layer by the time int8 saves on this backend (cuda or cpu), measured "
                "on the --eval frame, instead of by its MACs; layers that int8 does not speed up stay fp16")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  c->add_flag("--quiet", a.quiet, "No per-layer table");
  fr->excludes(sy);
  return c;
}

namespace {

struct Frame {
  Tensor features, indices;
  Int3 grid{0, 0, 0};
  std::string label;
};

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string range_text(const std::vector<float>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + fixed(r[i], 4);
  return s.empty() ? "-" : s;
}

std::string absmax_text(const std::vector<double>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + fixed(r[i], 4);
  return s.empty() ? "-" : s;
}

/// f(), with any scn::Error it throws restated as the model's and --time-on's (the device that times the
/// search may be missing or fail).
template <class F>
auto on_timing_device(const CalibrateArgs& a, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    SCN_FAIL(a.model, ": --time-on ", a.time_on, ": ", e.what());
  }
}

// The chosen plan as a Markdown table (pasted into docs/benchmarks.md) and one summary line.
void print_plan(const PrecisionPlan& p, const CalibrateArgs& a, double ms) {
  int n8 = 0;
  std::string fp16;
  for (const PlanNode& n : p.nodes) {
    n8 += n.int8;
    if (!n.int8) fp16 += (fp16.empty() ? "" : ",") + n.node;
  }
  std::printf("plan        target cosine %s on %s (%d INT8 engines evaluated, %.1f s)\n\n",
              fixed(a.min_cosine, 6).c_str(), a.eval[0].c_str(), p.evaluations, ms / 1000.0);
  std::printf("| node | op | precision | sensitivity (1 - cosine, alone in int8) | MACs (dense kernel) |%s\n",
              p.timed ? " int8 saves (us) |" : "");
  std::printf("|---|---|---|---|---|%s\n", p.timed ? "---|" : "");
  for (const PlanNode& n : p.nodes)
    std::printf("| %s | %s | %s | %s | %.3g |%s\n", n.node.c_str(), n.op.c_str(), n.int8 ? "int8" : "fp16",
                n.sensitivity >= 0 ? fixed(n.sensitivity, 6).c_str() : "-", n.macs,
                p.timed ? (" " + fixed(1000.0 * n.saving_ms, 1) + " |").c_str() : "");
  std::printf(
      "\nplan        %d of %zu nodes int8 (%.1f %% of the MACs); cosine vs FP32: plan %.6f, all fp16 %.6f, "
      "all int8 %.6f\n",
      n8, p.nodes.size(), p.total_macs > 0 ? 100.0 * p.int8_macs / p.total_macs : 0.0, p.cosine, p.fp16_cosine,
      p.all_int8_cosine);
  std::printf("plan        fp16 nodes: %s\n", fp16.empty() ? "none" : fp16.c_str());
  if (p.timed)
    std::printf(
        "plan        the int8 nodes save %.1f us of step time on %s (their measured savings, summed); forward "
        "%.4f ms against %.4f ms all fp16 (%d plans timed; %d runs of a level skipped by their summed "
        "losses)\n",
        1000.0 * p.int8_saving_ms, a.time_on.c_str(), p.ms, p.fp16_ms, p.timings, p.runs_skipped);
}

}  // namespace

int run_calibrate(const CalibrateArgs& a) {
  SCN_CHECK(!a.frames.empty() || a.synthetic > 0,
            "give calibration frames: --frame FEATURES INDICES (with --grid) or --synthetic N --frames K");
  SCN_CHECK(a.frames.empty() || !a.grid.empty(), "--frame needs --grid");
  check_output_file("--output", a.output);
  SCN_CHECK(!same_file(a.output, a.model), "--output ", a.output, " is the input model ", a.model,
            "; write the calibrated copy to another file");
  SCN_CHECK(a.min_cosine <= 0 || a.eval.size() == 2, "--min-cosine needs an evaluation frame: --eval FEATURES INDICES");
  SCN_CHECK(a.min_cosine <= 0 || (a.keep_fp16.empty() && a.keep_fp16_first == 0),
            "--min-cosine chooses the fp16 layers itself; drop --keep-fp16 / --keep-fp16-first");
  SCN_CHECK(a.time_on.empty() || a.min_cosine > 0,
            "--time-on weighs the layers of a --min-cosine search: add --min-cosine X");
  const int64_t t_start = now_ns();
  EngineBuilder builder = parse_onnx(a.model);
  const Graph& graph = builder.graph();
  SCN_CHECK(graph.inputs.size() == 1, a.model, ": the model has ", graph.inputs.size(),
            " inputs; scn calibrate binds exactly one");
  const std::string order = expected_input(graph).order;
  const int32_t channels = graph.values[size_t(graph.inputs[0])].channels;

  // Frames.
  synth::FrameOptions so;
  if (a.synthetic > 0) {
    std::string preset = a.preset.empty() ? (channels == 4 ? "kitti" : "nuscenes") : a.preset;
    so = synth::FrameOptions::preset(preset);
    SCN_CHECK(channels == 4 || channels == 5, a.model, ": the model's input has ", channels,
              " channels; synthetic frames have 4 or 5");
    so.channels = channels;
    so.order = order == "xyz" ? synth::IndexOrder::Xyz : synth::IndexOrder::Zyx;
    if (!a.grid.empty()) {
      const Int3 gr = parse_grid(a.grid);
      so.grid_zyx =
          order == "xyz" ? std::array<int32_t, 3>{gr[2], gr[1], gr[0]} : std::array<int32_t, 3>{gr[0], gr[1], gr[2]};
    }
  }
  auto frame = [&](size_t k) {
    Frame f;
    if (a.synthetic > 0) {
      synth::FrameOptions o = so;
      o.voxels = a.synthetic;
      o.seed = a.seed + k;
      const synth::Frame s = synth::generate_frame(o);
      f.features = synth::features_tensor(s);
      f.indices = synth::indices_tensor(s);
      f.grid = {s.grid[0], s.grid[1], s.grid[2]};
      f.label = "synthetic frame of " + std::to_string(a.synthetic) + " voxels, seed " + std::to_string(o.seed);
    } else {
      f.features = Tensor::load(a.frames[k].first);
      f.indices = Tensor::load(a.frames[k].second);
      f.grid = parse_grid(a.grid);
      f.label = a.frames[k].first + " + " + a.frames[k].second;
    }
    return f;
  };
  const size_t num_frames = a.synthetic > 0 ? size_t(a.num_frames) : a.frames.size();

  // The evaluation frame (--eval), loaded before the work starts so a bad path fails early.
  CalibrationFrame ef;
  if (!a.eval.empty()) {
    SCN_CHECK(a.eval.size() == 2, "--eval takes FEATURES.tensor INDICES.tensor");
    ef.features = Tensor::load(a.eval[0]);
    ef.indices = Tensor::load(a.eval[1]);
    if (!a.grid.empty())
      ef.grid = parse_grid(a.grid);
    else if (a.synthetic > 0) {
      const auto gz = synth::grid_zyx(so);
      ef.grid = order == "xyz" ? Int3{gz[2], gz[1], gz[0]} : Int3{gz[0], gz[1], gz[2]};
    }
    SCN_CHECK(ef.grid[0] > 0, "--eval needs --grid");
    ef.labels.features = a.eval[0];
    ef.labels.indices = a.eval[1];
  }

  // Statistics from the float32 CPU engine.
  Calibrator cal(builder, a.bins, a.threads);
  for (size_t k = 0; k < num_frames; ++k) {
    const Frame f = frame(k);
    CalibrationFrame cf;
    cf.features = f.features;
    cf.indices = f.indices;
    cf.grid = f.grid;
    cf.labels.features = f.label + " (features)";
    cf.labels.indices = f.label + " (indices)";
    const int64_t t0 = now_ns();
    cal.add_frame(cf);
    if (!a.quiet)
      std::printf("frame %zu/%zu  %s: %lld voxels, %.0f ms\n", k + 1, num_frames, f.label.c_str(),
                  static_cast<long long>(f.indices.dim(0)), ms_since(t0));
  }

  CalibrationOptions co;
  co.method = parse_calibration_method(a.method);
  co.percentile = a.percentile;
  for (const std::string& n : split_names(a.keep_fp16)) co.keep_fp16.insert(n);
  co.keep_fp16_first = a.keep_fp16_first;
  co.int8_scatter = a.int8_scatter;
  std::vector<CalibrationRow> rows;
  std::map<std::string, QuantAttrs> quant;
  if (a.min_cosine > 0) {
    // INT8 by target accuracy: the search chooses the fp16 nodes (--keep-fp16* do not apply).
    PrecisionSearchOptions po;
    po.min_cosine = a.min_cosine;
    po.calibration = co;
    if (!a.time_on.empty()) {
      BuildOptions d;
      d.backend = a.time_on == "cuda" ? Backend::Cuda : Backend::Cpu;
      d.num_threads = a.threads;
      const int64_t tt = now_ns();
      po.int8_savings_ms = on_timing_device(a, [&] { return measure_int8_savings(cal, co, ef, d); });
      std::printf("timed       int8 against fp16, per node, on %s with %s (%.1f s)\n", a.time_on.c_str(),
                  a.eval[0].c_str(), ms_since(tt) / 1000.0);
      po.plan_ms = [&cal, &ef, d, &a](const std::map<std::string, QuantAttrs>& attrs) {
        return on_timing_device(a, [&] {
          return time_int8_plan(cal, attrs, ef, d, d.backend == Backend::Cuda ? 20 : 1,
                                d.backend == Backend::Cuda ? 200 : 3);
        });
      };
    }
    const int64_t t0 = now_ns();
    const PrecisionPlan plan = search_int8_plan(cal, {ef}, po);
    print_plan(plan, a, ms_since(t0));
    std::set<std::string> int8;
    for (const PlanNode& n : plan.nodes)
      if (n.int8) int8.insert(n.node);
    quant = cal.attributes(with_int8_nodes(co, int8), &rows);
  } else {
    quant = cal.attributes(co, &rows);
  }

  write_onnx_with_quant(a.model, a.output, quant);
  // The copy must import and build as an INT8 engine; otherwise it is removed.
  std::unique_ptr<Engine> check;
  try {
    BuildOptions i8;
    i8.backend = Backend::Cpu;
    i8.precision = Precision::Int8;
    i8.num_threads = a.threads;
    check = load_engine_from_onnx(a.output, i8);
  } catch (...) {
    std::remove(a.output.c_str());
    throw;
  }

  int int8_convs = 0, convs = 0, int8_adds = 0, adds = 0;
  for (const CalibrationRow& r : rows) {
    if (r.op == std::string(op_type_name(OpType::SparseConv))) {
      ++convs;
      int8_convs += r.precision == Precision::Int8;
    } else if (r.op == std::string(op_type_name(OpType::Add))) {
      ++adds;
      int8_adds += r.precision == Precision::Int8;
    }
  }
  std::string method = calibration_method_name(co.method);
  if (co.method == CalibrationMethod::Percentile) method += " " + fixed(co.percentile, 4) + " %";
  std::printf("calibrated  %s on %lld frame(s), method %s, %d bins\n", a.model.c_str(),
              static_cast<long long>(cal.frames()), method.c_str(), a.bins);
  if (!a.quiet) {
    Table t({"node", "op", "precision", "output", "input range(s)", "observed absmax", "max weight range"});
    for (const CalibrationRow& r : rows)
      t.add({r.node, r.op, precision_name(r.precision), precision_name(r.output_precision), range_text(r.input_ranges),
             absmax_text(r.input_absmax), r.weight_range_max > 0 ? fixed(r.weight_range_max, 4) : "-"});
    std::printf("%s", t.str("  ").c_str());
  }
  std::printf("int8        %d of %d SparseConvolution, %d of %d Add nodes\n", int8_convs, convs, int8_adds, adds);
  std::printf("wrote       %s (%.1f s)\n", a.output.c_str(), ms_since(t_start) / 1000.0);

  if (!a.eval.empty()) {
    const AccuracyReport rep = evaluate_int8(cal, quant, ef, !a.quiet);
    if (!a.quiet) {
      Table t({"node", "output", "stored", "cosine vs fp32", "rel-L2 vs fp32"});
      for (const LayerAccuracy& l : rep.layers)
        t.add({l.node, l.value, l.int8 ? "int8" : "fp16", fixed(l.cosine, 6), fixed(l.rel_l2, 5)});
      std::printf("eval        per-layer INT8 vs FP32 on %s:\n%s", a.eval[0].c_str(), t.str("  ").c_str());
    }
    for (const OutputAccuracy& o : rep.outputs)
      std::printf("eval        output '%s' on %s: INT8 vs FP32 cosine %.6f, rel-L2 %.4e, max abs %.4g\n",
                  o.name.c_str(), a.eval[0].c_str(), o.cosine, o.rel_l2, o.max_abs);
    if (rep.min_cosine < kPoorInt8Cosine) {
      std::fflush(stdout);
      std::fprintf(stderr,
                   "scn calibrate: warning: the INT8 model's cosine vs FP32 on %s is %.6f, below %.2f: keep the "
                   "most sensitive layers in fp16 (--keep-fp16, or --min-cosine X to choose them), calibrate on "
                   "larger or real frames, or try --method mse\n",
                   a.eval[0].c_str(), rep.min_cosine, kPoorInt8Cosine);
    }
  }
  return 0;
}

}  // namespace scn::cli
