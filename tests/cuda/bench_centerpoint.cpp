// CenterPoint (SpMiddleResNetFHD) on the CUDA backend: latency on the real nuScenes frame (CUDA
// events after warm-up, median / p99), per-layer table, device memory, the implicit-GEMM tile
// configurations per layer, and a sweep over synthetic voxel counts. Not a ctest test:
// scripts/gpu_check.sh runs it.
//
//   bench_centerpoint [--data DIR] [--runs N] [--warmup N] [--csv DIR] [--quick]
//                     [--variant "FIELD=V[,FIELD=V...]"]... [--variants-only] [--concurrent N[,N...]]
// A --variant builds one more engine with those CudaOptions fields (autotune=0|1, tile=NAME,
// tune_skip=A;B, map_lookahead=N, stream_priorities=0|1, programmatic_launch=0|1|2, split=0|1|2,
// map_kernel=rows|general, strided_sites=auto|bitmap|rows, sites_ahead=0|1; docs/cuda_backend.md) and reports its
// median, per-step profile and bitwise equality with the default engine; --variants-only skips everything after the
// variants.
// --concurrent N: N engines, each with the frame bound, forward on N streams at once (frames/s
// against one engine back to back): what running the frames of a batch side by side would give.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/half.h"
#include "engine/centerpoint_graph.h"
#include "scn/engine.h"
#include "scn/timing.h"
#ifdef SCN_HAVE_SYNTH
#include "synthetic_frame.h"
#endif

