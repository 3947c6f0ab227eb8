// Phase 2 of the voxelizer (docs/voxelize.md, "One graph from points to BEV"): points on the
// device -> CUDA voxelizer -> CUDA engine bound with set_input_device_count, captured into ONE
// CUDA graph (voxelizer run + engine forward, no host synchronisation in between), compared bit
// for bit with the two-step path (count read back, set_input with [N, C] tensors); and a device
// count above the engine's capacity reported by check_errors(). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/test_autotune.h"
#include "engine/centerpoint_graph.h"
#include "scn/engine.h"
#include "scn/points_to_bev.h"
#include "scn/timing.h"
#include "voxelize/voxelize_test_util.h"
#ifdef SCN_TEST_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace scn;

/// An FP16 CUDA build for the preset's voxel capacity and `max_batch` frames.
BuildOptions cuda_fp16_options(const VoxelizerConfig& c, int max_batch) {
  BuildOptions o;
  o.backend = Backend::Cuda;
  o.cuda.autotune = cudatest::test_autotune();
  o.precision = Precision::Fp16;
  o.max_input_voxels = c.max_voxels;
  o.max_batch = max_batch;
  return o;
}

/// The reference map: `host_frames` through the CPU voxelizer (one batch), bound from the host into a build of b.
Tensor host_bound_map(const EngineBuilder& b, const BuildOptions& o, Voxelizer& cpu_vox,
                      const std::vector<Tensor>& host_frames, const Int3& grid) {
  cpu_vox.run_batch(host_frames);
  auto e = b.build(o);
  e->set_input(0, cpu_vox.features(), cpu_vox.indices(), grid, int(host_frames.size()));
  e->forward(nullptr);
  return e->output(0).to(Device::Host);
}

#ifdef SCN_TEST_CUDA_RUNTIME
using voxtest::host_bytes;

TEST(PointsToBevCuda, OneGraphEqualsTwoSteps) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  // 100k points: ~45k voxels spread at random, whose strided levels stay inside the test model's
  // output_bound (a real scan is far more compact)
  const Tensor points = voxtest::make_cloud(c, 100000, 17, /*non_finite=*/true).to(Device::Cuda);
  const Int3 grid = model_grid(c);  // 41 x 1440 x 1440
  BuildOptions o;
  o.backend = Backend::Cuda;
  o.cuda.autotune = cudatest::test_autotune();
  o.precision = Precision::Fp16;
  o.max_input_voxels = c.max_voxels;
  o.cuda_graph = false;  // the caller captures voxelizer + engine into its own graph
  const EngineBuilder b = test::centerpoint_builder(grid, 5);

  // Two steps: the count comes back to the host between voxelizer and engine.
  auto vox_a = Voxelizer::create(c, Backend::Cuda, 300000);
  auto eng_a = b.build(o);
  vox_a->run(points, nullptr);
  eng_a->set_input(0, vox_a->features(), vox_a->indices(), grid);
  eng_a->forward(nullptr);
  eng_a->check_errors();
  const std::vector<uint8_t> want = host_bytes(eng_a->output(0));

  // One graph: the count never leaves the device.
  auto vox_b = Voxelizer::create(c, Backend::Cuda, 300000);
  auto eng_b = b.build(o);
  eng_b->set_input_device_count(0, vox_b->features_buffer(), vox_b->indices_buffer(), vox_b->device_count(), grid);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  vox_b->run(points, s);  // warm-up outside the capture (lazy planning, autotuning)
  eng_b->forward(s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  vox_b->run(points, s);
  eng_b->forward(s);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  vox_b->check_errors();
  eng_b->check_errors();
  EXPECT_EQ(vox_b->count(), vox_a->count());
  EXPECT_TRUE(host_bytes(eng_b->output(0)) == want) << "one-graph BEV map differs from the two-step one";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}
