// scn bench MODEL.onnx --points FILE [--points FILE ...]: raw points -> outputs timed (scn::time_points_to_bev):
// the voxelizer and the forward together (CUDA: one CUDA graph), each alone, frames/s, and on CUDA the points' upload
// from pinned host memory alone and before the rest in one graph.
#include <cstdio>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "scn/points_to_bev.h"
#include "scn/timing.h"

namespace scn::cli {

int run_points_bench(const BenchArgs& a, EngineBuilder& builder, BuildOptions options, double parse_ms) {
  if (!a.csv.empty()) check_output_file("--csv", a.csv);
  const Graph& graph = builder.graph();
  SCN_CHECK(graph.inputs.size() == 1, a.model, ": the model has ", graph.inputs.size(),
            " inputs; scn bench binds exactly one");
  VoxelOptions vo = a.vox;
  if (!a.preset.empty()) vo.preset = a.preset;
  const int batch = int(a.points.size());
  SCN_CHECK(a.parallel_frames <= batch, "--parallel-frames ", a.parallel_frames, " exceeds the ", batch,
            " point files given (one frame per file)");
  options.max_batch = batch;
  options.max_input_voxels = make_voxelizer_config(vo).max_voxels;  // per frame
  const int64_t t_build = now_ns();
  std::unique_ptr<Engine> engine = builder.build(options);
  const double build_ms = ms_since(t_build);
  const PointFrames pf = read_point_frames(a.points, vo, *engine, a.grid);
  std::unique_ptr<Voxelizer> vox =
      Voxelizer::create(pf.config, engine->backend(), pf.most_points, 0, batch, a.parallel_frames);

  const bool cpu = engine->backend() == Backend::Cpu;
  const int warmup = a.warmup >= 0 ? a.warmup : (cpu ? 2 : 20);
  const int runs = a.runs >= 0 ? a.runs : (cpu ? 10 : 200);
  std::printf("model      %s (%zu nodes, %s order)\n", a.model.c_str(), graph.nodes.size(),
              model_index_order(graph).c_str());
  std::printf("backend    %s, precision %s\n", backend_name(engine->backend()), precision_name(engine->precision()));
  std::printf("build      %.1f ms (parse %.1f ms)\n", parse_ms + build_ms, parse_ms);
  std::string files;
  int64_t points = 0;
  for (size_t k = 0; k < a.points.size(); ++k) {
    files += (k ? ", " : "") + a.points[k];
    points += pf.frames[k].dim(0);
  }
  std::printf("points     %s: %lld points, voxelizer '%s', grid %s (%s)\n", files.c_str(),
              static_cast<long long>(points), pf.config.name.c_str(), int3_string(pf.grid).c_str(),
              pf.grid_note.c_str());
  const PointsToBevTiming t = time_points_to_bev(*engine, *vox, pf.frames, pf.grid, warmup, runs);
  const TimingStats total = summarize_timings(t.total_ms);
  const TimingStats alone_vox = summarize_timings(t.voxelizer_ms);
  const TimingStats alone_net = summarize_timings(t.network_ms);
  std::printf("voxels     %lld (%s)\n", static_cast<long long>(t.voxels),
              batch > 1 ? (std::to_string(batch) + " frames, one batch").c_str() : "one frame");
  std::printf("latency    points -> outputs: %s (%d runs after %d warm-up; %s)\n", latency_text(total).c_str(), runs,
              warmup, cpu ? "wall clock: voxelize, bind, forward" : "one CUDA graph: voxelizer + network");
  std::printf("voxelizer  alone: median %s ms\n", fixed(alone_vox.median).c_str());
  std::printf("network    alone on the same voxels: median %s ms\n", fixed(alone_net.median).c_str());
  if (!t.from_host_ms.empty())
    std::printf(
        "from host  upload + points -> outputs: median %s ms (the points' copy to the device alone: median %s ms, "
        "from pinned host memory; one CUDA graph)\n",
        fixed(summarize_timings(t.from_host_ms).median).c_str(), fixed(summarize_timings(t.upload_ms).median).c_str());
  std::printf("throughput %s frames/s\n", fixed(total.median > 0 ? 1000.0 * batch / total.median : 0.0, 0).c_str());
  if (const size_t ws = vox->workspace_bytes())
    std::printf("workspace  voxelizer %s (%d parallel frame%s), engine %s\n", format_bytes(double(ws)).c_str(),
                vox->parallel_frames(), vox->parallel_frames() == 1 ? "" : "s",
                format_bytes(double(engine->workspace_bytes())).c_str());
  else if (const size_t ews = engine->workspace_bytes())
    std::printf("workspace  engine %s\n", format_bytes(double(ews)).c_str());
  if (!a.csv.empty()) {
    std::ostringstream csv;
    csv << "voxels,run,ms\n";
    for (size_t r = 0; r < t.total_ms.size(); ++r)
      csv << t.voxels << ',' << r << ',' << fixed(t.total_ms[r], 6) << '\n';
    OutputSet out;
    out.add_text(a.csv, csv.str());
    for (const std::string& p : out.commit()) std::printf("wrote      %s\n", p.c_str());
  }
  return 0;
}

}  // namespace scn::cli
