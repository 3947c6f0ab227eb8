#include "plan/tuning_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "scn/file_io.h"

#ifndef SCN_VERSION_STRING
#define SCN_VERSION_STRING "unknown"
#endif

namespace scn {

namespace {

constexpr const char* kHeaderPrefix = "scn tuning cache ";

class Fnv {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 0x100000001b3ull;
    }
  }
  template <typename T>
  void pod(const T& v) {
    bytes(&v, sizeof(v));
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    bytes(s.data(), s.size());
  }
  void ints(const std::vector<int64_t>& v) {
    pod(uint64_t(v.size()));
    for (int64_t x : v) pod(x);
  }
  void tensor(const Tensor& t) {
    pod(t.defined());
    if (!t.defined()) return;
    pod(int(t.dtype()));
    ints(t.shape());
    const Tensor h = t.device() == Device::Host ? t : t.to(Device::Host);
    bytes(h.data(), h.bytes());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  size_t p0 = 0;
  while (true) {
    const size_t p1 = line.find('\t', p0);
    f.push_back(line.substr(p0, p1 == std::string::npos ? std::string::npos : p1 - p0));
    if (p1 == std::string::npos) break;
    p0 = p1 + 1;
  }
  return f;
}

}  // namespace

const char* scn_version() { return SCN_VERSION_STRING; }

std::string model_digest(const Graph& g) {
  Fnv h;
  h.pod(uint64_t(g.nodes.size()));
  for (const Node& n : g.nodes) {
    h.pod(int(n.op));
    h.str(n.name);
    h.pod(uint64_t(n.inputs.size()));
    for (int v : n.inputs) h.pod(v);
    h.pod(n.output);
    const ConvAttrs& c = n.conv;
    h.pod(c.in_channels);
    h.pod(c.out_channels);
    for (const Int3* a : {&c.kernel_size, &c.stride, &c.padding, &c.dilation})
      for (int d = 0; d < 3; ++d) h.pod((*a)[d]);
    h.pod(c.subm);
    h.pod(c.inverse);
    h.str(c.rulebook);
    h.pod(int(c.activation));
    h.pod(c.activation_alpha);
    h.pod(c.output_bound);
    h.tensor(c.weight);
    h.tensor(c.bias);
    for (int d = 0; d < 3; ++d) h.pod(n.dense.input_spatial_shape[d]);
    h.ints(n.dense.output_shape);
    h.str(n.dense.format);
    h.str(n.dense.layout);
    h.ints(n.dims);
    h.pod(int(n.quant.precision));
    h.pod(int(n.quant.output_precision));
    h.pod(n.quant.input_dynamic_range);
    h.pod(n.quant.input0_dynamic_range);
    h.pod(n.quant.input1_dynamic_range);
    h.pod(uint64_t(n.quant.weight_dynamic_ranges.size()));
    for (float r : n.quant.weight_dynamic_ranges) h.pod(r);
  }
  h.pod(uint64_t(g.values.size()));
  for (const Value& v : g.values) {
    h.str(v.name);
    h.pod(v.sparse);
    h.pod(v.channels);
    h.ints(v.shape);
  }
  for (const std::vector<int>* io : {&g.inputs, &g.outputs}) {
    h.pod(uint64_t(io->size()));
    for (int v : *io) h.pod(v);
  }
  return hex16(h.value());
}

std::string names_digest(const std::vector<std::string>& names) {
  Fnv h;
  h.pod(uint64_t(names.size()));
  for (const std::string& n : names) h.str(n);
  return hex16(h.value());
}

const TuningBucket* TuningCache::bucket(const std::string& label) const {
  for (const TuningBucket& b : buckets)
    if (b.label == label) return &b;
  return nullptr;
}

