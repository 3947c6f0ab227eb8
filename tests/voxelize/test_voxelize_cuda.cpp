// The CUDA voxelizer against the CPU oracle, bit for bit: voxel count, indices, features and
// statistics on synthetic clouds of 1k-400k points; overflow reported by check_errors(); run()
// captured into a CUDA graph (it must neither synchronise nor allocate). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "scn/engine.h"
#include "scn/error.h"
#include "voxelize/voxelize_test_util.h"
#ifdef SCN_TEST_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace scn;

#define SCN_REQUIRE_CUDA()                                                                               \
  do {                                                                                                   \
    if (!::scn::cuda_available())                                                                        \
      GTEST_SKIP() << "no CUDA device: this build of scn has no CUDA backend or no GPU is visible; the " \
                      "CUDA voxelizer tests run on a GPU machine (scripts/gpu_check.sh)";                \
  } while (0)

std::vector<uint8_t> bytes(const Tensor& t) {
  const Tensor h = t.to(Device::Host);
  const auto* p = static_cast<const uint8_t*>(h.data());
  return std::vector<uint8_t>(p, p + h.bytes());
}

void expect_equal_to_cpu(Voxelizer& gpu, const Tensor& points, const VoxelizerConfig& c) {
  const VoxelizeResult ref = voxelize(points, c);
  ASSERT_EQ(gpu.count(), ref.stats.voxels);
  const VoxelizeStats s = gpu.stats();
  EXPECT_EQ(s.points, ref.stats.points);
  EXPECT_EQ(s.voxels, ref.stats.voxels);
  EXPECT_EQ(s.dropped_out_of_range, ref.stats.dropped_out_of_range);
  EXPECT_EQ(s.dropped_non_finite, ref.stats.dropped_non_finite);
  EXPECT_EQ(s.dropped_full, ref.stats.dropped_full);
  const Tensor f = gpu.features(), i = gpu.indices();
  EXPECT_EQ(f.device(), Device::Cuda);
  ASSERT_EQ(f.shape(), ref.features.shape());
  ASSERT_EQ(i.shape(), ref.indices.shape());
  EXPECT_EQ(f.dtype(), ref.features.dtype());
  EXPECT_TRUE(bytes(i) == bytes(ref.indices)) << "indices differ";
  EXPECT_TRUE(bytes(f) == bytes(ref.features)) << "features differ";
}

/// `pts` (float32, host) through `gpu` as given, then as float16 points on the device: both equal to the CPU's.
void expect_both_point_forms_equal_to_cpu(Voxelizer& gpu, const Tensor& pts, const VoxelizerConfig& c) {
  gpu.run(pts);
  expect_equal_to_cpu(gpu, pts, c);
  const Tensor h = pts.to_dtype(DType::Float16);
  gpu.run(h.to(Device::Cuda));
  expect_equal_to_cpu(gpu, h, c);
}

TEST(VoxelizeCuda, BitwiseEqualToCpuFrom1kTo400kPoints) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  c.max_voxels = 400000;
  auto gpu = Voxelizer::create(c, Backend::Cuda, 400000);
  for (int64_t P : {1000, 10000, 100000, 270000, 400000}) {
    SCOPED_TRACE("P = " + std::to_string(P));
    const Tensor pts = voxtest::make_cloud(c, P, uint64_t(P));
    gpu->run(pts);
    expect_equal_to_cpu(*gpu, pts, c);
    EXPECT_GT(gpu->stats().dropped_full, 0);
  }
}

TEST(VoxelizeCuda, BitwiseEqualToCpuAcrossOptions) {
  SCN_REQUIRE_CUDA();
  for (int variant = 0; variant < 4; ++variant) {
    VoxelizerConfig c = voxtest::small_config();
    c.order = variant & 1 ? VoxelOrder::Xyz : VoxelOrder::Zyx;
    c.reduction = variant & 2 ? VoxelReduction::First : VoxelReduction::Mean;
    c.feature_dtype = variant == 1 ? DType::Float32 : DType::Float16;
    c.feature_columns = variant == 3 ? std::vector<int>{3, 1} : std::vector<int>{0, 1, 2, 3};
    c.batch_index = variant;
    SCOPED_TRACE("variant " + std::to_string(variant));
    const Tensor pts = voxtest::make_cloud(c, 30000, uint64_t(10 + variant));
    auto gpu = Voxelizer::create(c, Backend::Cuda, 30000);
    expect_both_point_forms_equal_to_cpu(*gpu, pts, c);
  }
}

