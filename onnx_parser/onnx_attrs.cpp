#include "onnx_attrs.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "onnx.pb.h"
#include "scn/error.h"

namespace scn::onnx_import {

using onnx::AttributeProto;

int attribute_type(const AttributeProto& a) {
  if (a.type() != AttributeProto::UNDEFINED) return a.type();
  if (a.ints_size() > 0) return AttributeProto::INTS;
  if (a.floats_size() > 0) return AttributeProto::FLOATS;
  if (a.strings_size() > 0) return AttributeProto::STRINGS;
  if (a.tensors_size() > 0) return AttributeProto::TENSORS;
  if (a.graphs_size() > 0) return AttributeProto::GRAPHS;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_f()) return AttributeProto::FLOAT;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  return AttributeProto::UNDEFINED;
}

const char* attribute_type_name(int type) {
  switch (type) {
    case AttributeProto::FLOAT: return "float";
    case AttributeProto::INT: return "int";
    case AttributeProto::STRING: return "string";
    case AttributeProto::TENSOR: return "tensor";
    case AttributeProto::GRAPH: return "graph";
    case AttributeProto::SPARSE_TENSOR: return "sparse tensor";
    case AttributeProto::TYPE_PROTO: return "type proto";
    case AttributeProto::FLOATS: return "floats";
    case AttributeProto::INTS: return "ints";
    case AttributeProto::STRINGS: return "strings";
    case AttributeProto::TENSORS: return "tensors";
    case AttributeProto::GRAPHS: return "graphs";
    case AttributeProto::SPARSE_TENSORS: return "sparse tensors";
    case AttributeProto::TYPE_PROTOS: return "type protos";
    default: return "no value";
  }
}

