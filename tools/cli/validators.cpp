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
