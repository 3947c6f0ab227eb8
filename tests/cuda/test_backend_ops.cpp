// The backend-ops table (backend_ops.h): every op case on the CPU oracle and on the CUDA backend
// under every option variant. Without a GPU the CUDA part skips; the CPU part (every case built and
// run on the CPU, fp16 storage against fp32) always runs, so the table and its builders stay tested.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "cuda/backend_ops.h"
#include "cuda/cuda_test_util.h"

namespace scn::cudatest {
namespace {

using backendops::OpCase;
using backendops::SplitClass;
using backendops::Variant;

/// Outputs of a run as floats in the oracle's site order (sparse outputs aligned by coordinates).
std::vector<std::vector<float>> aligned(const Engine& e, const RunResult& r, const RunResult& ref) {
  std::vector<std::vector<float>> out;
  for (int i = 0; i < e.num_outputs(); ++i) {
    if (!e.output_is_sparse(i)) {
      out.push_back(to_floats(r.outputs[size_t(i)]));
      continue;
    }
    std::string err;
    const int channels = int(ref.outputs[size_t(i)].dim(1));
    out.push_back(align_sparse(r.outputs[size_t(i)], r.indices[size_t(i)], ref.indices[size_t(i)], channels, &err));
    EXPECT_TRUE(err.empty()) << "output " << i << ": " << err;
  }
  return out;
}

std::vector<std::vector<uint8_t>> bytes_of(const RunResult& r) {
  std::vector<std::vector<uint8_t>> b;
  for (const Tensor& t : r.outputs) b.push_back(to_bytes(t));
  for (const Tensor& t : r.indices) b.push_back(t.defined() ? to_bytes(t) : std::vector<uint8_t>{});
  return b;
}

size_t nonzero(const std::vector<float>& v) {
  size_t n = 0;
  for (float x : v) n += x != 0.f;
  return n;
}

// CPU side, no GPU needed: every case builds and runs on the CPU oracle; outputs are finite, mostly
// non-zero, and the fp16-storage run (what a GPU fp16 engine stores) stays close to fp32.
TEST(BackendOpsTable, EveryCaseRunsOnTheCpuOracle) {
  const std::vector<OpCase> cases = backendops::op_cases();
  ASSERT_GE(cases.size(), 12u);
  for (const OpCase& c : cases) {
    SCOPED_TRACE(c.name);
    const EngineBuilder b = c.build();
    auto f32 = b.build(cpu_options(Precision::Fp32));
    auto low = b.build(cpu_options(c.precision));
    const RunResult r32 = run(*f32, c.inputs);
    const RunResult rlo = run(*low, c.inputs);
    ASSERT_GE(f32->num_outputs(), 1);
    const auto ref = aligned(*f32, r32, r32);
    const auto got = aligned(*low, rlo, r32);
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(got[i].size(), ref[i].size()) << "output " << i;
      // (a dense output is zero away from the occupied sites: ~10 % of the cells here)
      const size_t floor = ref[i].size() / (f32->output_is_sparse(int(i)) ? 8 : 50);
      EXPECT_GT(nonzero(ref[i]), floor) << "output " << i << " is mostly zeros: not a useful case";
      const Metrics m = compare(got[i], ref[i]);
      EXPECT_TRUE(std::isfinite(m.max_abs)) << describe(m);
      EXPECT_LE(m.rel_l2, c.precision == Precision::Int8 ? 0.1 : 2e-3) << "output " << i << ": " << describe(m);
    }
  }
}

// The variant table covers each option at least once and names every forced tile it picks from the
// compiled list.
TEST(BackendOpsTable, VariantsCoverTheOptions) {
  const std::vector<std::string> tiles{"m128n16k16s4",   "m64n64k32s4t",   "m128n32k16s4w8",   "m64n32k32s2tg2",
                                       "m64n32k32s4tr5", "m64n64k64s2twg", "m64n128k64s2tx2wg"};
  const std::vector<Variant> v = backendops::cuda_variants(tiles);
  std::map<std::string, int> seen;
  for (const Variant& x : v) {
    CudaOptions o;
    x.apply(o);
    seen["autotune"] += !o.autotune;
    seen["lookahead"] += o.map_lookahead == 0;
    seen["priorities"] += o.stream_priorities;
    seen["pdl"] += o.programmatic_launch != CudaProgrammaticLaunch::LastEpilogue;
    seen["map_kernel"] += o.map_kernel == CudaMapKernel::General;
    seen["site_order"] += o.site_order != CudaSiteOrder::Auto;
    seen["strided_sites"] += o.strided_sites != CudaStridedSites::Auto;
    seen["sites_ahead"] += o.sites_ahead;
    seen["split"] += o.split == 1;
    seen["offset_groups"] += o.offset_groups == 2;
    seen["tile"] += !o.tile.empty();
    if (!o.tile.empty()) {
      EXPECT_EQ(x.split_class, SplitClass::Unsplit) << x.name;
      EXPECT_EQ(o.tile.find('x'), std::string::npos) << x.name << ": forced tiles are unsplit";
    }
  }
  for (const char* k :
       {"autotune", "lookahead", "priorities", "map_kernel", "site_order", "strided_sites", "sites_ahead", "split"})
    EXPECT_GE(seen[k], 1) << k;
  EXPECT_GE(seen["offset_groups"], 2) << "two variants of the osplit class, so it is compared bitwise";
  EXPECT_GE(seen["pdl"], 2);
  EXPECT_EQ(seen["site_order"], 2) << "both explicit orders, each compared bitwise with the default's";
  EXPECT_EQ(seen["strided_sites"], 2) << "both strided-site kernels everywhere, each against the default's choice";
  EXPECT_EQ(seen["tile"], 6) << "one forced tile per family (mma, tma, w8, group, regcap, wgmma)";
}

// GPU: every case x every variant against the oracle, and bitwise within a split class.
TEST(BackendOpsTable, CudaVariantsMatchTheOracleAndEachOther) {
  SCN_REQUIRE_CUDA();
  const std::vector<Variant> variants = backendops::cuda_variants(cuda_tile_configs());
  for (const OpCase& c : backendops::op_cases()) {
    SCOPED_TRACE(c.name);
    const EngineBuilder b = c.build();
    const bool int8 = c.precision == Precision::Int8;
    // the oracle: fp32 for fp16 engines; the CPU INT8 engine for INT8 ones
    auto cpu = b.build(cpu_options(int8 ? Precision::Int8 : Precision::Fp32));
    const RunResult rc = run(*cpu, c.inputs);
    std::map<SplitClass, std::vector<std::vector<uint8_t>>> first_bits;
    std::map<SplitClass, std::string> first_name;
    for (const Variant& v : variants) {
      SCOPED_TRACE(v.name);
      BuildOptions o = cuda_options(true, 0, c.inputs[0].batch);
      o.precision = c.precision;
      v.apply(o.cuda);
      auto gpu = b.build(o);
      const RunResult rg = run(*gpu, c.inputs);
      const auto got = aligned(*gpu, rg, rc);
      for (size_t i = 0; i < got.size(); ++i) {
        const Metrics m = compare(got[i], to_floats(rc.outputs[i]));
        if (c.bitwise_with_cpu)
          EXPECT_EQ(m.max_abs, 0.0) << "output " << i << ": " << describe(m);
        else
          EXPECT_LE(m.rel_l2, int8 ? 2e-2 : 1e-3) << "output " << i << ": " << describe(m);
      }
      const auto bits = bytes_of(rg);
      auto it = first_bits.find(v.split_class);
      if (it == first_bits.end()) {
        first_bits[v.split_class] = bits;
        first_name[v.split_class] = v.name;
      } else {
        EXPECT_TRUE(bits == it->second) << v.name << " differs bitwise from " << first_name[v.split_class]
                                        << " (same split class)";
      }
    }
  }
}

}  // namespace
}  // namespace scn::cudatest

