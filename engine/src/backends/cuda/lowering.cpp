// Plan to launches: the shared plan's fused convs become ConvPlans (kernel mode and storage of INT8
// engines, Convert steps where a reader takes another storage, tiles, weights), and every step
// becomes its kernels' arguments (run_step).
#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/tile_choice.h"
#include "plan/arena_layout.h"
#include "plan/int8_arith.h"

namespace scn::cuda {

namespace {

Act to_act(Activation a) {
  switch (a) {
    case Activation::None:
      return Act::None;
    case Activation::ReLU:
      return Act::ReLU;
    case Activation::Sigmoid:
      return Act::Sigmoid;
    case Activation::LeakyReLU:
      return Act::LeakyReLU;
  }
  return Act::None;
}

MapGeom geom_of(const MapSlot& m) {
  MapGeom g;
  g.k0 = m.kernel_size[0];
  g.k1 = m.kernel_size[1];
  g.k2 = m.kernel_size[2];
  g.st0 = m.stride[0];
  g.st1 = m.stride[1];
  g.st2 = m.stride[2];
  g.p0 = m.padding[0];
  g.p1 = m.padding[1];
  g.p2 = m.padding[2];
  g.d0 = m.dilation[0];
  g.d1 = m.dilation[1];
  g.d2 = m.dilation[2];
  return g;
}

MapKernel map_kernel_of(CudaMapKernel k) { return k == CudaMapKernel::General ? MapKernel::General : MapKernel::Rows; }

}  // namespace

// ---- INT8 storage (docs/int8.md) ----------------------------------------------------------------
bool CudaEngine::q8(int v) const {
  return plan_->int8 && plan_->int8_plan.values[size_t(v)].storage == int8::Storage::Int8;
}
float CudaEngine::qrange(int v) const { return plan_->int8_plan.values[size_t(v)].range; }
int64_t CudaEngine::row_elems(int v) const {
  const int64_t c = g().values[size_t(v)].channels;
  return q8(v) ? int8_row(c) : round_up16(c);
}
size_t CudaEngine::row_bytes(int v) const { return size_t(row_elems(v)) * (q8(v) ? 1 : 2); }

int CudaEngine::add_shadow(int v, int reader, bool to_q, float range) {
  Shadow sh;
  sh.value = v;
  sh.reader = reader;
  sh.to_q = to_q;
  sh.inv = to_q ? int8::inv_scale(range) : 0.f;
  const int64_t c = g().values[size_t(v)].channels;
  sh.stride = int(to_q ? int8_row(c) : round_up16(c));
  shadows_.push_back(sh);
  return int(shadows_.size()) - 1;
}

void CudaEngine::lower_convs() {
  const Graph& gr = g();
  for (const FusedConv& f : fusion().convs) {
    convs_.emplace_back();
    ConvPlan& c = convs_.back();
    const ConvAttrs& a = gr.nodes[size_t(f.node)].conv;
    c.node = f.node;
    c.slot = an().node_map[size_t(f.node)];
    c.cin = a.in_channels;
    c.cout = a.out_channels;
    c.cin_p = int(round_up16(c.cin));
    c.cout_p = int(round_up16(c.cout));
    c.cout_w = int((c.cout_p + 127) / 128 * 128);
    c.K = a.kernel_size[0] * a.kernel_size[1] * a.kernel_size[2];
    c.act = to_act(f.act);
    c.alpha = f.alpha;
    c.relu_after = f.relu_after;
    c.residual = f.residual;
    c.add_node = f.add_node;
    c.add_conv_operand = f.add_conv_operand;
    c.out_value = f.out_value;
    c.fused_relu = f.act == Activation::ReLU && !f.absorbed.empty();
    plan_conv_storage(c);
  }
  if (plan_->int8) {
    plan_fp16_readers();
    plan_dual_outputs();
  }
  choose_tiles();
}

/// Kernel mode, input conversion and output layout of a conv (after fusion).
void CudaEngine::plan_conv_storage(ConvPlan& c) {
  const Node& node = g().nodes[size_t(c.node)];
  c.y_stride = int(row_elems(c.out_value));
  if (!plan_->int8) return;
  const int8::ConvPlan& qp = plan_->int8_plan.convs[size_t(c.node)];
  bool any_q = qp.int8 || q8(node.output) || q8(c.out_value);
  if (c.residual >= 0)
    any_q = any_q || q8(c.residual) || g().nodes[size_t(c.add_node)].quant.precision == Precision::Int8;
  c.mode = qp.int8 ? 2 : any_q ? 1 : 0;
  if (c.mode == 2) c.cin_p = int(int8_row(c.cin) / 2);  // 16-bit units of two int8 channels
  const int in = node.inputs[0];
  if (qp.int8 && !q8(in)) c.shadow = add_shadow(in, c.node, true, qp.input_range);
  if (!qp.int8 && q8(in)) c.shadow = add_shadow(in, c.node, false, 0.f);
}

/// Where the Concat / ScatterDense node n reads int8 storage, an fp16 copy (INT8 engines).
void CudaEngine::plan_fp16_readers() {
  const Graph& gr = g();
  for (size_t n = 0; n < gr.nodes.size(); ++n) {
    const Node& node = gr.nodes[n];
    if (node.op != OpType::Concat && node.op != OpType::ScatterDense) continue;
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (q8(node.inputs[k])) reader_shadow_[{int(n), int(k)}] = add_shadow(node.inputs[k], int(n), false, 0.f);
  }
}

/// An int8 conv reading an fp16 value that a conv writes gets the quantized copy from the writer's
/// epilogue (a second store of quantize(fp16 value)) instead of a Convert step. The writer then
/// needs the quantization-aware epilogue (an fp16 conv moves to mode 1).
void CudaEngine::plan_dual_outputs() {
  for (size_t k = 0; k < shadows_.size(); ++k) {
    Shadow& sh = shadows_[k];
    if (!sh.to_q || g().nodes[size_t(sh.reader)].op != OpType::SparseConv) continue;
    const int w = fusion().written_by[size_t(sh.value)];
    if (w < 0 || fusion().conv_of_node[size_t(w)] < 0) continue;
    ConvPlan& c = convs_[size_t(fusion().conv_of_node[size_t(w)])];
    if (c.out_value != sh.value || c.dual >= 0) continue;
    c.dual = int(k);
    if (c.mode == 0) c.mode = 1;
    sh.producer = c.node;
  }
}

/// The heuristic tile per conv (or the forced one where it fits), then its weights on the device.
void CudaEngine::choose_tiles() {
  for (ConvPlan& c : convs_) {
    const ConvShape shape = c.shape();
    const int groups = forced_cfg_ >= 0 ? 0 : osplit_groups_for(shape, cc_major_, opt().offset_groups);
    c.osplit_class = groups;
    // the first osplit config of the class that CudaOptions::tune_skip leaves in
    const std::vector<int> osplit = groups > 0 ? osplit_configs_for(c) : std::vector<int>{};
    c.osplit = osplit.empty() ? -1 : osplit.front();
    SCN_CHECK(groups == 0 || c.osplit >= 0 || c.may_run_tiles(), g().source, ": ", g().describe(c.node),
              ": BuildOptions.cuda.tune_skip leaves no osplit configuration of this conv's offset-group class (", c.cin,
              " -> ", c.cout, " channels; see CudaOptions::offset_groups)");
    if (c.osplit >= 0)
      c.cfg = -1;
    else if (forced_cfg_ >= 0 && igemm_config_fits(forced_cfg_, c.cin_p, cc_major_, c.K, c.mode))
      c.cfg = forced_cfg_;
    else
      c.cfg = choose_config(shape, cc_major_,
                            forced_cfg_ >= 0 ? 1 : split_for(shape, cc_major_, opt().split, options_.max_batch));
    SCN_CHECK(c.cfg >= 0 || c.osplit >= 0, g().source, ": ", g().describe(c.node),
              ": no implicit-GEMM configuration for ", c.cin, " -> ", c.cout, " channels (kernel mode ", c.mode, ")");
    c.split = c.cfg >= 0 ? igemm_config(c.cfg).split : 1;
    upload_weights(c);
  }
}

/// The plan's steps with a Convert step before each reader of a converted copy (INT8 engines).
void CudaEngine::lower_steps() {
  steps_.clear();
  for (const Step& st : plan_->steps) {
    if (st.kind == StepKind::Conv) {
      const int sh = convs_[size_t(fusion().conv_of_node[size_t(st.node)])].shadow;
      if (sh >= 0 && shadows_[size_t(sh)].producer < 0) steps_.push_back({StepKind::Convert, st.node, sh});
    } else if (st.kind == StepKind::Concat || st.kind == StepKind::Densify) {
      for (size_t k = 0; k < g().nodes[size_t(st.node)].inputs.size(); ++k) {
        const auto it = reader_shadow_.find({st.node, int(k)});
        if (it != reader_shadow_.end()) steps_.push_back({StepKind::Convert, st.node, it->second});
      }
    }
    steps_.push_back(st);
  }
}

/// The pointer node n reads its input k through (a converted copy, or the value itself).
const void* CudaEngine::input_ptr(int n, int k) const {
  const auto it = reader_shadow_.find({n, k});
  if (it != reader_shadow_.end()) return shadows_[size_t(it->second)].ptr;
  return value_ptr(g().nodes[size_t(n)].inputs[size_t(k)]);
}

QOperand CudaEngine::operand(int v) const {
  QOperand o;
  o.p = value_ptr(v);
  o.stride = int(row_elems(v));
  o.q = q8(v);
  o.s = o.q ? int8::scale(qrange(v)) : 0.f;
  return o;
}

/// The quantization-aware epilogue's parameters of conv c (docs/int8.md): storage and grids of its
/// output, of its own value and of the residual, and the fused Add's operand grids.
QEpilogue CudaEngine::q_epilogue(const ConvPlan& c) const {
  const Node& node = g().nodes[size_t(c.node)];
  QEpilogue q;
  q.mult = c.mult.get<float>();
  q.y_stride = c.y_stride;
  q.y_q = q8(c.out_value);
  q.y_inv = q.y_q ? int8::inv_scale(qrange(c.out_value)) : 0.f;
  if (c.dual >= 0) {
    const Shadow& sh = shadows_[size_t(c.dual)];
    q.y2 = sh.ptr;
    q.y2_inv = sh.inv;
    q.y2_stride = sh.stride;
  }
  if (c.residual >= 0) {
    const Node& add = g().nodes[size_t(c.add_node)];
    q.res_stride = int(row_elems(c.residual));
    q.res_q = q8(c.residual);
    q.res_s = q.res_q ? int8::scale(qrange(c.residual)) : 0.f;
    q.conv_q = q8(node.output);
    q.conv_inv = q.conv_q ? int8::inv_scale(qrange(node.output)) : 0.f;
    q.conv_s = q.conv_q ? int8::scale(qrange(node.output)) : 0.f;
    q.add_q = add.quant.precision == Precision::Int8;
    if (q.add_q) {
      const float r0 = add.quant.input0_dynamic_range, r1 = add.quant.input1_dynamic_range;
      const float ra = c.add_conv_operand == 0 ? r0 : r1, rb = c.add_conv_operand == 0 ? r1 : r0;
      q.add_inv_a = int8::inv_scale(ra);
      q.add_sa = int8::scale(ra);
      q.add_inv_b = int8::inv_scale(rb);
      q.add_sb = int8::scale(rb);
    }
  }
  return q;
}

ConvArgs CudaEngine::conv_args(const ConvPlan& c) const {
  const Node& node = g().nodes[size_t(c.node)];
  const MapSlot& m = an().maps[size_t(c.slot)];
  const SiteInfo& out = sites_[size_t(m.out_sites)];
  ConvArgs a;
  a.x = c.shadow >= 0 ? shadows_[size_t(c.shadow)].ptr : value_ptr(node.inputs[0]);
  a.out_in = map_ptr_[size_t(c.slot)];
  a.w = c.w.get();
  // TMA configs: the copy tiled for this config (osplit reads the plain weights)
  const auto tiled = c.cfg >= 0 ? c.w_tiled.find(tiled_layout(c.cfg)) : c.w_tiled.end();
  a.w_tma = tiled != c.w_tiled.end() ? tiled->second.get() : nullptr;
  a.bias = c.bias.get<float>();
  a.residual = c.residual >= 0 ? value_ptr(c.residual) : nullptr;
  a.y = value_ptr(c.out_value);
  a.n_out = out.dev.count;
  a.cap_out = out.cap;
  a.K = c.K;
  a.cin_p = c.cin_p;
  a.cout = c.cout;
  a.cout_p = c.cout_p;
  a.cout_w = c.cout_w;
  a.act = c.act;
  a.alpha = c.alpha;
  a.relu_after = c.relu_after;
  a.pdl_late = opt().programmatic_launch == CudaProgrammaticLaunch::LastEpilogue;
  a.q = c.mode != 0 ? c.qargs.get<QEpilogue>() : nullptr;
  return a;
}

/// The first part of a strided map step: the output set's bitmap and rank (and count), from the input set's bitmap
/// words or its rows (CudaOptions::strided_sites).
void CudaEngine::build_strided_sites(int slot, cudaStream_t s, bool pdl) {
  const MapSlot& m = an().maps[size_t(slot)];
  const MapGeom geom = geom_of(m);
  SiteInfo& in = sites_[size_t(m.in_sites)];
  SiteInfo& out = sites_[size_t(m.out_sites)];
  ErrSlot* err = err_of(m.first_node);
  if (strided_sites_from_bitmap(an(), m, opt().strided_sites)) {
    launch_strided_sites_from_bits(in.dev, out.dev, geom, err, sm_count_, s, pdl);
  } else {
    SCN_CUDA_CHECK(cudaMemsetAsync(out.dev.bits, 0, size_t(out.words) * 8, s));
    launch_strided_mark(in.dev, out.dev, geom, sm_count_, s);
    launch_rank(out.dev, true, err, sm_count_, s, pdl);
  }
}

/// A strided slot's output set's coordinates once the set has its bitmap and rank: by rank, or in neighbour-row order.
void CudaEngine::emit_strided(int slot, cudaStream_t s, bool pdl) {
  const MapSlot& m = an().maps[size_t(slot)];
  SiteInfo& out = sites_[size_t(m.out_sites)];
  if (out.ordered)
    launch_site_order(out.dev, out.order, sm_count_, s, pdl);
  else
    launch_emit_coords(out.dev, sm_count_, s, pdl);
}

/// The rest of a strided map step: the output set's coordinates unless `emitted` (built ahead on the sites stream),
/// then the map.
void CudaEngine::finish_strided(int slot, cudaStream_t s, bool pdl, bool emitted) {
  const MapSlot& m = an().maps[size_t(slot)];
  SiteInfo& in = sites_[size_t(m.in_sites)];
  SiteInfo& out = sites_[size_t(m.out_sites)];
  if (!emitted) emit_strided(slot, s, pdl);
  launch_strided_map(in.dev, out.dev, geom_of(m), map_ptr_[size_t(slot)], map_kernel_of(opt().map_kernel), sm_count_, s,
                     pdl);
}

/// Enqueues one step on `s`. `pdl`: the step's kernels may launch programmatically — convs (launch_igemm,
/// launch_osplit), and the site-index and map kernels of input and map steps (each waits for its predecessor
/// first thing, common.cuh).
/// `map_late`: this conv's map is written by a kernel it may overlap — the one before it on `s`, or the
/// map-stream kernel it joins — so it reads the map only after its wait (ConvArgs::map_late).
void CudaEngine::run_step(const Step& st, cudaStream_t s, bool pdl, bool map_late) {
  const Graph& g = *graph_;
  const GraphAnalysis& ana = an();
  switch (st.kind) {
    case StepKind::Input: {
      const InputSlot& in = inputs_[size_t(st.slot)];
      const int v = g.inputs[size_t(st.slot)];
      SiteInfo& si = sites_[size_t(ana.value_sites[size_t(v)])];
      launch_clear_bits(si.dev, sm_count_, s);
      InputRows rows;
      rows.features = in.raw_feat.get();
      rows.indices = in.raw_idx.get<int32_t>();
      if (in.reads_in_place()) rows.source = in.source.get<InputSource>();
      launch_input_sites_features(rows, in.raw_fp32, in.channels, int(round_up16(in.channels)), value_ptr(v), si.dev,
                                  err_of(st.node), sm_count_, s, pdl);
      launch_rank(si.dev, false, nullptr, sm_count_, s, pdl);
      launch_build_perm(si.dev, sm_count_, s, pdl);
      return;
    }
    case StepKind::Map: {
      const MapSlot& m = ana.maps[size_t(st.slot)];
      const MapGeom geom = geom_of(m);
      int32_t* out_in = map_ptr_[size_t(st.slot)];
      switch (m.kind) {
        case MapKind::Subm:
          launch_subm_map(sites_[size_t(m.in_sites)].dev, geom, out_in, map_kernel_of(opt().map_kernel), sm_count_, s,
                          pdl);
          break;
        case MapKind::Strided:
          build_strided_sites(st.slot, s, pdl);
          finish_strided(st.slot, s, pdl);
          break;
        case MapKind::Inverse: {
          const MapSlot& src = ana.maps[size_t(m.source_slot)];
          launch_inverse_map(sites_[size_t(src.in_sites)].dev, sites_[size_t(src.out_sites)].dev, geom, out_in,
                             sm_count_, s, pdl);
          break;
        }
      }
      return;
    }
    case StepKind::Conv: {
      const ConvPlan& c = convs_[size_t(fusion().conv_of_node[size_t(st.node)])];
      ConvArgs a = conv_args(c);
      a.map_late = map_late;
      if (c.osplit >= 0)
        launch_osplit(c.osplit, a, sm_count_, s, pdl);
      else
        launch_igemm(c.cfg, a, sm_count_, s, pdl);
      return;
    }
    case StepKind::Add: {
      const Node& node = g.nodes[size_t(st.node)];
      const int out = node.output;
      const SiteInfo& si = sites_[size_t(ana.value_sites[size_t(out)])];
      if (plan_->int8) {
        QAddArgs qa;
        qa.a = operand(node.inputs[0]);
        qa.b = operand(node.inputs[1]);
        qa.add_q = node.quant.precision == Precision::Int8;
        if (qa.add_q) {
          qa.inv_a = int8::inv_scale(node.quant.input0_dynamic_range);
          qa.sa = int8::scale(node.quant.input0_dynamic_range);
          qa.inv_b = int8::inv_scale(node.quant.input1_dynamic_range);
          qa.sb = int8::scale(node.quant.input1_dynamic_range);
        }
        qa.y = value_ptr(out);
        qa.y_stride = int(row_elems(out));
        qa.y_q = q8(out);
        qa.y_inv = qa.y_q ? int8::inv_scale(qrange(out)) : 0.f;
        qa.c = g.values[size_t(out)].channels;
        launch_qadd(qa, si.dev.count, si.cap, sm_count_, s);
        return;
      }
      launch_add(value_ptr(node.inputs[0]), value_ptr(node.inputs[1]), value_ptr(out),
                 int(round_up16(g.values[size_t(out)].channels)), si.dev.count, si.cap, false, sm_count_, s);
      return;
    }
    case StepKind::Relu: {
      const Node& node = g.nodes[size_t(st.node)];
      const int out = node.output;
      const SiteInfo& si = sites_[size_t(ana.value_sites[size_t(out)])];
      if (q8(out))
        launch_relu_i8(value_ptr(node.inputs[0]), value_ptr(out), int(row_elems(out)), si.dev.count, si.cap, sm_count_,
                       s);
      else
        launch_relu(value_ptr(node.inputs[0]), value_ptr(out), int(round_up16(g.values[size_t(out)].channels)),
                    si.dev.count, si.cap, sm_count_, s);
      return;
    }
    case StepKind::Concat: {
      const Node& node = g.nodes[size_t(st.node)];
      const int out = node.output;
      const SiteInfo& si = sites_[size_t(ana.value_sites[size_t(out)])];
      const int yp = int(round_up16(g.values[size_t(out)].channels));
      int c0 = 0;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const int c = g.values[size_t(node.inputs[k])].channels;
        launch_copy_columns(input_ptr(st.node, int(k)), int(round_up16(c)), c, value_ptr(out), yp, c0, si.dev.count,
                            si.cap, sm_count_, s);
        c0 += c;
      }
      launch_zero_columns(value_ptr(out), yp, c0, si.dev.count, si.cap, sm_count_, s);
      return;
    }
    case StepKind::Densify: {
      const Node& node = g.nodes[size_t(st.node)];
      const int in = node.inputs[0];
      const int out = fusion().densify_out.at(st.node);
      DensifyArgs d;
      d.sites = sites_[size_t(ana.value_sites[size_t(in)])].dev;
      d.x = input_ptr(st.node, 0);
      d.cp = int(round_up16(g.values[size_t(in)].channels));
      d.channels = g.values[size_t(in)].channels;
      d.y = value_ptr(out);
      const auto& perm = fusion().dense_perm[size_t(out)];
      const auto& shape = frame_.shapes.dense_shape[size_t(out)];
      for (int j = 0; j < 5; ++j) {
        d.out_axis[j] = perm[size_t(j)];
        d.out_size[j] = shape[size_t(j)];
      }
      launch_densify(d, sm_count_, s, pdl);
      return;
    }
    case StepKind::Convert: {
      const Shadow& sh = shadows_[size_t(st.slot)];
      const SiteInfo& si = sites_[size_t(ana.value_sites[size_t(sh.value)])];
      launch_convert(operand(sh.value), sh.ptr, sh.stride, sh.to_q, sh.inv, g.values[size_t(sh.value)].channels,
                     si.dev.count, si.cap, sm_count_, s);
      return;
    }
    case StepKind::Permute: {
      const Node& node = g.nodes[size_t(st.node)];
      const auto& in_shape = frame_.shapes.dense_shape[size_t(node.inputs[0])];
      const auto& out_shape = frame_.shapes.dense_shape[size_t(node.output)];
      PermuteArgs p;
      p.x = value_ptr(node.inputs[0]);
      p.y = value_ptr(node.output);
      p.nd = int(in_shape.size());
      SCN_CHECK(p.nd <= 8, g.source, ": ", g.describe(st.node), ": more than 8 axes");
      std::vector<int64_t> in_stride(in_shape.size(), 1);
      for (size_t d = in_shape.size(); d-- > 1;) in_stride[d - 1] = in_stride[d] * in_shape[d];
      p.total = 1;
      for (int d = 0; d < p.nd; ++d) {
        p.out_shape[d] = out_shape[size_t(d)];
        p.src_stride[d] = in_stride[size_t(node.dims[size_t(d)])];
        p.total *= out_shape[size_t(d)];
      }
      launch_permute(p, sm_count_, s);
      return;
    }
  }
}

