#include <exception>

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

}  // namespace scn::cli
