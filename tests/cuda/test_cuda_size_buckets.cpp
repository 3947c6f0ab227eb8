// One engine for every frame size (issue 19 item 4): the autotuner keeps tile choices per size bucket
// of the frame (plan/size_buckets.h). One engine fed frames of very different sizes gives bitwise the
// outputs of a fresh engine tuned on each frame, tunes each bucket once (Engine::autotune_passes), a
// frame in a bucket already tuned does not tune again, and the tuning cache keeps every bucket.
// Frames bound with a device count share one bucket. (The ladder and the cache format are tested on
// the CPU: tests/engine/test_size_buckets.cpp, test_tuning_cache.cpp.)
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

const Int3 kGrid{41, 400, 400};
constexpr int64_t kMaxVoxels = 45000;

std::vector<uint8_t> run_fresh(const EngineBuilder& b, const BuildOptions& o, const test::SparseInput& in) {
  auto e = b.build(o);
  e->set_input(0, in.features, in.indices, in.grid, 1);
  e->forward();
  e->check_errors();
  return to_bytes(e->output(0));
}

std::vector<uint8_t> run_bound(Engine& e, const test::SparseInput& in) {
  e.set_input(0, in.features, in.indices, in.grid, 1);
  e.forward();
  e.check_errors();
  return to_bytes(e.output(0));
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Frames {
  // buckets of the default ladder (base 8192, factor 1.5): [0, 8192), [27648, 41472), [8192, 12288)
  test::SparseInput small = test::random_input(3000, 5, kGrid, 1, 501);
  test::SparseInput large = test::random_input(40000, 5, kGrid, 1, 502);
  test::SparseInput middle = test::random_input(12000, 5, kGrid, 1, 503);
  test::SparseInput small2 = test::random_input(6000, 5, kGrid, 1, 504);  // the small frame's bucket
};

TEST(CudaSizeBuckets, OneEngineMatchesFreshEnginesAndTunesEachBucketOnce) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, 5, 7);
  const Frames f;
  for (const bool graph : {true, false}) {
    SCOPED_TRACE(graph ? "CUDA graph per bucket" : "direct launches");
    const BuildOptions o = cuda_options(graph, kMaxVoxels, 1);
    const std::vector<uint8_t> want_small = run_fresh(b, o, f.small), want_large = run_fresh(b, o, f.large),
                               want_middle = run_fresh(b, o, f.middle), want_small2 = run_fresh(b, o, f.small2);
    ASSERT_FALSE(want_small == want_large) << "frames of other sizes give other outputs";

    auto e = b.build(o);
    EXPECT_EQ(e->autotune_passes(), 0) << "nothing is tuned before a frame is bound";
    EXPECT_TRUE(run_bound(*e, f.small) == want_small);
    EXPECT_EQ(e->autotune_passes(), 1);
    EXPECT_TRUE(run_bound(*e, f.large) == want_large) << "the large frame after the small one";
    EXPECT_EQ(e->autotune_passes(), 2) << "a frame of a new size bucket is tuned";
    EXPECT_TRUE(run_bound(*e, f.middle) == want_middle);
    EXPECT_EQ(e->autotune_passes(), 3);
    EXPECT_TRUE(run_bound(*e, f.small2) == want_small2) << "another frame of the first bucket";
    EXPECT_EQ(e->autotune_passes(), 3) << "a frame in a bucket already tuned was tuned again";
    // back and forth: each bucket's tiles (and captured graph) come back with its frames
    for (int round = 0; round < 2; ++round) {
      EXPECT_TRUE(run_bound(*e, f.large) == want_large) << "round " << round;
      EXPECT_TRUE(run_bound(*e, f.small) == want_small) << "round " << round;
      EXPECT_TRUE(run_bound(*e, f.middle) == want_middle) << "round " << round;
    }
    EXPECT_EQ(e->autotune_passes(), 3);
    // timed forwards replay the bound bucket's graph
    e->set_input(0, f.large.features, f.large.indices, f.large.grid, 1);
    e->time_forward(2, 3);
    EXPECT_TRUE(to_bytes(e->output(0)) == want_large);
  }
}

