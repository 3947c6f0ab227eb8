// Shared by the fuzz targets: the bytes under test as a file path without touching the disk
// (an anonymous memory file, read back through /proc/self/fd), and a small fixed frame.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/half.h"
#include "scn/engine.h"

namespace scn::fuzz {

/// An in-memory file holding the current input; path() names it for APIs that take a path.
class MemFile {
 public:
  explicit MemFile(const char* name) {
    fd_ = ::memfd_create(name, 0);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, off_t(done));
      if (n <= 0) std::abort();
      done += size_t(n);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

/// SCN_FUZZ_DEBUG=1 prints what happened to each input (for triage and for checking that the
/// seeds reach the forward pass).
inline bool debug() {
  static const bool on = [] {
    const char* v = std::getenv("SCN_FUZZ_DEBUG");
    return v && *v && *v != '0';
  }();
  return on;
}

/// The grid of the seed models (tests/onnx_parser's small_centerpoint): 9 x 8 x 8.
inline Int3 fuzz_grid() { return {9, 8, 8}; }

/// `rows` distinct sites of fuzz_grid() (batch 0) in a fixed scrambled order.
inline Tensor fuzz_indices(int64_t rows) {
  const Int3 g = fuzz_grid();
  const int64_t cells = int64_t(g[0]) * g[1] * g[2];
  if (rows > cells) rows = cells;
  Tensor t = Tensor::empty({rows, 4}, DType::Int32);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = (r * 211) % cells;  // 211 is prime to 576: a permutation of the cells
    int32_t* p = t.ptr<int32_t>() + 4 * r;
    p[0] = 0;
    p[1] = int32_t(c / (int64_t(g[1]) * g[2]));
    p[2] = int32_t((c / g[2]) % g[1]);
    p[3] = int32_t(c % g[2]);
  }
  return t;
}

/// Finite fp16 features [rows, channels] of varied sign and size (some zeros).
inline Tensor fuzz_features(int64_t rows, int64_t channels) {
  Tensor t = Tensor::empty({rows, channels}, DType::Float16);
  for (int64_t i = 0; i < rows * channels; ++i)
    t.ptr<uint16_t>()[i] = float_to_half(i % 7 == 3 ? 0.f : float((i * 37) % 23) / 7.f - 1.4f);
  return t;
}

/// Reads every output the way a caller would (features, and indices of sparse outputs).
inline void touch_outputs(Engine& e) {
  for (int i = 0; i < e.num_outputs(); ++i) {
    const Tensor out = e.output(i).to(Device::Host);
    volatile uint8_t sink = 0;
    if (out.bytes()) sink = static_cast<const uint8_t*>(out.data())[out.bytes() - 1];
    (void)sink;
    if (e.output_is_sparse(i)) e.output_indices(i);
  }
}

}  // namespace scn::fuzz
