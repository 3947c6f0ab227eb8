#include "calibration.h"

#include <algorithm>
#include <cmath>

#include "plan/int8_arith.h"
#include "plan/int8_plan.h"
#include "scn/error.h"

namespace scn::cli {

// ---- AbsHistogram ------------------------------------------------------------------------------

AbsHistogram::AbsHistogram(int bins) : bins_(size_t(std::max(bins, 2)) & ~size_t(1), 0) {}

void AbsHistogram::add(const float* x, int64_t n) {
  double batch_max = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(double(x[i]));
    if (std::isfinite(a)) batch_max = std::max(batch_max, a);
  }
  if (batch_max > 0.0) {
    const double nb = double(bins_.size());
    if (width_ == 0.0) width_ = batch_max / nb * (1.0 + 1e-9);
    while (batch_max >= width_ * nb) {  // double the width: bin i takes old bins 2i and 2i+1
      for (size_t i = 0; i < bins_.size() / 2; ++i) bins_[i] = bins_[2 * i] + bins_[2 * i + 1];
      std::fill(bins_.begin() + std::ptrdiff_t(bins_.size() / 2), bins_.end(), 0);
      width_ *= 2.0;
    }
    absmax_ = std::max(absmax_, batch_max);
  }
  const int64_t last = int64_t(bins_.size()) - 1;
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(double(x[i]));
    if (!std::isfinite(a)) continue;  // a float32 forward of finite weights and inputs has none
    ++count_;
    if (a == 0.0) {
      ++zeros_;
      continue;
    }
    ++bins_[size_t(std::min(last, int64_t(a / width_)))];
  }
}

double AbsHistogram::percentile(double p) const {
  if (count_ == 0 || absmax_ == 0.0) return 0.0;
  const double target = std::ceil(p / 100.0 * double(count_));
  int64_t cum = zeros_;
  if (double(cum) >= target) return 0.0;
  for (size_t i = 0; i < bins_.size(); ++i) {
    cum += bins_[i];
    if (double(cum) >= target) return std::min(double(i + 1) * width_, absmax_);
  }
  return absmax_;
}

double AbsHistogram::mse_range() const {
  if (absmax_ == 0.0) return 0.0;
  const size_t nb = bins_.size();
  // Candidates: about 1024 bin upper edges up to the one holding absmax, then absmax itself.
  const size_t top = std::min(nb, size_t(std::ceil(absmax_ / width_)));
  const size_t step = std::max<size_t>(1, top / 1024);
  double best = absmax_, best_err = INFINITY;
  for (size_t k = step;; k += step) {
    const double r = std::min(double(k) * width_, absmax_);
    const double s = r / 127.0;
    double err = 0.0;
    for (size_t i = 0; i < top; ++i) {
      if (bins_[i] == 0) continue;
      const double c = (double(i) + 0.5) * width_;
      double e;
      if (c > r)
        e = (c - r) * (c - r);  // clipped to +-R
      else if (c < 0.5 * s)
        e = c * c;  // rounds to zero
      else
        e = s * s / 12.0;  // uniform rounding noise
      err += double(bins_[i]) * e;
    }
    if (err < best_err) {
      best_err = err;
      best = r;
    }
    if (r >= absmax_) break;
  }
  return best;
}

CalibrationMethod parse_calibration_method(const std::string& s) {
  if (s == "absmax" || s == "max") return CalibrationMethod::Absmax;
  if (s == "percentile") return CalibrationMethod::Percentile;
  if (s == "mse") return CalibrationMethod::Mse;
  SCN_FAIL("unknown calibration method '", s, "' (expected absmax, percentile or mse)");
}

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::Absmax: return "absmax";
    case CalibrationMethod::Percentile: return "percentile";
    case CalibrationMethod::Mse: return "mse";
  }
  return "?";
}

// ---- Calibrator --------------------------------------------------------------------------------

Calibrator::Calibrator(const Graph& graph, int bins)
    : g_(graph),
      group_(int8::value_groups(graph)),
      numeric_reader_(graph.values.size(), false),
      hist_(graph.values.size(), AbsHistogram(bins)) {
  for (const Node& n : g_.nodes)
    if (n.op != OpType::Relu)
      for (int u : n.inputs) numeric_reader_[size_t(u)] = true;
  for (int v : g_.outputs) numeric_reader_[size_t(v)] = true;
}

void Calibrator::observe(const cpu::ObservedValue& v) {
  if (g_.nodes[size_t(v.node)].op == OpType::Input && v.value == g_.inputs.front()) ++frames_;
  if (!v.coords || !numeric_reader_[size_t(v.value)]) return;
  SCN_CHECK(!v.int8, "calibration observes a float engine, not an int8 one");
  hist_[size_t(group_[size_t(v.value)])].add(v.data, v.rows * v.channels);
}

float Calibrator::range(int value, const CalibrationOptions& o) const {
  const AbsHistogram& h = hist_[size_t(group_[size_t(value)])];
  double r = 0.0;
  switch (o.method) {
    case CalibrationMethod::Absmax: r = h.absmax(); break;
    case CalibrationMethod::Percentile: r = h.percentile(o.percentile); break;
    case CalibrationMethod::Mse: r = h.mse_range(); break;
  }
  if (!(r > 0.0)) r = h.absmax();  // e.g. more than p % zeros
  if (!(r > 0.0)) return 1.f;      // never held a non-zero value: any scale quantizes it exactly
  const float f = float(r);
  return f > 0.f && std::isfinite(f) ? f : 1.f;
}

std::map<std::string, QuantAttrs> Calibrator::attributes(const CalibrationOptions& o,
                                                         std::vector<CalibrationRow>* rows) const {
  const Graph& g = g_;
  for (const std::string& name : o.keep_fp16) {
    const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
    SCN_CHECK(it != g.nodes.end(), g.source, ": --keep-fp16: no node named '", name, "'");
    SCN_CHECK(it->op == OpType::SparseConv || it->op == OpType::Add, g.source, ": --keep-fp16: node '", name,
              "' is a ", op_type_name(it->op), "; only SparseConvolution and Add nodes have a precision");
  }
  const size_t nn = g.nodes.size(), nv = g.values.size();
  // Which nodes run in int8.
  std::vector<bool> int8_node(nn, false);
  int conv_index = 0;
  for (size_t n = 0; n < nn; ++n) {
    const Node& node = g.nodes[n];
    if (node.op == OpType::SparseConv) {
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
      const bool ok = ((op == OpType::SparseConv || op == OpType::Add) && int8_node[size_t(r)]) ||
                      (op == OpType::ScatterDense && o.int8_scatter);
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

}  // namespace scn::cli