// Feature sets wider than a warp (40 columns, the point's columns repeated in a shuffled order): every voxel takes
// the warp path, whose staged branch once wrote only the first 32 columns and left the rest unwritten.
TEST(VoxelizeCuda, FeatureSetsWiderThanAWarpEqualTheCpu) {
  SCN_REQUIRE_CUDA();
  for (const VoxelReduction r : {VoxelReduction::Mean, VoxelReduction::First}) {
    VoxelizerConfig c = voxtest::small_config();
    c.reduction = r;
    c.feature_dtype = DType::Float32;
    c.feature_columns.clear();
    for (int f = 0; f < 40; ++f) c.feature_columns.push_back((f * 3 + 1) % c.point_columns);
    SCOPED_TRACE(r == VoxelReduction::Mean ? "mean" : "first");
    const Tensor pts = voxtest::make_cloud(c, 20000, 41);
    auto gpu = Voxelizer::create(c, Backend::Cuda, 20000);
    gpu->run(pts);
    expect_equal_to_cpu(*gpu, pts, c);
  }
}

// Non-finite values in feature columns (not coordinates: those drop the point) reach the outputs: NaN, +-Inf and a
// value beyond float16's range, in single-point and crowded voxels, from float32 and float16 points, through the
// mean and the first point, into float32 and float16 features. A NaN is written with one bit pattern on both backends
// (x86 keeps a NaN operand's payload, CUDA arithmetic gives the canonical NaN), so the outputs stay bitwise equal.
TEST(VoxelizeCuda, NonFiniteFeatureColumnsEqualTheCpuBitwise) {
  SCN_REQUIRE_CUDA();
  for (int variant = 0; variant < 4; ++variant) {
    VoxelizerConfig c = voxtest::small_config();
    c.reduction = variant & 1 ? VoxelReduction::First : VoxelReduction::Mean;
    c.feature_dtype = variant & 2 ? DType::Float32 : DType::Float16;
    SCOPED_TRACE("variant " + std::to_string(variant));
    Tensor pts = voxtest::make_cloud(c, 20000, uint64_t(90 + variant), /*non_finite=*/false);
    float* v = pts.ptr<float>();
    const float odd[] = {NAN, -NAN, INFINITY, -INFINITY, 1e6f};
    int nans = 0;
    for (int64_t i = 0; i < pts.dim(0); i += 7) {
      const float x = odd[(i / 7) % 5];
      v[i * c.point_columns + 3] = x;
      nans += std::isnan(x) ? 1 : 0;
    }
    ASSERT_GT(nans, 0);
    auto gpu = Voxelizer::create(c, Backend::Cuda, 20000);
    expect_both_point_forms_equal_to_cpu(*gpu, pts, c);
    // the outputs do hold NaNs (the case is not vacuous)
    const Tensor f = gpu->features().to(Device::Host).to_dtype(DType::Float32);
    int64_t out_nans = 0;
    for (int64_t k = 0; k < f.numel(); ++k) out_nans += std::isnan(f.ptr<float>()[k]) ? 1 : 0;
    EXPECT_GT(out_nans, 0);
  }
}

