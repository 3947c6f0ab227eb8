// The tuning cache on the GPU (issue 18 item 2): an engine built from a saved cache runs the saved
// tiles without tuning and gives bitwise the outputs of the engine that wrote it; a key written for
// another setup re-tunes and says which field differs; a truncated file is an error naming it.
// (The file format itself is tested on the CPU: tests/engine/test_tuning_cache.cpp.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct EngineRun {
  std::vector<uint8_t> bits;
  std::string stderr_text;
  std::vector<std::string> algorithms;  ///< per conv step, from profile_layers()
};

EngineRun build_and_run(const EngineBuilder& b, const BuildOptions& o, const test::SparseInput& in) {
  EngineRun r;
  auto e = b.build(o);
  testing::internal::CaptureStderr();
  try {
    e->set_input(0, in.features, in.indices, in.grid, 1);
  } catch (...) {
    r.stderr_text = testing::internal::GetCapturedStderr();
    throw;
  }
  r.stderr_text = testing::internal::GetCapturedStderr();
  e->forward();
  r.bits = to_bytes(e->output(0));
  for (const LayerTiming& l : e->profile_layers())
    if (l.op == op_type_name(OpType::SparseConv)) r.algorithms.push_back(l.algorithm);
  return r;
}

TEST(CudaTuningCache, SavedDecisionsRebuildBitwiseAndAKeyMismatchRetunes) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 240, 240};
  const EngineBuilder b = test::centerpoint_builder(grid, 5, 3);
  const test::SparseInput in = test::random_input(12000, 5, grid, 1, 91);
  const std::string path = (fs::temp_directory_path() / "scn_cuda_tuning_cache_test.tune").string();
  fs::remove(path);
  BuildOptions o = cuda_options(true, 20000, 1);
  o.cuda.tuning_cache = path;

  const EngineRun first = build_and_run(b, o, in);  // tunes and writes the cache
  ASSERT_TRUE(fs::exists(path)) << "the tuner's decisions were not written to " << path;
  const std::string saved = read_text(path);
  ASSERT_NE(saved.find("tile\t"), std::string::npos) << saved;

  const EngineRun second = build_and_run(b, o, in);  // reads the cache
  EXPECT_EQ(second.stderr_text.find("re-tuning"), std::string::npos) << second.stderr_text;
  EXPECT_TRUE(second.bits == first.bits) << "the engine built from the cache differs from the one that wrote it";
  EXPECT_EQ(second.algorithms, first.algorithms) << "the cached engine runs other tiles";
  EXPECT_EQ(read_text(path), saved) << "a matching cache is not rewritten";

  // A key written for another GPU: re-tune, say which field, rewrite the file for this setup.
  std::string other = saved;
  const size_t gpu = other.find("key\tgpu\t");
  ASSERT_NE(gpu, std::string::npos) << saved;
  other.insert(gpu + 8, "another ");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << other;
  const EngineRun third = build_and_run(b, o, in);
  EXPECT_NE(third.stderr_text.find("re-tuning"), std::string::npos) << third.stderr_text;
  EXPECT_NE(third.stderr_text.find("gpu"), std::string::npos) << third.stderr_text;
  EXPECT_TRUE(third.bits == first.bits) << "re-tuning changed the outputs (tiles of one split class sum alike)";
  EXPECT_EQ(read_text(path).find("another "), std::string::npos) << "the re-tuned decisions were not saved";

  // A kernel the tuner could not have chosen for a conv (here an osplit config of another shape for the
  // strided 32 -> 64 conv) is an error naming the file and the kernel, never run.
  {
    std::string wrong = read_text(path);
    const size_t at = wrong.find("\tconv10\t");
    ASSERT_NE(at, std::string::npos) << wrong;
    const size_t from = at + 8, to = wrong.find('\n', from);
    wrong.replace(from, to - from, "osplit c16x16r32p1s6w8");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << wrong;
    try {
      build_and_run(b, o, in);
      ADD_FAILURE() << "a tuning cache with another shape's osplit config for conv10 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("osplit c16x16r32p1s6w8"), std::string::npos) << e.what();
    }
  }

  // A truncated file is an error naming it, never a silent re-tune.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << saved.substr(0, saved.size() / 2);
  try {
    build_and_run(b, o, in);
    ADD_FAILURE() << "a truncated tuning cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  fs::remove(path);
}

}  // namespace
