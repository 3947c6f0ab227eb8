// The CPU reference backend: the oracle every other backend is checked against.
// forward(): (1) site sets and kernel maps for every map slot, (2) a liveness memory plan for the
// activations of this input, (3) the ops one by one in float32, rounding every stored activation
// to float16 when the engine's precision is fp16 (as a GPU fp16 engine stores them).
// INT8 (docs/int8.md): every node runs with its own precision attribute; values are stored as fp16
// or as int8 (the integers q held in the float arena) as int8::plan() decides.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

#include "backends/backend_factory.h"
#include "plan/int8_arith.h"
#include "backends/cpu/int8_conv.h"
#include "backends/cpu/int8_observer.h"
#include "plan/int8_plan.h"
#include "backends/cpu/kernel_map.h"
#include "backends/cpu/sparse_conv.h"
#include "backends/cpu/thread_pool.h"
#include "core/half.h"
#include "core/input_check.h"
#include "graph/analysis.h"
#include "plan/engine_plan.h"
#include "plan/int8_arith.h"
#include "plan/int8_plan.h"
#include "plan/memory_plan.h"

namespace scn {
namespace {

using cpu::KernelMap;
using cpu::SiteSet;

struct BoundInput {
  bool bound = false;
  Int3 grid{0, 0, 0};
  std::vector<float> features;  // [N x C]
  std::vector<int32_t> coords;  // [N x 4]
};

class CpuEngine final : public Engine {
 public:
  CpuEngine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options)
      : Engine(plan->graph, options), plan_(std::move(plan)), analysis_(*plan_->analysis), int8_(plan_->int8_plan) {
    int8_mode_ = plan_->int8;
    threads_ = cpu::resolve_threads(options.num_threads);
    packed_.resize(graph_->nodes.size());
    for (size_t n = 0; n < graph_->nodes.size(); ++n)
      if (graph_->nodes[n].op == OpType::SparseConv) packed_[n] = cpu::pack_conv(graph_->nodes[n].conv);
    inputs_.resize(graph_->inputs.size());
  }

  Backend backend() const override { return Backend::Cpu; }

  void set_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                 const InputLabels& labels) override {
    const std::string& name = input_name(index);
    const int32_t channels = graph_->values[size_t(graph_->inputs[size_t(index)])].channels;
    // Shapes and dtypes first, so a bad device tensor is reported before it is copied.
    check_sparse_input_shapes(features, indices, grid, batch_size, channels, name, labels);
    const Tensor f = features.to(Device::Host), idx = indices.to(Device::Host);
    check_sparse_input_values(f, idx, grid, batch_size, name, labels, options_.precision != Precision::Fp32);
    for (size_t i = 0; i < inputs_.size(); ++i)
      SCN_CHECK(!inputs_[i].bound || int(i) == index || batch_size == batch_, "input '", name,
                "': batch size ", batch_size, " differs from the other inputs' ", batch_);
    BoundInput& in = inputs_[size_t(index)];
    in.grid = grid;
    in.coords.assign(idx.ptr<int32_t>(), idx.ptr<int32_t>() + idx.numel());
    const Tensor f32 = f.to_dtype(DType::Float32);
    in.features.assign(f32.ptr<float>(), f32.ptr<float>() + f32.numel());
    if (options_.precision != Precision::Fp32) round_all(in.features.data(), int64_t(in.features.size()));
    in.bound = true;
    batch_ = batch_size;
    ran_ = false;
  }

  void forward(void*) override {
    try {
      run(nullptr);
    } catch (const std::bad_alloc&) {
      SCN_FAIL(graph_->source, ": out of host memory running the graph on this input");
    } catch (const std::length_error&) {
      SCN_FAIL(graph_->source, ": the buffers for this input exceed the addressable size");
    }
  }

  std::vector<LayerTiming> profile_layers() override {
    std::vector<LayerTiming> t;
    run(&t);
    return t;
  }

  Tensor output(int index) override {
    const int v = graph_->outputs.at(size_t(checked_output(index)));
    const Value& val = graph_->values[size_t(v)];
    std::vector<int64_t> shape =
        val.sparse ? std::vector<int64_t>{sites_[size_t(analysis_.value_sites[size_t(v)])].size(), val.channels}
                   : shapes_.dense_shape[size_t(v)];
    const float* src = buffer(v);
    if (int8_mode_ && int8_.values[size_t(v)].storage == int8::Storage::Int8) {
      Tensor out = Tensor::from_host(src, shape, DType::Float32);
      const float s = int8::scale(int8_.values[size_t(v)].range);
      float* p = out.ptr<float>();
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = round_to_half(int8::dequantize(int32_t(p[i]), s));
      return out.to_dtype(DType::Float16);
    }
    Tensor out = Tensor::from_host(src, shape, DType::Float32);
    return options_.precision == Precision::Fp32 ? out : out.to_dtype(DType::Float16);
  }

