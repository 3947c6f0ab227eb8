// The catalogue of hostile inputs (test_catalogue_*.cpp): every bad file, bad frame and misuse scn is known to meet,
// each with the error it must give. docs/errors.md documents the same cases under the same ids (O = ONNX files,
// T = .tensor files, I = input frames, E = engine / API use, C = the `scn run` command line); the test
// Catalogue.EveryCaseIsDocumented keeps the two lists in step.
//
// Each case checks: an scn::Error (never another exception, never a crash), whose message names the file / node /
// attribute / input row at fault; for command-line cases an exit status != 0, the message on stderr and no output
// file (nor a temporary one) left behind.
//
// This header holds the cases' helpers: the scn::Error a call raises, files written per test case, a small valid
// input frame and the CPU engine of small_centerpoint().
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/half.h"
#include "onnx_parser/onnx_writer.h"
#include "scn/engine.h"
#include "scn/onnx.h"

namespace scn::test::catalogue {

/// The message of the scn::Error that fn throws; a test failure when it throws nothing or
/// something else.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    std::printf("[message] %s\n", e.what());
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-scn exception: " << e.what();
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw a non-std exception";
    return "";
  }
  ADD_FAILURE() << "no error was raised";
  return "";
}

#define EXPECT_HAS(message, ...)                                              \
  do {                                                                        \
    const std::string cat_msg_ = (message);                                   \
    for (const std::string& needle : std::vector<std::string>{__VA_ARGS__})   \
      EXPECT_NE(cat_msg_.find(needle), std::string::npos)                     \
          << "expected \"" << needle << "\" in the message:\n  " << cat_msg_; \
  } while (0)

inline std::string case_file(const std::string& ext) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return temp_dir() + "/" + info->name() + ext;
}

inline std::string write_case_model(const ModelDef& m) {
  const std::string p = case_file(".onnx");
  write_bytes(p, encode_model(m));
  return p;
}

/// parse_onnx's error for the model, and the same error from inspect_onnx (which collects
/// instead of throwing): both paths must report it.
inline std::string onnx_error(const ModelDef& m) {
  const std::string path = write_case_model(m);
  const std::string msg = error_of([&] { parse_onnx(path); });
  const OnnxReport r = inspect_onnx(path);
  EXPECT_FALSE(r.errors.empty()) << "inspect_onnx found no error in " << path;
  EXPECT_EQ(r.builder, nullptr);
  return msg;
}

inline std::string onnx_bytes_error(const std::string& bytes) {
  const std::string path = case_file(".onnx");
  write_bytes(path, bytes);
  const std::string msg = error_of([&] { parse_onnx(path); });
  EXPECT_FALSE(inspect_onnx(path).errors.empty());
  return msg;
}

/// Writes a .tensor file word by word (header and payload as int32 words, plus extra bytes).
inline std::string write_tensor_words(const std::vector<int32_t>& words, size_t extra_bytes = 0) {
  const std::string p = case_file(".tensor");
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4));
  for (size_t i = 0; i < extra_bytes; ++i) f.put(char(i * 13 + 5));
  return p;
}

inline constexpr int32_t kMagic = 0x33ff1101;

/// Distinct sites of the 9 x 8 x 8 grid of small_centerpoint (batch 0) and finite features.
struct Input {
  Tensor features, indices;
  Int3 grid{9, 8, 8};
};

inline Input good_input(int rows = 60, int channels = 5) {
  Input in;
  in.features = Tensor::empty({rows, channels}, DType::Float16);
  in.indices = Tensor::empty({rows, 4}, DType::Int32);
  std::vector<bool> used(9 * 8 * 8, false);
  uint32_t x = 777;
  for (int r = 0; r < rows;) {
    x = x * 1664525u + 1013904223u;
    const int cell = int((x >> 8) % (9 * 8 * 8));
    if (used[size_t(cell)]) continue;
    used[size_t(cell)] = true;
    int32_t* p = in.indices.ptr<int32_t>() + 4 * r;
    p[0] = 0, p[1] = cell / 64, p[2] = (cell / 8) % 8, p[3] = cell % 8;
    ++r;
  }
  for (int i = 0; i < rows * channels; ++i)
    in.features.ptr<uint16_t>()[i] = float_to_half(float((i * 37) % 23) / 7.f - 1.3f);
  return in;
}

inline BuildOptions cpu(Precision p = Precision::Fp16) {
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = p;
  o.num_threads = 2;
  return o;
}

inline std::unique_ptr<Engine> small_engine() { return parse_onnx(write_case_model(small_centerpoint())).build(cpu()); }

inline std::string set_input_error(const Input& in, int batch = 1) {
  auto e = small_engine();
  InputLabels labels;
  labels.features = "feats.tensor";
  labels.indices = "idx.tensor";
  return error_of([&] { e->set_input(0, in.features, in.indices, in.grid, batch, labels); });
}

inline std::string forward_error(const Input& in, int batch = 1) {
  auto e = small_engine();
  return error_of([&] {
    e->set_input(0, in.features, in.indices, in.grid, batch);
    e->forward();
  });
}

inline void set_index(Input& in, int row, std::array<int32_t, 4> v) {
  std::memcpy(in.indices.ptr<int32_t>() + 4 * row, v.data(), 16);
}

}  // namespace scn::test::catalogue
