// int8_quant_sim: what other activation quantization schemes would cost in accuracy, before any kernel is written
// for them (docs/int8.md "What limits the accuracy-target plan"). A tool you run, not a test.
//
// The model is calibrated on the --calibrate frame (absmax, as `scn calibrate`) with the plan's nodes int8. The FP32
// CPU engine then runs it with the plan's int8 convs' weights rounded per output channel (as the INT8 engines do)
// and, through the CPU engine's value observer, every value an int8 node of the plan reads rounded in place to an
// 8-bit grid. The schemes differ only in that grid:
//   engine        the CPU INT8 engine itself (evaluate_int8): what the simulated "cal sym" column should match
//   cal sym       the calibrated dynamic range R, 255 symmetric levels (step R / 127): what the engines do
//   cal u8        the same R, ReLU outputs on 256 unsigned levels (step R / 255)
//   act only      cal sym with exact weights;  weights only: exact activations
//   eval tensor   R = the value's absmax on the evaluated frame itself (no clipping), symmetric / unsigned
//   eval channel  one R per channel, from the evaluated frame itself, symmetric / unsigned
//   cal channel   one R per channel from the --calibrate frame (what a calibration would write), symmetric / unsigned
// Each column is 1 - cosine of the output against FP32.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/int8_observer.h"
#include "commands.h"
#include "common.h"
#include "compare.h"
#include "graph/rebuild.h"
#include "scn/calibrate.h"
#include "scn/engine.h"
#include "scn/error.h"
#include "scn/onnx.h"
#include "scn/tensor.h"

using namespace scn;

namespace {

struct Frame {
  Tensor features, indices;
};

/// x on the 8-bit grid of range r: 255 symmetric levels, or 256 unsigned ones.
float round_to_grid(float x, float r, bool unsigned_grid) {
  if (!(r > 0.f)) return x;
  const float levels = unsigned_grid ? 255.f : 127.f;
  const float q = std::min(levels, std::max(unsigned_grid ? 0.f : -levels, std::nearbyint(x * levels / r)));
  return q * r / levels;
}

/// How a value read by an int8 node is rounded in one column.
enum class Ranges { Calibrated, EvalTensor, EvalChannel, CalChannel };
struct Scheme {
  const char* name;
  Ranges ranges;
  bool unsigned_relu;  ///< ReLU outputs on the unsigned grid
  bool round_values = true, round_weights = true;
};
const Scheme kSchemes[] = {
    {"cal sym", Ranges::Calibrated, false},
    {"cal u8", Ranges::Calibrated, true},
    {"act only", Ranges::Calibrated, false, true, false},
    {"weights only", Ranges::Calibrated, false, false, true},
    {"eval tensor sym", Ranges::EvalTensor, false},
    {"eval tensor u8", Ranges::EvalTensor, true},
    {"eval channel sym", Ranges::EvalChannel, false},
    {"eval channel u8", Ranges::EvalChannel, true},
    {"cal channel sym", Ranges::CalChannel, false},
    {"cal channel u8", Ranges::CalChannel, true},
};

class Simulator {
 public:
  Simulator(const EngineBuilder& model, const Frame& cal, const Frame& eval, Int3 grid)
      : model_(model), calibrator_(model), eval_(eval), grid_(grid) {
    const std::unique_ptr<Engine> fp32 = build(model_);
    reference_ = run(*fp32, eval_, nullptr);
    calibrator_.add_frame(frame(cal));
    // per-channel absmax of every sparse value on the calibration frame (the cal channel columns)
    run(*fp32, cal, [&](const cpu::ObservedValue& v) {
      if (!v.coords) return;
      std::vector<float>& r = cal_ranges_[v.value];
      r.assign(size_t(v.channels), 0.f);
      for (int64_t i = 0; i < v.rows * v.channels; ++i)
        r[size_t(i % v.channels)] = std::max(r[size_t(i % v.channels)], std::fabs(v.data[i]));
    });
  }

  /// The plan's INT8 attributes (its nodes int8, every other conv and Add fp16).
  std::map<std::string, QuantAttrs> attributes(const std::set<std::string>& plan) const {
    return calibrator_.attributes(with_int8_nodes(CalibrationOptions{}, plan));
  }

  /// 1 - cosine against FP32 of the CPU INT8 engine running the plan.
  double engine_loss(const std::map<std::string, QuantAttrs>& quant) {
    return 1.0 - evaluate_int8(calibrator_, quant, frame(eval_)).min_cosine;
  }

