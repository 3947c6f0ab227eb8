// scn — post-training INT8 calibration (docs/int8.md "Calibration"), the library behind
// `scn calibrate`. A Calibrator runs the float32 CPU engine of a model over calibration frames,
// collects |x| statistics of every activation, and turns them into the INT8 attributes of every
// SparseConvolution, Add and ScatterDense node (precision, output_precision, input / input0 /
// input1 / weight dynamic ranges); write_onnx_with_quant (scn/onnx.h) writes them into a copy of
// the ONNX file. evaluate_int8 measures an INT8 plan against FP32 and search_int8_plan chooses
// which layers stay FP16 for a target accuracy.
//
//   scn::Calibrator cal(scn::parse_onnx("model.onnx"));
//   cal.add_frame(features, indices, {41, 1440, 1440});
//   auto quant = cal.attributes({});                     // every conv and Add int8, absmax ranges
//   scn::write_onnx_with_quant("model.onnx", "model.int8.onnx", quant);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "scn/engine.h"

namespace scn {

/// Histogram of |x| over [0, bins * width). The width doubles (neighbouring bins merge, so the
/// counts stay exact) whenever a larger value arrives; exact zeros are counted apart.
class AbsHistogram {
 public:
  explicit AbsHistogram(int bins = 4096);
  void add(const float* x, int64_t n);

  int64_t count() const { return count_; }  ///< every value added, zeros included
  int64_t zeros() const { return zeros_; }
  double absmax() const { return absmax_; }
  double width() const { return width_; }
  const std::vector<int64_t>& bins() const { return bins_; }

  /// The smallest bin upper edge r (capped at absmax) such that at least p % of all values
  /// (zeros included) have |x| <= r. p in (0, 100].
  double percentile(double p) const;
  /// The range R (a bin upper edge, at most absmax) minimising the mean squared error of
  /// quantize/dequantize with scale R / 127 over the histogram (bin centres stand for their values;
  /// zeros are exact and do not count).
  double mse_range() const;

 private:
  std::vector<int64_t> bins_;
  double width_ = 0.0;
  double absmax_ = 0.0;
  int64_t count_ = 0, zeros_ = 0;
};

enum class CalibrationMethod { Absmax, Percentile, Mse };
/// "absmax" (or "max"), "percentile", "mse"; anything else is an scn::Error.
CalibrationMethod parse_calibration_method(const std::string& s);
const char* calibration_method_name(CalibrationMethod m);

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::Absmax;
  double percentile = 99.99;
  std::set<std::string> keep_fp16;  ///< SparseConvolution / Add node names that stay fp16
  int keep_fp16_first = 0;          ///< the first N SparseConvolution nodes (graph order) stay fp16
  bool int8_scatter = false;        ///< let the producer of a ScatterDense input store int8
  /// When true, exactly the SparseConvolution / Add nodes named in `int8_nodes` run int8 and every
  /// other one fp16 (keep_fp16 and keep_fp16_first are not used). search_int8_plan sets it.
  bool explicit_int8 = false;
  std::set<std::string> int8_nodes;
};

/// True for the ops that carry a precision (SparseConvolution and Add): the nodes a plan runs int8 or fp16.
bool has_precision(OpType op);
/// `base` with exactly `nodes` in int8 and every other SparseConvolution / Add fp16 (explicit_int8).
CalibrationOptions with_int8_nodes(const CalibrationOptions& base, const std::set<std::string>& nodes);

/// One line of the calibration report.
struct CalibrationRow {
  std::string node, op;
  Precision precision = Precision::Fp16, output_precision = Precision::Fp16;
  std::vector<float> input_ranges;   ///< the ranges written for the inputs (empty for fp16 nodes)
  std::vector<double> input_absmax;  ///< observed absmax of those inputs
  float weight_range_max = -1.f;     ///< SparseConvolution: max of weight_dynamic_ranges
};

/// A frame for calibration or evaluation (host tensors, as Engine::set_input takes them).
struct CalibrationFrame {
  Tensor features, indices;
  Int3 grid{0, 0, 0};
  int batch_size = 1;
  InputLabels labels;
};

