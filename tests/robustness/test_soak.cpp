// Soak: many frames of varying size (5k .. 200k voxels) through ONE engine, on the CPU and on the
// GPU (skipped visibly without one). Checks that
//  - every output is bitwise equal to a fresh engine's output on the same frame (nothing of an
//    earlier, larger or smaller frame leaks into a later one), and
//  - neither the resident host memory nor the used device memory (cudaMemGetInfo) grows once the
//    engine has seen the largest frame.
// The ctest version runs SCN_SOAK_FRAMES frames (default 20); run the binary with
// SCN_SOAK_FRAMES=1000 for the long version. SCN_SOAK_FRESH_EVERY=k compares with a fresh engine
// on every k-th frame only (default 1: every frame). SCN_SOAK_UNDER_SANITIZER=1 (scripts/gpu_sanitize.sh)
// leaves out the device memory check: compute-sanitizer's own device buffers count in cudaMemGetInfo
// and grow with the launches it tracks (160 MiB over this soak under initcheck).
#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/sanitizers.h"
#include "robustness/robust_util.h"

#ifdef SCN_TEST_CUDART
#include <cuda_runtime_api.h>
#endif

namespace scn::robust {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const int n = std::atoi(v);
  return n > 0 ? n : fallback;
}

/// Returns freed heap memory to the system so that RSS measures what is still held.
int64_t settled_rss() {
  malloc_trim(0);
  return rss_bytes();
}

/// Device memory in use on the current device (0 without the CUDA runtime).
int64_t used_device_bytes() {
#ifdef SCN_TEST_CUDART
  cudaDeviceSynchronize();
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) return 0;
  return int64_t(total - free_b);
#else
  return 0;
#endif
}

class Soak : public ::testing::TestWithParam<Backend> {};