namespace scn::cudatest {
namespace {

// Tile names are derived from the configuration fields (tile_names.cpp); the names the docs, the
// heuristic's measurements and saved tuning caches use must come out. No GPU needed (CUDA builds).
TEST(TileNames, DerivedNamesFollowTheScheme) {
  const std::vector<std::string> fp16 = cuda_tile_configs(Precision::Fp16);
  const std::vector<std::string> int8 = cuda_tile_configs(Precision::Int8);
  if (fp16.empty()) GTEST_SKIP() << "this build of scn has no CUDA backend";
  for (const char* n : {"m128n16k16s4t", "m128n32k32s3tw8r4", "m64n64k32s4t", "m32n128k64s3t", "m64n128k64s3tx2",
                        "m128n16k16s2tg2", "m64n32k32s4tr5"})
    EXPECT_NE(std::find(fp16.begin(), fp16.end(), n), fp16.end()) << n;
  // builds for sm_90 also have the wgmma tiles, and among them the warp-specialised ones (their warps count the
  // producer warpgroup: w12 = one producer + two consumer warpgroups; "a": the next tile's map fetched ahead)
  const bool wgmma = std::find(fp16.begin(), fp16.end(), "m128n64k64s3tw8wg") != fp16.end();
  if (wgmma) {
    for (const char* n : {"m128n64k64s3tw12wgws", "m64n64k64s4tw8wgws", "m128n128k64s4tw12wgws", "m64n128k64s4tw8wgws",
                          "m128n64k64s3tw12wgwsa", "m64n64k64s3tw8wgwsa"})
      EXPECT_NE(std::find(fp16.begin(), fp16.end(), n), fp16.end()) << n;
  }
  for (const char* n : {"igemm-i8 m128n32k16s3w8g2", "igemm-q m128n16k16s2tg2", "igemm-i8 m64n32k16s4tr6"})
    EXPECT_NE(std::find(int8.begin(), int8.end(), n), int8.end()) << n;
  for (const std::string& n : fp16) {
    EXPECT_EQ(n.find("x4"), std::string::npos) << n << ": split 4 is retired";
    EXPECT_EQ(n.rfind("m", 0), 0u) << n;
    EXPECT_EQ(std::count(fp16.begin(), fp16.end(), n), 1) << n << " is listed twice";
  }
  for (const std::string& n : int8) EXPECT_TRUE(n.rfind("igemm-i8 m", 0) == 0 || n.rfind("igemm-q m", 0) == 0) << n;
}

}  // namespace
}  // namespace scn::cudatest
