// EngineBuilder: validates each node as it is pushed, so a bad graph fails at the node at fault.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "core/half.h"
#include "core/options.h"

#include "backends/backend_factory.h"
#include "graph/analysis.h"
#include "plan/engine_plan.h"
#include "scn/engine.h"

namespace scn {

namespace {

ErrorContext node_prefix(const Graph& g, const std::string& name, OpType op) {
  return {g.source, name, op_type_name(op), "", ""};
}

/// `needs`: the ranges a node of this op reads its inputs with when its precision is int8
/// (SparseConvolution: input_dynamic_range; Add: input0/1_dynamic_range; others: none).
enum class QuantInputs { None, Single, Pair };

void check_quant(const ErrorContext& where, const QuantAttrs& q, int64_t cout, QuantInputs needs = QuantInputs::None) {
  auto check_range = [&](float r, const char* attr, bool required) {
    if (r < 0.f && !std::isnan(r)) {  // absent
      SCN_CHECK(!required, where, ": precision is int8 but attribute '", attr,
                "' is missing; an int8 node quantizes its input with scale ", attr,
                " / 127 (run `scn calibrate` to compute the ranges)");
      return;
    }
    SCN_CHECK(std::isfinite(r) && r > 0.f, where, ": attribute '", attr,
              "' must be a positive finite dynamic range, got ", r);
  };
  // (an enum value out of range ran as fp16; fp32 is an engine-wide precision, not a node's)
  for (const auto& [p, attr] : {std::pair<Precision, const char*>{q.precision, "precision"},
                                std::pair<Precision, const char*>{q.output_precision, "output_precision"}})
    SCN_CHECK(p == Precision::Fp16 || p == Precision::Int8, where, ": ", attr, " = ", int(p),
              " is not a node precision (Fp16 or Int8)");
  const bool int8 = q.precision == Precision::Int8;
  check_range(q.input_dynamic_range, "input_dynamic_range", int8 && needs == QuantInputs::Single);
  check_range(q.input0_dynamic_range, "input0_dynamic_range", int8 && needs == QuantInputs::Pair);
  check_range(q.input1_dynamic_range, "input1_dynamic_range", int8 && needs == QuantInputs::Pair);
  if (!q.weight_dynamic_ranges.empty()) {
    SCN_CHECK(int64_t(q.weight_dynamic_ranges.size()) == cout, where,
              ": attribute 'weight_dynamic_ranges' has ", q.weight_dynamic_ranges.size(),
              " values for ", cout, " output channels");
    for (size_t i = 0; i < q.weight_dynamic_ranges.size(); ++i) {
      const float r = q.weight_dynamic_ranges[i];
      SCN_CHECK(std::isfinite(r) && r > 0.f, where.with_attribute("weight_dynamic_ranges"), "[", i,
                "] must be a positive finite range, got ", r);
    }
  }
}

}  // namespace

EngineBuilder::EngineBuilder(std::string source) : graph_(std::make_shared<Graph>()) {
  graph_->source = std::move(source);
}

const Value& EngineBuilder::value(ValueId id, const std::string& node, const char* role) const {
  SCN_CHECK(id >= 0 && size_t(id) < graph_->values.size(), graph_->source, ": node '", node,
            "': ", role, " refers to no value (id ", id, ")");
  return graph_->values[size_t(id)];
}

ValueId EngineBuilder::add_node(Node node, Value value) {
  // Copy-on-write: an engine built earlier keeps its own graph.
  touched();
  if (graph_.use_count() > 1) graph_ = std::make_shared<Graph>(*graph_);
  Graph& g = *graph_;
  if (value.name.empty()) value.name = node.name;
  // Name indexes keep import linear in the node count (a linear scan made large files quadratic).
  SCN_CHECK(value_names_.count(value.name) == 0, g.source, ": node '", node.name, "' (",
            op_type_name(node.op), "): output name '", value.name,
            "' is already produced by another node");
  if (node.op != OpType::Input && node_names_.count(node.name) != 0) {
    // scn names a graph input's node after the input (per-node options and reports find nodes by name)
    const bool input =
        std::any_of(g.inputs.begin(), g.inputs.end(), [&](ValueId v) { return g.values[size_t(v)].name == node.name; });
    SCN_FAIL(g.source, ": node name '", node.name, "' is used twice",
             input ? " (it is also the name of a graph input, which scn gives the input's node; rename the node)" : "");
  }
  value_names_.insert(value.name);
  node_names_.insert(node.name);
  value.producer = int(g.nodes.size());
  node.output = int(g.values.size());
  g.values.push_back(std::move(value));
  g.nodes.push_back(std::move(node));
  return g.nodes.back().output;
}

ValueId EngineBuilder::push_input(const std::string& name, int32_t channels) {
  SCN_CHECK(channels >= 1, graph_->source, ": input '", name, "': channels must be >= 1, got ",
            channels);
  Node n;
  n.op = OpType::Input;
  n.name = name;
  Value v;
  v.name = name;
  v.sparse = true;
  v.channels = channels;
  const ValueId id = add_node(n, v);
  graph_->inputs.push_back(id);
  return id;
}

ValueId EngineBuilder::push_sparse_conv(const std::string& name, ValueId x, const ConvAttrs& in_attrs,
                                        const QuantAttrs& quant, const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::SparseConv);
  const Value& xv = value(x, name, "input");
  SCN_CHECK(xv.sparse, where, ": input '", xv.name, "' is dense; SparseConvolution needs a sparse input");
  ConvAttrs c = in_attrs;
  for (int d = 0; d < 3; ++d) {
    SCN_CHECK(c.kernel_size[d] >= 1, where, ": kernel_size ", int3_string(c.kernel_size), " must be >= 1");
    SCN_CHECK(c.stride[d] >= 1, where, ": stride ", int3_string(c.stride), " must be >= 1");
    SCN_CHECK(c.dilation[d] >= 1, where, ": dilation ", int3_string(c.dilation), " must be >= 1");
    SCN_CHECK(c.padding[d] >= 0, where, ": padding ", int3_string(c.padding), " must be >= 0");
    // Index arithmetic (coordinate + padding - offset * dilation) must stay inside int32.
    const int64_t extent = 2 * int64_t(c.padding[d]) + int64_t(c.dilation[d]) * (int64_t(c.kernel_size[d]) - 1);
    SCN_CHECK(extent <= std::numeric_limits<int32_t>::max(), where, ": kernel_size ", int3_string(c.kernel_size),
              ", dilation ", int3_string(c.dilation), " and padding ", int3_string(c.padding),
              " span more than 2^31 - 1 voxels on axis ", d);
  }
  SCN_CHECK(!(c.subm && c.inverse), where, ": subm=1 and inverse=1 together are not a valid conv");
  if (c.subm) {
    for (int d = 0; d < 3; ++d)
      SCN_CHECK(c.kernel_size[d] % 2 == 1, where, ": submanifold conv needs an odd kernel, got ",
                int3_string(c.kernel_size));
    SCN_CHECK(c.stride == (Int3{1, 1, 1}), where, ": submanifold conv needs stride 1, got ",
              int3_string(c.stride));
  }
  SCN_CHECK(c.weight.defined(), where, ": weight is missing");
  SCN_CHECK(c.weight.device() == Device::Host, where, ": weight must be a host tensor");
  SCN_CHECK(c.weight.dtype() == DType::Float16 || c.weight.dtype() == DType::Float32, where,
            ": weight must be float16 or float32, got ", dtype_name(c.weight.dtype()));
  SCN_CHECK(c.weight.ndim() == 5, where, ": weight must have shape [Cout, k0, k1, k2, Cin], got ",
            c.weight.shape_string());
  const int64_t cout = c.weight.dim(0), cin = c.weight.dim(4);
  SCN_CHECK(cout >= 1 && cin >= 1, where, ": weight shape ", c.weight.shape_string(), " is empty");
  for (int d = 0; d < 3; ++d)
    SCN_CHECK(c.weight.dim(d + 1) == c.kernel_size[d], where, ": weight shape ",
              c.weight.shape_string(), " disagrees with kernel_size ", int3_string(c.kernel_size));
  SCN_CHECK(cin == xv.channels, where, ": weight has ", cin, " input channels but input '", xv.name,
            "' has ", xv.channels);
  SCN_CHECK(c.in_channels == 0 || c.in_channels == cin, where, ": attribute in_channels=",
            c.in_channels, " disagrees with the weight shape ", c.weight.shape_string());
  SCN_CHECK(c.out_channels == 0 || c.out_channels == cout, where, ": attribute out_channels=",
            c.out_channels, " disagrees with the weight shape ", c.weight.shape_string());
  c.in_channels = int32_t(cin);
  c.out_channels = int32_t(cout);
  if (c.bias.defined()) {
    SCN_CHECK(c.bias.dtype() == DType::Float16 || c.bias.dtype() == DType::Float32, where,
              ": bias must be float16 or float32, got ", dtype_name(c.bias.dtype()));
    SCN_CHECK(c.bias.ndim() == 1 && c.bias.dim(0) == cout, where, ": bias shape ",
              c.bias.shape_string(), " must be [", cout, "]");
  }
  // Non-finite parameters would give a NaN / Inf map (or, where a backend skips zero inputs,
  // a map that differs between backends): reject them here.
  auto check_finite = [&](const Tensor& t, const char* what) {
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
      const float v = t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
      SCN_CHECK(std::isfinite(v), where, ": ", what, " value [", i, "] is ", v, "; weights and biases must be finite");
    }
  };
  check_finite(c.weight, "weight");
  if (c.bias.defined()) check_finite(c.bias, "bias");
  SCN_CHECK(c.activation == Activation::None || c.activation == Activation::ReLU ||
                c.activation == Activation::Sigmoid || c.activation == Activation::LeakyReLU,
            where, ": activation = ", int(c.activation), " is not an Activation");
  if (c.activation == Activation::LeakyReLU)
    SCN_CHECK(std::isfinite(c.activation_alpha), where, ": LeakyReLU needs a finite slope 'alpha'");
  SCN_CHECK(c.output_bound >= 0 && c.output_bound <= kMaxSiteRows, where, ": output_bound must be in [0, ",
            kMaxSiteRows, "] (0: not given), got ", c.output_bound);
  check_quant(where, quant, cout, QuantInputs::Single);

  Node n;
  n.op = OpType::SparseConv;
  n.name = name;
  n.inputs = {x};
  n.conv = c;
  n.quant = quant;
  Value v;
  v.name = output_name;
  v.sparse = true;
  v.channels = int32_t(cout);
  return add_node(std::move(n), std::move(v));
}

