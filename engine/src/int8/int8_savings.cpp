// measure_int8_savings (scn/calibrate.h): the time each node saves in int8 on a device, from the
// per-step profiles of the model's fp16 and all-int8 engines — what a timed precision search
// (PrecisionSearchOptions::int8_savings_ms) weighs the nodes by.
#include <set>

#include "scn/calibrate.h"
#include "scn/error.h"
#include "scn/timing.h"

namespace scn {

namespace {

/// Per node: the median over `repeats` profiles of the summed step times that belong to it (every step
/// but the kernel maps, the input and the densify, which run alike in both precisions; a Convert step
/// belongs to the node that reads the converted value).
std::map<std::string, double> node_times(Engine& e, int repeats, const char* what) {
  std::map<std::string, std::vector<double>> runs;
  for (int r = 0; r < repeats; ++r) {
    const std::vector<LayerTiming> prof = e.profile_layers();
    SCN_CHECK(!prof.empty(), e.graph().source, ": the ", what,
              " engine gives no per-step times (profile_layers), so int8 savings cannot be measured on its backend");
    std::map<std::string, double> sum;
    for (const LayerTiming& t : prof)
      if (t.op == op_type_name(OpType::SparseConv) || t.op == op_type_name(OpType::Add) ||
          t.op == op_type_name(OpType::Relu) || t.op == kStepConvert)
        sum[t.node] += t.ms;
    for (const auto& [node, ms] : sum) runs[node].push_back(ms);
  }
  std::map<std::string, double> med;
  for (const auto& [node, v] : runs) med[node] = summarize_timings(v).median;
  return med;
}

}  // namespace

double time_int8_plan(Calibrator& cal, const std::map<std::string, QuantAttrs>& attributes,
                      const CalibrationFrame& frame, const BuildOptions& device, int warmup, int runs) {
  check_timing_counts(cal.graph().source + ": time_int8_plan", warmup, runs);
  BuildOptions o = device;
  o.precision = Precision::Int8;
  std::unique_ptr<Engine> e = with_int8_attributes(cal.model(), attributes).build(o);
  e->set_input(0, frame.features, frame.indices, frame.grid, frame.batch_size, frame.labels);
  return summarize_timings(e->time_forward(warmup, runs)).median;
}

std::map<std::string, double> measure_int8_savings(Calibrator& cal, const CalibrationOptions& calibration,
                                                   const CalibrationFrame& frame, const BuildOptions& device,
                                                   int repeats) {
  const Graph& g = cal.graph();
  SCN_CHECK(repeats >= 1, g.source, ": measure_int8_savings needs at least one profile, got ", repeats);
  std::set<std::string> all;
  for (const Node& n : g.nodes)
    if (has_precision(n.op)) all.insert(n.name);
  const EngineBuilder model = with_int8_attributes(cal.model(), cal.attributes(with_int8_nodes(calibration, all)));
  std::map<std::string, double> t[2];
  const Precision precisions[2] = {Precision::Fp16, Precision::Int8};
  for (int k = 0; k < 2; ++k) {
    BuildOptions o = device;
    o.precision = precisions[k];
    std::unique_ptr<Engine> e = model.build(o);
    e->set_input(0, frame.features, frame.indices, frame.grid, frame.batch_size, frame.labels);
    e->forward();  // planning and, on the GPU, the autotuner's pass
    t[k] = node_times(*e, repeats, k == 0 ? "fp16" : "int8");
  }
  std::map<std::string, double> saving;
  for (const std::string& n : all) {
    const auto a = t[0].find(n), b = t[1].find(n);
    saving[n] = (a == t[0].end() ? 0.0 : a->second) - (b == t[1].end() ? 0.0 : b->second);
  }
  return saving;
}

}  // namespace scn
