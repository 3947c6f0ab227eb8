// The CUDA backend's Engine face (docs/cuda_backend.md): build from the shared plan, set_input,
// forward, output, timing. FP16 and INT8 activations, kernel maps built on the GPU, implicit GEMM on
// tensor cores with fused epilogues, one device arena per frame, no host synchronisation and no
// allocation inside forward(), optional CUDA graph capture.
#include "backends/cuda/cuda_engine.h"

#include <algorithm>
#include <cstring>

#include "backends/backend_factory.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_check.h"
#include "backends/cuda/stream_timing.h"
#include "backends/cuda/tile_choice.h"
#include "core/input_check.h"
#include "core/options.h"
#include "plan/arena_layout.h"
#include "plan/capacities.h"
#include "scn/timing.h"

namespace scn {

bool cuda_available() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return false;
  }
  return n > 0;
}

std::vector<std::string> cuda_osplit_configs() { return cuda::compiled_osplit_names(); }

std::vector<std::string> cuda_tile_configs(Precision precision) {
  // wgmma tiles run on compute capability 9.0 only: not listed when the current GPU is another
  // (without a GPU everything compiled is listed)
  const bool other_gpu = cuda_available() && !cuda::igemm_wgmma_device();
  std::vector<std::string> names;
  for (int id = 0; id < cuda::igemm_num_configs(); ++id) {
    const cuda::IgemmConfig& c = cuda::igemm_config(id);
    if ((c.mode == 0) != (precision != Precision::Int8)) continue;
    if (c.wgmma && other_gpu) continue;
    std::string n = c.name;
    if (n.rfind("igemm ", 0) == 0) n = n.substr(6);
    names.push_back(n);
  }
  return names;
}

namespace cuda {

namespace {

/// Refuses a GPU this build cannot run on, naming it and its compute capability.
void check_gpu_usable(const cudaDeviceProp& prop, int device) {
  if (prop.major < 8)
    throw UnusableGpu(detail::concat("CUDA device ", device, " (", prop.name, ", compute capability ", prop.major, ".",
                                     prop.minor,
                                     ") is below 8.0: the CUDA backend needs mma.sync m16n8k16 (sm_80 or newer)"));
  const cudaError_t e = probe_kernel_image();
  if (e != cudaSuccess)
    throw UnusableGpu(detail::concat("CUDA device ", device, " (", prop.name, ", compute capability ", prop.major, ".",
                                     prop.minor, ") has no kernel image in this build of scn (", cudaGetErrorString(e),
                                     "); rebuild with its architecture in CMAKE_CUDA_ARCHITECTURES"));
}

}  // namespace

CudaEngine::CudaEngine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options)
    : Engine(plan->graph, options), plan_(std::move(plan)) {
  const Graph& gr = g();
  SCN_CHECK(options.precision == Precision::Fp16 || options.precision == Precision::Int8, gr.source,
            ": the CUDA backend stores activations in fp16 or int8; build it with Precision::Fp16 or "
            "Precision::Int8 (fp32 runs on the CPU backend)");
  int count = 0;
  SCN_CHECK(cudaGetDeviceCount(&count) == cudaSuccess && count > 0,
            "the CUDA backend was requested but no CUDA device is visible");
  cudaGetLastError();
  SCN_CHECK(options.device < count, "BuildOptions.device: CUDA device ", options.device, " does not exist (", count,
            " visible)");
  device_ = options.device;
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  SCN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  sm_count_ = prop.multiProcessorCount;
  cc_major_ = prop.major;
  check_gpu_usable(prop, device_);
  igemm_init();
  osplit_init();
  site_order_init();

  validate_cuda_tiles(opt(), compiled_tile_names(), compiled_osplit_names());
  autotune_ = opt().autotune;
  lookahead_ = opt().map_lookahead;
  if (!opt().tile.empty()) {
    forced_cfg_ = find_tile(opt().tile);
    autotune_ = false;
  }
  for (const std::string& t : opt().tune_skip) {
    for (int id : find_tiles(t)) tune_skip_.push_back(id);
    const int o = osplit_find_config(t.c_str());
    if (o >= 0) tune_skip_osplit_.push_back(o);
  }
  use_graph_ = options.cuda_graph;
  fit_pending_ = options.capacity_source == CapacitySource::FirstFrame;

  for (const MapSlot& m : an().maps) {
    if (m.kind != MapKind::Strided) continue;
    for (int d = 0; d < 3; ++d)
      SCN_CHECK(m.kernel_size[d] <= kMaxTapsPerAxis, gr.source, ": ", gr.describe(m.first_node), ": kernel_size ",
                m.kernel_size[d], " along axis ", d, " is larger than the ", kMaxTapsPerAxis,
                " taps per axis the CUDA backend supports for strided convolutions");
  }
  sites_.assign(size_t(an().num_site_sets), SiteInfo{});
  const std::vector<bool> ordered = neighbour_row_sets(gr, an(), opt().site_order);
  for (int s = 0; s < an().num_site_sets; ++s) {
    sites_[size_t(s)].cap_build = plan_->capacities.site_rows[size_t(s)];
    sites_[size_t(s)].generated = an().site_input[size_t(s)] < 0;
    sites_[size_t(s)].ordered = ordered[size_t(s)];
  }

  SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
  SCN_CUDA_CHECK(cudaEventCreateWithFlags(&done_event_, cudaEventDisableTiming));
  lower_convs();
  lower_steps();
  plan_release_points();
  prepare_inputs();
  create_streams();

  errors_.alloc(gr.nodes.size() * kNumErrKinds * sizeof(ErrSlot));
  counts_.alloc(size_t(std::max(1, an().num_site_sets)) * sizeof(int));
  SCN_CUDA_CHECK(cudaMemset(counts_.get(), 0, counts_.bytes()));
  reset_errors();
}

