#include "backends/cpu/kernel_map.h"

#include <algorithm>

#include "backends/cpu/thread_pool.h"

namespace scn::cpu {

void SiteHash::build(const std::vector<int64_t>& keys) {
  size_t cap = 16;
  while (cap < keys.size() * 2) cap <<= 1;
  keys_.assign(cap, kEmpty);
  rows_.assign(cap, -1);
  mask_ = cap - 1;
  for (size_t i = 0; i < keys.size(); ++i) {
    size_t h = slot(keys[i]);
    while (keys_[h] != kEmpty) h = (h + 1) & mask_;
    keys_[h] = keys[i];
    rows_[h] = int32_t(i);
  }
}

void SiteSet::index() {
  const size_t n = coords.size() / 4;
  keys.resize(n);
  for (size_t i = 0; i < n; ++i)
    keys[i] = key(coords[4 * i], coords[4 * i + 1], coords[4 * i + 2], coords[4 * i + 3]);
  hash.build(keys);
}

int64_t KernelMap::num_pairs() const {
  return int64_t(std::count_if(out_in.begin(), out_in.end(), [](int32_t v) { return v >= 0; }));
}

namespace {
/// Kernel offset r -> (r0, r1, r2), flat index r0*K1*K2 + r1*K2 + r2.
inline void offset_of(int r, const Int3& k, int o[3]) {
  o[0] = r / (k[1] * k[2]);
  o[1] = (r / k[2]) % k[1];
  o[2] = r % k[2];
}
}  // namespace

KernelMap build_subm_map(const SiteSet& s, const MapSlot& slot, int threads) {
  KernelMap m;
  m.kernel_volume = slot.kernel_volume();
  m.num_out = s.size();
  m.out_in.assign(size_t(m.num_out) * size_t(m.kernel_volume), -1);
  const int K = m.kernel_volume;
  parallel_for(m.num_out, threads, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const int32_t* c = &s.coords[size_t(4 * o)];
      for (int r = 0; r < K; ++r) {
        int off[3];
        offset_of(r, slot.kernel_size, off);
        int32_t n[3];
        bool ok = true;
        for (int d = 0; d < 3; ++d) {
          // 64-bit: the offset times a large dilation may not fit int32.
          const int64_t nd = int64_t(c[d + 1]) + (int64_t(off[d]) - slot.kernel_size[d] / 2) * slot.dilation[d];
          ok = ok && nd >= 0 && nd < s.shape[d];
          n[d] = ok ? int32_t(nd) : 0;
        }
        if (ok) m.out_in[size_t(o * K + r)] = s.hash.find(s.key(c[0], n[0], n[1], n[2]));
      }
    }
  });
  return m;
}

KernelMap build_strided_map(const SiteSet& in, const MapSlot& slot, const Int3& out_shape, SiteSet& out,
                            int threads) {
  const int K = slot.kernel_volume();
  out.shape = out_shape;
  out.batch = in.batch;
  // Every (input, offset) pair that lands on a valid output site, as (output key, r, input row).
  struct Pair {
    int64_t key;
    int32_t r, i;
  };
  std::vector<Pair> pairs;
  pairs.reserve(size_t(in.size()) * 4);
  for (int64_t i = 0; i < in.size(); ++i) {
    const int32_t* c = &in.coords[size_t(4 * i)];
    for (int r = 0; r < K; ++r) {
      int off[3];
      offset_of(r, slot.kernel_size, off);
      int32_t o[3];
      bool ok = true;
      for (int d = 0; d < 3 && ok; ++d) {
        const int64_t nd = int64_t(c[d + 1]) + slot.padding[d] - int64_t(off[d]) * slot.dilation[d];
        ok = nd >= 0 && nd % slot.stride[d] == 0 && nd / slot.stride[d] < out_shape[d];
        o[d] = ok ? int32_t(nd / slot.stride[d]) : 0;
      }
      if (ok) pairs.push_back({out.key(c[0], o[0], o[1], o[2]), int32_t(r), int32_t(i)});
    }
  }
  std::vector<int64_t> keys(pairs.size());
  for (size_t p = 0; p < pairs.size(); ++p) keys[p] = pairs[p].key;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  out.keys = keys;
  out.coords.resize(keys.size() * 4);
  for (size_t o = 0; o < keys.size(); ++o) {
    int64_t k = keys[o];
    out.coords[4 * o + 3] = int32_t(k % out_shape[2]);
    k /= out_shape[2];
    out.coords[4 * o + 2] = int32_t(k % out_shape[1]);
    k /= out_shape[1];
    out.coords[4 * o + 1] = int32_t(k % out_shape[0]);
    out.coords[4 * o + 0] = int32_t(k / out_shape[0]);
  }
  out.hash.build(out.keys);
  KernelMap m;
  m.kernel_volume = K;
  m.num_out = int64_t(keys.size());
  m.out_in.assign(size_t(m.num_out) * size_t(K), -1);
  parallel_for(int64_t(pairs.size()), threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int32_t o = out.hash.find(pairs[size_t(p)].key);
      m.out_in[size_t(o) * size_t(K) + size_t(pairs[size_t(p)].r)] = pairs[size_t(p)].i;
    }
  });
  return m;
}

KernelMap build_inverse_map(const KernelMap& s, int64_t num_in_sites) {
  KernelMap m;
  m.kernel_volume = s.kernel_volume;
  m.num_out = num_in_sites;
  const int K = s.kernel_volume;
  m.out_in.assign(size_t(num_in_sites) * size_t(K), -1);
  for (int64_t o = 0; o < s.num_out; ++o)
    for (int r = 0; r < K; ++r) {
      const int32_t i = s.out_in[size_t(o * K + r)];
      if (i >= 0) m.out_in[size_t(i) * size_t(K) + size_t(r)] = int32_t(o);
    }
  return m;
}

}  // namespace scn::cpu
