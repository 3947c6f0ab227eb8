#include "compare_layers.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common.h"
#include "compare.h"
#include "scn/onnx.h"

namespace scn::cli {

namespace {

std::string num(double v, int digits = 4) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// values.txt of the exporter: "value<TAB>op<TAB>source" -> value -> source (the PyTorch module).
std::map<std::string, std::string> read_sources(const std::string& dir) {
  std::map<std::string, std::string> sources;
  std::ifstream f(dir + "/values.txt");
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream row(line);
    std::string value, op, source;
    std::getline(row, value, '\t');
    std::getline(row, op, '\t');
    std::getline(row, source);
    if (!value.empty()) sources[value] = source;
  }
  return sources;
}

struct Verdict {
  bool pass = true;
  std::string why;  ///< the first bound that failed
};

Verdict judge(const CompareResult& r, double min_cosine, double max_rel_l2, double max_abs) {
  Verdict v;
  auto fail = [&](const BoundCheck& c) {
    if (c.pass || !v.pass) return;
    v.pass = false;
    v.why = c.name + " " + num(c.value, 6) + (c.upper ? " > " : " < ") + num(c.limit, 6);
  };
  if (!std::isnan(min_cosine)) fail(check_bound("cosine", r.cosine, min_cosine, false));
  if (!std::isnan(max_rel_l2)) fail(check_bound("rel-L2", r.rel_l2, max_rel_l2, true));
  if (!std::isnan(max_abs)) fail(check_bound("max-abs", r.max_abs, max_abs, true));
  if (v.pass && r.a.nonfinite + r.b.nonfinite > 0) {
    v.pass = false;
    v.why = "non-finite values";
  }
  return v;
}

}  // namespace

int run_compare_layers(const CompareArgs& a) {
  const std::string& model = a.a;
  const std::string& dir = a.b;
  SCN_CHECK(!a.features.empty() && !a.indices.empty() && !a.grid.empty(),
            "--layers needs --features, --indices and --grid (the frame the reference values were computed on)");
  SCN_CHECK(std::filesystem::is_directory(dir), dir,
            ": not a folder; with --layers, B is the exporter's intermediates_dir (<value>.tensor files, values.txt)");
  double min_cosine = a.min_cosine;
  const bool default_bound = std::isnan(a.min_cosine) && std::isnan(a.max_rel_l2) && std::isnan(a.max_abs);
  if (default_bound) min_cosine = 0.9999;

  const Tensor features = Tensor::load(a.features);
  const Tensor indices = Tensor::load(a.indices);
  const Int3 grid = parse_grid(a.grid);
  EngineBuilder builder = parse_onnx(model);
  SCN_CHECK(builder.graph().inputs.size() == 1, model, ": the model has ", builder.graph().inputs.size(),
            " inputs; scn compare --layers binds exactly one");
  builder.expose_all_values();
  BuildOptions opts;
  opts.backend = parse_backend(a.device);
  opts.precision = parse_precision(a.precision);
  opts.num_threads = a.threads;
  opts.max_batch = a.batch;
  if (indices.ndim() == 2) opts.max_input_voxels = indices.dim(0);
  std::unique_ptr<Engine> engine = builder.build(opts);
  InputLabels labels;
  labels.features = a.features;
  labels.indices = a.indices;
  engine->set_input(0, features, indices, grid, a.batch, labels);
  engine->forward();
  engine->check_errors();

  const std::map<std::string, std::string> sources = read_sources(dir);
  const Graph& g = engine->graph();
  std::printf("model      %s (%zu nodes), reference values %s\n", model.c_str(), g.nodes.size(), dir.c_str());
  std::string bounds;
  if (!std::isnan(min_cosine)) bounds += "cosine >= " + num(min_cosine, 6);
  if (!std::isnan(a.max_rel_l2))
    bounds += (bounds.empty() ? "" : ", ") + std::string("rel-L2 <= ") + num(a.max_rel_l2, 6);
  if (!std::isnan(a.max_abs)) bounds += (bounds.empty() ? "" : ", ") + std::string("max abs <= ") + num(a.max_abs, 6);
  std::printf("backend    %s, precision %s; bounds %s%s\n", backend_name(engine->backend()),
              precision_name(engine->precision()), bounds.c_str(),
              default_bound ? " (default; set --min-cosine / --max-rel-l2 / --max-abs)" : "");
  Table t({"node", "op", "value", "source", "shape", "cosine", "rel-L2", "max abs", ""});
  std::string first;
  int compared = 0, missing = 0;
  for (const Node& n : g.nodes) {
    if (n.op == OpType::Input) continue;
    const std::string& name = g.values[size_t(n.output)].name;
    const auto src = sources.find(name);
    const std::string source = src == sources.end() ? "" : src->second;
    const std::string ref_path = dir + "/" + file_safe(name) + ".tensor";
    const int i = engine->output_index(name);
    const Tensor got = engine->output(i).to(Device::Host);
    std::vector<std::string> row = {n.name, op_type_name(n.op), name, source, got.shape_string()};
    if (!std::filesystem::exists(ref_path)) {
      ++missing;
      row.insert(row.end(), {"-", "-", "-", "no reference"});
      t.add(row);
      continue;
    }
    ++compared;
    Verdict v;
    CompareResult r;
    try {
      Tensor ref = Tensor::load(ref_path);
      if (engine->output_is_sparse(i)) {
        const std::string ref_idx_path = indices_path_for(ref_path);
        ref = align_sparse_rows(engine->output_indices(i).to(Device::Host), ref, Tensor::load(ref_idx_path),
                                "scn value '" + name + "'", ref_idx_path);
      }
      r = compare_tensors(got, ref, 0, "scn value '" + name + "'", ref_path);
      v = judge(r, min_cosine, a.max_rel_l2, a.max_abs);
      row.insert(row.end(), {fixed(r.cosine, 6), num(r.rel_l2), num(r.max_abs), v.pass ? "ok" : "FAIL"});
    } catch (const Error& e) {  // different site sets or shapes: this value diverges
      v.pass = false;
      v.why = e.what();
      row.insert(row.end(), {"-", "-", "-", "FAIL"});
    }
    t.add(row);
    if (!v.pass && first.empty())
      first = "node '" + n.name + "' (" + op_type_name(n.op) + "), value '" + name + "'" +
              (source.empty() ? "" : ", source '" + source + "'") + ": " + v.why;
  }
  SCN_CHECK(compared > 0, dir, ": no value of ", model, " has a reference file here (<value name>.tensor)");
  std::printf("\n%s\n", t.str("  ").c_str());
  std::printf("%d values compared", compared);
  if (missing) std::printf(", %d without a reference", missing);
  std::printf("\n");
  if (first.empty()) {
    std::printf("no divergence: every value is within the bounds\n");
    return 0;
  }
  std::printf("first divergence: %s\n", first.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "scn compare: first divergence: %s\n", first.c_str());
  return 1;
}

}  // namespace scn::cli