LayerTiming CudaEngine::describe_step(const Step& st) const {
  const Graph& g = *graph_;
  const GraphAnalysis& ana = an();
  LayerTiming t;
  t.node = g.nodes[size_t(st.node)].name;  // every step belongs to a node
  switch (st.kind) {
    case StepKind::Input:
      t.op = kStepInput;
      t.algorithm = "validate+convert+bitmap-rank";
      break;
    case StepKind::Map: {
      const MapSlot& m = ana.maps[size_t(st.slot)];
      t.op = kStepKernelMap;
      t.algorithm = m.kind == MapKind::Subm      ? "subm bitmap-rank"
                    : m.kind == MapKind::Strided ? "strided bitmap-rank (sites+map)"
                                                 : "inverse bitmap-rank";
      break;
    }
    case StepKind::Conv: {
      const ConvPlan& c = convs_[size_t(fusion().conv_of_node[size_t(st.node)])];
      t.op = op_type_name(OpType::SparseConv);
      t.algorithm = detail::concat(conv_kernel_name(c), " (",
                                   c.osplit >= 0 ? osplit_blocks_per_sm(c.osplit) : igemm_blocks_per_sm(c.cfg), "/SM, ",
                                   c.tuned ? "tuned" : "heuristic", ")");
      if (c.residual >= 0) t.algorithm += "+add";
      if (c.relu_after || c.fused_relu) t.algorithm += "+relu";
      t.split_k = c.cfg >= 0 ? igemm_config(c.cfg).split : 1;
      break;
    }
    case StepKind::Add:
      t.op = op_type_name(OpType::Add);
      t.algorithm = "elementwise";
      break;
    case StepKind::Relu:
      t.op = op_type_name(OpType::Relu);
      t.algorithm = "elementwise";
      break;
    case StepKind::Concat:
      t.op = op_type_name(OpType::Concat);
      t.algorithm = "copy";
      break;
    case StepKind::Densify:
      t.op = op_type_name(OpType::ScatterDense);
      t.algorithm = "densify (zeros+scatter+transpose fused)";
      break;
    case StepKind::Permute:
      t.op = op_type_name(OpType::Transpose);
      t.algorithm = "permute";
      break;
    case StepKind::Convert: {
      const Shadow& sh = shadows_[size_t(st.slot)];
      t.op = kStepConvert;
      t.algorithm = detail::concat(sh.to_q ? "quantize fp16->int8 '" : "dequantize int8->fp16 '",
                                   g.values[size_t(sh.value)].name, "'");
      break;
    }
  }
  return t;
}

}  // namespace scn::cuda