namespace {

// Lists longer than this are shortened in inspect texts and messages.
constexpr int kMaxListed = 16;

template <typename List>
std::string list_text(const List& values) {
  std::ostringstream os;
  os << '[';
  const int n = values.size();
  for (int i = 0; i < n && i < kMaxListed; ++i) os << (i ? ", " : "") << values.Get(i);
  if (n > kMaxListed) os << ", ... (" << n << " values)";
  os << ']';
  return os.str();
}

// The value held in the field of `type`: "a string ('abc')", "2 ints [1, 2]", "an int (5)".
std::string field_text(const AttributeProto& a, int type) {
  switch (type) {
    case AttributeProto::INT: return detail::concat("an int (", a.i(), ")");
    case AttributeProto::FLOAT: return detail::concat("a float (", a.f(), ")");
    case AttributeProto::STRING: return detail::concat("a string ('", a.s(), "')");
    case AttributeProto::INTS: return detail::concat(a.ints_size(), " ints ", list_text(a.ints()));
    case AttributeProto::FLOATS:
      return detail::concat(a.floats_size(), " floats ", list_text(a.floats()));
    case AttributeProto::STRINGS:
      return detail::concat(a.strings_size(), " strings");
    case AttributeProto::TENSORS:
      return detail::concat(a.tensors_size(), " tensors");
    case AttributeProto::GRAPHS:
      return detail::concat(a.graphs_size(), " graphs");
    case AttributeProto::SPARSE_TENSORS:
      return detail::concat(a.sparse_tensors_size(), " sparse tensors");
    case AttributeProto::TYPE_PROTOS:
      return detail::concat(a.type_protos_size(), " type protos");
    case AttributeProto::UNDEFINED: return "an attribute without a value";
    default: return detail::concat("a value of type ", attribute_type_name(type));
  }
}

// What was found, for type/count errors.
std::string found_text(const AttributeProto& a) { return field_text(a, attribute_type(a)); }

// Whether the field of `type` is set (a list's may be empty: no field on the wire), and the other value fields an
// attribute carries: ONNX's checker wants exactly the declared type's field. A declared int whose number sits in
// `ints` (or is absent) would read as 0 through a.i(): a submanifold conv imported as a strided one.
bool has_value_of(const AttributeProto& a, int type) {
  switch (type) {
    case AttributeProto::INT:
      return a.has_i();
    case AttributeProto::FLOAT:
      return a.has_f();
    case AttributeProto::STRING:
      return a.has_s();
    case AttributeProto::TENSOR:
      return a.has_t();
    case AttributeProto::GRAPH:
      return a.has_g();
    case AttributeProto::SPARSE_TENSOR:
      return a.has_sparse_tensor();
    case AttributeProto::TYPE_PROTO:
      return a.has_tp();
    case AttributeProto::INTS:
      return a.ints_size() > 0;
    case AttributeProto::FLOATS:
      return a.floats_size() > 0;
    case AttributeProto::STRINGS:
      return a.strings_size() > 0;
    case AttributeProto::TENSORS:
      return a.tensors_size() > 0;
    case AttributeProto::GRAPHS:
      return a.graphs_size() > 0;
    case AttributeProto::SPARSE_TENSORS:
      return a.sparse_tensors_size() > 0;
    case AttributeProto::TYPE_PROTOS:
      return a.type_protos_size() > 0;
    default:
      return false;
  }
}

bool is_list(int type) {
  return type == AttributeProto::INTS || type == AttributeProto::FLOATS || type == AttributeProto::STRINGS ||
         type == AttributeProto::TENSORS || type == AttributeProto::GRAPHS || type == AttributeProto::SPARSE_TENSORS ||
         type == AttributeProto::TYPE_PROTOS;
}

std::string stray_fields(const AttributeProto& a, int type) {
  std::string out;
  for (int t : {AttributeProto::INT, AttributeProto::FLOAT, AttributeProto::STRING, AttributeProto::TENSOR,
                AttributeProto::GRAPH, AttributeProto::SPARSE_TENSOR, AttributeProto::TYPE_PROTO, AttributeProto::INTS,
                AttributeProto::FLOATS, AttributeProto::STRINGS, AttributeProto::TENSORS, AttributeProto::GRAPHS,
                AttributeProto::SPARSE_TENSORS, AttributeProto::TYPE_PROTOS})
    if (t != type && has_value_of(a, t)) out += (out.empty() ? "" : ", ") + field_text(a, t);
  return out;
}

}  // namespace

std::string attribute_text(const AttributeProto& a) {
  switch (attribute_type(a)) {
    case AttributeProto::INT: return std::to_string(a.i());
    case AttributeProto::FLOAT: return detail::concat(a.f());
    case AttributeProto::STRING: return a.s();
    case AttributeProto::INTS: return list_text(a.ints());
    case AttributeProto::FLOATS: return list_text(a.floats());
    case AttributeProto::STRINGS: return list_text(a.strings());
    default: return detail::concat('<', attribute_type_name(attribute_type(a)), '>');
  }
}

OnnxAttrs::OnnxAttrs(const onnx::NodeProto& node, ErrorContext where)
    : node_(node), where_(std::move(where)) {
  std::set<std::string> seen;
  for (const AttributeProto& a : node_.attribute()) {
    SCN_CHECK(!a.name().empty(), where_, ": an attribute has an empty name");
    SCN_CHECK(seen.insert(a.name()).second, where_, ": attribute '", a.name(),
              "' appears more than once");
  }
}