  /// fp32 dense outputs: a view of the arena (overwritten by the next forward; sharing the arena, so it stays valid
  /// when a larger frame moves the engine to a new one), no copy; the other precisions convert, so they get output()'s
  /// fresh tensor.
  Tensor output_async(int index) override {
    const int v = graph_->outputs.at(size_t(checked_output(index)));
    const Value& val = graph_->values[size_t(v)];
    if (val.sparse || options_.precision != Precision::Fp32) return output(index);
    return Tensor::wrap_shared(buffer(v), shapes_.dense_shape[size_t(v)], DType::Float32, Device::Host, arena_);
  }

  Tensor output_indices(int index) override {
    const int v = graph_->outputs.at(size_t(checked_output(index)));
    SCN_CHECK(graph_->values[size_t(v)].sparse, "output '", output_name(index),
              "' is dense and has no indices");
    const SiteSet& s = sites_[size_t(analysis_.value_sites[size_t(v)])];
    return Tensor::from_host(s.coords.data(), {s.size(), 4}, DType::Int32);
  }

  size_t workspace_bytes() const override {
    size_t bytes = arena_->size() * sizeof(float);
    for (const auto& m : maps_) bytes += m.out_in.size() * sizeof(int32_t);
    for (const auto& s : sites_) bytes += s.coords.size() * 4 + s.keys.size() * 8;
    return bytes;
  }

 private:
  int checked_output(int index) const {
    output_name(index);
    SCN_CHECK(ran_, graph_->source, ": output(", index, ") requested before forward()");
    return index;
  }