// Frames voxelized as one batch (Voxelizer::run_batch) into an engine of max_batch 2 bound by device count: the BEV
// maps equal those of the same engine build bound from the host with the CPU voxelizer's batch.
TEST(PointsToBevCuda, BatchOfFramesEqualsTheHostBoundBatch) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const std::vector<Tensor> frames{voxtest::make_cloud(c, 60000, 51).to(Device::Cuda),
                                   voxtest::make_cloud(c, 30000, 52).to(Device::Cuda)};
  const Int3 grid = model_grid(c);
  const BuildOptions o = cuda_fp16_options(c, 2);
  const EngineBuilder b = test::centerpoint_builder(grid, 5);
  auto cpu_vox = Voxelizer::create(c, Backend::Cpu, 300000, 0, 2);
  const Tensor want = host_bound_map(b, o, *cpu_vox, {frames[0].to(Device::Host), frames[1].to(Device::Host)}, grid);
  ASSERT_EQ(want.dim(0), 2);

  auto vox = Voxelizer::create(c, Backend::Cuda, 300000, 0, 2);
  auto eng = b.build(o);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (int round = 0; round < 2; ++round) {
    vox->run_batch(frames, s);
    if (round == 0)
      eng->set_input_device_count(0, vox->features_buffer(), vox->indices_buffer(), vox->device_count(), grid, 2);
    eng->forward(s);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    vox->check_errors();
    eng->check_errors();
    EXPECT_EQ(vox->count(), cpu_vox->count());
    EXPECT_TRUE(host_bytes(eng->output(0)) == host_bytes(want)) << "round " << round;
  }
  // the two frames' maps differ and are not empty
  const std::vector<float> v = voxtest::floats(want);
  const size_t half = v.size() / 2;
  double a = 0, d = 0;
  for (size_t k = 0; k < half; ++k) {
    a += std::abs(v[k]);
    d += std::abs(v[k] - v[k + half]);
  }
  EXPECT_GT(a, 0.0);
  EXPECT_GT(d, 0.0);
  cudaStreamDestroy(s);
}

TEST(PointsToBevCuda, DeviceCountAboveTheCapacityIsAnError) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Tensor points = voxtest::make_cloud(c, 270000, 5, /*non_finite=*/false).to(Device::Cuda);
  const Int3 grid = model_grid(c);
  BuildOptions o;
  o.backend = Backend::Cuda;
  o.cuda.autotune = cudatest::test_autotune();
  o.precision = Precision::Fp16;
  o.max_input_voxels = 4096;  // far below the cloud's voxel count
  o.cuda_graph = false;
  auto vox = Voxelizer::create(c, Backend::Cuda, 300000);
  auto eng = test::centerpoint_builder(grid, 5).build(o);
  eng->set_input_device_count(0, vox->features_buffer(), vox->indices_buffer(), vox->device_count(), grid);
  cudaStream_t s = nullptr;  // one stream for producer and forward (nullptr would put them on different streams)
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  vox->run(points, s);
  eng->forward(s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  vox->check_errors();
  const int64_t voxels = vox->count();
  ASSERT_GT(voxels, 4096);
  try {
    eng->check_errors();
    FAIL() << "no error for " << voxels << " voxels on a capacity of 4096";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("device count"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(voxels) + " voxels exceed the capacity of 4096"), std::string::npos) << m;
  }
  cudaStreamDestroy(s);  // after the last call that waits on it (the voxelizer and the engine keep its handle)
}

// A device count above the rows of the buffers bound with it is clamped to those rows and reported, never read past,
// and no capacity growth is tried for it: here the voxelizer's buffers bound as views of their first 4096 rows, on an
// engine planned for more rows and on one planned for exactly 4096 (the two limits equal), each with Error and Grow.
TEST(PointsToBevCuda, DeviceCountAboveTheBoundRowsIsAnError) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Tensor points = voxtest::make_cloud(c, 100000, 6, /*non_finite=*/false).to(Device::Cuda);
  const Int3 grid = model_grid(c);
  auto vox = Voxelizer::create(c, Backend::Cuda, 300000);
  Tensor f = vox->features_buffer(), i = vox->indices_buffer();
  const Tensor f_view = Tensor::wrap(f.data(), {4096, f.dim(1)}, f.dtype(), Device::Cuda);
  const Tensor i_view = Tensor::wrap(i.data(), {4096, 4}, DType::Int32, Device::Cuda);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (const int64_t capacity : {int64_t(c.max_voxels), int64_t(4096)})
    for (const CapacityOverflow overflow : {CapacityOverflow::Error, CapacityOverflow::Grow}) {
      SCOPED_TRACE("capacity " + std::to_string(capacity) +
                   (overflow == CapacityOverflow::Grow ? ", Grow" : ", Error"));
      BuildOptions o = cuda_fp16_options(c, 1);
      o.cuda_graph = false;
      o.max_input_voxels = capacity;
      o.on_capacity_overflow = overflow;
      auto eng = test::centerpoint_builder(grid, 5).build(o);
      eng->set_input_device_count(0, f_view, i_view, vox->device_count(), grid);
      vox->run(points, s);
      eng->forward(s);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      const int64_t voxels = vox->count();
      ASSERT_GT(voxels, 4096);
      ASSERT_LT(voxels, c.max_voxels);
      const size_t workspace = eng->workspace_bytes();
      try {
        eng->check_errors();
        FAIL() << "no error for a count of " << voxels << " on buffers of 4096 rows";
      } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("the count " + std::to_string(voxels) + " exceeds the rows of the bound buffers"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("of 4096 rows"), std::string::npos) << m;
      }
      EXPECT_EQ(eng->workspace_bytes(), workspace) << "grown for a limit no capacity lifts";
    }
  cudaStreamDestroy(s);
}