const AttributeProto* OnnxAttrs::find(const std::string& name) const {
  for (const AttributeProto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool OnnxAttrs::has(const std::string& name) const { return find(name) != nullptr; }

void OnnxAttrs::fail(const std::string& name, const std::string& what) const {
  throw Error(where_.with_attribute(name), ": " + what);
}

const AttributeProto& OnnxAttrs::require(const std::string& name) const {
  const AttributeProto* a = find(name);
  if (!a) fail(name, "required attribute is missing");
  return *a;
}

void OnnxAttrs::expect_type(const AttributeProto& a, int type) const {
  const int found = attribute_type(a);
  if (found != type) {
    const char* article = type == AttributeProto::INT                                       ? "an "
                          : type == AttributeProto::FLOAT || type == AttributeProto::STRING ? "a "
                                                                                            : "";
    fail(a.name(), detail::concat("expected ", article, attribute_type_name(type), ", found ",
                                  found_text(a)));
  }
  const bool held = is_list(type) || has_value_of(a, type);
  const std::string stray = stray_fields(a, type);
  if (!held || !stray.empty())
    fail(a.name(), detail::concat("declared ", attribute_type_name(type), " but ",
                                  held ? "also holds " + stray
                                       : "holds no such value" + (stray.empty() ? "" : "; it holds " + stray),
                                  " (an ONNX attribute carries exactly the value of its type)"));
  used_.insert(a.name());
}

int64_t OnnxAttrs::get_int(const std::string& name) const {
  const AttributeProto& a = require(name);
  expect_type(a, AttributeProto::INT);
  return a.i();
}

int64_t OnnxAttrs::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}

float OnnxAttrs::get_float(const std::string& name) const {
  const AttributeProto& a = require(name);
  expect_type(a, AttributeProto::FLOAT);
  return a.f();
}

float OnnxAttrs::get_float(const std::string& name, float fallback) const {
  return has(name) ? get_float(name) : fallback;
}

std::string OnnxAttrs::get_string(const std::string& name) const {
  const AttributeProto& a = require(name);
  expect_type(a, AttributeProto::STRING);
  return a.s();
}

std::string OnnxAttrs::get_string(const std::string& name, const std::string& fallback) const {
  return has(name) ? get_string(name) : fallback;
}

std::vector<int64_t> OnnxAttrs::get_ints(const std::string& name, int count) const {
  const AttributeProto& a = require(name);
  expect_type(a, AttributeProto::INTS);
  if (count != kAnyCount && a.ints_size() != count)
    fail(name, detail::concat("expected ints[", count, "], found ", found_text(a)));
  return std::vector<int64_t>(a.ints().begin(), a.ints().end());
}

std::vector<int64_t> OnnxAttrs::get_ints_or(const std::string& name, std::vector<int64_t> fallback,
                                            int count) const {
  return has(name) ? get_ints(name, count) : fallback;
}

std::vector<float> OnnxAttrs::get_floats(const std::string& name, int count) const {
  const AttributeProto& a = require(name);
  expect_type(a, AttributeProto::FLOATS);
  if (count != kAnyCount && a.floats_size() != count)
    fail(name, detail::concat("expected floats[", count, "], found ", found_text(a)));
  return std::vector<float>(a.floats().begin(), a.floats().end());
}

std::vector<float> OnnxAttrs::get_floats_or(const std::string& name, std::vector<float> fallback,
                                            int count) const {
  return has(name) ? get_floats(name, count) : fallback;
}

bool OnnxAttrs::get_bool(const std::string& name) const {
  const int64_t v = get_int(name);
  if (v != 0 && v != 1) fail(name, detail::concat("expected 0 or 1, found ", v));
  return v == 1;
}

bool OnnxAttrs::get_bool(const std::string& name, bool fallback) const {
  return has(name) ? get_bool(name) : fallback;
}

Int3 OnnxAttrs::get_int3(const std::string& name) const {
  const std::vector<int64_t> v = get_ints(name, 3);
  Int3 out{};
  for (int d = 0; d < 3; ++d) {
    if (v[size_t(d)] < std::numeric_limits<int32_t>::min() ||
        v[size_t(d)] > std::numeric_limits<int32_t>::max())
      fail(name, detail::concat("value ", v[size_t(d)], " is out of range"));
    out[size_t(d)] = int32_t(v[size_t(d)]);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> OnnxAttrs::unused() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const AttributeProto& a : node_.attribute())
    if (!used_.count(a.name())) out.emplace_back(a.name(), attribute_text(a));
  return out;
}

}  // namespace scn::onnx_import
