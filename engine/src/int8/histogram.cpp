// AbsHistogram and the calibration range methods (scn/calibrate.h, docs/int8.md "Calibration").
#include <algorithm>
#include <cmath>

#include "scn/calibrate.h"
#include "scn/error.h"

namespace scn {

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
    case CalibrationMethod::Absmax:
      return "absmax";
    case CalibrationMethod::Percentile:
      return "percentile";
    case CalibrationMethod::Mse:
      return "mse";
  }
  return "?";
}

}  // namespace scn