std::string serialize(const TuningCache& c) {
  std::ostringstream os;
  os << kHeaderPrefix << kTuningCacheFormat << "\n";
  for (const auto& [f, v] : c.key) os << "key\t" << f << "\t" << v << "\n";
  size_t lines = 0;
  for (const TuningBucket& b : c.buckets)
    for (const auto& [n, t] : b.tiles) {
      os << "tile\t" << b.label << "\t" << n << "\t" << t << "\n";
      ++lines;
    }
  os << "end\t" << lines << "\n";
  return os.str();
}

TuningCache parse_tuning_cache(const std::string& text, const std::string& file) {
  TuningCache c;
  std::istringstream is(text);
  std::string line;
  int no = 0;
  auto fail = [&](const std::string& why) {
    SCN_FAIL(file, ": not a valid scn tuning cache (line ", no, ": ", why,
             "); delete it to re-tune, or give another CudaOptions::tuning_cache");
  };
  bool ended = false;
  size_t lines = 0;
  while (std::getline(is, line)) {
    ++no;
    if (no == 1) {
      const std::string prefix = kHeaderPrefix;
      const std::string version = line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : "";
      char* endp = nullptr;
      errno = 0;
      const long v = std::strtol(version.c_str(), &endp, 10);
      if (version.empty() || *endp != '\0' || errno != 0 || v < 1 || v > 1000000)
        fail("expected the header '" + prefix + std::to_string(kTuningCacheFormat) + "'");
      c.format = int(v);
      if (c.format != kTuningCacheFormat) return c;  // another format: nothing else is read (re-tune)
      continue;
    }
    if (ended) fail("text after the end line");
    const std::vector<std::string> f = split_tabs(line);
    if (f[0] == "key" && f.size() == 3 && !f[1].empty()) {
      if (lines) fail("a key line after the tile lines");
      c.key.emplace_back(f[1], f[2]);
    } else if (f[0] == "tile" && f.size() == 4 && !f[1].empty() && !f[2].empty() && !f[3].empty()) {
      if (c.buckets.empty() || c.buckets.back().label != f[1]) {
        if (c.bucket(f[1])) fail("the tile lines of bucket '" + f[1] + "' are not together");
        c.buckets.push_back(TuningBucket{f[1], {}});
      }
      c.buckets.back().tiles.emplace_back(f[2], f[3]);
      ++lines;
    } else if (f[0] == "end" && f.size() == 2) {
      char* endp = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(f[1].c_str(), &endp, 10);
      if (f[1].empty() || *endp != '\0' || errno != 0 || n != lines)
        fail("the end line counts " + f[1] + " tiles, the file has " + std::to_string(lines));
      ended = true;
    } else {
      fail("unexpected '" + line.substr(0, 60) + "'");
    }
  }
  if (no == 0) fail("the file is empty");
  if (!ended) {
    ++no;
    fail("truncated: no end line");
  }
  return c;
}

std::optional<TuningCache> read_tuning_cache(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  SCN_CHECK(!S_ISDIR(st.st_mode), path, ": is a directory, not a tuning cache file");
  std::ifstream f(path, std::ios::binary);
  SCN_CHECK(bool(f), path, ": cannot read the tuning cache: ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_tuning_cache(ss.str(), path);
}

void write_tuning_cache(const std::string& path, const TuningCache& cache) {
  write_file_atomic(path, serialize(cache));
}

std::string key_difference(const TuningCache& file, const TuningCache& now) {
  if (file.format != now.format)
    return "format: " + std::to_string(file.format) + " in the file, " + std::to_string(now.format) + " here";
  for (size_t i = 0; i < now.key.size(); ++i) {
    const std::string& f = now.key[i].first;
    std::string old = "(absent)";
    for (const auto& [k, v] : file.key)
      if (k == f) old = "'" + v + "'";
    if (old != "'" + now.key[i].second + "'") return f + ": " + old + " in the file, '" + now.key[i].second + "' here";
  }
  if (file.key.size() != now.key.size()) return "the file has other key fields";
  return "";
}

}  // namespace scn
