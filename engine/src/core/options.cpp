#include "core/options.h"

#include <cstdlib>
#include <cstring>

namespace scn {

namespace {

bool env_on(const char* name) {
  const char* e = std::getenv(name);
  return e && *e && std::strcmp(e, "0") != 0;
}

std::string shape_of(const std::string& full) {
  const size_t sp = full.find(' ');
  return sp == std::string::npos ? full : full.substr(sp + 1);
}

std::string name_list(const std::vector<std::string>& compiled) {
  std::string s;
  for (const std::string& n : compiled) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none (this build has no CUDA backend)" : s;
}

}  // namespace

void validate(const BuildOptions& o) {
  SCN_CHECK(o.backend == Backend::Auto || o.backend == Backend::Cpu || o.backend == Backend::Cuda,
            "BuildOptions.backend = ", int(o.backend), " is not a Backend");
  SCN_CHECK(o.precision == Precision::Fp32 || o.precision == Precision::Fp16 || o.precision == Precision::Int8,
            "BuildOptions.precision = ", int(o.precision), " is not a Precision");
  SCN_CHECK(o.num_threads >= 0 && o.num_threads <= 4096,
            "BuildOptions.num_threads must be in [0, 4096] (0 = all cores), got ", o.num_threads);
  SCN_CHECK(o.max_input_voxels >= 0 && o.max_input_voxels <= kMaxSiteRows,
            "BuildOptions.max_input_voxels must be in [0, ", kMaxSiteRows, "] (0 = from the graph), got ",
            o.max_input_voxels);
  SCN_CHECK(o.max_batch >= 1, "BuildOptions.max_batch must be >= 1, got ", o.max_batch);
  SCN_CHECK(o.capacity_source == CapacitySource::Bounds || o.capacity_source == CapacitySource::FirstFrame,
            "BuildOptions.capacity_source = ", int(o.capacity_source), " is not a CapacitySource (Bounds, FirstFrame)");
  SCN_CHECK(o.on_capacity_overflow == CapacityOverflow::Error || o.on_capacity_overflow == CapacityOverflow::Grow,
            "BuildOptions.on_capacity_overflow = ", int(o.on_capacity_overflow),
            " is not a CapacityOverflow (Error, Grow)");
  SCN_CHECK(o.capacity_margin >= 1.0 && o.capacity_margin <= 16.0,
            "BuildOptions.capacity_margin must be in [1, 16] (rows planned per measured row), got ", o.capacity_margin);
  SCN_CHECK(o.device >= 0, "BuildOptions.device must be >= 0, got ", o.device);
  const CudaOptions& c = o.cuda;
  SCN_CHECK(c.map_lookahead >= 0,
            "BuildOptions.cuda.map_lookahead must be >= 0 (0 = kernel maps on the main stream), got ", c.map_lookahead);
  SCN_CHECK(c.split >= 0 && c.split <= 2, "BuildOptions.cuda.split = ", c.split,
            " is not one of 0 (by layer shape and max_batch), 1 (unsplit), 2 (split in two)");
  SCN_CHECK(c.offset_groups >= 0 && c.offset_groups <= 2, "BuildOptions.cuda.offset_groups = ", c.offset_groups,
            " is not one of 0 (by GPU), 1 (implicit-GEMM tiles), 2 (osplit, two offset groups)");
  const int pl = int(c.programmatic_launch);
  SCN_CHECK(pl >= 0 && pl <= 2, "BuildOptions.cuda.programmatic_launch = ", pl,
            " is not a CudaProgrammaticLaunch (Off, LastTileStart, LastEpilogue)");
  const int mk = int(c.map_kernel);
  SCN_CHECK(mk >= 0 && mk <= 1, "BuildOptions.cuda.map_kernel = ", mk, " is not a CudaMapKernel (Rows, General)");
  const int ss = int(c.strided_sites);
  SCN_CHECK(ss >= 0 && ss <= 2, "BuildOptions.cuda.strided_sites = ", ss,
            " is not a CudaStridedSites (Auto, FromBitmap, FromRows)");
  const int so = int(c.site_order);
  SCN_CHECK(so >= 0 && so <= 2, "BuildOptions.cuda.site_order = ", so,
            " is not a CudaSiteOrder (Auto, Bitmap, NeighbourRows)");
  for (const std::string& n : c.tune_skip)
    SCN_CHECK(!n.empty(), "BuildOptions.cuda.tune_skip holds an empty tile name");
  SCN_CHECK(c.tune_bucket_base >= 1, "BuildOptions.cuda.tune_bucket_base must be >= 1, got ", c.tune_bucket_base);
  SCN_CHECK(c.tune_bucket_factor == 0.0 || (c.tune_bucket_factor >= 1.1 && c.tune_bucket_factor <= 16.0),
            "BuildOptions.cuda.tune_bucket_factor = ", c.tune_bucket_factor,
            " is neither 0 (one bucket) nor in [1.1, 16]");
}

void validate_cuda_tiles(const CudaOptions& c, const std::vector<std::string>& compiled,
                         const std::vector<std::string>& osplit) {
  if (!c.tile.empty()) {
    bool found = false;
    for (const std::string& n : compiled) found = found || n == c.tile || shape_of(n) == c.tile;
    SCN_CHECK(found, "BuildOptions.cuda.tile = '", c.tile,
              "' names no compiled tile configuration; valid names: ", name_list(compiled));
  }
  // tune_skip may also name the warp-independent (osplit) configs the tuner times, with or without "osplit "
  std::vector<std::string> skippable = compiled;
  skippable.insert(skippable.end(), osplit.begin(), osplit.end());
  for (const std::string& t : c.tune_skip) {
    bool found = false;
    for (const std::string& n : skippable) found = found || n == t || shape_of(n) == t;
    SCN_CHECK(found, "BuildOptions.cuda.tune_skip: '", t,
              "' names no compiled tile or osplit configuration; valid names: ", name_list(skippable));
  }
}

bool trace_plan() { return env_on("SCN_CUDA_PLAN_TRACE"); }
bool trace_autotune() { return env_on("SCN_CUDA_AUTOTUNE_TRACE"); }

}  // namespace scn
