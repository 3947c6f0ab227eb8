// scn inspect MODEL.onnx: node table, kernel-map plan and every validation error.
#include <cstdio>
#include <map>

#include "commands.h"
#include "common.h"
#include "scn/inspect.h"
#include "scn/onnx.h"

namespace scn::cli {

CLI::App* add_inspect(CLI::App& app, InspectArgs& a) {
  CLI::App* c = app.add_subcommand("inspect",
                                   "List a model's nodes, its kernel-map plan and every validation error "
                                   "(exit 1 when there are errors)");
  c->add_option("model", a.model, "ONNX model")->required();
  c->add_option("--grid", a.grid, "Input grid in the model's index order: adds each layer's output shape")
      ->check(grid_validator());
  c->add_option("--batch", a.batch, "Batch size for the shapes")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  c->add_flag("--attrs", a.attrs, "Also list the exporter attributes scn only reports");
  CLI::Option* grid = c->get_option("--grid");
  CLI::Option* mem = c->add_flag("--memory", a.memory,
                                 "With --grid: the CUDA engine's FP16 device arena, every buffer (no GPU needed)")
                         ->needs(grid);
  c->add_option("--frame", a.frame_indices,
                "With --memory: a frame's indices (.tensor [N,4] int32): its rows per level, and the arena fitted to "
                "them (BuildOptions::capacity_source = FirstFrame)")
      ->needs(mem)
      ->check(CLI::ExistingFile);
  c->add_option("--max-voxels", a.max_voxels, "With --memory: BuildOptions::max_input_voxels (0: from the graph)")
      ->needs(mem)
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  c->add_option("--capacity-margin", a.capacity_margin, "With --frame: rows planned per measured row")
      ->needs(mem)
      ->check(CLI::Range(1.0, 16.0));
  add_site_order_option(c, a.site_order)->needs(mem);
  c->add_flag("--sites-ahead", a.sites_ahead, "With --memory: CudaOptions::sites_ahead")->needs(mem);
  return c;
}

namespace {

std::string join_int3(const Int3& v) { return int3_string(v, 'x'); }

std::string dims_string(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

std::string precision_string(const QuantAttrs& q) {
  std::string s = precision_name(q.precision);
  if (q.output_precision != q.precision) s += std::string("->") + precision_name(q.output_precision);
  return s;
}

/// The CUDA arena at the bounds and, with a frame, fitted to its rows per level; every buffer of
/// the last one.
void print_memory(const Graph& g, const InspectArgs& args) {
  const Int3 grid = parse_grid(args.grid);
  BuildOptions o;
  o.max_batch = args.batch;
  o.max_input_voxels = args.max_voxels;
  if (args.capacity_margin > 0) o.capacity_margin = args.capacity_margin;
  o.cuda.site_order = site_order_of(args.site_order);
  o.cuda.sites_ahead = args.sites_ahead;
  // the frame is measured once (CPU kernel maps), then planned at the bounds and fitted
  std::vector<int64_t> rows;
  if (!args.frame_indices.empty())
    rows = frame_site_rows(g, grid, args.batch, Tensor::load(args.frame_indices), args.frame_indices);
  const bool fp = !rows.empty();
  const ArenaReport bounds = cuda_arena_report(g, grid, args.batch, o, rows);
  o.capacity_source = CapacitySource::FirstFrame;
  const ArenaReport fitted = fp ? cuda_arena_report(g, grid, args.batch, o, rows) : bounds;
  std::printf("\nCUDA device arena (FP16, grid %s, batch %d; weights and input staging outside it):\n",
              join_int3(grid).c_str(), args.batch);
  Table st(fp ? std::vector<std::string>{"site set", "rows at the bounds", "frame rows",
                                         "fitted (x" + fixed(o.capacity_margin, 3) + ")"}
              : std::vector<std::string>{"site set", "rows at the bounds"});
  for (size_t s = 0; s < bounds.capacity.size(); ++s) {
    std::vector<std::string> row = {"s" + std::to_string(s), std::to_string(bounds.capacity[s])};
    if (fp) {
      row.push_back(std::to_string(bounds.measured_rows[s]));
      row.push_back(std::to_string(fitted.capacity[s]));
    }
    st.add(row);
  }
  std::printf("%s", st.str("  ").c_str());
  std::printf("  arena at the bounds: %s (most alive at one step %s)\n", format_bytes(double(bounds.total)).c_str(),
              format_bytes(double(bounds.peak_live)).c_str());
  if (fp)
    std::printf("  arena fitted to the frame: %s (most alive at one step %s)\n",
                format_bytes(double(fitted.total)).c_str(), format_bytes(double(fitted.peak_live)).c_str());
  Table bt({"buffer", "bytes", "steps", "offset"});
  for (const ArenaBuffer& b : fitted.buffers)
    bt.add({b.name, format_bytes(double(b.bytes)), std::to_string(b.first_step) + ".." + std::to_string(b.last_step),
            format_bytes(double(b.offset))});
  std::printf("\nbuffers of the %s arena:\n%s", fp ? "fitted" : "bounds", bt.str("  ").c_str());
}

void print_graph(const Graph& g, const InspectArgs& args, std::vector<std::string>& errors, bool complete) {
  std::map<std::string, int> op_count;
  int64_t params = 0;
  for (const Node& n : g.nodes) {
    if (n.op == OpType::Input) continue;
    ++op_count[op_type_name(n.op)];
    if (n.op == OpType::SparseConv) params += n.conv.weight.numel() + (n.conv.bias.defined() ? n.conv.bias.numel() : 0);
  }
  std::printf("model    %s\n", g.source.c_str());
  for (int v : g.inputs)
    std::printf("input    '%s': sparse, %d channels\n", g.values[size_t(v)].name.c_str(), g.values[size_t(v)].channels);
  for (int v : g.outputs) {
    const Value& val = g.values[size_t(v)];
    if (val.sparse)
      std::printf("output   '%s': sparse, %d channels\n", val.name.c_str(), val.channels);
    else
      std::printf("output   '%s': dense %s\n", val.name.c_str(), dims_string(val.shape).c_str());
  }
  std::string ops;
  for (const auto& [op, count] : op_count) ops += (ops.empty() ? "" : ", ") + std::to_string(count) + " " + op;
  std::printf("nodes    %s; %lld weight parameters\n", ops.empty() ? "none" : ops.c_str(),
              static_cast<long long>(params));
  // The input a model expects: index order (ScatterDense format) and grid (input_spatial_shape).
  const InputLayout layout = expected_input(g);
  std::printf("order    %s (indices: batch, then the grid axes in this order; %s)\n", layout.order.c_str(),
              layout.order_stated ? "from the ScatterDense format" : "no ScatterDense states it: NVIDIA's default");
  if (layout.grid[0] > 0)
    std::printf("grid     %s (%s, from the input_spatial_shape of node '%s'; scn run --grid %s)\n\n",
                join_int3(layout.grid).c_str(), layout.order.c_str(), layout.grid_node.c_str(),
                join_int3(layout.grid).c_str());
  else
    std::printf("grid     not stated by the model (no input_spatial_shape on the first convolution)\n\n");

  // Analysis and shapes: failures of a complete graph are validation errors too.
  KernelMapPlan an;
  bool have_analysis = false;
  std::string analysis_note;
  try {
    an = kernel_map_plan(g);
    have_analysis = true;
  } catch (const std::exception& e) {
    if (complete)
      errors.push_back(e.what());
    else
      analysis_note = std::string("\nkernel-map plan unavailable for the partially imported graph: ") + e.what() + "\n";
  }
  GraphShapes shapes;
  bool have_shapes = false;
  if (have_analysis && !args.grid.empty()) {
    try {
      shapes = graph_shapes(g, parse_grid(args.grid), args.batch);
      have_shapes = true;
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }

  std::vector<std::string> header = {
      "#",       "op",       "name", "inputs -> output", "C in->out", "kernel",    "stride",
      "padding", "dilation", "type", "rulebook",         "act",       "precision", "map"};
  if (have_shapes) header.push_back("out shape");
  Table t(header);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string io;
    for (size_t k = 0; k < n.inputs.size(); ++k) io += (k ? "," : "") + g.values[size_t(n.inputs[k])].name;
    io += (io.empty() ? "-> " : " -> ") + (n.output >= 0 ? g.values[size_t(n.output)].name : std::string("?"));
    const Value* out = n.output >= 0 ? &g.values[size_t(n.output)] : nullptr;
    std::vector<std::string> row = {std::to_string(i), op_type_name(n.op), n.name, io};
    std::string chans, kernel, stride, pad, dil, type, rb, act, map, shape;
    switch (n.op) {
      case OpType::SparseConv: {
        const ConvAttrs& c = n.conv;
        chans = std::to_string(c.in_channels) + "->" + std::to_string(c.out_channels);
        kernel = join_int3(c.kernel_size);
        stride = join_int3(c.stride);
        pad = join_int3(c.padding);
        dil = join_int3(c.dilation);
        type = c.subm ? "subm" : (c.inverse ? "inverse" : "regular");
        rb = c.rulebook.empty() ? "-" : c.rulebook;
        act = activation_name(c.activation);
        if (c.activation == Activation::LeakyReLU) act += "(" + fixed(c.activation_alpha, 3) + ")";
        if (have_analysis && an.node_map[i] >= 0) map = "m" + std::to_string(an.node_map[i]);
        break;
      }
      case OpType::ScatterDense:
        chans = out ? dims_string(out->shape) : "";
        type = n.dense.format + " " + n.dense.layout;
        break;
      case OpType::Reshape:
      case OpType::Transpose:
        chans = "dims " + dims_string(n.dims);
        break;
      default:
        if (out && out->sparse) chans = std::to_string(out->channels);
        break;
    }
    if (have_shapes && out) {
      if (an.value_sites[size_t(n.output)] >= 0)
        shape = join_int3(shapes.spatial[size_t(n.output)]);
      else if (!shapes.dense[size_t(n.output)].empty())
        shape = dims_string(shapes.dense[size_t(n.output)]);
    }
    row.insert(row.end(), {chans, kernel, stride, pad, dil, type, rb, act,
                           n.op == OpType::Input ? "" : precision_string(n.quant), map});
    if (have_shapes) row.push_back(shape);
    t.add(row);
  }
  std::printf("%s", t.str().c_str());

  if (args.attrs) {
    std::printf("\nreported attributes:\n");
    for (const Node& n : g.nodes) {
      if (n.info.empty()) continue;
      std::string s;
      for (const auto& [k, v] : n.info) s += (s.empty() ? "" : ", ") + k + "=" + v;
      std::printf("  %s: %s\n", n.name.c_str(), s.c_str());
    }
  }

  std::printf("%s", analysis_note.c_str());
  if (have_analysis) {
    std::printf("\nkernel-map plan: %zu maps for %lld convolutions\n", an.maps.size(),
                static_cast<long long>(op_count["SparseConvolution"]));
    Table mt({"map", "kind", "kernel", "stride", "padding", "dilation", "sites", "convs"});
    for (size_t m = 0; m < an.maps.size(); ++m) {
      const KernelMapInfo& s = an.maps[m];
      std::string convs;
      for (int node : s.nodes) convs += (convs.empty() ? "" : ",") + g.nodes[size_t(node)].name;
      std::string kind = s.kind;
      if (s.source_map >= 0) kind += " of m" + std::to_string(s.source_map);
      mt.add({"m" + std::to_string(m), kind, join_int3(s.kernel_size), join_int3(s.stride), join_int3(s.padding),
              join_int3(s.dilation), "s" + std::to_string(s.in_sites) + "->s" + std::to_string(s.out_sites),
              std::to_string(s.nodes.size()) + ": " + convs});
    }
    std::printf("%s", mt.str("  ").c_str());
  }
  if (have_shapes && args.memory) {
    try {
      print_memory(g, args);
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }
}

}  // namespace

int run_inspect(const InspectArgs& a) {
  OnnxReport report = inspect_onnx(a.model);
  std::vector<std::string> errors = report.errors;
  const EngineBuilder* b = report.builder ? report.builder.get() : report.partial.get();
  if (b) print_graph(b->graph(), a, errors, report.builder != nullptr);
  if (errors.empty()) {
    std::printf("\nno validation errors\n");
    return 0;
  }
  std::printf("\n%zu validation error%s:\n", errors.size(), errors.size() == 1 ? "" : "s");
  for (const std::string& e : errors) std::printf("  %s\n", e.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "scn inspect: %s: %zu validation error%s\n", a.model.c_str(), errors.size(),
               errors.size() == 1 ? "" : "s");
  return 1;
}

}  // namespace scn::cli