CudaEngine::~CudaEngine() {
  cudaSetDevice(device_);
  if (own_stream_) cudaStreamSynchronize(own_stream_);
  if (done_event_) cudaEventSynchronize(done_event_);
  destroy_graph();
  for (auto& in : inputs_)
    if (in.copied) {
      cudaEventSynchronize(in.copied);
      cudaEventDestroy(in.copied);
    }
  destroy_streams();
  if (done_event_) cudaEventDestroy(done_event_);
  if (own_stream_) cudaStreamDestroy(own_stream_);
}

void CudaEngine::set_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                           const InputLabels& labels) {
  bind_input(index, features, indices, grid, batch_size, labels, nullptr);
}

void CudaEngine::set_input_device_count(int index, const Tensor& features, const Tensor& indices,
                                        const int32_t* device_count, const Int3& grid, int batch_size,
                                        const InputLabels& labels) {
  SCN_CHECK(device_count != nullptr, "input '", input_name(index), "': set_input_device_count without a device count");
  SCN_CHECK(features.device() == Device::Cuda && indices.device() == Device::Cuda, labels.features, ": input '",
            input_name(index), "': set_input_device_count takes device buffers (features and indices on the GPU)");
  bind_input(index, features, indices, grid, batch_size, labels, device_count);
}