ValueId EngineBuilder::push_add(const std::string& name, ValueId a, ValueId b, const QuantAttrs& quant,
                                const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::Add);
  const Value& av = value(a, name, "input 0");
  const Value& bv = value(b, name, "input 1");
  SCN_CHECK(av.sparse && bv.sparse, where, ": Add needs two sparse inputs");
  SCN_CHECK(av.channels == bv.channels, where, ": inputs have ", av.channels, " and ", bv.channels,
            " channels");
  check_quant(where, quant, av.channels, QuantInputs::Pair);
  Node n;
  n.op = OpType::Add;
  n.name = name;
  n.inputs = {a, b};
  n.quant = quant;
  Value v;
  v.name = output_name;
  v.channels = av.channels;
  return add_node(std::move(n), std::move(v));
}

ValueId EngineBuilder::push_relu(const std::string& name, ValueId x, const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::Relu);
  const Value& xv = value(x, name, "input");
  SCN_CHECK(xv.sparse, where, ": Relu needs a sparse input");
  Node n;
  n.op = OpType::Relu;
  n.name = name;
  n.inputs = {x};
  Value v;
  v.name = output_name;
  v.channels = xv.channels;
  return add_node(std::move(n), std::move(v));
}

ValueId EngineBuilder::push_concat(const std::string& name, const std::vector<ValueId>& xs,
                                   const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::Concat);
  SCN_CHECK(xs.size() >= 2, where, ": Concat needs at least two inputs");
  int64_t channels = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Value& xv = value(xs[i], name, "input");
    SCN_CHECK(xv.sparse, where, ": input '", xv.name, "' is dense; Concat joins sparse tensors");
    channels += xv.channels;
    SCN_CHECK(channels <= std::numeric_limits<int32_t>::max(), where,
              ": the joined channel count overflows int32 (", channels, " after input ", i, ")");
  }
  Node n;
  n.op = OpType::Concat;
  n.name = name;
  n.inputs = xs;
  Value v;
  v.name = output_name;
  v.channels = int32_t(channels);
  return add_node(std::move(n), std::move(v));
}

