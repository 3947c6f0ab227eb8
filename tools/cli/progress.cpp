#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace scn::cli {

Progress::Progress(std::string label, int64_t total, bool enabled, std::FILE* out, double quiet_s)
    : label_(std::move(label)), total_(total), enabled_(enabled), out_(out), quiet_s_(quiet_s) {
  const auto start = std::chrono::steady_clock::now();
  clock = [start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
}

Progress Progress::for_stderr(std::string label, int64_t total) {
  return Progress(std::move(label), total, isatty(fileno(stderr)) == 1);
}

std::string Progress::line(const std::string& label, int64_t done, int64_t total, double elapsed_s) {
  char buf[160];
  const double share = total > 0 ? double(done) / double(total) : 0.0;
  int n = std::snprintf(buf, sizeof buf, "  %s  %lld/%lld  %.0f %%", label.c_str(), static_cast<long long>(done),
                        static_cast<long long>(total), 100.0 * share);
  if (done > 0 && done < total && n > 0 && size_t(n) < sizeof buf) {
    const double left = elapsed_s / double(done) * double(total - done);
    if (left >= 90)
      std::snprintf(buf + n, sizeof buf - size_t(n), "  ~%.0f min left", std::ceil(left / 60.0));
    else
      std::snprintf(buf + n, sizeof buf - size_t(n), "  ~%.0f s left", std::ceil(left));
  }
  return buf;
}

void Progress::update(int64_t done) {
  if (!enabled_) return;
  const double t = clock();
  if (t < quiet_s_ || (last_print_ >= 0 && t - last_print_ < 0.25)) return;
  last_print_ = t;
  std::string l = line(label_, done, total_, t);
  const size_t width = l.size();
  if (width < printed_width_) l += std::string(printed_width_ - width, ' ');  // cover a longer line
  printed_width_ = std::max(printed_width_, width);
  std::fprintf(out_, "\r%s", l.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (printed_width_ == 0) return;
  std::fprintf(out_, "\r%s\r", std::string(printed_width_, ' ').c_str());
  std::fflush(out_);
  printed_width_ = 0;
}

}  // namespace scn::cli
