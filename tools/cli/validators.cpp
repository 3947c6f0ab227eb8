#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <type_traits>

#include "commands.h"
#include "common.h"

namespace scn::cli {

CLI::Validator grid_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_grid(s);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "D0xD1xD2", "grid");
}

CLI::Validator count_list_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_count_list(s);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "N1,N2,...,Nk", "count list");
}

namespace {

/// The value as canonical decimal (leading zeros dropped), or an error: what CLI11 then converts is plain decimal.
template <typename T>
std::string decimal_or_error(std::string& s) {
  const char* first = s.data() + (s.size() > 1 && s[0] == '+' && s[1] >= '0' && s[1] <= '9' ? 1 : 0);
  const char* last = s.data() + s.size();
  const bool digits =
      first != last &&
      std::all_of(first + (*first == '-' ? 1 : 0), last, [](char ch) { return ch >= '0' && ch <= '9'; }) &&
      !(last - first == 1 && *first == '-');
  if (!digits || (std::is_unsigned<T>::value && *first == '-'))
    return "'" + s + "' is not a " + (std::is_unsigned<T>::value ? "non-negative " : "") + "decimal integer";
  T v{};
  const std::from_chars_result r = std::from_chars(first, last, v);
  if (r.ec == std::errc::result_out_of_range || r.ptr != last)
    return "'" + s + "' is out of range (" + std::to_string(std::numeric_limits<T>::min()) + ".." +
           std::to_string(std::numeric_limits<T>::max()) + ")";
  s = std::to_string(v);
  return {};
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void strict_numbers_of(CLI::App* app) {
  for (CLI::Option* o : app->get_options()) {
    if (o->get_type_size() == 0) continue;  // a flag
    const std::string type = o->get_type_name();
    if (starts_with(type, "UINT"))
      o->transform(CLI::Validator([](std::string& s) { return decimal_or_error<uint64_t>(s); }, ""));
    else if (starts_with(type, "INT"))
      o->transform(CLI::Validator([](std::string& s) { return decimal_or_error<int64_t>(s); }, ""));
    else if (starts_with(type, "FLOAT"))
      o->transform(CLI::Validator(
          [](std::string& s) -> std::string {
            double v = 0;
            const std::from_chars_result r = std::from_chars(s.data(), s.data() + s.size(), v);
            if (r.ec == std::errc::result_out_of_range) return "'" + s + "' is out of range";
            if (r.ec == std::errc() && r.ptr == s.data() + s.size() && !std::isfinite(v))
              return "'" + s + "' is not a finite number";
            return {};  // anything else: CLI11's conversion reports it
          },
          ""));
  }
  for (CLI::App* sub : app->get_subcommands({})) strict_numbers_of(sub);
}

}  // namespace

void strict_numbers(CLI::App& app) { strict_numbers_of(&app); }

void add_offset_groups_option(CLI::App* c, int& groups) {
  c->add_option("--offset-groups", groups,
                "CUDA: 16/32-channel 3x3x3 convs: 0 = by GPU (osplit, two offset groups on sm_90), 1 = implicit-GEMM "
                "tiles, 2 = osplit wherever it fits")
      ->capture_default_str()
      ->check(CLI::Range(0, 2));
}

CLI::Option* add_site_order_option(CLI::App* c, std::string& order) {
  return c
      ->add_option(
          "--site-order", order,
          "CUDA: rows of the levels strided convs generate: neighbour-rows (grouped by their neighbours' kernel "
          "rows), bitmap, or auto (neighbour-rows at levels of 64 or more channels); the same outputs either way")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "neighbour-rows", "bitmap"}));
}

CudaSiteOrder site_order_of(const std::string& order) {
  if (order == "bitmap") return CudaSiteOrder::Bitmap;
  if (order == "neighbour-rows") return CudaSiteOrder::NeighbourRows;
  return CudaSiteOrder::Auto;
}

}  // namespace scn::cli