void CudaEngine::bind_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                            const InputLabels& labels, const int32_t* device_count) {
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  const std::string& name = input_name(index);
  outputs_valid_ = false;
  InputSlot& in = inputs_[size_t(index)];
  check_sparse_input_shapes(features, indices, grid, batch_size, in.channels, name, labels);
  SCN_CHECK(features.device() == indices.device(), labels.features, ": input '", name,
            "': features and indices must both be on the host or both on the device");
  SCN_CHECK(batch_size <= options_.max_batch, "input '", name, "': batch size ", batch_size,
            " exceeds BuildOptions.max_batch = ", options_.max_batch, " the CUDA engine was planned for");
  const int64_t n = features.dim(0);
  const int s = an().value_sites[size_t(graph_->inputs[size_t(index)])];
  const SiteInfo& si = sites_[size_t(s)];
  // FirstFrame: the input's rows planned from the frame; Grow: a larger frame grows them (capacity_fit.cpp).
  const int64_t fitted = fitted_capacity(n, options_.capacity_margin);
  if (!device_count && (fit_pending_ ? fitted != si.cap_build
                                     : n > si.cap_build && options_.on_capacity_overflow == CapacityOverflow::Grow))
    resize_input(index, fitted);
  // A device count is checked on the device (the buffers may hold more rows than are valid).
  SCN_CHECK(device_count || n <= si.cap_build, labels.features, ": input '", name, "': ", n,
            " voxels exceed the capacity ", si.cap_build,
            " planned at build (BuildOptions.max_input_voxels x max_batch; 0 = the largest output_bound of the "
            "graph, else ",
            kDefaultCapacity,
            "); rebuild with a larger max_input_voxels, or set BuildOptions.on_capacity_overflow = "
            "CapacityOverflow::Grow");
  for (size_t i = 0; i < inputs_.size(); ++i)
    SCN_CHECK(!inputs_[i].bound || int(i) == index || batch_size == batch_, "input '", name, "': batch size ",
              batch_size, " differs from the other inputs' ", batch_);

  const bool fp32 = features.dtype() == DType::Float32;
  const bool in_place = features.device() == Device::Cuda && !device_count;  // no feature staging
  const size_t staging = size_t(si.cap_build) * size_t(in.channels) * 4 + 16;
  if (fp32 && !in_place && in.raw_feat.bytes() < staging) {  // the first staged fp32 input: fp32-sized staging
    if (in.copy_pending) SCN_CUDA_CHECK(cudaEventSynchronize(in.copied));
    if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
    SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
    in.raw_feat.alloc(staging);
    exec_valid_ = false;  // the captured graph holds the old staging address
  }
  const bool was_in_place = in.reads_in_place();
  if (features.device() == Device::Host) {
    // shapes: checked above; the activations are float16 at every precision of this backend
    check_sparse_input_values(features, indices, grid, batch_size, name, labels, true);
    if (in.copy_pending) SCN_CUDA_CHECK(cudaEventSynchronize(in.copied));
    const size_t fb = size_t(n) * size_t(in.channels) * (fp32 ? 4 : 2);
    const size_t ib = size_t(n) * 16;
    std::memcpy(in.host_feat.get(), features.data(), fb);
    std::memcpy(in.host_idx.get(), indices.data(), ib);
    *in.host_count.get<int>() = int(n);
    // The previous forward must be done reading the device staging before it is overwritten.
    if (forwarded_) SCN_CUDA_CHECK(cudaStreamWaitEvent(own_stream_, done_event_, 0));
    SCN_CUDA_CHECK(cudaMemcpyAsync(in.raw_feat.get(), in.host_feat.get(), fb, cudaMemcpyHostToDevice, own_stream_));
    SCN_CUDA_CHECK(cudaMemcpyAsync(in.raw_idx.get(), in.host_idx.get(), ib, cudaMemcpyHostToDevice, own_stream_));
    SCN_CUDA_CHECK(
        cudaMemcpyAsync(counts_.get<int>() + s, in.host_count.get(), sizeof(int), cudaMemcpyHostToDevice, own_stream_));
    in.dev_features = Tensor();
    in.dev_indices = Tensor();
    in.on_device = false;
    SCN_CUDA_CHECK(cudaEventRecord(in.copied, own_stream_));
    in.copy_pending = true;
  } else {
    in.dev_features = features;
    in.dev_indices = indices;
    in.on_device = true;
    in.copy_pending = false;
  }
  // The input step is lowered for the way its rows are read (lowering.cpp: through `source` when in place).
  if (in.raw_fp32 != fp32 || in.device_count != device_count || was_in_place != in_place) exec_valid_ = false;
  // The count was written by this binding (host) or is written by stage_counted_rows (device count).
  if (!in_place) in.written_rows = -1;
  in.raw_fp32 = fp32;
  in.device_count = device_count;
  in.n = device_count ? std::min(n, si.cap_build) : n;  // with a device count: the most rows staged
  in.grid = grid;
  in.bound = true;
  batch_ = batch_size;
  bool all = true, counted = false;
  for (const auto& i : inputs_) {
    all = all && i.bound;
    counted = counted || i.device_count;
  }
  if (all) {
    ensure_planned();
    if (fit_pending_ && !counted) fit_to_first_frame();
    select_bucket(counted);
    // A device-count input holds its rows only once its producer ran: tune at the first forward.
    if (autotune_ && !bucket_tuned() && !counted) tune_or_load();
  }
}