TEST_P(Soak, OneEngineManyFrameSizes) {
  const Backend backend = GetParam();
  if (backend == Backend::Cuda && !cuda_available()) GTEST_SKIP() << "no CUDA device: the GPU soak needs one";
#ifdef SCN_UNDER_ASAN
  const int default_frames = 6;  // ASan makes every frame ~10x slower; CI runs the real count
  const int64_t max_voxels = 60000;
#else
  const int default_frames = 20;
  const int64_t max_voxels = 200000;
#endif
  const int frames = env_int("SCN_SOAK_FRAMES", default_frames);
  const int fresh_every = env_int("SCN_SOAK_FRESH_EVERY", 1);
  const int64_t min_voxels = 5000;
  const auto t_start = std::chrono::steady_clock::now();

  // Base frames of the largest size; frame i uses the first n_i voxels of one of them (a prefix
  // of a scan is a valid frame: distinct sites, all in the grid).
  std::vector<Frame> base;
  for (uint64_t s = 0; s < 3; ++s) base.push_back(make_frame(max_voxels, 1000 + s));
  std::mt19937_64 rng(4242);
  // Warm-up: largest, smallest, largest; on CUDA then one frame in every size bucket of the tuner
  // (CudaOptions::tune_bucket_base / factor: a bucket's first frame tunes it and captures its graph,
  // whose memory is allocated then, once). A ladder of factor 1.25 meets every bucket of factor 1.5.
  std::vector<int64_t> warm_sizes = {max_voxels, min_voxels, max_voxels};
  if (backend == Backend::Cuda)
    for (double n = double(min_voxels) * 1.25; n < double(max_voxels); n *= 1.25) warm_sizes.push_back(int64_t(n));
  const int frames_run = backend == Backend::Cuda ? std::max(frames, int(warm_sizes.size()) + 17) : frames;
  auto count_of = [&](int i) -> int64_t {
    if (size_t(i) < warm_sizes.size()) return warm_sizes[size_t(i)];
    return min_voxels + int64_t(rng() % uint64_t(max_voxels - min_voxels + 1));
  };
  auto frame_of = [&](int i, int64_t n) {
    const Frame& b = base[size_t(i) % base.size()];
    Frame f;
    f.grid = b.grid;
    f.features = Tensor::from_host(b.features.data(), {n, 5}, DType::Float16);
    f.indices = Tensor::from_host(b.indices.data(), {n, 4}, DType::Int32);
    return f;
  };

  const EngineBuilder builder = small_backbone();
  const BuildOptions opts = options_for(backend, max_voxels);
  std::unique_ptr<Engine> engine = builder.build(opts);

  const int warmup = std::min(frames_run, int(warm_sizes.size()));
  int64_t rss_warm = 0, rss_max = 0, voxels_total = 0, lo = max_voxels, hi = 0;
  int64_t dev_warm = 0, dev_max = 0;
  int compared = 0;
  for (int i = 0; i < frames_run; ++i) {
    const int64_t n = count_of(i);
    const Frame f = frame_of(i, n);
    const std::vector<Tensor> got = run_once(*engine, f);
    if (i % fresh_every == 0 || i < warmup) {
      std::unique_ptr<Engine> fresh = builder.build(opts);
      const std::string diff = bitwise_diff(got, run_once(*fresh, f));
      ASSERT_EQ(diff, "") << "frame " << i << " (" << n << " voxels): the long-lived engine differs from a fresh one";
      ++compared;
    }
    voxels_total += n;
    lo = std::min(lo, n);
    hi = std::max(hi, n);
    // (device memory only for the CUDA engine: querying it creates a CUDA context, whose host
    // memory would count as growth of the CPU engine)
    const bool gpu = backend == Backend::Cuda;
    if (i == warmup - 1) {
      dev_warm = gpu ? used_device_bytes() : 0;  // the fresh engines of this loop are gone by now
      rss_warm = settled_rss();
    }
    if (i >= warmup - 1) {
      rss_max = std::max(rss_max, settled_rss());
      dev_max = std::max(dev_max, gpu ? used_device_bytes() : 0);
    }
  }
  const int64_t rss_end = settled_rss();
  const int64_t dev_end = backend == Backend::Cuda ? used_device_bytes() : 0;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf(
      "[soak %s] %d frames (%s), %lld..%lld voxels, %.0f avg; %d compared with a fresh engine; RSS after "
      "warm-up %.1f MiB, max %.1f MiB, end %.1f MiB (growth %+.1f MiB); engine workspace %.1f MiB; %.1f s\n",
      backend == Backend::Cpu ? "cpu" : "cuda", frames_run, frame_source(), (long long)lo, (long long)hi,
      double(voxels_total) / frames_run, compared,
      double(rss_warm) / 1048576.0, double(rss_max) / 1048576.0, double(rss_end) / 1048576.0,
      double(rss_end - rss_warm) / 1048576.0, double(engine->workspace_bytes()) / 1048576.0, secs);
  ::testing::Test::RecordProperty("rss_warm_bytes", std::to_string(rss_warm));
  ::testing::Test::RecordProperty("rss_end_bytes", std::to_string(rss_end));
  if (backend == Backend::Cuda) {
    std::printf("[soak cuda] device memory in use after warm-up %.1f MiB, max %.1f MiB, end %.1f MiB (growth %+.1f MiB)\n",
                double(dev_warm) / 1048576.0, double(dev_max) / 1048576.0, double(dev_end) / 1048576.0,
                double(dev_end - dev_warm) / 1048576.0);
    if (env_int("SCN_SOAK_UNDER_SANITIZER", 0) != 0) {
      std::printf("[soak cuda] under compute-sanitizer: its buffers count as used, device memory is not checked\n");
    } else {
      // once every size bucket was met, nothing may grow per frame (2 MiB: driver pages)
      EXPECT_LE(dev_end - dev_warm, int64_t(2) << 20) << "device memory grew over the soak";
      EXPECT_LE(dev_max - dev_warm, int64_t(2) << 20) << "device memory grew over the soak (peak)";
    }
  }
#ifdef SCN_UNDER_ASAN
  std::printf("[soak] AddressSanitizer build: its quarantine holds freed memory, RSS is not checked\n");
#else
  // Bounded growth: after the engine has seen the largest frame, its buffers are at their high
  // water mark; allow allocator noise (16 MiB or 5%), not growth per frame.
  const int64_t allowance = std::max<int64_t>(16 << 20, rss_warm / 20);
  EXPECT_LE(rss_end - rss_warm, allowance) << "resident memory grew over the soak";
  EXPECT_LE(rss_max - rss_warm, allowance) << "resident memory grew over the soak (peak)";
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, Soak, ::testing::Values(Backend::Cpu, Backend::Cuda), backend_label);

}  // namespace
}  // namespace scn::robust