ValueId EngineBuilder::push_dense(const std::string& name, ValueId x, const DenseAttrs& attrs,
                                  const QuantAttrs& quant, const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::ScatterDense);
  const Value& xv = value(x, name, "input");
  SCN_CHECK(xv.sparse, where, ": ScatterDense needs a sparse input");
  SCN_CHECK(attrs.output_shape.size() == 5, where, ": output_shape must have 5 values [N, C, s0, s1, s2], got ",
            attrs.output_shape.size());
  int64_t elems = 1;
  for (int64_t d : attrs.output_shape) {
    SCN_CHECK(d >= 1, where, ": output_shape values must be >= 1");
    SCN_CHECK(!__builtin_mul_overflow(elems, d, &elems) && elems <= (int64_t(1) << 60), where,
              ": output_shape [", attrs.output_shape[0], ", ", attrs.output_shape[1], ", ", attrs.output_shape[2],
              ", ", attrs.output_shape[3], ", ", attrs.output_shape[4], "] is too large");
  }
  SCN_CHECK(attrs.output_shape[1] == xv.channels, where, ": output_shape channels ",
            attrs.output_shape[1], " differ from the input's ", xv.channels);
  for (int d = 0; d < 3; ++d) {
    SCN_CHECK(attrs.input_spatial_shape[d] >= 1, where, ": input_spatial_shape must be positive");
    SCN_CHECK(attrs.output_shape[size_t(d) + 2] == attrs.input_spatial_shape[d], where,
              ": output_shape spatial axes differ from input_spatial_shape ",
              int3_string(attrs.input_spatial_shape));
  }
  SCN_CHECK(attrs.format == "zyx" || attrs.format == "xyz", where, ": format '", attrs.format,
            "' is neither \"zyx\" nor \"xyz\"");
  SCN_CHECK(attrs.layout == "NCHW", where, ": output_layout '", attrs.layout,
            "' is not supported (only NCHW)");
  check_quant(where, quant, xv.channels);
  Node n;
  n.op = OpType::ScatterDense;
  n.name = name;
  n.inputs = {x};
  n.dense = attrs;
  n.quant = quant;
  Value v;
  v.name = output_name;
  v.sparse = false;
  v.shape = attrs.output_shape;
  return add_node(std::move(n), std::move(v));
}