void CudaEngine::forward(void* stream) {
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  for (size_t k = 0; k < inputs_.size(); ++k)
    SCN_CHECK(inputs_[k].bound, g().source, ": forward() before set_input() for input '", input_name(int(k)), "'");
  outputs_valid_ = false;  // until this forward is enqueued: one that fails part-way leaves no outputs to read
  ensure_planned();
  cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : own_stream_;
  // A default stream (legacy or per-thread, e.g. torch's default stream) cannot be captured into a CUDA graph. A
  // captured graph is replayed on it directly; a forward that captures, fits or tunes first (or runs without a graph)
  // runs on the engine's own stream, after the caller's earlier work there and before its later work (two events,
  // no host wait).
  // the engine's stream after what the caller enqueued on `from` so far (no host wait)
  const auto own_stream_after = [&](cudaStream_t from) {
    SCN_CUDA_CHECK(cudaEventRecord(done_event_, from));
    SCN_CUDA_CHECK(cudaStreamWaitEvent(own_stream_, done_event_, 0));
  };
  // No stream named, inputs on the device: the engine's own stream does not wait for the legacy default stream (it is
  // non-blocking), where Voxelizer::run(points) and plain launches and copies put the inputs' producers; the forward
  // is ordered after what was enqueued there so far.
  if (!stream && std::any_of(inputs_.begin(), inputs_.end(), [](const InputSlot& in) { return in.on_device; }))
    own_stream_after(cudaStreamLegacy);
  cudaStream_t caller_default = nullptr;
  if ((s == cudaStreamLegacy || s == cudaStreamPerThread) && !graph_ready()) {
    caller_default = s;
    own_stream_after(caller_default);
    s = own_stream_;
  }
  if (fit_pending_) {  // a device-count input: its rows exist once the caller's producer ran
    if (s != own_stream_) own_stream_after(s);
    fit_to_first_frame();
  }
  if (autotune_ && !bucket_tuned()) {
    // The tuner runs on the engine's stream: after what the caller enqueued on `s` (a device-count
    // input's producer), and finished before the forward's own work on `s`.
    if (s != own_stream_) own_stream_after(s);
    tune_or_load();
    SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
  }
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  SCN_CUDA_CHECK(cudaStreamIsCapturing(s, &cap));
  caller_captured_ = caller_captured_ || cap != cudaStreamCaptureStatusNone;
  stage_inputs(s, cap != cudaStreamCaptureStatusNone);
  if (use_graph_ && cap == cudaStreamCaptureStatusNone) {
    SCN_CUDA_CHECK(cudaGraphLaunch(bucket_graph(s), s));
  } else {
    enqueue(s, nullptr);
  }
  // Inside the caller's capture the forward becomes part of their graph: an event recorded there
  // could not be waited on from the host, so the caller synchronises their stream before reading.
  if (cap == cudaStreamCaptureStatusNone) SCN_CUDA_CHECK(cudaEventRecord(done_event_, s));
  if (caller_default) SCN_CUDA_CHECK(cudaStreamWaitEvent(caller_default, done_event_, 0));
  forwarded_ = true;
  outputs_valid_ = true;
}

Tensor CudaEngine::output(int index) {
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  output_name(index);
  SCN_CHECK(outputs_valid_, graph_->source, ": output(", index, ") requested before forward()");
  SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
  check_errors();
  const int v = graph_->outputs[size_t(index)];
  const Value& val = graph_->values[size_t(v)];
  if (!val.sparse)
    return Tensor::wrap_shared(value_ptr(v), frame_.shapes.dense_shape[size_t(v)], DType::Float16, Device::Cuda,
                               arena_);
  const int s = an().value_sites[size_t(v)];
  const int64_t n = read_count(s);
  const int cp = int(round_up16(val.channels));
  if (cp == val.channels && !q8(v))
    return Tensor::wrap_shared(value_ptr(v), {n, val.channels}, DType::Float16, Device::Cuda, arena_);
  DevMem& ob = out_compact_[size_t(index)];
  if (q8(v))  // graph outputs are fp16: int8 storage dequantized (docs/int8.md)
    launch_convert(operand(v), ob.get(), val.channels, false, 0.f, val.channels, counts_.get<int>() + s, n, sm_count_,
                   own_stream_);
  else
    launch_compact_rows(value_ptr(v), cp, ob.get(), val.channels, n, own_stream_);
  SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
  return Tensor::wrap(ob.get(), {n, val.channels}, DType::Float16, Device::Cuda);
}

Tensor CudaEngine::output_async(int index) {
  output_name(index);
  SCN_CHECK(outputs_valid_, graph_->source, ": output_async(", index, ") requested before forward()");
  const int v = graph_->outputs[size_t(index)];
  // A sparse output's row count is on the device: reading it waits (output()).
  if (graph_->values[size_t(v)].sparse) return output(index);
  return Tensor::wrap_shared(value_ptr(v), frame_.shapes.dense_shape[size_t(v)], DType::Float16, Device::Cuda, arena_);
}