  /// 1 - cosine against FP32 of the plan (its int8 nodes by name) simulated under each of kSchemes, in order. The
  /// plan's graph is built twice (weights rounded, weights exact) and each engine runs every scheme that uses it.
  std::vector<double> losses(const std::set<std::string>& plan, const std::map<std::string, QuantAttrs>& quant) const {
    const EngineBuilder quantized = with_int8_attributes(model_, quant);
    const Rebuilt rounded = rebuild(quantized.graph(), plan, true), exact = rebuild(quantized.graph(), plan, false);
    const std::unique_ptr<Engine> e_rounded = build(rounded.builder), e_exact = build(exact.builder);
    std::vector<double> out;
    for (const Scheme& s : kSchemes) {
      Engine& e = s.round_weights ? *e_rounded : *e_exact;
      const std::map<int, Read>& reads = (s.round_weights ? rounded : exact).reads;
      cpu::ValueObserver round;
      if (s.round_values)
        round = [&](const cpu::ObservedValue& v) {
          const auto it = reads.find(v.value);
          if (it == reads.end()) return;
          // the observer's pointer is the FP32 engine's own buffer: rounding it in place is what the readers see
          float* x = const_cast<float*>(v.data);
          const int64_t n = v.rows * v.channels, c = v.channels;
          const bool u = s.unsigned_relu && it->second.nonnegative;
          std::vector<float> r(size_t(c), it->second.range);
          if (s.ranges == Ranges::CalChannel) {
            r = cal_ranges_.at(it->second.source);  // with_int8_attributes keeps the model's value ids
          } else if (s.ranges != Ranges::Calibrated) {
            std::fill(r.begin(), r.end(), 0.f);
            for (int64_t i = 0; i < n; ++i) r[size_t(i % c)] = std::max(r[size_t(i % c)], std::fabs(x[i]));
            if (s.ranges == Ranges::EvalTensor) std::fill(r.begin(), r.end(), *std::max_element(r.begin(), r.end()));
          }
          for (int64_t i = 0; i < n; ++i) x[i] = round_to_grid(x[i], r[size_t(i % c)], u);
        };
      out.push_back(1.0 - cli::compare_tensors(run(e, eval_, round), reference_, 0).cosine);
    }
    return out;
  }

 private:
  struct Read {
    int source = -1;           ///< the value in the model's graph
    float range = -1.f;        ///< the calibrated dynamic range of the value
    bool nonnegative = false;  ///< written by a Relu or a conv with a ReLU activation
  };

  CalibrationFrame frame(const Frame& f) const {
    CalibrationFrame c;
    c.features = f.features;
    c.indices = f.indices;
    c.grid = grid_;
    return c;
  }

  /// The graph without INT8 attributes, ready for one scheme: the weights of the plan's convs rounded per output
  /// channel (round_weights), and `reads`: the values whose rounding the plan's int8 nodes see. A ReLU output that an
  /// int8 node reads is read through a Relu of its own (an exact copy of a non-negative value), so that rounding it
  /// leaves the value's fp16 readers (a residual Add kept fp16) the unrounded value, as in the INT8 engines.
  struct Rebuilt {
    EngineBuilder builder;
    std::map<int, Read> reads;  ///< by value id of `builder`'s graph
  };
  static Rebuilt rebuild(const Graph& g, const std::set<std::string>& plan, bool round_weights) {
    Rebuilt out;
    std::vector<ValueId> copy(g.values.size(), -1);
    RebuildHooks hooks;
    hooks.quant = [](const Node&) { return QuantAttrs{}; };
    hooks.conv = [&](const Node& n) {
      ConvAttrs c = n.conv;
      if (!round_weights || !plan.count(n.name)) return c;
      Tensor w = c.weight.to_dtype(DType::Float32).clone();
      const int64_t co = w.dim(0), per = w.numel() / co;
      SCN_CHECK(n.quant.weight_dynamic_ranges.size() == size_t(co), g.source, ": plan node '", n.name,
                "' has no per-channel weight ranges");
      float* p = w.ptr<float>();
      for (int64_t o = 0; o < co; ++o)
        for (int64_t k = 0; k < per; ++k)
          p[o * per + k] = round_to_grid(p[o * per + k], n.quant.weight_dynamic_ranges[size_t(o)], false);
      c.weight = w;
      return c;
    };
    // the input that an int8 node reads as operand k: the value, or its copy
    hooks.input = [&](const Node& n, size_t k, ValueId read, EngineBuilder& b) {
      if (!plan.count(n.name)) return read;
      const int v = n.inputs[k];
      Read r;
      r.source = v;
      r.range = n.op == OpType::SparseConv ? n.quant.input_dynamic_range
                                           : (k == 0 ? n.quant.input0_dynamic_range : n.quant.input1_dynamic_range);
      SCN_CHECK(r.range > 0.f, g.source, ": plan node '", n.name, "' has no dynamic range for input ", k);
      for (const Node& w : g.nodes)
        if (w.output == v)
          r.nonnegative = w.op == OpType::Relu || (w.op == OpType::SparseConv && w.conv.activation == Activation::ReLU);
      if (r.nonnegative) {
        if (copy[size_t(v)] < 0) copy[size_t(v)] = b.push_relu(g.values[size_t(v)].name + "_int8_read", read);
        read = copy[size_t(v)];
      }
      out.reads[read] = r;
      return read;
    };
    // (the plan's nodes are SparseConvolution or Add nodes: Calibrator::attributes checked them)
    out.builder = rebuild_graph(g, hooks);
    return out;
  }