// Voxels of up to 700 points, their points scattered through the cloud in a shuffled order: the
// CUDA voxelizer keeps a voxel's first 16 arrivals in fixed slots and spills the rest, and must
// still keep the first max_points_per_voxel points in input order (every point has its own
// intensity, so a wrong choice changes the mean), for limits below, at and above 16.
TEST(VoxelizeCuda, CrowdedVoxelsKeepTheirFirstPointsInInputOrder) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxtest::small_config();
  const int cells_x = 16, cells_y = 16;  // the small grid's x, y cells (4 m / 0.25 m)
  std::vector<float> v;
  uint64_t s = 12345;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int vox = 0; vox < 120; ++vox) {
    const int points = 1 + int((uint64_t(vox) * 37u) % 700u);
    const float x = -2.f + 0.25f * float(vox % cells_x) + 0.125f, y = -2.f + 0.25f * float((vox / cells_x) % cells_y);
    for (int k = 0; k < points; ++k)
      v.insert(v.end(), {x + 0.001f * float(k % 50), y + 0.1f, 0.25f * float(vox % 3) - 0.5f + 0.01f, 0.f});
  }
  const int64_t P = int64_t(v.size() / 4);
  for (int64_t i = P - 1; i > 0; --i) {  // shuffle the rows (Fisher-Yates), then number the intensities
    const int64_t j = int64_t(next() % uint64_t(i + 1));
    for (int d = 0; d < 4; ++d) std::swap(v[size_t(i * 4 + d)], v[size_t(j * 4 + d)]);
  }
  for (int64_t i = 0; i < P; ++i) v[size_t(i * 4 + 3)] = float(i % 4099) * 0.5f + 0.125f;
  const Tensor pts = Tensor::from_host(v.data(), {P, 4}, DType::Float32);
  for (int limit : {1, 10, 16, 17, 64})
    for (VoxelReduction red : {VoxelReduction::Mean, VoxelReduction::First}) {
      SCOPED_TRACE("max_points_per_voxel " + std::to_string(limit) +
                   (red == VoxelReduction::Mean ? " mean" : " first"));
      c.max_points_per_voxel = limit;
      c.reduction = red;
      auto gpu = Voxelizer::create(c, Backend::Cuda, P);
      gpu->run(pts);
      expect_equal_to_cpu(*gpu, pts, c);
      EXPECT_GT(gpu->stats().dropped_full, 0);
      gpu->run(pts);  // the bitmaps were cleared by the first run
      expect_equal_to_cpu(*gpu, pts, c);
    }
}

TEST(VoxelizeCuda, EmptyOutOfRangeAndRepeatedRuns) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxtest::small_config();
  auto gpu = Voxelizer::create(c, Backend::Cuda, 5000);
  gpu->run(Tensor::from_host(nullptr, {0, 4}, DType::Float32));
  EXPECT_EQ(gpu->count(), 0);
  const std::vector<float> far = {9.f, 9.f, 9.f, 1.f, -9.f, 0.f, 0.f, 1.f};
  gpu->run(Tensor::from_host(far.data(), {2, 4}, DType::Float32));
  EXPECT_EQ(gpu->count(), 0);
  EXPECT_EQ(gpu->stats().dropped_out_of_range, 2);
  const Tensor pts = voxtest::make_cloud(c, 5000, 3);
  gpu->run(pts);
  const std::vector<uint8_t> first = bytes(gpu->features());
  gpu->run(pts);
  EXPECT_TRUE(bytes(gpu->features()) == first);
  expect_equal_to_cpu(*gpu, pts, c);
  EXPECT_THROW(gpu->run(voxtest::make_cloud(c, 5001, 3)), Error);
}

TEST(VoxelizeCuda, OverflowIsReportedNotTruncated) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxtest::small_config();
  const Tensor pts = voxtest::make_cloud(c, 20000, 4);
  const int64_t n = voxelize(pts, c).stats.voxels;
  c.max_voxels = n - 10;
  auto gpu = Voxelizer::create(c, Backend::Cuda, 20000);
  gpu->run(pts);
  try {
    gpu->check_errors();
    FAIL() << "no overflow error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(n) + " voxels exceed max_voxels = " + std::to_string(n - 10)),
              std::string::npos)
        << e.what();
  }
  gpu->run(pts);
  EXPECT_THROW(gpu->count(), Error);
  // The flag is per run: a cloud that fits runs cleanly afterwards.
  const Tensor small = voxtest::make_cloud(c, 500, 5);
  gpu->run(small);
  EXPECT_NO_THROW(gpu->check_errors());
  expect_equal_to_cpu(*gpu, small, c);
}

TEST(VoxelizeCuda, RunBatchBitwiseEqualToTheFramesOnTheCpu) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  c.max_voxels = 200000;
  auto gpu = Voxelizer::create(c, Backend::Cuda, 300000, 0, 4);
  const std::vector<Tensor> frames{voxtest::make_cloud(c, 270000, 31), Tensor::empty({0, 5}, DType::Float32),
                                   voxtest::make_cloud(c, 1000, 33).to(Device::Cuda),
                                   voxtest::make_cloud(c, 90000, 34)};
  gpu->run_batch(frames);
  EXPECT_GT(voxtest::expect_batch_equals_frames(*gpu, frames), 100000);
  EXPECT_EQ(gpu->features_buffer().dim(0), 4 * c.max_voxels);
  // a shorter batch after a longer one: nothing of the longer one remains
  const std::vector<Tensor> two{frames[3], frames[2]};
  gpu->run_batch(two);
  EXPECT_EQ(voxtest::expect_batch_equals_frames(*gpu, two),
            voxelize(frames[3], c).stats.voxels + voxelize(frames[2].to(Device::Host), c).stats.voxels);
  // a single frame afterwards: the first rows of the same buffers (one pair and one device count for both kinds of
  // run) and the config's batch index again
  gpu->run(frames[0]);
  expect_equal_to_cpu(*gpu, frames[0], c);
  EXPECT_EQ(gpu->features_buffer().dim(0), 4 * c.max_voxels);
  gpu->run_batch(two);
  EXPECT_EQ(voxtest::expect_batch_equals_frames(*gpu, two), gpu->count());
}

