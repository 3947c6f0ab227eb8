#include "common.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scn/file_io.h"
#include "scn/inspect.h"

namespace scn::cli {

namespace {

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  parts.push_back(cur);
  return parts;
}

}  // namespace

Int3 parse_grid(const std::string& text) {
  std::string lower = text;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::vector<std::string> parts = split(lower, 'x');
  Int3 g{0, 0, 0};
  bool ok = parts.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    int64_t v = 0;
    ok = parse_int(parts[i], v) && v >= 1 && v <= 0x7fffffff;
    g[i] = int32_t(v);
  }
  SCN_CHECK(ok, "grid '", text, "' must look like D0xD1xD2 with positive sizes, e.g. 41x1440x1440");
  return g;
}

std::vector<int64_t> parse_count_list(const std::string& text) {
  const std::vector<std::string> parts = split(text, ',');
  std::vector<int64_t> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "...") {
      SCN_CHECK(out.size() >= 2 && i + 1 < parts.size(), "count list '", text,
                "': '...' needs two values before it and one after it");
      const int64_t step = out[out.size() - 1] - out[out.size() - 2];
      int64_t last = 0;
      SCN_CHECK(parse_int(parts[i + 1], last), "count list '", text, "': '", parts[i + 1],
                "' is not a positive integer");
      SCN_CHECK(step > 0 && last >= out.back(), "count list '", text, "': '...' needs increasing values");
      SCN_CHECK((last - out.back()) / step < 100000, "count list '", text, "' is too long");
      for (int64_t v = out.back() + step; v < last; v += step) out.push_back(v);
      continue;
    }
    int64_t v = 0;
    SCN_CHECK(parse_int(parts[i], v) && v > 0, "count list '", text, "': '", parts[i], "' is not a positive integer");
    out.push_back(v);
  }
  return out;
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string latency_text(const TimingStats& st) {
  return "median " + fixed(st.median) + " ms, p99 " + fixed(st.p99) + " ms, mean " + fixed(st.mean) + " ms, min " +
         fixed(st.min) + " ms, max " + fixed(st.max) + " ms, std " + fixed(st.stddev) + " ms";
}

std::string describe_tensor(const Tensor& t) { return std::string(dtype_name(t.dtype())) + " " + t.shape_string(); }

std::string Table::str(const std::string& indent) const {
  std::vector<size_t> w(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < w.size(); ++i) w[i] = std::max(w[i], row[i].size());
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l = indent;
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      l += cell;
      if (i + 1 < w.size()) l += std::string(w[i] - cell.size() + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    os << l << '\n';
  };
  line(header_);
  std::vector<std::string> rule;
  for (size_t x : w) rule.push_back(std::string(x, '-'));
  line(rule);
  for (const auto& r : rows_) line(r);
  return os.str();
}

void OutputSet::add_tensor(std::string path, Tensor tensor) {
  Item it;
  it.path = std::move(path);
  it.tensor = std::move(tensor);
  items_.push_back(std::move(it));
}

void OutputSet::add_bytes(std::string path, std::string bytes) {
  Item it;
  it.path = std::move(path);
  it.text = std::move(bytes);
  it.is_bytes = true;
  items_.push_back(std::move(it));
}

std::vector<std::string> OutputSet::commit() {
  for (size_t i = 0; i < items_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      SCN_CHECK(!same_file(items_[i].path, items_[j].path), items_[i].path,
                items_[i].path == items_[j].path ? "" : " (" + items_[j].path + ")",
                ": two outputs would be written to this file");
  std::vector<std::string> written;
  try {
    for (const Item& it : items_) {
      if (it.is_bytes)
        write_text_file(it.path, it.text);
      else
        it.tensor.save(it.path);
      written.push_back(it.path);
    }
  } catch (...) {
    for (const std::string& p : written) std::remove(p.c_str());
    throw;
  }
  return written;
}

void check_output_dir(const std::string& option, const std::string& dir) {
  std::error_code ec;
  SCN_CHECK(std::filesystem::exists(dir, ec), option, " ", dir, ": the folder does not exist");
  SCN_CHECK(std::filesystem::is_directory(dir, ec), option, " ", dir, ": not a folder");
  SCN_CHECK(access(dir.c_str(), W_OK | X_OK) == 0, option, " ", dir, ": the folder is not writable");
}

void check_output_file(const std::string& option, const std::string& path) {
  SCN_CHECK(!path.empty(), option, ": empty path");
  SCN_CHECK(!std::filesystem::is_directory(path), option, " ", path, ": is a folder, not a file");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  std::error_code ec;
  SCN_CHECK(std::filesystem::is_directory(dir, ec), option, " ", path, ": the folder ", dir, " does not exist");
  SCN_CHECK(access(dir.c_str(), W_OK | X_OK) == 0, option, " ", path, ": the folder ", dir, " is not writable");
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const fs::path ca = fs::weakly_canonical(a, ec), cb = fs::weakly_canonical(b, ec);
  return ec ? fs::path(a).lexically_normal() == fs::path(b).lexically_normal() : ca == cb;
}

void write_text_file(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

std::string indices_path_for(const std::string& p) {
  const std::string ext = ".tensor";
  if (p.size() > ext.size() && p.compare(p.size() - ext.size(), ext.size(), ext) == 0)
    return p.substr(0, p.size() - ext.size()) + ".indices.tensor";
  return p + ".indices.tensor";
}

std::string file_safe(const std::string& name) {
  std::string s;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    s.push_back(ok ? c : '_');
  }
  if (s.empty() || s == "." || s == "..") s = "output" + s;
  return s;
}

std::string model_index_order(const Graph& graph) { return expected_input(graph).order; }

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double ms_since(int64_t since_ns) { return double(now_ns() - since_ns) * 1e-6; }

}  // namespace scn::cli