  /// The FP32 CPU engine of a graph.
  static std::unique_ptr<Engine> build(const EngineBuilder& b) {
    BuildOptions o;
    o.backend = Backend::Cpu;
    o.precision = Precision::Fp32;
    return b.build(o);
  }

  /// The first output of a forward over the frame with the observer installed (none: removed). The frame is bound
  /// again each time: an observer may have rounded the input value in place.
  Tensor run(Engine& e, const Frame& f, const cpu::ValueObserver& observer) const {
    cpu::set_value_observer(e, observer);
    e.set_input(0, f.features, f.indices, grid_, 1);
    e.forward();
    return e.output(0).clone();
  }

  const EngineBuilder& model_;
  Calibrator calibrator_;
  Frame eval_;
  Int3 grid_;
  Tensor reference_;
  std::map<int, std::vector<float>> cal_ranges_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "int8_quant_sim: other INT8 activation schemes simulated in the FP32 CPU engine, per plan; prints 1 - "
      "cosine vs FP32 of each plan under each scheme (tests/int8/quant_sim.cpp)"};
  std::string model_path, grid;
  std::vector<std::string> cal_files, eval_files, plan_specs;
  double tolerance = -1.0;
  app.add_option("model", model_path, "ONNX model (NVIDIA SCN schema)")->required()->check(CLI::ExistingFile);
  app.add_option("--calibrate", cal_files, "Calibration frame: FEATURES.tensor INDICES.tensor")
      ->required()
      ->expected(2)
      ->check(CLI::ExistingFile);
  app.add_option("--eval", eval_files, "Evaluated frame: FEATURES.tensor INDICES.tensor")
      ->required()
      ->expected(2)
      ->check(CLI::ExistingFile);
  app.add_option("--grid", grid, "Grid in the model's index order, D0xD1xD2")->required()->check(cli::grid_validator());
  app.add_option("--check-engine", tolerance,
                 "Exit 1 when the simulated 'cal sym' loss differs from the CPU INT8 engine's by more than this "
                 "(relative)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("plans", plan_specs, "LABEL:node,node,... (the plan's int8 SparseConvolution and Add nodes)")
      ->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::pair<std::string, std::set<std::string>>> plans;
    for (const std::string& a : plan_specs) {
      const size_t colon = a.find(':');
      std::set<std::string> nodes;
      std::istringstream names(colon == std::string::npos ? "" : a.substr(colon + 1));
      for (std::string t; std::getline(names, t, ',');)
        if (!t.empty()) nodes.insert(t);
      SCN_CHECK(!nodes.empty(), "plan '", a, "': expected LABEL:node,node,...");
      plans.emplace_back(a.substr(0, colon), nodes);
    }
    const Frame cal{Tensor::load(cal_files[0]), Tensor::load(cal_files[1])};
    const Frame eval{Tensor::load(eval_files[0]), Tensor::load(eval_files[1])};
    const EngineBuilder model = parse_onnx(model_path);
    Simulator sim(model, cal, eval, cli::parse_grid(grid));
    std::printf("| plan | int8 nodes | engine |");
    for (const Scheme& s : kSchemes) std::printf(" %s |", s.name);
    std::printf("\n");
    int mismatches = 0;
    for (const auto& [label, nodes] : plans) {
      const auto quant = sim.attributes(nodes);
      const double engine = sim.engine_loss(quant);
      const std::vector<double> losses = sim.losses(nodes, quant);
      std::printf("| %s | %zu | %.2e |", label.c_str(), nodes.size(), engine);
      for (const double l : losses) std::printf(" %.2e |", l);
      std::printf("\n");
      std::fflush(stdout);
      const double simulated = losses[0];  // kSchemes[0]: the engines' scheme
      if (tolerance >= 0.0 && !(std::fabs(simulated - engine) <= tolerance * engine)) {
        std::fprintf(stderr, "int8_quant_sim: plan '%s': simulated loss %.3e, CPU INT8 engine %.3e (tolerance %g)\n",
                     label.c_str(), simulated, engine, tolerance);
        ++mismatches;
      }
    }
    return mismatches ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "int8_quant_sim: %s\n", e.what());
    return 1;
  }
}
