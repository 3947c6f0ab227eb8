// BuildOptions validation (core/options.cpp) and the shared plan (plan/engine_plan.h): fusion,
// buffer groups, steps and capacities of CenterPoint, computed once from one graph analysis.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/options.h"
#include "engine/centerpoint_graph.h"
#include "plan/engine_plan.h"

namespace scn {
namespace {

void expect_error_naming(const BuildOptions& o, const std::string& field) {
  try {
    validate(o);
    ADD_FAILURE() << "accepted a bad " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(Options, DefaultsAreValid) { EXPECT_NO_THROW(validate(BuildOptions{})); }

TEST(Options, EveryBadFieldIsAnErrorNamingIt) {
  BuildOptions o;
  o.max_batch = 0;
  expect_error_naming(o, "BuildOptions.max_batch");
  o = {};
  o.max_input_voxels = -5;
  expect_error_naming(o, "BuildOptions.max_input_voxels");
  o.max_input_voxels = int64_t(1) << 31;  // device rows are int32
  expect_error_naming(o, "BuildOptions.max_input_voxels");
  o = {};
  o.num_threads = -1;
  expect_error_naming(o, "BuildOptions.num_threads");
  o = {};
  o.device = -1;
  expect_error_naming(o, "BuildOptions.device");
  o = {};
  o.cuda.map_lookahead = -1;
  expect_error_naming(o, "BuildOptions.cuda.map_lookahead");
  o = {};
  o.cuda.split = 4;  // retired: only 0, 1, 2
  expect_error_naming(o, "BuildOptions.cuda.split");
  o = {};
  o.cuda.offset_groups = 3;
  expect_error_naming(o, "BuildOptions.cuda.offset_groups");
  o = {};
  o.cuda.programmatic_launch = CudaProgrammaticLaunch(7);
  expect_error_naming(o, "BuildOptions.cuda.programmatic_launch");
  o = {};
  o.cuda.map_kernel = CudaMapKernel(3);
  expect_error_naming(o, "BuildOptions.cuda.map_kernel");
  o = {};
  o.cuda.site_order = CudaSiteOrder(3);
  expect_error_naming(o, "BuildOptions.cuda.site_order");
  o = {};
  o.cuda.strided_sites = CudaStridedSites(3);
  expect_error_naming(o, "BuildOptions.cuda.strided_sites");
  o = {};
  o.cuda.tune_skip = {"m64n64k32s4t", ""};
  expect_error_naming(o, "BuildOptions.cuda.tune_skip");
  o = {};
  o.precision = Precision(9);
  expect_error_naming(o, "BuildOptions.precision");
  o = {};
  o.capacity_source = CapacitySource(2);
  expect_error_naming(o, "BuildOptions.capacity_source");
  o = {};
  o.on_capacity_overflow = CapacityOverflow(5);
  expect_error_naming(o, "BuildOptions.on_capacity_overflow");
  o = {};
  o.capacity_margin = 0.9;  // fewer rows than measured would overflow at once
  expect_error_naming(o, "BuildOptions.capacity_margin");
}

// cuda_osplit_configs: the osplit names tune_skip accepts, listed exactly when the build has the CUDA backend (with or
// without a GPU), each once, each accepted with or without its prefix.
TEST(Options, OsplitConfigsAreListedForTuneSkip) {
  const std::vector<std::string> names = cuda_osplit_configs();
  EXPECT_EQ(names.empty(), cuda_tile_configs().empty()) << "listed exactly when the CUDA backend is built";
  std::set<std::string> seen;
  for (const std::string& n : names) {
    EXPECT_EQ(n.rfind("osplit ", 0), 0u) << n;
    EXPECT_TRUE(seen.insert(n).second) << n << " listed twice";
  }
  if (names.empty()) return;
  CudaOptions c;
  c.tune_skip = {names.front(), names.back().substr(7)};
  EXPECT_NO_THROW(validate_cuda_tiles(c, {}, names));
  c.tune_skip = {"osplit c99x99"};
  EXPECT_THROW(validate_cuda_tiles(c, {}, names), Error);
}

TEST(Options, TileNamesAreCheckedAgainstTheCompiledList) {
  const std::vector<std::string> compiled{"igemm m64n64k32s4t", "igemm-i8 m128n16k8s4", "igemm m128n16k16s4"};
  CudaOptions c;
  c.tile = "m64n64k32s4t";  // a shape
  EXPECT_NO_THROW(validate_cuda_tiles(c, compiled));
  c.tile = "igemm-i8 m128n16k8s4";  // a full name
  EXPECT_NO_THROW(validate_cuda_tiles(c, compiled));
  c.tile = "m7n7k7";
  try {
    validate_cuda_tiles(c, compiled);
    ADD_FAILURE() << "an unknown tile was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("BuildOptions.cuda.tile"), std::string::npos) << m;
    EXPECT_NE(m.find("m7n7k7"), std::string::npos) << m;
    EXPECT_NE(m.find("igemm m128n16k16s4"), std::string::npos) << "the valid names are listed: " << m;
  }
  c.tile.clear();
  c.tune_skip = {"m128n16k8s4", "m9n9"};
  try {
    validate_cuda_tiles(c, compiled);
    ADD_FAILURE() << "an unknown tune_skip entry was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("BuildOptions.cuda.tune_skip: 'm9n9'"), std::string::npos) << e.what();
  }
  // tune_skip may name an osplit config the tuner times (with or without its prefix); the forced tile may not
  const std::vector<std::string> osplit{"osplit c32x32r32p2s3w20", "osplit c16x16r32p2s6w8"};
  c.tune_skip = {"c32x32r32p2s3w20", "osplit c16x16r32p2s6w8", "m128n16k8s4"};
  EXPECT_NO_THROW(validate_cuda_tiles(c, compiled, osplit));
  c.tune_skip = {"c32x32r32p2s3w20"};
  EXPECT_THROW(validate_cuda_tiles(c, compiled), Error) << "no osplit configs given: the name is unknown";
  c.tune_skip.clear();
  c.tile = "c32x32r32p2s3w20";
  EXPECT_THROW(validate_cuda_tiles(c, compiled, osplit), Error) << "an osplit config is not a tile to force";
}

TEST(Options, BuildRejectsBadOptionsBeforeAnyBackend) {
  const EngineBuilder b = test::centerpoint_builder({41, 160, 160});
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.cuda.map_lookahead = -2;  // a CUDA field: still checked, whichever backend runs
  EXPECT_THROW(b.build(o), Error);
}

TEST(EnginePlan, CenterPointFusionGroupsStepsAndCapacities) {
  const EngineBuilder b = test::centerpoint_builder({41, 160, 160});
  auto graph = std::make_shared<const Graph>(b.graph());
  auto analysis = std::make_shared<const GraphAnalysis>(analyze_graph(*graph));
  BuildOptions o;
  o.max_batch = 2;
  const EnginePlan p = make_plan(graph, analysis, o);
  int convs = 0, adds = 0, relus = 0;
  for (const Node& n : graph->nodes) {
    convs += n.op == OpType::SparseConv;
    adds += n.op == OpType::Add;
    relus += n.op == OpType::Relu;
  }
  ASSERT_GT(adds, 0);
  // every Add of a SparseBasicBlock joins its conv's epilogue, with the Relu after it
  int residual = 0, relu_after = 0;
  for (const FusedConv& c : p.fusion.convs) {
    residual += c.residual >= 0;
    relu_after += c.relu_after;
  }
  EXPECT_EQ(int(p.fusion.convs.size()), convs);
  EXPECT_EQ(residual, adds);
  EXPECT_EQ(relu_after, adds);
  int absorbed = 0;  // Add / Relu nodes folded into a conv
  for (size_t n = 0; n < graph->nodes.size(); ++n)
    absorbed += p.fusion.absorbed[n] && (graph->nodes[n].op == OpType::Add || graph->nodes[n].op == OpType::Relu);
  EXPECT_GE(absorbed, 2 * adds);
  // steps: one per unabsorbed node (no Reshape), plus one map build per slot
  int conv_steps = 0, map_steps = 0, other = 0;
  for (const Step& s : p.steps) {
    conv_steps += s.kind == StepKind::Conv;
    map_steps += s.kind == StepKind::Map;
    other += s.kind == StepKind::Add || s.kind == StepKind::Relu;
  }
  EXPECT_EQ(conv_steps, convs);
  EXPECT_EQ(map_steps, int(analysis->maps.size()));
  EXPECT_EQ(other, adds + relus - absorbed) << "unfused Add / Relu keep a step";
  // in-place residuals share the identity's buffer
  int in_place = 0;
  for (const FusedConv& c : p.fusion.convs)
    if (c.residual >= 0) in_place += p.groups.root(c.out_value) == p.groups.root(c.residual);
  EXPECT_GT(in_place, 0);
  // capacities: inputs max_batch x the largest output_bound (or 200000); every site set has rows
  ASSERT_EQ(int(p.capacities.site_rows.size()), analysis->num_site_sets);
  for (int s = 0; s < analysis->num_site_sets; ++s) EXPECT_GT(p.capacities.site_rows[size_t(s)], 0) << s;
  // a new frame re-plans the shapes through replan()
  const FramePlan f = p.replan({{41, 160, 160}}, 2);
  EXPECT_EQ(f.batch, 2);
  for (int v : graph->outputs) {
    if (graph->values[size_t(v)].sparse) continue;
    EXPECT_EQ(f.shapes.dense_shape[size_t(v)][0], 2);
  }
}

}  // namespace
}  // namespace scn