// The CUDA voxelizer's run() and run_batch() write one pair of buffers and one device count: an engine bound once (for
// a batch of 2) reads whichever ran last. A single frame then fills frame 0 of the batch and leaves frame 1 empty,
// as the CPU engine gives for that frame bound with batch size 2; a later batch is read whole.
TEST(PointsToBevCuda, BindingReadsTheLatestRunOfEitherKind) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Tensor a = voxtest::make_cloud(c, 60000, 61), b2 = voxtest::make_cloud(c, 30000, 62);
  const Int3 grid = model_grid(c);
  const BuildOptions o = cuda_fp16_options(c, 2);
  const EngineBuilder b = test::centerpoint_builder(grid, 5);
  auto cpu_vox = Voxelizer::create(c, Backend::Cpu, 300000, 0, 2);
  const Tensor want_ab = host_bound_map(b, o, *cpu_vox, {a, b2}, grid);
  const Tensor want_ba = host_bound_map(b, o, *cpu_vox, {b2, a}, grid);
  cpu_vox->run(a);
  auto e1 = b.build(o);
  e1->set_input(0, cpu_vox->features(), cpu_vox->indices(), grid, 2);
  e1->forward(nullptr);
  const Tensor want_a = e1->output(0).to(Device::Host);
  ASSERT_FALSE(host_bytes(want_a) == host_bytes(want_ab));

  const Tensor da = a.to(Device::Cuda), db = b2.to(Device::Cuda);
  auto vox = Voxelizer::create(c, Backend::Cuda, 300000, 0, 2);
  auto eng = b.build(o);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  vox->run_batch({da, db}, s);
  bind_voxelizer_output(*eng, *vox, grid, 2);
  const auto forward_map = [&] {
    eng->forward(s);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    vox->check_errors();
    eng->check_errors();
    return host_bytes(eng->output(0));
  };
  EXPECT_TRUE(forward_map() == host_bytes(want_ab)) << "the batch it was bound after";
  vox->run(da, s);
  EXPECT_TRUE(forward_map() == host_bytes(want_a)) << "a single frame after the batch";
  vox->run_batch({db, da}, s);
  EXPECT_TRUE(forward_map() == host_bytes(want_ba)) << "a batch after the single frame";
  cudaStreamDestroy(s);
}

// Bound for one frame, a later run_batch() of two is read whole (one count), and the second frame's rows are a device
// error naming their batch index, not a forward of the first frame alone.
TEST(PointsToBevCuda, BoundBatchSmallerThanTheRunIsAnError) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Tensor a = voxtest::make_cloud(c, 40000, 71).to(Device::Cuda),
               b2 = voxtest::make_cloud(c, 40000, 72).to(Device::Cuda);
  const Int3 grid = model_grid(c);
  auto vox = Voxelizer::create(c, Backend::Cuda, 300000, 0, 2);
  auto eng = test::centerpoint_builder(grid, 5).build(cuda_fp16_options(c, 2));
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  vox->run(a, s);
  bind_voxelizer_output(*eng, *vox, grid, 1);
  eng->forward(s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  eng->check_errors();
  vox->run_batch({a, b2}, s);
  eng->forward(s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  vox->check_errors();
  try {
    eng->check_errors();
    FAIL() << "a batch of two read by an engine bound for one frame raised nothing";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("has batch index 1, outside 0..0 for batch size 1"), std::string::npos) << m;
  }
  cudaStreamDestroy(s);
}
#endif

