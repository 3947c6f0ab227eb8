// PCD v0.7 reader: the header (FIELDS SIZE TYPE COUNT WIDTH HEIGHT VIEWPOINT POINTS DATA), then
// ascii lines or packed binary records. Only the requested fields are converted.
#include "io/pcd_reader.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "scn/error.h"

namespace scn::io {

namespace {

struct Field {
  std::string name;
  int size = 4;
  char type = 'F';
  int count = 1;
  size_t offset = 0;   // bytes into a binary record
  int64_t column = 0;  // value index into an ascii line
};

std::vector<std::string> split(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> out;
  for (std::string t; ss >> t;) out.push_back(t);
  return out;
}

/// A value float32 holds (NaN and the infinities included: a file's own are kept), not a finite one it would round
/// to an infinity.
bool fits_float32(double v) { return !std::isfinite(v) || std::fabs(v) <= double(FLT_MAX); }

/// An ascii data value as float32, whatever the process's locale: strtod reads the decimal point of LC_NUMERIC, and
/// under a comma locale (de_DE, set by the host application) it would stop "1.5" at the '.'. A leading
/// '+' is accepted (strtod took it); a value beyond float32 or double range is an error, not an infinity or a zero.
float parse_value(const std::string& path, int64_t line_no, const std::string& field, const std::string& s) {
  const char* first = s.data() + (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+' ? 1 : 0);
  const char* last = s.data() + s.size();
  double v = 0;
  const std::from_chars_result r = std::from_chars(first, last, v);
  SCN_CHECK(r.ec != std::errc::result_out_of_range, path, ": PCD line ", line_no, ": '", s, "' (field '", field,
            "') is out of range");
  SCN_CHECK(r.ec == std::errc() && r.ptr == last, path, ": PCD line ", line_no, ": '", s, "' (field '", field,
            "') is not a number");
  SCN_CHECK(fits_float32(v), path, ": PCD line ", line_no, ": '", s, "' (field '", field,
            "') is beyond the float32 range");
  return float(v);
}

/// A header value in [0, most]: a larger one is an error naming it, not a value cut to the field's type.
int64_t parse_int(const std::string& path, const std::string& key, const std::string& s, int64_t most) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  SCN_CHECK(errno == 0 && end && *end == '\0' && !s.empty() && v >= 0, path, ": PCD header ", key, ": '", s,
            "' is not a non-negative integer");
  SCN_CHECK(v <= most, path, ": PCD header ", key, " ", s, " is above ", most);
  return v;
}

// Header limits: SIZE is 1, 2, 4 or 8 (checked per field below); COUNT bounds a field's record bytes; the point
// counts keep WIDTH x HEIGHT and every byte count below in 63 bits (the data size is checked before any allocation).
constexpr int64_t kMaxSize = 8, kMaxCount = int64_t(1) << 20, kMaxPoints = int64_t(1) << 40;

double binary_value(const Field& f, const char* p) {
  switch (f.type) {
    case 'F':
      if (f.size == 4) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      } else {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
    case 'I': {
      int64_t v = 0;
      if (f.size == 1) v = int8_t(*p);
      if (f.size == 2) {
        int16_t t;
        std::memcpy(&t, p, 2);
        v = t;
      }
      if (f.size == 4) {
        int32_t t;
        std::memcpy(&t, p, 4);
        v = t;
      }
      if (f.size == 8) std::memcpy(&v, p, 8);
      return double(v);
    }
    default: {
      uint64_t v = 0;
      if (f.size == 1) v = uint8_t(*p);
      if (f.size == 2) {
        uint16_t t;
        std::memcpy(&t, p, 2);
        v = t;
      }
      if (f.size == 4) {
        uint32_t t;
        std::memcpy(&t, p, 4);
        v = t;
      }
      if (f.size == 8) std::memcpy(&v, p, 8);
      return double(v);
    }
  }
}

}  // namespace

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SCN_CHECK(in, path, ": cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SCN_CHECK(!in.bad(), path, ": read error");
  return bytes;
}

Tensor read_pcd(const std::string& path, const std::vector<std::string>& want) {
  SCN_CHECK(!want.empty(), path, ": no PCD fields requested");
  const std::string bytes = read_whole_file(path);
  std::vector<Field> fields;
  std::vector<int> sizes, counts;
  std::vector<char> types;
  int64_t width = -1, height = -1, points = -1;
  std::string data;
  size_t pos = 0;
  int line_no = 0;
  while (data.empty()) {
    SCN_CHECK(pos < bytes.size(), path, ": PCD header ends before its DATA line (not a PCD file, or truncated)");
    size_t eol = bytes.find('\n', pos);
    if (eol == std::string::npos) eol = bytes.size();
    std::string line = bytes.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> t = split(line);
    if (t.empty() || t[0][0] == '#') continue;
    const std::string& key = t[0];
    const std::vector<std::string> v(t.begin() + 1, t.end());
    if (key == "VERSION" || key == "VIEWPOINT") continue;
    if (key == "FIELDS") {
      for (const std::string& n : v) fields.push_back(Field{n});
    } else if (key == "SIZE") {
      for (const std::string& s : v) sizes.push_back(int(parse_int(path, key, s, kMaxSize)));
    } else if (key == "TYPE") {
      for (const std::string& s : v) {
        SCN_CHECK(s == "F" || s == "I" || s == "U", path, ": PCD header TYPE '", s, "' is not F, I or U");
        types.push_back(s[0]);
      }
    } else if (key == "COUNT") {
      for (const std::string& s : v) counts.push_back(int(parse_int(path, key, s, kMaxCount)));
    } else if (key == "WIDTH" && v.size() == 1) {
      width = parse_int(path, key, v[0], kMaxPoints);
    } else if (key == "HEIGHT" && v.size() == 1) {
      height = parse_int(path, key, v[0], kMaxPoints);
    } else if (key == "POINTS" && v.size() == 1) {
      points = parse_int(path, key, v[0], kMaxPoints);
    } else if (key == "DATA" && v.size() == 1) {
      data = v[0];
    } else {
      SCN_FAIL(path, ": PCD header line ", line_no, " '", line, "' is not understood");
    }
  }
  SCN_CHECK(!fields.empty(), path, ": PCD header has no FIELDS");
  SCN_CHECK(sizes.size() == fields.size() && types.size() == fields.size(), path, ": PCD header has ", fields.size(),
            " FIELDS but ", sizes.size(), " SIZE and ", types.size(), " TYPE entries");
  SCN_CHECK(counts.empty() || counts.size() == fields.size(), path, ": PCD header has ", fields.size(), " FIELDS but ",
            counts.size(), " COUNT entries");
  SCN_CHECK(width >= 0 && height >= 0, path, ": PCD header needs WIDTH and HEIGHT");
  SCN_CHECK(height == 0 || width <= kMaxPoints / height, path, ": PCD header WIDTH x HEIGHT = ", width, " x ", height,
            " is above ", kMaxPoints, " points");
  if (points < 0) points = width * height;
  SCN_CHECK(points == width * height, path, ": PCD header POINTS ", points, " != WIDTH x HEIGHT = ", width * height);
  SCN_CHECK(data == "ascii" || data == "binary", path, ": PCD DATA type '", data,
            "' is not supported (ascii and binary are)");
  size_t offset = 0;
  int64_t column = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    Field& f = fields[i];
    f.size = sizes[i];
    f.type = types[i];
    f.count = counts.empty() ? 1 : counts[i];
    const bool ok =
        f.type == 'F' ? (f.size == 4 || f.size == 8) : (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8);
    SCN_CHECK(ok, path, ": PCD field '", f.name, "' has TYPE ", f.type, " with SIZE ", f.size, ", which is not valid");
    SCN_CHECK(f.count >= 1, path, ": PCD field '", f.name, "' has COUNT 0");
    f.offset = offset;
    f.column = column;
    offset += size_t(f.size) * size_t(f.count);
    column += f.count;
  }
  const size_t record = offset;