TEST(VoxelizeCuda, RunBatchOverflowNamesTheFrame) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxtest::small_config();
  const Tensor small = voxtest::make_cloud(c, 200, 41), large = voxtest::make_cloud(c, 20000, 42);
  const int64_t n_small = voxelize(small, c).stats.voxels, n_large = voxelize(large, c).stats.voxels;
  ASSERT_GT(n_large, n_small + 1);
  c.max_voxels = n_small + 1;
  auto gpu = Voxelizer::create(c, Backend::Cuda, 20000, 0, 3);
  gpu->run_batch({small, large, small});
  try {
    gpu->check_errors();
    FAIL() << "no overflow error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("voxelizer 'small (frame 1 of the batch)': " + std::to_string(n_large) +
                                   " voxels exceed max_voxels = " + std::to_string(n_small + 1) + " (20000 points)"),
        std::string::npos)
        << e.what();
  }
  gpu->run_batch({small, small});  // the flag is per batch
  EXPECT_NO_THROW(gpu->check_errors());
  EXPECT_EQ(voxtest::expect_batch_equals_frames(*gpu, {small, small}), 2 * n_small);
  EXPECT_THROW(gpu->run_batch({small, small, small, small}), Error);
  EXPECT_THROW(gpu->run_batch({}), Error);
}

// Fewer parallel frames than frames: frame b works in lane b mod parallel_frames after the lane's previous frame.
// Every count gives the CPU's frames bit for bit, for batches that fill the lanes unevenly, after one another (each
// frame leaves its lane's bitmaps clear for the next).
TEST(VoxelizeCuda, RunBatchWithFewerParallelFramesIsTheSameBatch) {
  SCN_REQUIRE_CUDA();
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  c.max_voxels = 150000;
  const std::vector<Tensor> frames{voxtest::make_cloud(c, 200000, 81).to(Device::Cuda),
                                   voxtest::make_cloud(c, 3000, 82), Tensor::empty({0, 5}, DType::Float32),
                                   voxtest::make_cloud(c, 150000, 83).to(Device::Cuda),
                                   voxtest::make_cloud(c, 60000, 84).to(Device::Cuda)};
  for (const int pf : {1, 2, 3}) {
    SCOPED_TRACE("parallel_frames " + std::to_string(pf));
    auto gpu = Voxelizer::create(c, Backend::Cuda, 200000, 0, 5, pf);
    EXPECT_EQ(gpu->parallel_frames(), pf);
    gpu->run_batch(frames);
    EXPECT_GT(voxtest::expect_batch_equals_frames(*gpu, frames), 100000);
    const std::vector<Tensor> again{frames[4], frames[0], frames[3]};
    gpu->run_batch(again);
    EXPECT_GT(voxtest::expect_batch_equals_frames(*gpu, again), 100000);
  }
}