// scn::time_points_to_bev on CUDA: a batch of two host frames through a voxelizer of one parallel frame and an engine
// that replays its own graphs otherwise (inside the timing's captures it records its kernels). Afterwards the engine
// stays bound to the voxelizer's output: its map equals the same build's on the CPU voxelizer's batch bound from the
// host. Host frames have their upload timed as well (alone, and with the whole path); frames on the device none. A CPU
// engine with a CUDA voxelizer is refused, naming both.
TEST(PointsToBevCuda, TimedPipelineLeavesTheEngineOnTheVoxelizersBatch) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: runs on a GPU machine (scripts/gpu_check.sh)";
  const VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const std::vector<Tensor> frames{voxtest::make_cloud(c, 60000, 71), voxtest::make_cloud(c, 40000, 72)};
  const Int3 grid = model_grid(c);
  const BuildOptions o = cuda_fp16_options(c, 2);
  const EngineBuilder b = test::centerpoint_builder(grid, 5);
  auto cpu_vox = Voxelizer::create(c, Backend::Cpu, 100000, 0, 2);
  const std::vector<uint8_t> want = voxtest::host_bytes(host_bound_map(b, o, *cpu_vox, frames, grid));

  auto vox = Voxelizer::create(c, Backend::Cuda, 100000, 0, 2, 1);
  auto eng = b.build(o);
  const PointsToBevTiming t = time_points_to_bev(*eng, *vox, frames, grid, 2, 5);
  EXPECT_EQ(t.voxels, cpu_vox->count());
  ASSERT_EQ(t.total_ms.size(), 5u);
  ASSERT_EQ(t.voxelizer_ms.size(), 5u);
  ASSERT_EQ(t.network_ms.size(), 5u);
  // host frames: their upload is timed alone and with the whole path in one graph
  ASSERT_EQ(t.upload_ms.size(), 5u);
  ASSERT_EQ(t.from_host_ms.size(), 5u);
  for (const std::vector<double>* ms : {&t.total_ms, &t.voxelizer_ms, &t.network_ms, &t.upload_ms, &t.from_host_ms})
    for (double v : *ms) EXPECT_TRUE(v > 0 && v < 1000) << v;
  EXPECT_GT(summarize_timings(t.from_host_ms).median, summarize_timings(t.upload_ms).median);
  EXPECT_TRUE(voxtest::host_bytes(eng->output(0)) == want) << "the engine's map after the timing differs";
  // the voxelizer is usable afterwards: its last captured run's stream ended with the timing
  EXPECT_EQ(vox->count(), cpu_vox->count());
  EXPECT_EQ(vox->stats().voxels, cpu_vox->stats().voxels);
  // the same frames already on the device: nothing to upload, the same map
  const PointsToBevTiming on_device =
      time_points_to_bev(*eng, *vox, {frames[0].to(Device::Cuda), frames[1].to(Device::Cuda)}, grid, 1, 2);
  EXPECT_EQ(on_device.total_ms.size(), 2u);
  EXPECT_TRUE(on_device.upload_ms.empty());
  EXPECT_TRUE(on_device.from_host_ms.empty());
  EXPECT_TRUE(voxtest::host_bytes(eng->output(0)) == want) << "the map after timing device frames differs";

  BuildOptions co;
  co.backend = Backend::Cpu;
  auto cpu_eng = b.build(co);
  try {
    time_points_to_bev(*cpu_eng, *vox, frames, grid, 0, 1);
    FAIL() << "a CPU engine and a CUDA voxelizer were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the engine runs on cpu, voxelizer 'nuscenes-centerpoint' on cuda"),
              std::string::npos)
        << e.what();
  }
}