/// Collects |x| statistics of every value group (a value and the Relu outputs chained on it, which
/// share one int8 scale) that some node reads as a number (readers other than Relu, and graph
/// outputs), from a float32 CPU engine of the model.
class Calibrator {
 public:
  /// Builds the float32 CPU engine of `model` (one graph input). bins: histogram bins per value group, 16 .. 2^20.
  /// num_threads 0: all cores.
  explicit Calibrator(const EngineBuilder& model, int bins = 4096, int num_threads = 0);
  ~Calibrator();
  Calibrator(const Calibrator&) = delete;
  Calibrator& operator=(const Calibrator&) = delete;

  /// Runs the float32 engine on the frame (one with voxels) and adds its activations to the statistics.
  void add_frame(const CalibrationFrame& frame);
  int64_t frames() const;
  const Graph& graph() const;
  const EngineBuilder& model() const;
  /// The float32 CPU engine (the reference evaluate_int8 compares with).
  Engine& fp32_engine();
  int num_threads() const;

  /// The INT8 attributes of every SparseConvolution, Add and ScatterDense node, keyed by node
  /// name; `rows` (optional) receives the report. Throws scn::Error for a keep-fp16 (or int8_nodes)
  /// name that is not a SparseConvolution or Add node of the graph.
  std::map<std::string, QuantAttrs> attributes(const CalibrationOptions& options,
                                               std::vector<CalibrationRow>* rows = nullptr) const;
  /// The dynamic range of value v's group by the method (1 when it never held a non-zero value).
  float range(int value, const CalibrationOptions& options) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// A copy of `model` whose nodes carry `quant` (nodes not named keep their attributes), rebuilt
/// through the EngineBuilder pushes, so every attribute is validated as on import. The in-memory
/// equivalent of write_onnx_with_quant followed by parse_onnx.
EngineBuilder with_int8_attributes(const EngineBuilder& model, const std::map<std::string, QuantAttrs>& quant);

/// How many nodes that have a precision (SparseConvolution, Add) carry precision int8.
struct Int8NodeCount {
  int int8 = 0;   ///< nodes with precision int8
  int total = 0;  ///< SparseConvolution and Add nodes
};
Int8NodeCount count_int8_nodes(const Graph& graph);
/// The notice `scn run --precision int8` prints: that no node carries INT8 attributes (the int8
/// engine is then the fp16 engine), or how many of how many do.
std::string int8_node_notice(const Graph& graph);

/// INT8 against FP32 on one frame.
struct LayerAccuracy {
  std::string node, value;
  bool int8 = false;  ///< stored as int8
  double cosine = 1.0, rel_l2 = 0.0;
};
struct OutputAccuracy {
  std::string name;
  double cosine = 1.0, rel_l2 = 0.0, max_abs = 0.0;
};
struct AccuracyReport {
  std::vector<LayerAccuracy> layers;    ///< every sparse value, graph order (when asked for)
  std::vector<OutputAccuracy> outputs;  ///< every graph output
  double min_cosine = 1.0;              ///< the smallest output cosine
};

/// Builds the INT8 CPU engine of the calibrator's model with `quant` and compares it with the
/// float32 engine on `frame`: every output (cosine, rel-L2, max |a - b|) and, with per_layer,
/// every sparse value (both engines compute the same sites in the same order).
AccuracyReport evaluate_int8(Calibrator& calibrator, const std::map<std::string, QuantAttrs>& quant,
                             const CalibrationFrame& frame, bool per_layer = false);

/// `scn calibrate` warns when the evaluated INT8 cosine is below this (docs/int8.md).
constexpr double kPoorInt8Cosine = 0.99;

// ---- INT8 by target accuracy ---------------------------------------------------------------------

struct PrecisionSearchOptions {
  double min_cosine = 0.999;       ///< the bound on every output of every evaluation frame
  CalibrationOptions calibration;  ///< method, percentile, int8_scatter (the precision fields are set by the search)
  /// Time each node saves when it runs int8 on the device the plan is for (node name -> ms;
  /// measure_int8_savings). Empty: nodes are weighed by their MACs. Set: only the nodes that save time
  /// (> 0; missing names save none) are tried, in increasing sensitivity per ms saved, so the accuracy
  /// the bound allows goes to the layers where int8 is faster — the others stay fp16.
  std::map<std::string, double> int8_savings_ms;
  /// With int8_savings_ms: the measured forward time (ms) of a plan, given its INT8 attributes
  /// (time_int8_plan binds one to a device and frame). A node's savings measured in the all-int8 engine
  /// do not add up in a mixed plan (the conversions at its fp16 neighbours cost time), so a candidate is
  /// then kept only when its plan meets the bound and also runs faster than the best plan so far by more
  /// than plan_ms_margin, starting from the all-fp16 plan. Unset: the savings are taken as additive.
  std::function<double(const std::map<std::string, QuantAttrs>&)> plan_ms;
  double plan_ms_margin = 0.001;
};

/// One SparseConvolution / Add node of a searched plan.
struct PlanNode {
  std::string node, op;
  bool int8 = false;
  /// 1 - cosine of the output when this node alone runs int8 (every other node fp16), the
  /// smallest over the evaluation frames' outputs; the search tries nodes in increasing
  /// sensitivity per unit of work.
  double sensitivity = 0.0;
  /// Multiply-accumulates on the evaluation frames: SparseConvolution: output sites x kernel
  /// volume x Cin x Cout (the dense-kernel count, an upper bound of the gathered pairs); Add:
  /// sites x channels.
  double macs = 0.0;
  /// PrecisionSearchOptions::int8_savings_ms of the node (0 when the search is not timed).
  double saving_ms = 0.0;
};

struct PrecisionPlan {
  std::vector<PlanNode> nodes;                   ///< graph order
  std::map<std::string, QuantAttrs> attributes;  ///< the chosen plan's INT8 attributes
  double cosine = 1.0;                           ///< of the chosen plan (smallest over frames and outputs)
  double fp16_cosine = 1.0;                      ///< every node fp16
  double all_int8_cosine = 1.0;                  ///< every node int8
  double int8_macs = 0.0, total_macs = 0.0;
  bool timed = false;           ///< the search weighed nodes by PrecisionSearchOptions::int8_savings_ms
  double int8_saving_ms = 0.0;  ///< the chosen int8 nodes' savings, summed (timed searches)
  double fp16_ms = 0.0;         ///< with plan_ms: the all-fp16 plan's forward time
  double ms = 0.0;              ///< with plan_ms: the chosen plan's forward time
  int timings = 0;              ///< plans timed with plan_ms
  /// With plan_ms: runs of a level's nodes not evaluated, their single-node losses summing past twice
  /// what the bound leaves (search_int8_plan)
  int runs_skipped = 0;
  int evaluations = 0;          ///< INT8 engines run (one per plan tried)
};

/// Chooses which SparseConvolution / Add nodes run int8 so that the INT8 engine's cosine against
/// FP32 is >= options.min_cosine on every output of every frame, keeping as many MACs int8 as the
/// greedy search finds (or, with options.int8_savings_ms, as much saved time): the all-int8 plan when
/// it meets the bound; else, from the all-fp16 plan, nodes are added one at a time in increasing
/// sensitivity per MAC (per ms saved), each kept when the plan still meets the bound (with plan_ms:
/// and runs faster; whole levels are tried first, then runs of a level's consecutive nodes). Throws
/// scn::Error (with the measured cosines) when no plan with an int8 node meets the bound: the
/// all-fp16 plan is below it, or no single node (that saves time) can be int8.
PrecisionPlan search_int8_plan(Calibrator& calibrator, const std::vector<CalibrationFrame>& eval_frames,
                               const PrecisionSearchOptions& options);

/// The median forward time (ms, Engine::time_forward after `warmup` forwards) of the calibrator's model
/// with `attributes`, built with `device` in int8 and bound to `frame`: PrecisionSearchOptions::plan_ms.
double time_int8_plan(Calibrator& calibrator, const std::map<std::string, QuantAttrs>& attributes,
                      const CalibrationFrame& frame, const BuildOptions& device, int warmup = 20, int runs = 200);

/// The time each SparseConvolution / Add node saves in int8 on `device` (its backend, GPU, options):
/// the calibrator's model with every node int8 (ranges from `calibration`) is built twice with that
/// backend, in fp16 and in int8, bound to `frame`, and each engine's profile_layers() is taken
/// `repeats` times; a node's time is the median over those profiles of its steps (its conv with any
/// fused Add and ReLU, or its own Add step, and the Convert steps before it), and its saving is the
/// fp16 time minus the int8 time (ms; may be negative). Throws scn::Error naming the backend when it
/// gives no per-step times or cannot build the engines (e.g. Backend::Cuda without a GPU).
std::map<std::string, double> measure_int8_savings(Calibrator& calibrator, const CalibrationOptions& calibration,
                                                   const CalibrationFrame& frame, const BuildOptions& device,
                                                   int repeats = 5);

}  // namespace scn