ValueId EngineBuilder::push_reshape(const std::string& name, ValueId x, const std::vector<int64_t>& dims,
                                    const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::Reshape);
  const Value& xv = value(x, name, "input");
  SCN_CHECK(!xv.sparse, where, ": Reshape needs a dense input (a ScatterDense output)");
  SCN_CHECK(!dims.empty(), where.with_attribute("dims"), " is empty");
  int64_t in = 1, known = 1;
  int infer = -1;
  for (int64_t d : xv.shape) in *= d;  // bounded by push_dense
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      SCN_CHECK(infer < 0, where, ": 'dims' has more than one -1");
      infer = int(i);
    } else {
      SCN_CHECK(dims[i] >= 1, where, ": 'dims' value ", dims[i], " must be >= 1 or -1");
      // A product that wraps around int64 could otherwise equal the input's element count.
      SCN_CHECK(!__builtin_mul_overflow(known, dims[i], &known), where, ": the product of 'dims' overflows int64 ",
                "(cannot reshape ", in, " elements)");
    }
  }
  std::vector<int64_t> shape = dims;
  if (infer >= 0) {
    SCN_CHECK(in % known == 0, where, ": cannot reshape ", in, " elements with dims containing -1");
    shape[size_t(infer)] = in / known;
    known = in;
  }
  SCN_CHECK(known == in, where, ": cannot reshape ", in, " elements (", xv.name, ") to ", known);
  Node n;
  n.op = OpType::Reshape;
  n.name = name;
  n.inputs = {x};
  n.dims = shape;
  Value v;
  v.name = output_name;
  v.sparse = false;
  v.shape = shape;
  return add_node(std::move(n), std::move(v));
}

