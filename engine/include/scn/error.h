// scn — errors. Every failure the engine reports is an scn::Error whose message names
// what is wrong and where: the file, the ONNX node, the attribute, the input.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace scn {

/// The single exception type thrown across the public API.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
/// Streams any arguments into one string: concat("node '", name, "': stride ", s).
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace scn

/// Throws scn::Error with the streamed arguments as message when cond is false.
#define SCN_CHECK(cond, ...)                                        \
  do {                                                              \
    if (!(cond)) throw ::scn::Error(::scn::detail::concat(__VA_ARGS__)); \
  } while (0)

#define SCN_FAIL(...) throw ::scn::Error(::scn::detail::concat(__VA_ARGS__))