TEST(CudaSizeBuckets, FactorZeroTunesOnceOnTheFirstFrame) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, 5, 7);
  const Frames f;
  BuildOptions o = cuda_options(true, kMaxVoxels, 1);
  const std::vector<uint8_t> want_large = run_fresh(b, o, f.large);
  o.cuda.tune_bucket_factor = 0.0;  // one bucket: the behaviour before size buckets
  auto e = b.build(o);
  run_bound(*e, f.small);
  EXPECT_TRUE(run_bound(*e, f.large) == want_large) << "the small frame's tiles give the same large output";
  run_bound(*e, f.middle);
  EXPECT_EQ(e->autotune_passes(), 1);
}

TEST(CudaSizeBuckets, TheTuningCacheKeepsEveryBucket) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, 5, 7);
  const Frames f;
  const std::string path = (fs::temp_directory_path() / "scn_cuda_size_buckets_test.tune").string();
  fs::remove(path);
  BuildOptions o = cuda_options(true, kMaxVoxels, 1);
  o.cuda.tuning_cache = path;

  std::vector<uint8_t> want_small, want_large;
  {
    auto e = b.build(o);
    want_small = run_bound(*e, f.small);
    want_large = run_bound(*e, f.large);
    EXPECT_EQ(e->autotune_passes(), 2);
  }
  const std::string saved = read_text(path);
  EXPECT_EQ(saved.rfind("scn tuning cache 2\n", 0), 0u) << saved;
  EXPECT_EQ(count_of(saved, "\trows 0-8191\t"), count_of(saved, "\trows 27648-41471\t")) << saved;
  EXPECT_GT(count_of(saved, "\trows 0-8191\t"), 0u) << saved;
  EXPECT_EQ(count_of(saved, "\trows 8192-12287\t"), 0u) << saved;

  {  // both buckets from the file: no tuning, the same outputs; a third bucket is tuned and added
    auto e = b.build(o);
    EXPECT_TRUE(run_bound(*e, f.large) == want_large);
    EXPECT_TRUE(run_bound(*e, f.small) == want_small);
    EXPECT_EQ(e->autotune_passes(), 0) << "buckets held by the tuning cache were tuned again";
    EXPECT_EQ(read_text(path), saved) << "a cache holding the bound buckets is not rewritten";
    run_bound(*e, f.middle);
    EXPECT_EQ(e->autotune_passes(), 1);
  }
  const std::string grown = read_text(path);
  EXPECT_GT(count_of(grown, "\trows 8192-12287\t"), 0u) << grown;
  EXPECT_EQ(count_of(grown, "\trows 0-8191\t"), count_of(saved, "\trows 0-8191\t")) << grown;

  // A file of the format before size buckets: re-tuned with the usual message, not an error.
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << "scn tuning cache 1\nkey\tgpu\tX\ntile\tconv0\tigemm m128n16k16s4t\nend\t1\n";
  {
    auto e = b.build(o);
    testing::internal::CaptureStderr();
    e->set_input(0, f.small.features, f.small.indices, f.small.grid, 1);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("re-tuning"), std::string::npos) << err;
    EXPECT_NE(err.find("format: 1 in the file, 2 here"), std::string::npos) << err;
    e->forward();
    EXPECT_TRUE(to_bytes(e->output(0)) == want_small);
    EXPECT_EQ(e->autotune_passes(), 1);
  }
  EXPECT_EQ(read_text(path).rfind("scn tuning cache 2\n", 0), 0u) << "the old file was not replaced";
  fs::remove(path);
}

TEST(CudaSizeBuckets, DeviceCountFramesShareOneBucket) {
  SCN_REQUIRE_CUDA();
  const EngineBuilder b = test::centerpoint_builder(kGrid, 5, 7);
  const Frames f;
  const BuildOptions o = cuda_options(true, kMaxVoxels, 1);
  auto e = b.build(o);
  // device buffers of the largest frame's size; the count says how many rows are valid
  Tensor count;
  for (const test::SparseInput* in : {&f.small, &f.large, &f.middle}) {
    const Tensor feat = in->features.to(Device::Cuda), idx = in->indices.to(Device::Cuda);
    const Tensor n = Tensor::from_host(std::vector<int32_t>{int32_t(in->features.dim(0))}.data(), {1}, DType::Int32);
    count = n.to(Device::Cuda);
    e->set_input_device_count(0, feat, idx, count.ptr<int32_t>(), in->grid, 1);
    e->forward();
    e->check_errors();
    EXPECT_TRUE(to_bytes(e->output(0)) == run_fresh(b, o, *in)) << in->features.dim(0) << " voxels";
  }
  EXPECT_EQ(e->autotune_passes(), 1) << "device-count frames are one bucket (the host does not know their size)";
}

}  // namespace