namespace {

using namespace scn;

/// "FIELD=V,FIELD=V" -> pairs; an item without '=' is an error naming it.
std::vector<std::pair<std::string, std::string>> parse_variant(const std::string& v) {
  std::vector<std::pair<std::string, std::string>> kv;
  size_t p0 = 0;
  while (p0 < v.size()) {
    size_t p1 = v.find(',', p0);
    if (p1 == std::string::npos) p1 = v.size();
    const std::string item = v.substr(p0, p1 - p0);
    const size_t eq = item.find('=');
    SCN_CHECK(eq != std::string::npos, "--variant '", v, "': '", item, "' is not FIELD=VALUE");
    kv.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    p0 = p1 + 1;
  }
  return kv;
}

/// One FIELD=V of a --variant into `o.cuda`; an unknown field or value is an error naming it.
void apply_variant(BuildOptions& o, const std::string& k, const std::string& v) {
  CudaOptions& c = o.cuda;
  auto flag = [&]() {
    SCN_CHECK(v == "0" || v == "1", "--variant ", k, "=", v, ": expected 0 or 1");
    return v == "1";
  };
  if (k == "autotune") {
    c.autotune = flag();
  } else if (k == "tile") {
    c.tile = v;
  } else if (k == "tune_skip") {
    size_t p0 = 0;
    while (p0 <= v.size()) {
      size_t p1 = v.find(';', p0);
      if (p1 == std::string::npos) p1 = v.size();
      if (p1 > p0) c.tune_skip.push_back(v.substr(p0, p1 - p0));
      p0 = p1 + 1;
    }
  } else if (k == "map_lookahead") {
    c.map_lookahead = std::stoi(v);
  } else if (k == "stream_priorities") {
    c.stream_priorities = flag();
  } else if (k == "programmatic_launch") {
    SCN_CHECK(v == "0" || v == "1" || v == "2", "--variant ", k, "=", v, ": expected 0, 1 or 2");
    c.programmatic_launch = CudaProgrammaticLaunch(std::stoi(v));
  } else if (k == "split") {
    c.split = std::stoi(v);
  } else if (k == "sites_ahead") {
    c.sites_ahead = flag();
  } else if (k == "strided_sites") {
    SCN_CHECK(v == "auto" || v == "bitmap" || v == "rows", "--variant ", k, "=", v, ": expected auto, bitmap or rows");
    c.strided_sites = v == "bitmap" ? CudaStridedSites::FromBitmap
                      : v == "rows" ? CudaStridedSites::FromRows
                                    : CudaStridedSites::Auto;
  } else if (k == "map_kernel") {
    SCN_CHECK(v == "rows" || v == "general", "--variant ", k, "=", v, ": expected rows or general");
    c.map_kernel = v == "rows" ? CudaMapKernel::Rows : CudaMapKernel::General;
  } else {
    SCN_FAIL("--variant: unknown CudaOptions field '", k,
             "' (autotune, tile, tune_skip, map_lookahead, stream_priorities, programmatic_launch, split, map_kernel, "
             "strided_sites, sites_ahead)");
  }
}

BuildOptions cuda_opts(bool graph, int64_t max_voxels = 0) {
  BuildOptions o;
  o.backend = Backend::Cuda;
  o.precision = Precision::Fp16;
  o.cuda_graph = graph;
  o.max_input_voxels = max_voxels;
  return o;
}

std::vector<float> to_floats(const Tensor& t) {
  const Tensor h = t.to(Device::Host);
  std::vector<float> v(size_t(h.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = h.dtype() == DType::Float16 ? half_to_float(h.ptr<uint16_t>()[i]) : h.ptr<float>()[i];
  return v;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

size_t used_device_bytes() {
  size_t free_b = 0, total = 0;
  cudaMemGetInfo(&free_b, &total);
  return total - free_b;
}

/// Median of `reps` profile_layers runs, per step.
std::vector<LayerTiming> profile_median(Engine& e, int reps) {
  std::vector<std::vector<LayerTiming>> all;
  for (int i = 0; i < reps; ++i) all.push_back(e.profile_layers());
  std::vector<LayerTiming> out = all[0];
  for (size_t s = 0; s < out.size(); ++s) {
    std::vector<double> v;
    for (const auto& r : all) v.push_back(r[s].ms);
    out[s].ms = summarize_timings(v).median;
  }
  return out;
}

struct Input {
  Tensor features, indices;
  Int3 grid{41, 1440, 1440};
};

/// Synthetic frame of `n` voxels (scn_synth when built, else clustered random sites).
Input synthetic(int64_t n, uint64_t seed) {
  Input in;
#ifdef SCN_HAVE_SYNTH
  synth::FrameOptions o = synth::FrameOptions::nuscenes();
  o.voxels = n;
  o.seed = seed;
  const synth::Frame f = synth::generate_frame(o);
  in.features = synth::features_tensor(f);
  in.indices = synth::indices_tensor(f);
  in.grid = {f.grid[0], f.grid[1], f.grid[2]};
#else
  std::mt19937_64 rng(seed);
  std::set<int64_t> used;
  in.features = Tensor::empty({n, 5}, DType::Float16);
  in.indices = Tensor::empty({n, 4}, DType::Int32);
  int64_t i = 0;
  while (i < n) {  // clusters of points on a few surfaces
    const int cz = int(rng() % 30), cy = int(rng() % 1300) + 50, cx = int(rng() % 1300) + 50;
    for (int j = 0; j < 64 && i < n; ++j) {
      const int z = cz + int(rng() % 4), y = cy + int(rng() % 24), x = cx + int(rng() % 24);
      const int64_t key = (int64_t(z) * 1440 + y) * 1440 + x;
      if (!used.insert(key).second) continue;
      int32_t* r = in.indices.ptr<int32_t>() + 4 * i;
      r[0] = 0;
      r[1] = z;
      r[2] = y;
      r[3] = x;
      for (int c = 0; c < 5; ++c)
        in.features.ptr<uint16_t>()[i * 5 + c] = float_to_half(float(int(rng() % 2000) - 1000) / 100.f + 0.01f);
      ++i;
    }
  }
#endif
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = std::string(SCN_SHARED_DATA_DIR) + "/nuscenes-centerpoint";
  if (const char* d = std::getenv("SCN_DATA_DIR")) data = d;
  std::string csv_dir = ".";
  int runs = 200, warmup = 30;
  bool quick = false;
  bool ncu = false;  // one un-captured forward for a profiler (heuristic configs, no autotune launches)
  std::vector<std::string> variants;
  bool variants_only = false;
  std::vector<int> concurrent;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--data")
      data = next();
    else if (a == "--runs")
      runs = std::atoi(next().c_str());
    else if (a == "--warmup")
      warmup = std::atoi(next().c_str());
    else if (a == "--csv")
      csv_dir = next();
    else if (a == "--quick")
      quick = true;
    else if (a == "--ncu")
      ncu = true;
    else if (a == "--variant")
      variants.push_back(next());
    else if (a == "--variants-only")
      variants_only = true;
    else if (a == "--concurrent") {
      const std::string v = next();
      for (size_t p0 = 0; p0 < v.size();) {
        size_t p1 = v.find(',', p0);
        if (p1 == std::string::npos) p1 = v.size();
        const std::string item = v.substr(p0, p1 - p0);
        char* end = nullptr;
        const long k = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || k < 1 || k > 64) {
          std::fprintf(stderr, "--concurrent: '%s' in '%s' is not a count in 1..64\n", item.c_str(), v.c_str());
          return 2;
        }
        concurrent.push_back(int(k));
        p0 = p1 + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--data DIR] [--runs N] [--warmup N] [--csv DIR] [--quick] [--variant F=V,...] "
                   "[--variants-only] [--concurrent N,...]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!cuda_available()) {
    std::printf("no CUDA device: nothing to benchmark\n");
    return 0;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  std::printf("device: %s, %d SMs, cc %d.%d, L2 %d MB, runtime %d, driver %d\n", prop.name, prop.multiProcessorCount,
              prop.major, prop.minor, prop.l2CacheSize >> 20, rt, drv);

  try {
    Input frame;
    const bool have_frame = bool(std::ifstream(data + "/in_features.torch.fp16.tensor"));
    if (have_frame) {
      frame.features = Tensor::load(data + "/in_features.torch.fp16.tensor");
      frame.indices = Tensor::load(data + "/in_indices_zyx.torch.int32.tensor");
      std::printf("input: real nuScenes frame %s, %lld voxels\n", data.c_str(),
                  static_cast<long long>(frame.features.dim(0)));
    } else {
      frame = synthetic(79745, 1);
      std::printf("input: real frame not found in %s; synthetic frame of %lld voxels\n", data.c_str(),
                  static_cast<long long>(frame.features.dim(0)));
    }
    const EngineBuilder b = test::centerpoint_builder();
    if (ncu) {
      BuildOptions o = cuda_opts(false);
      o.cuda.autotune = false;
      for (const std::string& v : variants)  // e.g. --variant tile=NAME (scripts/ncu_layers.sh)
        for (const auto& [k, val] : parse_variant(v)) apply_variant(o, k, val);
      auto en = b.build(o);
      en->set_input(0, frame.features, frame.indices, frame.grid, 1);
      for (const auto& l : en->profile_layers())
        std::printf("  %-10s %-18s %-44s %.4f ms\n", l.node.c_str(), l.op.c_str(), l.algorithm.c_str(), l.ms);
      return 0;
    }

    std::FILE* summary = std::fopen((csv_dir + "/bench_summary.csv").c_str(), "w");
    if (summary) std::fprintf(summary, "metric,value\n");
    auto put = [&](const char* k, double v) {
      std::printf("  %-44s %.4f\n", k, v);
      if (summary) std::fprintf(summary, "%s,%.6f\n", k, v);
    };

    // ---- implicit GEMM, CUDA graph ------------------------------------------------------------
    cudaDeviceSynchronize();
    const size_t before = used_device_bytes();
    auto e = b.build(cuda_opts(true));
    cudaDeviceSynchronize();
    const size_t after_build = used_device_bytes();
    e->set_input(0, frame.features, frame.indices, frame.grid, 1);
    cudaDeviceSynchronize();
    const size_t after_input = used_device_bytes();
    e->forward();
    e->check_errors();
    cudaDeviceSynchronize();
    const size_t after = used_device_bytes();
    std::printf(
        "device memory (cudaMemGetInfo, MB above the start): after build %.1f, after set_input (arena, "
        "autotune) %.1f, after the first forward (graph) %.1f\n",
        double(after_build - before) / 1e6, double(after_input - before) / 1e6, double(after - before) / 1e6);
    const std::vector<float> ref = to_floats(e->output(0));
    const TimingStats g = summarize_timings(e->time_forward(warmup, runs));
    std::printf("\nCenterPoint, FP16, implicit GEMM, CUDA graph (%d runs after %d warm-up, each run timed alone):\n",
                runs, warmup);
    put("graph_median_ms", g.median);
    put("graph_p99_ms", g.p99);
    put("graph_mean_ms", g.mean);
    put("graph_min_ms", g.min);
    // back to back: launch overhead overlapped with the previous frame
    {
      cudaEvent_t a0, a1;
      cudaEventCreate(&a0);
      cudaEventCreate(&a1);
      cudaStream_t st;
      cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
      e->forward(st);
      cudaEventRecord(a0, st);
      for (int i = 0; i < runs; ++i) e->forward(st);
      cudaEventRecord(a1, st);
      cudaEventSynchronize(a1);
      float ms = 0;
      cudaEventElapsedTime(&ms, a0, a1);
      put("graph_back_to_back_ms_per_frame", double(ms) / runs);
      e->check_errors();
      cudaStreamDestroy(st);
      cudaEventDestroy(a0);
      cudaEventDestroy(a1);
    }
    put("workspace_bytes_MB", double(e->workspace_bytes()) / 1e6);
    put("device_memory_delta_MB", double(after - before) / 1e6);

    // ---- engines side by side ------------------------------------------------------------------
    for (const int n : concurrent) {
      std::vector<std::unique_ptr<Engine>> es;
      std::vector<cudaStream_t> sts(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        es.push_back(b.build(cuda_opts(true)));
        es.back()->set_input(0, frame.features, frame.indices, frame.grid, 1);
        cudaStreamCreateWithFlags(&sts[size_t(i)], cudaStreamNonBlocking);
        es.back()->forward(sts[size_t(i)]);  // the first forward tunes and captures
      }
      cudaDeviceSynchronize();
      // every engine gives the default engine's output bits
      bool same = true;
      for (const auto& x : es) same = same && to_floats(x->output(0)) == ref;
      cudaEvent_t start, done;
      cudaEventCreate(&start);
      cudaEventCreate(&done);
      std::vector<cudaEvent_t> ends(static_cast<size_t>(n));
      for (auto& ev : ends) cudaEventCreate(&ev);
      const int rounds = std::max(10, runs / n);
      for (int w = 0; w < 3; ++w)
        for (int i = 0; i < n; ++i) es[size_t(i)]->forward(sts[size_t(i)]);
      cudaDeviceSynchronize();
      cudaEventRecord(start, sts[0]);
      for (int i = 1; i < n; ++i) cudaStreamWaitEvent(sts[size_t(i)], start, 0);
      for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < n; ++i) es[size_t(i)]->forward(sts[size_t(i)]);
      for (int i = 0; i < n; ++i) {
        cudaEventRecord(ends[size_t(i)], sts[size_t(i)]);
        cudaStreamWaitEvent(sts[0], ends[size_t(i)], 0);
      }
      cudaEventRecord(done, sts[0]);
      cudaEventSynchronize(done);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, done);
      for (const auto& x : es) x->check_errors();
      const double per_frame = double(ms) / (double(rounds) * n);
      std::printf(
          "\n%d engines side by side (%d rounds, a stream each): %.4f ms per frame, %.0f frames/s, outputs %s\n", n,
          rounds, per_frame, 1e3 / per_frame, same ? "bitwise equal to the default engine's" : "DIFFER");
      char key[64];
      std::snprintf(key, sizeof key, "concurrent_%d_ms_per_frame", n);
      put(key, per_frame);
      for (auto& ev : ends) cudaEventDestroy(ev);
      cudaEventDestroy(start);
      cudaEventDestroy(done);
      for (cudaStream_t st : sts) cudaStreamDestroy(st);
      if (!same) return 1;
    }

    // ---- variants (CudaOptions fields), each against the default engine ---------------------------
    if (!variants.empty()) {
      // All variant engines are built first and timed round-robin with the default one (the
      // GPU's clocks drift by ~2 % over a minute of load: sequential timing would favour the
      // first engine).
      struct Variant {
        std::string name;
        std::unique_ptr<Engine> engine;
        std::vector<double> ms;
        double delta_mb = 0;
        bool same = true;
      };
      std::vector<Variant> vs;
      vs.push_back({"default", nullptr, {}, double(after - before) / 1e6, true});
      for (const std::string& v : variants) {
        const auto kv = parse_variant(v);
        try {
          BuildOptions o = cuda_opts(true);
          for (const auto& [k, val] : kv) apply_variant(o, k, val);
          cudaDeviceSynchronize();
          const size_t vb = used_device_bytes();
          auto ev = b.build(o);
          ev->set_input(0, frame.features, frame.indices, frame.grid, 1);
          ev->forward();
          ev->check_errors();
          cudaDeviceSynchronize();
          const size_t va = used_device_bytes();
          const bool same = to_floats(ev->output(0)) == ref;
          vs.push_back({v, std::move(ev), {}, double(va - vb) / 1e6, same});
        } catch (const std::exception& ex) {
          std::printf("  variant %s failed: %s\n", v.c_str(), ex.what());
        }
      }
      const int rounds = 10;
      for (int r = 0; r < rounds; ++r)
        for (auto& v : vs) {
          Engine& en = v.engine ? *v.engine : *e;
          const auto t = en.time_forward(3, std::max(1, runs / rounds));
          v.ms.insert(v.ms.end(), t.begin(), t.end());
        }
      std::printf(
          "\nvariants, timed round-robin (%d rounds x %d graph runs each; profile = median of 5 "
          "un-captured forwards):\n",
          rounds, std::max(1, runs / rounds));
      for (auto& v : vs) {
        Engine& en = v.engine ? *v.engine : *e;
        const TimingStats s = summarize_timings(v.ms);
        const auto prof = profile_median(en, 5);
        double convs = 0, other = 0;
        for (const auto& l : prof) (l.op == op_type_name(OpType::SparseConv) ? convs : other) += l.ms;
        std::printf(
            "  %-44s median %.4f ms  p99 %.4f  convs %.4f  other steps %.4f  bitwise %s  workspace %.1f MB"
            "  delta %.1f MB\n",
            v.name.c_str(), s.median, s.p99, convs, other, v.same ? "equal" : "DIFFERENT",
            double(en.workspace_bytes()) / 1e6, v.delta_mb);
        for (const auto& l : prof)
          std::printf("      %-10s %-18s %-52s %.4f\n", l.node.c_str(), l.op.c_str(), l.algorithm.c_str(), l.ms);
      }
      if (variants_only) return 0;
    }

    // ---- per-layer table ----------------------------------------------------------------------
    const auto layers = profile_median(*e, quick ? 5 : 20);
    std::printf("\nper step (median of %d profiled forwards, no graph, events around each step):\n", quick ? 5 : 20);
    std::printf("  %-12s %-18s %-42s %9s\n", "node", "op", "algorithm", "ms");
    double total = 0;
    std::FILE* lf = std::fopen((csv_dir + "/bench_layers.csv").c_str(), "w");
    if (lf) std::fprintf(lf, "step,node,op,algorithm,ms\n");
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto& l = layers[i];
      std::printf("  %-12s %-18s %-42s %9.4f\n", l.node.c_str(), l.op.c_str(), l.algorithm.c_str(), l.ms);
      if (lf) std::fprintf(lf, "%zu,%s,%s,%s,%.6f\n", i, l.node.c_str(), l.op.c_str(), l.algorithm.c_str(), l.ms);
      total += l.ms;
    }
    if (lf) std::fclose(lf);
    std::printf("  %-74s %9.4f\n", "sum of steps", total);
    put("profile_sum_ms", total);

    // ---- kernel maps on the main stream only ---------------------------------------------------
    {
      BuildOptions o = cuda_opts(true);
      o.cuda.map_lookahead = 0;
      auto e0 = b.build(o);
      e0->set_input(0, frame.features, frame.indices, frame.grid, 1);
      const TimingStats s = summarize_timings(e0->time_forward(warmup, runs));
      put("graph_maps_on_main_stream_median_ms", s.median);
      put("graph_maps_on_main_stream_rel_l2_vs_default", rel_l2(to_floats(e0->output(0)), ref));
    }

    {
      BuildOptions o = cuda_opts(true);
      o.cuda.map_lookahead = 2;
      auto e2 = b.build(o);
      e2->set_input(0, frame.features, frame.indices, frame.grid, 1);
      const TimingStats s = summarize_timings(e2->time_forward(warmup, runs));
      put("graph_map_lookahead2_median_ms", s.median);
      put("graph_map_lookahead2_workspace_MB", double(e2->workspace_bytes()) / 1e6);
    }
    {
      BuildOptions o = cuda_opts(true);
      o.cuda.autotune = false;
      auto eh = b.build(o);
      eh->set_input(0, frame.features, frame.indices, frame.grid, 1);
      const TimingStats s = summarize_timings(eh->time_forward(warmup, runs));
      put("graph_heuristic_configs_median_ms", s.median);
      put("graph_heuristic_configs_bitwise_equal_tuned", to_floats(eh->output(0)) == ref ? 1.0 : 0.0);
    }

    for (int sp : {1, 2}) {
      BuildOptions o = cuda_opts(true);
      o.cuda.split = sp;
      auto es = b.build(o);
      es->set_input(0, frame.features, frame.indices, frame.grid, 1);
      const TimingStats s = summarize_timings(es->time_forward(warmup, runs));
      const std::string k = "graph_split" + std::to_string(sp);
      put((k + "_median_ms").c_str(), s.median);
      put((k + "_rel_l2_vs_default").c_str(), rel_l2(to_floats(es->output(0)), ref));
      const auto p = es->profile_layers();
      for (const auto& l : p)
        if (l.op == op_type_name(OpType::SparseConv))
          std::printf("    %-8s %-44s %.4f ms\n", l.node.c_str(), l.algorithm.c_str(), l.ms);
    }

    // ---- no graph -----------------------------------------------------------------------------
    {
      auto e2 = b.build(cuda_opts(false));
      e2->set_input(0, frame.features, frame.indices, frame.grid, 1);
      const TimingStats s = summarize_timings(e2->time_forward(warmup, runs));
      put("nograph_median_ms", s.median);
      put("nograph_p99_ms", s.p99);
    }

    // ---- tile configurations per layer ----------------------------------------------------------
    if (!quick) {
      const std::vector<std::string> cfgs = cuda_tile_configs();
      std::map<std::string, std::map<std::string, double>> t;  // node -> cfg -> ms
      std::vector<std::string> order;
      for (const std::string& cs : cfgs) {
        const char* c = cs.c_str();
        BuildOptions o = cuda_opts(false);
        o.cuda.tile = cs;
        auto ec = b.build(o);
        ec->set_input(0, frame.features, frame.indices, frame.grid, 1);
        ec->forward();
        ec->check_errors();
        const auto p = profile_median(*ec, 7);
        for (const auto& l : p) {
          if (l.op != "SparseConvolution") continue;
          if (!t.count(l.node)) order.push_back(l.node);
          // a config that does not fit a layer falls back to the default: record only real ones
          if (l.algorithm.find(std::string("igemm ") + c + " ") != std::string::npos) t[l.node][c] = l.ms;
        }
      }
      std::FILE* cf = std::fopen((csv_dir + "/bench_configs.csv").c_str(), "w");
      if (cf) {
        std::fprintf(cf, "node");
        for (const auto& c : cfgs) std::fprintf(cf, ",%s", c.c_str());
        std::fprintf(cf, "\n");
      }
      std::printf("\nconv time per tile configuration (ms, median of 7 profiled forwards):\n  %-8s", "node");
      for (const auto& c : cfgs) std::printf(" %11s", c.c_str());
      std::printf("\n");
      for (const auto& n : order) {
        std::printf("  %-8s", n.c_str());
        if (cf) std::fprintf(cf, "%s", n.c_str());
        for (const std::string& cs : cfgs) {
          const char* c = cs.c_str();
          const auto it = t[n].find(c);
          if (it == t[n].end()) {
            std::printf(" %11s", "-");
            if (cf) std::fprintf(cf, ",");
          } else {
            std::printf(" %11.4f", it->second);
            if (cf) std::fprintf(cf, ",%.6f", it->second);
          }
        }
        std::printf("\n");
        if (cf) std::fprintf(cf, "\n");
      }
      if (cf) std::fclose(cf);
    }

    // ---- sweep over voxel counts ----------------------------------------------------------------
    {
      std::FILE* sf = nullptr;  // printed only (the device run returns at most 8 files)
      if (sf) std::fprintf(sf, "voxels,median_ms,p99_ms\n");
      std::printf("\nsweep over synthetic frames (%s), CUDA graph, a fresh engine (tuned on its frame) per count:\n",
#ifdef SCN_HAVE_SYNTH
                  "scn_synth"
#else
                  "clustered random sites"
#endif
      );
      const std::vector<int64_t> counts =
          quick ? std::vector<int64_t>{20000, 80000}
                : std::vector<int64_t>{10000, 20000, 40000, 80000, 120000, 160000, 200000};
      for (int64_t n : counts) {
        Input in;
        try {
          in = synthetic(n, uint64_t(n));
        } catch (const std::exception& ex) {
          std::printf("  %8lld voxels: no synthetic frame (%s)\n", static_cast<long long>(n), ex.what());
          continue;
        }
        auto es = b.build(cuda_opts(true, 200000));
        es->set_input(0, in.features, in.indices, in.grid, 1);
        TimingStats s;
        try {
          s = summarize_timings(es->time_forward(10, quick ? 20 : 50));
        } catch (const std::exception& ex) {
          std::printf("  %8lld voxels: %s\n", static_cast<long long>(in.features.dim(0)), ex.what());
          continue;
        }
        std::printf("  %8lld voxels: median %.4f ms, p99 %.4f ms\n", static_cast<long long>(in.features.dim(0)),
                    s.median, s.p99);
        if (sf) std::fprintf(sf, "%lld,%.6f,%.6f\n", static_cast<long long>(in.features.dim(0)), s.median, s.p99);
      }
      if (sf) std::fclose(sf);
    }
    if (summary) std::fclose(summary);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_centerpoint: %s\n", ex.what());
    return 1;
  }
  return 0;
}