ValueId EngineBuilder::push_transpose(const std::string& name, ValueId x, const std::vector<int64_t>& dims,
                                      const std::string& output_name) {
  const ErrorContext where = node_prefix(*graph_, name, OpType::Transpose);
  const Value& xv = value(x, name, "input");
  SCN_CHECK(!xv.sparse, where, ": Transpose needs a dense input (a ScatterDense output)");
  SCN_CHECK(dims.size() == xv.shape.size(), where, ": permutation has ", dims.size(),
            " axes for a ", xv.shape.size(), "-d input");
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    SCN_CHECK(sorted[i] == int64_t(i), where, ": 'dims' is not a permutation of 0..",
              dims.size() - 1);
  SCN_CHECK(dims[0] == 0, where, ": the batch axis must stay first (dims[0] = ", dims[0], ")");
  Node n;
  n.op = OpType::Transpose;
  n.name = name;
  n.inputs = {x};
  n.dims = dims;
  Value v;
  v.name = output_name;
  v.sparse = false;
  for (int64_t d : dims) v.shape.push_back(xv.shape[size_t(d)]);
  return add_node(std::move(n), std::move(v));
}

void EngineBuilder::push_output(ValueId x) {
  const Value& xv = value(x, "<output>", "graph output");
  for (int o : graph_->outputs)
    SCN_CHECK(o != x, graph_->source, ": '", xv.name, "' is marked as graph output twice");
  touched();
  if (graph_.use_count() > 1) graph_ = std::make_shared<Graph>(*graph_);
  graph_->outputs.push_back(x);
}

void EngineBuilder::expose_all_values() {
  for (const Node& n : graph_->nodes) {
    if (n.op == OpType::Input) continue;
    bool is_output = false;
    for (int o : graph_->outputs) is_output = is_output || o == n.output;
    if (!is_output) push_output(n.output);
  }
}

void EngineBuilder::annotate_last(const std::string& key, const std::string& value) {
  SCN_CHECK(!graph_->nodes.empty(), "annotate_last: no node pushed yet");
  touched();
  if (graph_.use_count() > 1) graph_ = std::make_shared<Graph>(*graph_);
  graph_->nodes.back().info.emplace_back(key, value);
}

void EngineBuilder::check_graph() const {
  // build() may run on several threads at once (docs/threading.md): the cache is swapped atomically;
  // two threads may both analyse once, with equal results
  if (std::atomic_load(&analysis_)) return;
  std::atomic_store(&analysis_, std::make_shared<const GraphAnalysis>(analyze_graph(*graph_)));
}

std::unique_ptr<Engine> EngineBuilder::build(const BuildOptions& options) const {
  SCN_CHECK(!graph_->inputs.empty(), graph_->source, ": the graph has no input");
  validate(options);
  check_graph();  // whole-graph checks, once per graph; throws naming the node
  std::shared_ptr<const Graph> g = graph_;
  auto plan = std::make_shared<const EnginePlan>(make_plan(g, std::atomic_load(&analysis_), options));
  Backend b = options.backend;
  BuildOptions o = options;
  if (b == Backend::Cuda || (b == Backend::Auto && options.precision != Precision::Fp32 && cuda_available())) {
    o.backend = Backend::Cuda;
    if (b == Backend::Cuda) return create_cuda_engine(plan, o);
    // Auto: the GPU for the precisions the CUDA backend implements; a GPU it cannot use (below
    // compute capability 8.0, or no compiled image for it) falls back to the CPU, saying why.
    try {
      return create_cuda_engine(plan, o);
    } catch (const UnusableGpu& e) {
      const std::string notice = detail::concat("scn: ", e.what(), "; Backend::Auto runs on the CPU instead");
      std::fprintf(stderr, "%s\n", notice.c_str());
      o.backend = Backend::Cpu;
      auto engine = create_cpu_engine(plan, o);
      engine->set_notice(notice);
      return engine;
    }
  }
  o.backend = Backend::Cpu;
  SCN_CHECK(options.cuda.tile.empty(), "BuildOptions.cuda.tile = '", options.cuda.tile,
            "' forces a CUDA tile, but this engine runs on the CPU backend",
            options.backend == Backend::Auto ? " (Backend::Auto: no usable GPU, or precision fp32)" : "");
  return create_cpu_engine(plan, o);
}

}  // namespace scn