// The device memory a voxelizer holds: one workspace (at least the cell bitmap) per parallel frame, each the same
// size, beside one output buffer of max_batch x max_voxels rows; the CPU voxelizer holds none.
TEST(VoxelizeCuda, WorkspaceGrowsByOneLanePerParallelFrame) {
  SCN_REQUIRE_CUDA();
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Int3 g = voxel_grid(c);
  const size_t bitmap = size_t(g[0]) * size_t(g[1]) * size_t(g[2]) / 8;
  std::vector<size_t> w;  // max_batch 1..3, a lane per frame
  for (int b = 1; b <= 3; ++b) w.push_back(Voxelizer::create(c, Backend::Cuda, 300000, 0, b)->workspace_bytes());
  EXPECT_GT(w[0], bitmap);
  EXPECT_GT(w[1] - w[0], bitmap);
  EXPECT_EQ(w[2] - w[1], w[1] - w[0]);
  std::vector<size_t> p;  // max_batch 3, parallel_frames 1..3
  for (int pf = 1; pf <= 3; ++pf) p.push_back(Voxelizer::create(c, Backend::Cuda, 300000, 0, 3, pf)->workspace_bytes());
  EXPECT_EQ(p[2], w[2]);
  EXPECT_GT(p[1] - p[0], bitmap);
  EXPECT_EQ(p[2] - p[1], p[1] - p[0]);
  // one lane less saves a lane's workspace: what a frame of max_batch adds less its output rows
  EXPECT_LT(p[1] - p[0], w[1] - w[0]);
  // A frame of max_batch in no lane of its own adds its output rows once (the frames write into one buffer, no batch
  // copy) and a few bytes of statistics.
  const size_t rows = size_t(c.max_voxels) * (c.feature_columns.size() * dtype_size(c.feature_dtype) + 16);
  const size_t one_lane_frame = Voxelizer::create(c, Backend::Cuda, 300000, 0, 2, 1)->workspace_bytes() - w[0];
  EXPECT_GE(one_lane_frame, rows);
  EXPECT_LE(one_lane_frame, rows + 1024);
  EXPECT_EQ(Voxelizer::create(c, Backend::Cpu, 300000, 0, 3)->workspace_bytes(), 0u);
}

#ifdef SCN_TEST_CUDA_RUNTIME
TEST(VoxelizeCuda, RunIsCapturableIntoACudaGraph) {
  SCN_REQUIRE_CUDA();
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Tensor pts = voxtest::make_cloud(c, 270000, 9);
  const Tensor dev = pts.to(Device::Cuda);
  auto gpu = Voxelizer::create(c, Backend::Cuda, 300000);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // A synchronisation or an allocation inside run() would fail the capture.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  gpu->run(dev, s);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  int32_t n = -1;
  ASSERT_EQ(cudaMemcpy(&n, gpu->device_count(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(n, voxelize(pts, c).stats.voxels);
  expect_equal_to_cpu(*gpu, pts, c);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

// run_batch() forks lanes 1.. off the caller's stream (a frame's rows wait for the earlier frames' counts on other
// lanes) and joins them before the batch's statistics: inside a capture those are parallel branches of the caller's graph. Replayed three times, with other frames' runs in
// between (they leave the lanes' bitmaps clear), the graph gives the rows of the same batch run outside the capture,
// which are the CPU's frames bit for bit.
TEST(VoxelizeCuda, RunBatchIsCapturableIntoACudaGraph) {
  SCN_REQUIRE_CUDA();
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const std::vector<Tensor> frames{voxtest::make_cloud(c, 200000, 61).to(Device::Cuda),
                                   voxtest::make_cloud(c, 5000, 62).to(Device::Cuda),
                                   voxtest::make_cloud(c, 150000, 63).to(Device::Cuda)};
  const std::vector<Tensor> others{voxtest::make_cloud(c, 100000, 64).to(Device::Cuda),
                                   voxtest::make_cloud(c, 120000, 65).to(Device::Cuda)};
  for (const int pf : {3, 2}) {  // a lane per frame; two lanes, the first running frames 0 and 2
    SCOPED_TRACE("parallel_frames " + std::to_string(pf));
    auto gpu = Voxelizer::create(c, Backend::Cuda, 300000, 0, 3, pf);
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    gpu->run_batch(frames, s);  // outside the capture: against the CPU's frames
    EXPECT_GT(voxtest::expect_batch_equals_frames(*gpu, frames), 50000);
    const std::vector<uint8_t> want_f = voxtest::host_bytes(gpu->features()),
                               want_i = voxtest::host_bytes(gpu->indices());
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    gpu->run_batch(frames, s);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    size_t nodes = 0;
    ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_GT(nodes, 3u * 6u) << "the three frames' kernels are not all in the graph";
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      gpu->run_batch({others[size_t(round % 2)], others[size_t(1 - round % 2)]}, s);
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      // the host's record of the last call is the other batch's; the device count and rows are the graph's
      EXPECT_TRUE(voxtest::host_bytes(gpu->features()) == want_f);
      EXPECT_TRUE(voxtest::host_bytes(gpu->indices()) == want_i);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}
#endif

}  // namespace
