// scn::format_context: the one place the "file: node 'x' (Op): attribute 'a'" prefix is built.
#include "scn/error.h"

namespace scn {

std::string format_context(const ErrorContext& w) {
  std::string s = w.file;
  auto part = [&](const std::string& text) { s += (s.empty() ? "" : ": ") + text; };
  if (!w.node.empty()) part("node '" + w.node + "'" + (w.op.empty() ? "" : " (" + w.op + ")"));
  if (!w.input.empty()) part("input '" + w.input + "'");
  if (!w.attribute.empty()) part("attribute '" + w.attribute + "'");
  return s;
}

}  // namespace scn