  void round_all(float* p, int64_t n) const {
    cpu::parallel_for(n, threads_, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = round_to_half(p[i]);
    });
  }

  float* buffer(int v) { return arena_->data() + offsets_[size_t(alias_[size_t(v)])]; }

  void build_maps() {
    const Graph& g = *graph_;
    sites_.assign(size_t(analysis_.num_site_sets), SiteSet{});
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const int s = analysis_.value_sites[size_t(g.inputs[k])];
      sites_[size_t(s)].shape = inputs_[k].grid;
      sites_[size_t(s)].batch = batch_;
      sites_[size_t(s)].coords = inputs_[k].coords;
      sites_[size_t(s)].index();
    }
    maps_.assign(analysis_.maps.size(), KernelMap{});
    for (size_t m = 0; m < analysis_.maps.size(); ++m) {
      const MapSlot& slot = analysis_.maps[m];
      switch (slot.kind) {
        case MapKind::Subm:
          maps_[m] = cpu::build_subm_map(sites_[size_t(slot.in_sites)], slot, threads_);
          break;
        case MapKind::Strided:
          maps_[m] = cpu::build_strided_map(sites_[size_t(slot.in_sites)], slot,
                                            shapes_.site_shape[size_t(slot.out_sites)],
                                            sites_[size_t(slot.out_sites)], threads_);
          break;
        case MapKind::Inverse:
          maps_[m] = cpu::build_inverse_map(maps_[size_t(slot.source_slot)], sites_[size_t(slot.out_sites)].size());
          break;
      }
    }
  }

  /// Rows x channels (sparse) or elements (dense) of every value, then one arena for all.
  void plan() {
    const Graph& g = *graph_;
    const size_t nv = g.values.size();
    alias_.resize(nv);
    std::vector<int> last(analysis_.last_use);
    for (size_t v = 0; v < nv; ++v) alias_[v] = int(v);
    // A Reshape is a view of its input: both share one buffer that lives until the later last use.
    for (const Node& n : g.nodes)
      if (n.op == OpType::Reshape) alias_[size_t(n.output)] = alias_[size_t(n.inputs[0])];
    for (size_t v = 0; v < nv; ++v) {
      const size_t root = size_t(alias_[v]);
      last[root] = std::max(last[root], last[v]);
    }
    std::vector<BufferRequest> req(nv);
    for (size_t v = 0; v < nv; ++v) {
      const Value& val = g.values[v];
      int64_t elems = 0;
      if (val.sparse) {
        elems = sites_[size_t(analysis_.value_sites[v])].size() * val.channels;
      } else {
        elems = 1;
        for (int64_t d : shapes_.dense_shape[v]) elems *= d;
      }
      req[v].bytes = alias_[v] == int(v) ? size_t(elems) * sizeof(float) : 0;
      req[v].first = val.producer;
      req[v].last = std::max(last[v], val.producer);
    }
    const MemoryPlan p = plan_memory(req, 64);
    offsets_.resize(nv);
    for (size_t v = 0; v < nv; ++v) offsets_[v] = p.offsets[v] / sizeof(float);
    // a larger frame gets a new arena; views of the old one (output_async) keep it alive
    if (arena_->size() < p.total / sizeof(float) + 1)
      arena_ = std::make_shared<std::vector<float>>(p.total / sizeof(float) + 1, 0.f);
  }

  void run(std::vector<LayerTiming>* timings) {
    const Graph& g = *graph_;
    ran_ = false;  // a forward that fails part-way leaves no outputs to read
    std::vector<Int3> grids;
    for (size_t k = 0; k < inputs_.size(); ++k) {
      SCN_CHECK(inputs_[k].bound, g.source, ": ", timings ? "profile_layers()" : "forward()",
                " before set_input() for input '", input_name(int(k)), "'");
      grids.push_back(inputs_[k].grid);
    }
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    auto lap = [&](const std::string& node, const std::string& op, const std::string& algo) {
      if (!timings) return;
      const auto t1 = clock::now();
      timings->push_back({node, op, algo, std::chrono::duration<double, std::milli>(t1 - t0).count()});
      t0 = t1;
    };
    shapes_ = plan_->replan(grids, batch_).shapes;
    build_maps();
    lap("kernel maps", "MapBuild", "hash");
    plan();
    lap("memory plan", "Plan", "best-fit");
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (int8_mode_)
        run_node_int8(int(n));
      else
        run_node(int(n));
      if (observer_) observe(int(n));
      lap(g.nodes[n].name, op_type_name(g.nodes[n].op), g.nodes[n].op == OpType::SparseConv ? "gather-gemm" : "");
    }
    ran_ = true;
  }

  void run_node(int n) {
    const Graph& g = *graph_;
    const Node& node = g.nodes[size_t(n)];
    const int out = node.output;
    const bool fp16 = options_.precision == Precision::Fp16;
    switch (node.op) {
      case OpType::Input: {
        const auto it = std::find(g.inputs.begin(), g.inputs.end(), out);
        const auto& f = inputs_[size_t(it - g.inputs.begin())].features;
        std::copy(f.begin(), f.end(), buffer(out));
        return;
      }
      case OpType::SparseConv: {
        const KernelMap& m = maps_[size_t(analysis_.node_map[size_t(n)])];
        cpu::sparse_conv_forward(buffer(node.inputs[0]), m, packed_[size_t(n)], buffer(out), threads_);
        if (fp16) round_all(buffer(out), m.num_out * node.conv.out_channels);
        return;
      }
      case OpType::Add: {
        const int64_t cnt = rows(out) * g.values[size_t(out)].channels;
        const float* a = buffer(node.inputs[0]);
        const float* b = buffer(node.inputs[1]);
        float* y = buffer(out);
        for (int64_t i = 0; i < cnt; ++i) y[i] = a[i] + b[i];
        if (fp16) round_all(y, cnt);
        return;
      }
      case OpType::Relu: {
        const int64_t cnt = rows(out) * g.values[size_t(out)].channels;
        const float* a = buffer(node.inputs[0]);
        float* y = buffer(out);
        for (int64_t i = 0; i < cnt; ++i) y[i] = a[i] > 0.f ? a[i] : 0.f;
        return;
      }
      case OpType::Concat:
        concat(node, [&](int v) { return static_cast<const float*>(buffer(v)); });
        return;
      case OpType::ScatterDense:
        scatter_dense(node, buffer(node.inputs[0]));
        return;
      case OpType::Transpose: {
        const auto& in_shape = shapes_.dense_shape[size_t(node.inputs[0])];
        const auto& out_shape = shapes_.dense_shape[size_t(out)];
        const size_t nd = in_shape.size();
        std::vector<int64_t> in_stride(nd, 1), src_stride(nd);
        for (size_t d = nd - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * in_shape[d];
        for (size_t d = 0; d < nd; ++d) src_stride[d] = in_stride[size_t(node.dims[d])];
        int64_t total = 1;
        for (int64_t d : out_shape) total *= d;
        const float* x = buffer(node.inputs[0]);
        float* y = buffer(out);
        cpu::parallel_for(total, threads_, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            int64_t rem = i, src = 0;
            for (size_t d = nd; d-- > 0;) {
              src += (rem % out_shape[d]) * src_stride[d];
              rem /= out_shape[d];
            }
            y[i] = x[src];
          }
        });
        return;
      }
      case OpType::Reshape:
        return;  // a view: shares its input's buffer
    }
  }

  template <typename Input>
  void concat(const Node& node, Input input) {
    const Graph& g = *graph_;
    const int out = node.output;
    const int64_t r = rows(out);
    const int64_t cout = g.values[size_t(out)].channels;
    float* y = buffer(out);
    int64_t c0 = 0;
    for (int v : node.inputs) {
      const int64_t c = g.values[size_t(v)].channels;
      const float* x = input(v);
      for (int64_t i = 0; i < r; ++i) std::memcpy(y + i * cout + c0, x + i * c, size_t(c) * sizeof(float));
      c0 += c;
    }
  }

  void scatter_dense(const Node& node, const float* x) {
    const int in = node.inputs[0], out = node.output;
    const SiteSet& s = sites_[size_t(analysis_.value_sites[size_t(in)])];
    const auto& shape = shapes_.dense_shape[size_t(out)];
    const int64_t C = shape[1], S = shape[2] * shape[3] * shape[4];
    float* y = buffer(out);
    std::fill(y, y + shape[0] * C * S, 0.f);
    for (int64_t v = 0; v < s.size(); ++v) {
      const int32_t* c = &s.coords[size_t(4 * v)];
      const int64_t site = (int64_t(c[1]) * shape[3] + c[2]) * shape[4] + c[3];
      for (int64_t ch = 0; ch < C; ++ch) y[(int64_t(c[0]) * C + ch) * S + site] = x[v * C + ch];
    }
  }

  // ---- INT8 (docs/int8.md) -------------------------------------------------------------------

  int64_t numel(int v) const {
    const Value& val = graph_->values[size_t(v)];
    if (val.sparse) return rows(v) * val.channels;
    int64_t n = 1;
    for (int64_t d : shapes_.dense_shape[size_t(v)]) n *= d;
    return n;
  }

  bool stored_int8(int v) const { return int8_.values[size_t(v)].storage == int8::Storage::Int8; }

  /// Value v as fp16 values (float32 holding fp16): the buffer itself, or int8 storage dequantized
  /// into `scratch`: half(float(q) * scale).
  const float* fp16_view(int v, std::vector<float>& scratch) {
    float* x = buffer(v);
    if (!stored_int8(v)) return x;
    const int64_t n = numel(v);
    const float s = int8::scale(int8_.values[size_t(v)].range);
    scratch.resize(size_t(n));
    float* d = scratch.data();
    cpu::parallel_for(n, threads_, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = round_to_half(int8::dequantize(int32_t(x[i]), s));
    });
    return d;
  }

  /// Value v on the int8 grid of `range`: int8 storage is used as is (int8::plan made its scale
  /// `range`); fp16 storage is quantized with range.
  const int8_t* int8_view(int v, float range, std::vector<int8_t>& scratch) {
    const float* x = buffer(v);
    const int64_t n = numel(v);
    scratch.resize(size_t(n));
    int8_t* q = scratch.data();
    if (stored_int8(v)) {
      SCN_CHECK(int8_.values[size_t(v)].range == range, graph_->source, ": internal error: int8 value '",
                graph_->values[size_t(v)].name, "' read with range ", range, " but stored with ",
                int8_.values[size_t(v)].range);
      cpu::parallel_for(n, threads_, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) q[i] = int8_t(x[i]);
      });
    } else {
      const float inv = int8::inv_scale(range);
      cpu::parallel_for(n, threads_, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) q[i] = int8_t(int8::quantize(x[i], inv));
      });
    }
    return q;
  }

  /// Stores the float results y of node output v: quantized to int8 (q kept as float) or rounded
  /// to fp16.
  void store(int v, float* y, int64_t n) {
    if (stored_int8(v)) {
      const float inv = int8::inv_scale(int8_.values[size_t(v)].range);
      cpu::parallel_for(n, threads_, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = float(int8::quantize(y[i], inv));
      });
    } else {
      round_all(y, n);
    }
  }

  void run_node_int8(int n) {
    const Graph& g = *graph_;
    const Node& node = g.nodes[size_t(n)];
    const int out = node.output;
    switch (node.op) {
      case OpType::SparseConv: {
        const KernelMap& m = maps_[size_t(analysis_.node_map[size_t(n)])];
        const int8::ConvPlan& cp = int8_.convs[size_t(n)];
        float* y = buffer(out);
        if (cp.int8)
          cpu::int8_conv_forward(int8_view(node.inputs[0], cp.input_range, scratch_q0_), m, cp, y, threads_);
        else
          cpu::sparse_conv_forward(fp16_view(node.inputs[0], scratch_f0_), m, packed_[size_t(n)], y, threads_);
        store(out, y, m.num_out * node.conv.out_channels);
        return;
      }
      case OpType::Add: {
        const int64_t cnt = numel(out);
        float* y = buffer(out);
        if (node.quant.precision == Precision::Int8) {
          // y = float(qa) * sa + float(qb) * sb: two float32 products, one float32 sum.
          const int8_t* qa = int8_view(node.inputs[0], node.quant.input0_dynamic_range, scratch_q0_);
          const int8_t* qb = int8_view(node.inputs[1], node.quant.input1_dynamic_range, scratch_q1_);
          const float sa = int8::scale(node.quant.input0_dynamic_range);
          const float sb = int8::scale(node.quant.input1_dynamic_range);
          cpu::parallel_for(cnt, threads_, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              const float ta = int8::dequantize(qa[i], sa);
              const float tb = int8::dequantize(qb[i], sb);
              y[i] = ta + tb;
            }
          });
        } else {
          const float* a = fp16_view(node.inputs[0], scratch_f0_);
          const float* b = fp16_view(node.inputs[1], scratch_f1_);
          cpu::parallel_for(cnt, threads_, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) y[i] = a[i] + b[i];
          });
        }
        store(out, y, cnt);
        return;
      }
      case OpType::Concat:
        concat(node, [&](int v) { return fp16_view(v, scratch_f0_); });
        return;
      case OpType::ScatterDense:
        scatter_dense(node, fp16_view(node.inputs[0], scratch_f0_));
        return;
      case OpType::Input:      // features rounded to fp16 by set_input
      case OpType::Relu:       // max(q, 0) on int8 storage, max(x, 0) on fp16: both exact
      case OpType::Transpose:  // fp16 copies
      case OpType::Reshape:
        run_node(n);
        return;
    }
  }

  void observe(int n) {
    const Graph& g = *graph_;
    const int v = g.nodes[size_t(n)].output;
    const Value& val = g.values[size_t(v)];
    cpu::ObservedValue o;
    o.node = n;
    o.value = v;
    o.data = buffer(v);
    if (val.sparse) {
      const SiteSet& s = sites_[size_t(analysis_.value_sites[size_t(v)])];
      o.rows = s.size();
      o.channels = val.channels;
      o.coords = s.coords.data();
    } else {
      o.rows = numel(v);
      o.channels = 1;
    }
    if (int8_mode_ && stored_int8(v)) {
      o.int8 = true;
      o.range = int8_.values[size_t(v)].range;
    }
    observer_(o);
  }

 public:
  void set_observer(cpu::ValueObserver f) { observer_ = std::move(f); }

 private:
  int64_t rows(int v) const { return sites_[size_t(analysis_.value_sites[size_t(v)])].size(); }

  /// the analysis and the INT8 storage plan (no fusion: the oracle runs every node as written)
  std::shared_ptr<const EnginePlan> plan_;
  const GraphAnalysis& analysis_;
  ShapeInfo shapes_;
  int threads_ = 1;
  int batch_ = 1;
  bool ran_ = false;
  std::vector<cpu::PackedConv> packed_;
  std::vector<BoundInput> inputs_;
  std::vector<SiteSet> sites_;
  std::vector<KernelMap> maps_;
  std::vector<int> alias_;
  std::vector<size_t> offsets_;
  std::shared_ptr<std::vector<float>> arena_ = std::make_shared<std::vector<float>>();
  bool int8_mode_ = false;
  const int8::Plan& int8_;
  std::vector<int8_t> scratch_q0_, scratch_q1_;
  std::vector<float> scratch_f0_, scratch_f1_;
  cpu::ValueObserver observer_;
};

}  // namespace

namespace cpu {

void set_value_observer(Engine& engine, ValueObserver observer) {
  auto* cpu = dynamic_cast<CpuEngine*>(&engine);
  SCN_CHECK(cpu != nullptr, "set_value_observer: the engine runs on the ", backend_name(engine.backend()),
            " backend; value observers exist only for the CPU backend");
  cpu->set_observer(std::move(observer));
}

}  // namespace cpu

std::unique_ptr<Engine> create_cpu_engine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options) {
  return std::make_unique<CpuEngine>(std::move(plan), options);
}

}  // namespace scn
