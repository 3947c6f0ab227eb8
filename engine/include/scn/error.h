// scn — errors. Every failure the engine reports is an scn::Error whose message names
// what is wrong and where: the file, the ONNX node, the attribute, the input. The "where" is also
// kept in parts (ErrorContext), so programs can tell which node or attribute failed without
// parsing the text.
#pragma once

#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace scn {

/// Where an error is: each part empty when it does not apply.
struct ErrorContext {
  std::string file;       ///< the model or data file (or a builder's source name)
  std::string node;       ///< node name
  std::string op;         ///< the node's op type
  std::string attribute;  ///< attribute name
  std::string input;      ///< graph input name

  ErrorContext with_attribute(std::string name) const {
    ErrorContext c = *this;
    c.attribute = std::move(name);
    return c;
  }
  bool empty() const { return file.empty() && node.empty() && op.empty() && attribute.empty() && input.empty(); }
};

/// The one formatter of locations, the prefix of every message about a node:
/// "<file>: node '<node>' (<op>): attribute '<attribute>'", "<file>: input '<input>'"; parts that are
/// empty are left out ("node 'x' (Op)" without a file).
std::string format_context(const ErrorContext& where);
inline std::ostream& operator<<(std::ostream& os, const ErrorContext& where) { return os << format_context(where); }

/// The single exception type thrown across the public API.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  /// what() = format_context(where) + rest (rest starts with ": " or " ...", as the message reads).
  Error(ErrorContext where, const std::string& rest)
      : std::runtime_error(format_context(where) + rest), where_(std::move(where)) {}

  /// The parts of the location (all empty for errors that name no file, node or input).
  const ErrorContext& context() const { return where_; }
  const std::string& file() const { return where_.file; }
  const std::string& node() const { return where_.node; }
  const std::string& op() const { return where_.op; }
  const std::string& attribute() const { return where_.attribute; }
  const std::string& input() const { return where_.input; }

 private:
  ErrorContext where_;
};

namespace detail {
/// Streams any arguments into one string: concat("node '", name, "': stride ", s).
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
/// SCN_CHECK / SCN_FAIL: a message starting with an ErrorContext keeps it in parts.
template <typename... Args>
Error make_error(const Args&... args) {
  return Error(concat(args...));
}
template <typename... Args>
Error make_error(const ErrorContext& where, const Args&... rest) {
  return Error(where, concat(rest...));
}
}  // namespace detail

}  // namespace scn

/// Throws scn::Error with the streamed arguments as message when cond is false. When the first
/// argument is an ErrorContext the error keeps its parts.
#define SCN_CHECK(cond, ...)                                   \
  do {                                                         \
    if (!(cond)) throw ::scn::detail::make_error(__VA_ARGS__); \
  } while (0)

#define SCN_FAIL(...) throw ::scn::detail::make_error(__VA_ARGS__)