// The CPU path of scn::time_points_to_bev: the wall clock of voxelize + bind + forward, each alone as well; the
// engine ends bound to the last frame's voxels. Bad arguments are errors.
TEST(PointsToBev, CpuTimingRunsTheWholePathAndChecksItsArguments) {
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  c.range = {0.f, 0.f, -5.f, 3.2f, 3.2f, 3.f};  // 32 x 32 cells, 40 z planes: the model's 41 x 32 x 32
  c.voxel_size = {0.1f, 0.1f, 0.2f};
  c.feature_dtype = DType::Float32;
  const Int3 grid = model_grid(c);
  ASSERT_EQ(grid, (Int3{41, 32, 32}));
  const Tensor cloud = voxtest::make_cloud(c, 4000, 81);
  const EngineBuilder b = test::centerpoint_builder(grid, 5);
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Fp32;
  auto ref = b.build(o);
  const VoxelizeResult v = voxelize(cloud, c);
  ASSERT_GT(v.stats.voxels, 100);
  ref->set_input(0, v.features, v.indices, grid);
  ref->forward();
  const std::vector<uint8_t> want = voxtest::host_bytes(ref->output(0));

  auto eng = b.build(o);
  auto vox = Voxelizer::create(c, Backend::Cpu, 4000);
  const PointsToBevTiming t = time_points_to_bev(*eng, *vox, {cloud}, grid, 1, 3);
  EXPECT_EQ(t.voxels, v.stats.voxels);
  EXPECT_EQ(t.total_ms.size(), 3u);
  EXPECT_EQ(t.voxelizer_ms.size(), 3u);
  EXPECT_EQ(t.network_ms.size(), 3u);
  for (double ms : t.total_ms) EXPECT_GT(ms, 0.0);
  EXPECT_TRUE(t.upload_ms.empty() && t.from_host_ms.empty()) << "the CPU has no upload to time";
  EXPECT_TRUE(voxtest::host_bytes(eng->output(0)) == want);
  EXPECT_THROW(time_points_to_bev(*eng, *vox, {}, grid, 1, 3), Error);
  EXPECT_THROW(time_points_to_bev(*eng, *vox, {cloud}, grid, 1, 0), Error);
  EXPECT_THROW(time_points_to_bev(*eng, *vox, {cloud, cloud}, grid, 1, 1), Error);  // max_batch 1
}

// bind_voxelizer_output takes the batch size of the voxelizer's last run: a batch before the voxelizer ran that batch,
// or a frame count other than its last run's, is an error naming both counts; a single frame may be bound before the
// first run(), a batch after its run.
TEST(PointsToBev, BindingFollowsTheVoxelizersLastRun) {
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  c.range = {0.f, 0.f, -5.f, 3.2f, 3.2f, 3.f};
  c.voxel_size = {0.1f, 0.1f, 0.2f};
  c.feature_dtype = DType::Float32;
  const Int3 grid = model_grid(c);
  const Tensor cloud = voxtest::make_cloud(c, 2000, 82), other = voxtest::make_cloud(c, 2000, 83);
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = Precision::Fp32;
  o.max_batch = 2;
  auto eng = test::centerpoint_builder(grid, 5).build(o);
  auto vox = Voxelizer::create(c, Backend::Cpu, 2000, 0, 2);
  EXPECT_EQ(vox->last_run_frames(), 0);
  auto message = [&](int batch) {
    try {
      bind_voxelizer_output(*eng, *vox, grid, batch);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("bound");
  };
  const std::string before = message(2);
  EXPECT_NE(before.find("batch_size 2"), std::string::npos) << before;
  EXPECT_NE(before.find("has not run"), std::string::npos) << before;
  vox->run_batch({cloud, other});
  EXPECT_EQ(vox->last_run_frames(), 2);
  const std::string one = message(1);
  EXPECT_NE(one.find("batch_size 1"), std::string::npos) << one;
  EXPECT_NE(one.find("last ran 2 frames"), std::string::npos) << one;
  EXPECT_EQ(message(2), "bound");
  eng->forward();
  vox->run(cloud);
  EXPECT_EQ(vox->last_run_frames(), 1);
  EXPECT_NE(message(2).find("last ran 1 frame"), std::string::npos) << message(2);
  EXPECT_EQ(message(1), "bound");
  // a run refused before it starts (max_batch 2) leaves the last run's frames
  EXPECT_THROW(vox->run_batch({cloud, other, cloud}), Error);
  EXPECT_EQ(vox->last_run_frames(), 1) << "a run refused before it started changes nothing";
}

TEST(PointsToBev, CpuEngineRefusesADeviceCountClearly) {
  const EngineBuilder b = test::centerpoint_builder({41, 32, 32}, 5);
  BuildOptions o;
  o.backend = Backend::Cpu;
  auto e = b.build(o);
  const Tensor f = Tensor::empty({4, 5}, DType::Float16), i = Tensor::empty({4, 4}, DType::Int32);
  try {
    e->set_input_device_count(0, f, i, nullptr, {41, 32, 32});
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("set_input_device_count"), std::string::npos) << err.what();
  }
}

}  // namespace
