// Running the `scn` executable from a test: one shell command with stdout and stderr captured in
// files under test::temp_dir(), and the exit code. Shared by the CLI, catalogue and INT8
// calibration tests.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "onnx_parser/onnx_writer.h"

namespace scn::test {

struct CliResult {
  int code = -1;
  std::string out, err;
};

/// The whole file as bytes ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Single-quoted for /bin/sh (paths in tests hold no quote).
inline std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

/// True when `text` (a captured stdout / stderr) holds `part`.
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Runs `exe args`; `tag` names the capture files (one pair per call).
inline CliResult run_cli(const std::string& exe, const std::string& args, const std::string& tag) {
  static int counter = 0;
  const std::string base = temp_dir() + "/" + tag + "_" + std::to_string(counter++);
  const std::string cmd =
      shell_quote(exe) + " " + args + " >" + shell_quote(base + ".out") + " 2>" + shell_quote(base + ".err");
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  return r;
}

}  // namespace scn::test