Tensor CudaEngine::output_indices(int index) {
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  output_name(index);
  SCN_CHECK(outputs_valid_, graph_->source, ": output_indices(", index, ") requested before forward()");
  const int v = graph_->outputs[size_t(index)];
  SCN_CHECK(graph_->values[size_t(v)].sparse, "output '", output_name(index), "' is dense and has no indices");
  SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
  check_errors();
  const int s = an().value_sites[size_t(v)];
  const int64_t n = read_count(s);
  return Tensor::wrap_shared(sites_[size_t(s)].dev.coords, {n, 4}, DType::Int32, Device::Cuda, arena_);
}

void CudaEngine::synchronize() {
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
}

void CudaEngine::check_errors() {
  synchronize();
  if (!forwarded_) return;
  std::vector<ErrSlot> e(g().nodes.size() * kNumErrKinds);
  auto read = [&] {
    SCN_CUDA_CHECK(cudaMemcpy(e.data(), errors_.get(), e.size() * sizeof(ErrSlot), cudaMemcpyDeviceToHost));
    for (const ErrSlot& es : e)
      if (es.hits) return true;
    return false;
  };
  // Grow: the overflowed capacities grow and the forward re-runs; what remains is reported below. Only while the
  // overflowed forward's inputs are still bound (no binding since): a re-run would otherwise be of other inputs, and
  // the overflow of the frame that had it would go unreported.
  if (read() && outputs_valid_ && grow_on_overflow(e)) read();
  for (size_t n = 0; n < g().nodes.size(); ++n) {
    for (int k = 0; k < kNumErrKinds; ++k) {
      const ErrSlot& es = e[n * kNumErrKinds + size_t(k)];
      if (es.hits == 0) continue;
      std::string msg = error_message(int(n), k, es);
      reset_errors();
      outputs_valid_ = false;  // the forward's outputs are wrong: not readable once its error was raised
      throw Error(msg);
    }
  }
}

std::vector<double> CudaEngine::time_forward(int warmup, int runs) {
  check_timing_counts(g().source + ": time_forward", warmup, runs);
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  for (int i = 0; i < warmup; ++i) forward(own_stream_);
  check_errors();
  const std::vector<double> ms = time_enqueues(own_stream_, runs, [&] { forward(own_stream_); });
  check_errors();
  return ms;
}

std::vector<LayerTiming> CudaEngine::profile_layers() {
  SCN_CUDA_CHECK(cudaSetDevice(device_));
  for (size_t k = 0; k < inputs_.size(); ++k)
    SCN_CHECK(inputs_[k].bound, g().source, ": profile_layers() before set_input() for input '", input_name(int(k)),
              "'");
  outputs_valid_ = false;  // until its forward is enqueued
  ensure_planned();
  stage_inputs(own_stream_);
  std::vector<cudaEvent_t> ev(steps_.size() + 1);
  for (auto& e : ev) SCN_CUDA_CHECK(cudaEventCreate(&e));
  enqueue(own_stream_, &ev);
  SCN_CUDA_CHECK(cudaEventRecord(done_event_, own_stream_));
  forwarded_ = true;
  outputs_valid_ = true;
  SCN_CUDA_CHECK(cudaEventSynchronize(ev.back()));
  std::vector<LayerTiming> out;
  for (size_t i = 0; i < steps_.size(); ++i) {
    float t = 0.f;
    SCN_CUDA_CHECK(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
    LayerTiming lt = describe_step(steps_[i]);
    lt.ms = double(t);
    out.push_back(lt);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  check_errors();
  return out;
}

size_t CudaEngine::workspace_bytes() const {
  size_t b = arena_->bytes() + errors_.bytes() + counts_.bytes();
  for (const auto& c : convs_) {
    b += c.w.bytes() + c.bias.bytes() + c.mult.bytes() + c.qargs.bytes();
    for (const auto& [id, t] : c.w_tiled) b += t.bytes();
  }
  for (const auto& in : inputs_) b += in.raw_feat.bytes() + in.raw_idx.bytes();
  for (const auto& o : out_compact_) b += o.bytes();
  return b;
}

int64_t CudaEngine::read_count(int s) const {
  int n = 0;
  SCN_CUDA_CHECK(cudaMemcpy(&n, sites_[size_t(s)].dev.count, sizeof(int), cudaMemcpyDeviceToHost));
  return n;
}

}  // namespace cuda

std::unique_ptr<Engine> create_cuda_engine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options) {
  return std::make_unique<cuda::CudaEngine>(std::move(plan), options);
}

}  // namespace scn