  std::vector<const Field*> sel;
  for (const std::string& name : want) {
    const Field* found = nullptr;
    for (const Field& f : fields)
      if (f.name == name) {
        // (PCL repeats padding names such as "_"; a field read by name must be one)
        SCN_CHECK(!found, path, ": PCD field '", name, "' appears more than once in FIELDS");
        found = &f;
      }
    if (!found) {
      std::string have;
      for (const Field& f : fields) have += (have.empty() ? "" : " ") + f.name;
      SCN_FAIL(path, ": PCD has no field '", name, "' (fields: ", have, ")");
    }
    SCN_CHECK(found->count == 1, path, ": PCD field '", name, "' has COUNT ", found->count,
              "; only scalar fields can be read");
    sel.push_back(found);
  }

  const int C = int(sel.size());
  // The data must hold the header's points before the output is allocated: a binary record per point, an ascii
  // point at least one character per value (a product past 64 bits is more than any file holds).
  const size_t have = bytes.size() - std::min(pos, bytes.size());
  size_t need = 0;
  if (data == "binary") {
    const bool over = __builtin_mul_overflow(size_t(points), record, &need);
    SCN_CHECK(!over && have >= need, path, ": PCD binary data is truncated: ", have, " bytes for ", points,
              " points of ", record, " bytes (", over ? std::string("more than 2^64") : std::to_string(need),
              " needed)");
    SCN_CHECK(have == need, path, ": PCD binary data has ", have - need, " bytes beyond its ", points, " points");
  } else {
    const bool over = __builtin_mul_overflow(size_t(points), size_t(column), &need);
    SCN_CHECK(!over && need <= have, path, ": PCD ascii data is truncated: ", have, " bytes cannot hold the header's ",
              points, " points of ", column, " values");
  }
  std::vector<float> out(size_t(points) * size_t(C));
  if (data == "binary") {
    const char* base = bytes.data() + pos;
    for (int64_t i = 0; i < points; ++i)
      for (int c = 0; c < C; ++c) {
        const Field& f = *sel[size_t(c)];
        const double v = binary_value(f, base + size_t(i) * record + f.offset);
        SCN_CHECK(fits_float32(v), path, ": PCD point ", i, ": ", v, " (field '", f.name,
                  "') is beyond the float32 range");
        out[size_t(i) * size_t(C) + size_t(c)] = float(v);
      }
  } else {
    int64_t i = 0;
    while (pos < bytes.size()) {
      size_t eol = bytes.find('\n', pos);
      if (eol == std::string::npos) eol = bytes.size();
      const std::string line = bytes.substr(pos, eol - pos);
      pos = eol + 1;
      ++line_no;
      const std::vector<std::string> t = split(line);
      if (t.empty()) continue;
      SCN_CHECK(i < points, path, ": PCD ascii data has more than the ", points, " points of its header (line ",
                line_no, ")");
      SCN_CHECK(int64_t(t.size()) == column, path, ": PCD line ", line_no, " has ", t.size(), " values, ", column,
                " expected");
      for (int c = 0; c < C; ++c) {
        out[size_t(i) * size_t(C) + size_t(c)] =
            parse_value(path, line_no, sel[size_t(c)]->name, t[size_t(sel[size_t(c)]->column)]);
      }
      ++i;
    }
    SCN_CHECK(i == points, path, ": PCD ascii data is truncated: ", i, " of ", points, " points");
  }
  return Tensor::from_host(out.data(), {points, C}, DType::Float32);
}

}  // namespace scn::io
