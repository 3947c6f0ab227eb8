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
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/int8_observer.h"
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
    reference_ = run(model_, eval_, nullptr);
    calibrator_.add_frame(frame(cal));
    // per-channel absmax of every sparse value on the calibration frame (the cal channel columns)
    run(model_, cal, [&](const cpu::ObservedValue& v) {
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

  /// 1 - cosine against FP32 of the plan (its int8 nodes by name) simulated under the scheme.
  double loss(const std::set<std::string>& plan, const std::map<std::string, QuantAttrs>& quant,
              const Scheme& s) const {
    const EngineBuilder quantized = with_int8_attributes(model_, quant);
    const Rebuilt rebuilt = rebuild(quantized.graph(), plan, s.round_weights);
    const std::map<int, Read>& reads = rebuilt.reads;
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
    return 1.0 - cosine(reference_, run(rebuilt.builder, eval_, round));
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
    for (const Node& n : g.nodes)
      SCN_CHECK(!plan.count(n.name) || n.op == OpType::SparseConv || n.op == OpType::Add, g.source, ": plan node '",
                n.name, "' is neither a SparseConvolution nor an Add");
    out.builder = rebuild_graph(g, hooks);
    return out;
  }

  /// The first output of an FP32 CPU forward over the frame, the observer installed.
  std::vector<double> run(const EngineBuilder& b, const Frame& f, const cpu::ValueObserver& observer) const {
    BuildOptions o;
    o.backend = Backend::Cpu;
    o.precision = Precision::Fp32;
    auto e = b.build(o);
    if (observer) cpu::set_value_observer(*e, observer);
    e->set_input(0, f.features, f.indices, grid_, 1);
    e->forward();
    const Tensor t = e->output(0);
    const float* p = t.ptr<float>();
    return std::vector<double>(p, p + t.numel());
  }

  static double cosine(const std::vector<double>& a, const std::vector<double>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
    return ab / std::sqrt(aa * bb);
  }

  const EngineBuilder& model_;
  Calibrator calibrator_;
  Frame eval_;
  Int3 grid_;
  std::vector<double> reference_;
  std::map<int, std::vector<float>> cal_ranges_;
};

Int3 parse_grid(const std::string& s) {
  Int3 g{};
  char x1 = 0, x2 = 0;
  std::istringstream in(s);
  SCN_CHECK((in >> g[0] >> x1 >> g[1] >> x2 >> g[2]) && x1 == 'x' && x2 == 'x' && in.peek() == EOF, "--grid '", s,
            "': expected D0xD1xD2");
  return g;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: int8_quant_sim MODEL.onnx --calibrate F.tensor I.tensor --eval F.tensor I.tensor --grid D0xD1xD2 "
      "[--check-engine TOL] LABEL:node,node,... [LABEL:...]\n"
      "  prints 1 - cosine vs FP32 of each plan (its int8 nodes) under each quantization scheme; --check-engine: exit "
      "1\n"
      "  when the simulated 'cal sym' loss differs from the CPU INT8 engine's by more than TOL (relative)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) return usage();
    const std::string model_path = argv[1];
    Frame eval, cal;
    std::string grid;
    double tolerance = -1.0;
    std::vector<std::pair<std::string, std::set<std::string>>> plans;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if ((a == "--eval" || a == "--calibrate") && i + 2 < argc) {
        Frame& f = a == "--eval" ? eval : cal;
        f.features = Tensor::load(argv[i + 1]);
        f.indices = Tensor::load(argv[i + 2]);
        i += 2;
      } else if (a == "--grid" && i + 1 < argc) {
        grid = argv[++i];
      } else if (a == "--check-engine" && i + 1 < argc) {
        const std::string t = argv[++i];
        char* end = nullptr;
        tolerance = std::strtod(t.c_str(), &end);
        SCN_CHECK(!t.empty() && *end == '\0' && tolerance >= 0.0, "--check-engine '", t,
                  "': expected a relative tolerance >= 0 (e.g. 0.05)");
      } else if (a.find(':') != std::string::npos && a[0] != '-') {
        std::set<std::string> nodes;
        std::istringstream names(a.substr(a.find(':') + 1));
        for (std::string t; std::getline(names, t, ',');)
          if (!t.empty()) nodes.insert(t);
        SCN_CHECK(!nodes.empty(), "plan '", a, "' names no node");
        plans.emplace_back(a.substr(0, a.find(':')), nodes);
      } else {
        std::fprintf(stderr, "int8_quant_sim: unexpected argument '%s'\n", a.c_str());
        return usage();
      }
    }
    if (!eval.features.defined() || !cal.features.defined() || grid.empty() || plans.empty()) return usage();
    const EngineBuilder model = parse_onnx(model_path);
    Simulator sim(model, cal, eval, parse_grid(grid));
    std::printf("| plan | int8 nodes | engine |");
    for (const Scheme& s : kSchemes) std::printf(" %s |", s.name);
    std::printf("\n");
    int mismatches = 0;
    for (const auto& [label, nodes] : plans) {
      const auto quant = sim.attributes(nodes);
      const double engine = sim.engine_loss(quant);
      std::printf("| %s | %zu | %.2e |", label.c_str(), nodes.size(), engine);
      double simulated = 0.0;
      for (const Scheme& s : kSchemes) {
        const double l = sim.loss(nodes, quant, s);
        if (&s == &kSchemes[0]) simulated = l;
        std::printf(" %.2e |", l);
      }
      std::printf("\n");
      std::fflush(stdout);
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
