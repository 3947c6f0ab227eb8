// Post-training INT8 calibration (`scn calibrate`, docs/int8.md "Calibration"): activation
// statistics collected from a float32 CPU forward, dynamic ranges from them, and the INT8
// attributes (precision, output_precision, input / input0 / input1 / weight dynamic ranges) of
// every SparseConvolution, Add and ScatterDense node.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/int8_observer.h"
#include "scn/graph.h"

namespace scn::cli {

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
CalibrationMethod parse_calibration_method(const std::string& s);
const char* calibration_method_name(CalibrationMethod m);

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::Absmax;
  double percentile = 99.99;
  std::set<std::string> keep_fp16;  ///< SparseConvolution / Add node names that stay fp16
  int keep_fp16_first = 0;          ///< the first N SparseConvolution nodes (graph order) stay fp16
  bool int8_scatter = false;        ///< let the producer of a ScatterDense input store int8
};

/// One line of the calibration report.
struct CalibrationRow {
  std::string node, op;
  Precision precision = Precision::Fp16, output_precision = Precision::Fp16;
  std::vector<float> input_ranges;  ///< the ranges written for the inputs (empty for fp16 nodes)
  std::vector<double> input_absmax; ///< observed absmax of those inputs
  float weight_range_max = -1.f;    ///< SparseConvolution: max of weight_dynamic_ranges
};

/// Collects |x| statistics of every value group (a value and the Relu outputs chained on it, which
/// share one int8 scale) that some node reads as a number (readers other than Relu, and graph outputs).
class Calibrator {
 public:
  explicit Calibrator(const Graph& graph, int bins = 4096);
  /// Feed it from cpu::set_value_observer on a float32 CPU engine.
  void observe(const cpu::ObservedValue& v);
  int64_t frames() const { return frames_; }

  /// The INT8 attributes of every SparseConvolution, Add and ScatterDense node, keyed by node name;
  /// `rows` (optional) receives the report. Throws scn::Error for a keep-fp16 name that is not a
  /// SparseConvolution or Add node of the graph.
  std::map<std::string, QuantAttrs> attributes(const CalibrationOptions& options,
                                               std::vector<CalibrationRow>* rows = nullptr) const;
  /// The dynamic range of value v's group by the method (1 when it never held a non-zero value).
  float range(int value, const CalibrationOptions& options) const;

 private:
  const Graph& g_;
  std::vector<int> group_;             ///< per value
  std::vector<bool> numeric_reader_;   ///< per value: read by a non-Relu node or a graph output
  std::vector<AbsHistogram> hist_;     ///< per value (used at group roots)
  int64_t frames_ = 0;
};

}  // namespace scn::cli
