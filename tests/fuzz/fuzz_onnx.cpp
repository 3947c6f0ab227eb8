// libFuzzer target: bytes -> the ONNX importer (parse_onnx and inspect_onnx), and when the file
// imports, build a CPU engine and run one small frame through it. Every problem must surface as
// scn::Error; any other exception, a crash or a sanitizer report is a finding.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "graph/analysis.h"
#include "scn/onnx.h"

namespace {

// Resource guard of the harness (not of scn): skip running graphs whose buffers for the fuzz
// frame would only measure the allocator (libFuzzer reports allocations over its RSS limit as
// findings). The importer, the builder and the analysis still see every graph.
constexpr int64_t kMaxRows = 96;
constexpr double kMaxElements = double(int64_t(1) << 25);

bool affordable(const scn::Graph& g) {
  if (g.nodes.size() > 512 || g.inputs.size() != 1) return false;
  const scn::GraphAnalysis a = scn::analyze_graph(g);  // throws scn::Error like build() would
  const scn::ShapeInfo s = scn::infer_shapes(g, a, {scn::fuzz::fuzz_grid()}, 1);
  // Upper bounds of the rows of every site set: the cells of its grid, and for a strided conv
  // the input rows times the kernel volume.
  std::vector<double> rows(size_t(a.num_site_sets), 0.0);
  auto cells = [](const scn::Int3& sh) { return double(sh[0]) * double(sh[1]) * double(sh[2]); };
  double total = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const scn::Node& node = g.nodes[n];
    const int out_set = a.value_sites[size_t(node.output)];
    if (node.op == scn::OpType::Input) rows[size_t(out_set)] = double(kMaxRows);
    if (node.op == scn::OpType::SparseConv) {
      const scn::MapSlot& m = a.maps[size_t(a.node_map[n])];
      const double k = m.kernel_volume();
      if (m.kind == scn::MapKind::Strided && m.first_node == int(n))
        rows[size_t(m.out_sites)] = std::min(cells(s.site_shape[size_t(m.out_sites)]), rows[size_t(m.in_sites)] * k);
      total += rows[size_t(m.out_sites)] * k;  // the kernel map
      total += k * double(node.conv.in_channels) * double(node.conv.out_channels);  // packed weights
    }
    const scn::Value& v = g.values[size_t(node.output)];
    if (v.sparse) {
      total += rows[size_t(out_set)] * double(v.channels);
    } else {
      double e = 1;
      for (int64_t d : s.dense_shape[size_t(node.output)]) e *= double(d);
      total += e;
    }
    if (total > kMaxElements) return false;
  }
  return true;
}

void run_model(const std::string& path, uint8_t flavour, bool& parsed) {
  scn::EngineBuilder builder = scn::parse_onnx(path);
  parsed = true;
  if (!affordable(builder.graph())) {
    if (scn::fuzz::debug()) std::fprintf(stderr, "[fuzz] imported; too large to run in the harness\n");
    return;
  }
  scn::BuildOptions o;
  o.backend = scn::Backend::Cpu;
  o.precision = (flavour & 1) ? scn::Precision::Fp32 : scn::Precision::Fp16;
  o.num_threads = 1;
  std::unique_ptr<scn::Engine> e = builder.build(o);
  const scn::Graph& g = e->graph();
  const int32_t channels = g.values[size_t(g.inputs[0])].channels;
  const int64_t rows = 1 + (flavour >> 1) % kMaxRows;
  e->set_input(0, scn::fuzz::fuzz_features(rows, channels), scn::fuzz::fuzz_indices(rows), scn::fuzz::fuzz_grid());
  e->forward();
  scn::fuzz::touch_outputs(*e);
  if (scn::fuzz::debug()) std::fprintf(stderr, "[fuzz] imported, built and ran %lld voxels\n", (long long)rows);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static scn::fuzz::MemFile file("scn_fuzz_onnx");
  const std::string& path = file.write(data, size);
  const uint8_t flavour = size ? data[size / 2] : 0;
  bool parsed = false;
  try {
    run_model(path, flavour, parsed);
    if (scn::fuzz::debug()) std::fprintf(stderr, "[fuzz] ok\n");
  } catch (const scn::Error& e) {
    if (scn::fuzz::debug()) std::fprintf(stderr, "[fuzz] scn::Error: %s\n", e.what());
    // expected for hostile files
  }
  // inspect_onnx never throws for problems in the file, and gives a builder exactly when it
  // found no error.
  const scn::OnnxReport r = scn::inspect_onnx(path);
  if (r.errors.empty() != (r.builder != nullptr)) std::abort();
  if (r.builder && !r.partial) std::abort();
  // ... and agrees with parse_onnx on whether the file is good.
  if (parsed != r.errors.empty()) std::abort();
  return 0;
}
