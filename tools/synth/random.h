// Deterministic random streams of the synthetic frame generator: seed mixing (splitmix64), a
// Mersenne-Twister stream for scene layout and a cheap splitmix64 stream for per-point noise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

namespace scn::synth::detail {

constexpr double kPi = 3.14159265358979323846;

inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser: decorrelates derived seeds
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Per-point noise: a splitmix64 stream (much cheaper than a Mersenne Twister, same quality for
// this purpose), seeded from the options' seed like everything else.
class FastRng {
 public:
  explicit FastRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    uint64_t x = state_;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  bool chance(double p) { return uniform() < p; }
  // Approximately standard normal: the sum of four 16-bit uniforms.
  double normal() {
    const uint64_t x = next();
    const double sum = double(x & 0xffff) + double((x >> 16) & 0xffff) + double((x >> 32) & 0xffff) + double(x >> 48);
    return (sum / 65536.0 - 2.0) * 1.7320508075688772;
  }

 private:
  uint64_t state_;
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : eng_(seed) {}
  double uniform() { return double(eng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  bool chance(double p) { return uniform() < p; }
  int below(int n) { return std::min(n - 1, int(uniform() * n)); }
  double normal() {  // Box-Muller, both values used
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = uniform();
    while (u <= 0.0) u = uniform();
    const double r = std::sqrt(-2.0 * std::log(u));
    const double a = 2.0 * kPi * uniform();
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  std::mt19937_64 eng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace scn::synth::detail
