// Writes the small zyx model the install test runs (argv[1]): scn::test::bev_model() of
// tests/cli/bev_model.h, written by the ONNX test writer (no Python needed).
#include <cstdio>
#include <fstream>

#include "cli/bev_model.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: install_test_model OUT.onnx\n");
    return 2;
  }
  std::ofstream f(argv[1], std::ios::binary);
  f << scn::test::encode_model(scn::test::bev_model());
  return f.good() ? 0 : 1;
}
