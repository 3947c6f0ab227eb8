// Calibrator (scn/calibrate.h): |x| statistics of every value group from a float32 CPU engine, and
// the INT8 attributes (precisions, output precisions, ranges that agree per int8 value) from them.
#include <algorithm>
#include <cmath>

#include "backends/cpu/int8_observer.h"
#include "plan/int8_arith.h"
#include "plan/int8_plan.h"
#include "scn/calibrate.h"
#include "scn/error.h"

namespace scn {

struct Calibrator::State {
  EngineBuilder model;
  std::unique_ptr<Engine> fp32;
  int threads = 0;
  std::vector<int> group;            ///< per value
  std::vector<bool> numeric_reader;  ///< per value: read by a non-Relu node or a graph output
  std::vector<AbsHistogram> hist;    ///< per value (used at group roots)
  int64_t frames = 0;
};

// ---- Calibrator --------------------------------------------------------------------------------

Calibrator::Calibrator(const EngineBuilder& model, int bins, int num_threads)
    : s_(new State{model, nullptr, num_threads, {}, {}, {}, 0}) {
  const Graph& g = model.graph();
  SCN_CHECK(g.inputs.size() == 1, g.source, ": the model has ", g.inputs.size(),
            " inputs; calibration binds exactly one");
  SCN_CHECK(bins >= 16 && bins <= (1 << 20), g.source, ": Calibrator: bins = ", bins, " is not in [16, 2^20]");
  BuildOptions fp32;
  fp32.backend = Backend::Cpu;
  fp32.precision = Precision::Fp32;
  fp32.num_threads = num_threads;
  s_->fp32 = model.build(fp32);
  s_->group = int8::value_groups(g);
  s_->numeric_reader.assign(g.values.size(), false);
  s_->hist.assign(g.values.size(), AbsHistogram(bins));
  for (const Node& n : g.nodes)
    if (n.op != OpType::Relu)
      for (int u : n.inputs) s_->numeric_reader[size_t(u)] = true;
  for (int v : g.outputs) s_->numeric_reader[size_t(v)] = true;
}

Calibrator::~Calibrator() = default;

int64_t Calibrator::frames() const { return s_->frames; }
const Graph& Calibrator::graph() const { return s_->model.graph(); }
const EngineBuilder& Calibrator::model() const { return s_->model; }
Engine& Calibrator::fp32_engine() { return *s_->fp32; }
int Calibrator::num_threads() const { return s_->threads; }

void Calibrator::add_frame(const CalibrationFrame& f) {
  State& s = *s_;
  const Graph& g = s.model.graph();
  // an empty frame observes nothing, yet would count as calibrated
  SCN_CHECK(f.features.defined() && f.features.ndim() >= 1 && f.features.dim(0) > 0, g.source,
            ": a calibration frame needs voxels (", f.labels.features, " has none)");
  cpu::set_value_observer(*s.fp32, [&](const cpu::ObservedValue& v) {
    if (!v.coords || !s.numeric_reader[size_t(v.value)]) return;
    SCN_CHECK(!v.int8, "calibration observes a float engine, not an int8 one");
    s.hist[size_t(s.group[size_t(v.value)])].add(v.data, v.rows * v.channels);
  });
  try {
    s.fp32->set_input(0, f.features, f.indices, f.grid, f.batch_size, f.labels);
    s.fp32->forward();
  } catch (...) {
    cpu::set_value_observer(*s.fp32, {});
    throw;
  }
  cpu::set_value_observer(*s.fp32, {});
  (void)g;
  ++s.frames;
}

namespace {

/// The options a calibration reads, each field checked (an unknown method or a percentile outside (0, 100] once fell
/// back to absmax without a word).
void check_options(const Graph& g, const CalibrationOptions& o) {
  SCN_CHECK(o.method == CalibrationMethod::Absmax || o.method == CalibrationMethod::Percentile ||
                o.method == CalibrationMethod::Mse,
            g.source, ": CalibrationOptions.method = ", int(o.method), " is not a CalibrationMethod");
  SCN_CHECK(o.percentile > 0.0 && o.percentile <= 100.0, g.source, ": CalibrationOptions.percentile = ", o.percentile,
            " is not in (0, 100]");
  SCN_CHECK(o.keep_fp16_first >= 0, g.source, ": CalibrationOptions.keep_fp16_first = ", o.keep_fp16_first,
            " is negative");
}

}  // namespace

float Calibrator::range(int value, const CalibrationOptions& o) const {
  const Graph& g = s_->model.graph();
  SCN_CHECK(value >= 0 && size_t(value) < g.values.size(), g.source, ": Calibrator::range: value ", value,
            " does not exist (", g.values.size(), " values)");
  SCN_CHECK(s_->frames > 0, g.source, ": Calibrator::range: no calibration frame was added (add_frame)");
  check_options(g, o);
  const AbsHistogram& h = s_->hist[size_t(s_->group[size_t(value)])];
  double r = 0.0;
  switch (o.method) {
    case CalibrationMethod::Absmax:
      r = h.absmax();
      break;
    case CalibrationMethod::Percentile:
      r = h.percentile(o.percentile);
      break;
    case CalibrationMethod::Mse:
      r = h.mse_range();
      break;
  }
  if (!(r > 0.0)) r = h.absmax();  // e.g. more than p % zeros
  if (!(r > 0.0)) return 1.f;      // never held a non-zero value: any scale quantizes it exactly
  const float f = float(r);
  return f > 0.f && std::isfinite(f) ? f : 1.f;
}

std::map<std::string, QuantAttrs> Calibrator::attributes(const CalibrationOptions& o,
                                                         std::vector<CalibrationRow>* rows) const {
  const Graph& g = s_->model.graph();
  // no frame: every range would be the 1.0 of a value never observed
  SCN_CHECK(s_->frames > 0, g.source, ": Calibrator::attributes: no calibration frame was added (add_frame)");
  check_options(g, o);
  const std::vector<int>& group_ = s_->group;
  const std::vector<AbsHistogram>& hist_ = s_->hist;
  auto check_names = [&](const std::set<std::string>& names, const char* option) {
    for (const std::string& name : names) {
      const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
      SCN_CHECK(it != g.nodes.end(), g.source, ": ", option, ": no node named '", name, "'");
      SCN_CHECK(has_precision(it->op), g.source, ": ", option, ": node '", name, "' is a ", op_type_name(it->op),
                "; only SparseConvolution and Add nodes have a precision");
    }
  };
  if (o.explicit_int8)
    check_names(o.int8_nodes, "int8 nodes");
  else
    check_names(o.keep_fp16, "--keep-fp16");
  const size_t nn = g.nodes.size(), nv = g.values.size();
  // Which nodes run in int8.
  std::vector<bool> int8_node(nn, false);
  int conv_index = 0;
  for (size_t n = 0; n < nn; ++n) {
    const Node& node = g.nodes[n];
    if (o.explicit_int8) {
      int8_node[n] = has_precision(node.op) && o.int8_nodes.count(node.name);
    } else if (node.op == OpType::SparseConv) {
      int8_node[n] = !o.keep_fp16.count(node.name) && conv_index >= o.keep_fp16_first;
      ++conv_index;
    } else if (node.op == OpType::Add) {
      // An Add whose inputs both come from fp16 layers (or the graph input) stays in fp16.
      bool from_int8 = false;
      for (int u : node.inputs) {
        const int p = g.values[size_t(group_[size_t(u)])].producer;
        from_int8 = from_int8 || (p >= 0 && int8_node[size_t(p)]);
      }
      int8_node[n] = !o.keep_fp16.count(node.name) && from_int8;
    }
  }
  // Who reads each value group as a number.
  std::vector<std::vector<int>> readers(nv);
  std::vector<bool> is_output(nv, false);
  for (size_t n = 0; n < nn; ++n)
    if (g.nodes[n].op != OpType::Relu)
      for (int u : g.nodes[n].inputs) readers[size_t(group_[size_t(u)])].push_back(int(n));
  for (int v : g.outputs) is_output[size_t(group_[size_t(v)])] = true;
  auto output_int8 = [&](int v) {
    const int root = group_[size_t(v)];
    if (is_output[size_t(root)] || readers[size_t(root)].empty()) return false;
    for (int r : readers[size_t(root)]) {
      const OpType op = g.nodes[size_t(r)].op;
      const bool ok = (has_precision(op) && int8_node[size_t(r)]) || (op == OpType::ScatterDense && o.int8_scatter);
      if (!ok) return false;
    }
    return true;
  };
  auto absmax = [&](int v) { return hist_[size_t(group_[size_t(v)])].absmax(); };

  std::map<std::string, QuantAttrs> out;
  for (size_t n = 0; n < nn; ++n) {
    const Node& node = g.nodes[n];
    QuantAttrs q;
    CalibrationRow row;
    row.node = node.name;
    row.op = op_type_name(node.op);
    switch (node.op) {
      case OpType::SparseConv: {
        q.precision = int8_node[n] ? Precision::Int8 : Precision::Fp16;
        q.output_precision = output_int8(node.output) ? Precision::Int8 : Precision::Fp16;
        if (int8_node[n]) {
          q.input_dynamic_range = range(node.inputs[0], o);
          q.weight_dynamic_ranges = int8::weight_absmax_per_channel(node.conv.weight);
          for (float& r : q.weight_dynamic_ranges)
            if (!(r > 0.f)) r = 1.f;  // an all-zero channel: any positive range gives q_w = 0
          row.input_ranges = {q.input_dynamic_range};
          row.input_absmax = {absmax(node.inputs[0])};
          row.weight_range_max = *std::max_element(q.weight_dynamic_ranges.begin(), q.weight_dynamic_ranges.end());
        }
        break;
      }
      case OpType::Add:
        q.precision = int8_node[n] ? Precision::Int8 : Precision::Fp16;
        q.output_precision = output_int8(node.output) ? Precision::Int8 : Precision::Fp16;
        if (int8_node[n]) {
          q.input0_dynamic_range = range(node.inputs[0], o);
          q.input1_dynamic_range = range(node.inputs[1], o);
          row.input_ranges = {q.input0_dynamic_range, q.input1_dynamic_range};
          row.input_absmax = {absmax(node.inputs[0]), absmax(node.inputs[1])};
        }
        break;
      case OpType::ScatterDense:
        // Always written (NVIDIA's schema has it); used only when the input is stored as int8.
        q.input_dynamic_range = range(node.inputs[0], o);
        row.input_ranges = {q.input_dynamic_range};
        row.input_absmax = {absmax(node.inputs[0])};
        break;
      default:
        continue;
    }
    row.precision = q.precision;
    row.output_precision = q.output_precision;
    out[node.name] = q;
    if (rows) rows->push_back(row);
  }
  return out;
}

}  // namespace scn
