// Shared by the importer tests: write a model, import it, check the error text.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx_parser/onnx_writer.h"
#include "scn/onnx.h"

namespace scn::test {

/// File name for the running test: "<Suite>.<Test>.onnx".
inline std::string test_file_name(const std::string& suffix = "") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name() + suffix + ".onnx";
}

/// The message of the scn::Error that parse_onnx(path) throws; "" (and a test failure) if none.
inline std::string parse_error_at(const std::string& path) {
  try {
    scn::parse_onnx(path);
  } catch (const scn::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "parse_onnx threw a non-scn exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "parse_onnx(" << path << ") did not throw";
  return "";
}

/// Writes the model and returns parse_onnx's error message.
inline std::string parse_error(const ModelDef& m) {
  return parse_error_at(write_model(m, test_file_name()));
}

/// Expects every needle in the message.
#define EXPECT_MESSAGE_HAS(message, ...)                                      \
  do {                                                                        \
    const std::string scn_msg_ = (message);                                   \
    for (const std::string& needle : std::vector<std::string>{__VA_ARGS__})   \
      EXPECT_NE(scn_msg_.find(needle), std::string::npos)                     \
          << "expected \"" << needle << "\" in the message:\n  " << scn_msg_; \
  } while (0)

}  // namespace scn::test
