// The CUDA backend's engine (docs/cuda_backend.md): one class whose members live in files by job.
//   cuda_engine.cpp  the Engine face: build, set_input, forward, output, timing
//   lowering.cpp     plan to launches: INT8 storage per conv, Convert steps, kernel arguments, run_step
//   arena.cpp        the device arena for a frame: its host layout allocated, pointers into it
//   capacity_fit.cpp capacities fitted to the first frame or grown when a frame overflows them
//   schedule.cpp     map stream, release points, CUDA graph capture, priorities, programmatic launches
//   autotune.cpp     timing the tile candidates of every conv; the tuning cache
//   tile_buckets.cpp tile choices per size bucket of the frame; the weights the chosen tiles read
//   weights.cpp      weight packing and upload
//   errors.cpp       device error slots -> messages
// The plan it lowers (fusion, capacities, steps, INT8 storage) is shared with the CPU backend
// (plan/engine_plan.h).
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_mem.h"
#include "backends/cuda/igemm_offset_split.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/tile_choice.h"
#include "plan/engine_plan.h"
#include "plan/memory_plan.h"
#include "plan/size_buckets.h"
#include "plan/tuning_cache.h"
#include "scn/engine.h"

namespace scn::cuda {

/// fp16 rows: channels padded to 16 (padding columns always zero).
inline int64_t round_up16(int64_t c) { return (c + 15) / 16 * 16; }
/// int8 rows: 16 bytes (one m16n8k16 step) up to 16 channels, else padded to 32 (m16n8k32 steps).
inline int64_t int8_row(int64_t c) { return c <= 16 ? 16 : (c + 31) / 32 * 32; }

/// Bitmaps above this are refused (a hash-table site index would be the fallback).
constexpr size_t kMaxBitmapBytes = size_t(1) << 30;

/// A conv's kernel: an osplit config (osplit >= 0) or an implicit-GEMM tile config (cfg).
struct ConvKernel {
  int cfg = -1;
  int osplit = -1;
};

/// A conv as lowered: the fused conv, its kernel mode and storage, its tile and its device weights.
struct ConvPlan {
  int node = -1;
  int slot = -1;
  int cin = 0, cout = 0, cin_p = 0, cout_p = 0, cout_w = 0, K = 1;
  Act act = Act::None;
  float alpha = 0.f;
  bool relu_after = false;
  int residual = -1;         ///< value fused as residual (Add)
  int add_node = -1;         ///< the fused Add node
  int add_conv_operand = 0;  ///< which input of the Add (0 / 1) is the conv's value
  int out_value = -1;        ///< value the conv writes after fusion
  bool fused_relu = false;   ///< a Relu node folded into the activation
  int cfg = -1;              ///< implicit-GEMM config (kernels.h), -1 when the conv runs osplit
  int osplit = -1;           ///< osplit config (igemm_offset_split.h) the conv runs, else -1
  int osplit_class = 0;      ///< offset groups of its osplit class (tile_choice.h osplit_groups_for), 0: none
  bool tuned = false;
  int split = 1;  ///< reduction class: configs of one class give bitwise-identical results
  // INT8 engines
  int mode = 0;                 ///< kernel mode: 0 fp16, 1 fp16 + quantization-aware epilogue, 2 int8
  int shadow = -1;              ///< converted copy of the input this conv reads (Convert step), or -1
  int dual = -1;                ///< shadow this conv also writes: its output quantized for an int8 reader
  int y_stride = 0;             ///< output row stride in its elements
  DevMem w, bias, mult, qargs;  // qargs: the QEpilogue of modes 1 and 2
  /// TMA configs' re-tiled weights (igemm_tile_weights), one per tiled layout (tile_choice.h
  /// tiled_layout) of the TMA configs some size bucket runs; `w` is dropped while only TMA configs run
  /// the conv (tile_buckets.cpp keep_needed_weights).
  std::map<int, DevMem> w_tiled;

  /// The kernel the conv runs: what the tuner and the size buckets choose. An fp16 conv of an osplit
  /// class runs an osplit config of that class (the class is fixed for the engine's life); an int8 one
  /// (exact sums: every kernel gives the same bits) an osplit config or an implicit-GEMM tile.
  ConvKernel kernel() const { return ConvKernel{cfg, osplit}; }
  /// The implicit-GEMM tiles may run it: it has no osplit class, or int8 operands (exact sums: osplit and
  /// the tiles give the same bits).
  bool may_run_tiles() const { return osplit_class == 0 || exact_sums(mode); }
  /// The conv as the tile choice sees it.
  ConvShape shape() const { return ConvShape{cin_p, cout_p, K, mode}; }
  void set_kernel(const ConvKernel& k) {
    cfg = k.cfg;
    osplit = k.osplit;
  }
};

/// The kernel a conv runs, by name ("igemm m128n16k16s4t", "osplit c16x16r32p2s6w8").
inline const char* conv_kernel_name(const ConvPlan& c) {
  return c.osplit >= 0 ? osplit_config(c.osplit).name : igemm_config(c.cfg).name;
}

/// A converted copy of a value for one reader (INT8 engines): the value quantized onto the
/// reader's int8 grid, or int8 storage dequantized to fp16.
struct Shadow {
  int value = -1;
  int reader = -1;  ///< the node that reads it (the Convert step runs right before it)
  bool to_q = false;
  float inv = 0.f;    ///< to_q: 127 / range
  int stride = 0;     ///< row stride in its elements
  int producer = -1;  ///< to_q written by this conv's epilogue as a second output (no Convert step)
  void* ptr = nullptr;
};

struct SiteInfo {
  int64_t cap_build = 0;  ///< capacity from the build options, or as fitted / grown (before clipping by the grid)
  int64_t cap = 0;
  Int3 grid{0, 0, 0};
  int64_t words = 0;
  bool generated = false;
  bool ordered = false;  ///< generated, in neighbour-row order (CudaOptions::site_order; dev.perm set)
  SiteOrderBuffers order;
  int producer_step = 0;
  int index_last = 0;   ///< last step reading bitmap/rank/perm
  int coords_last = 0;  ///< last step reading coords
  SiteIndex dev;
};

struct InputSlot {
  bool bound = false;
  bool on_device = false;
  bool raw_fp32 = false;
  int64_t n = 0;  ///< rows (with a device count: the most rows staged)
  int channels = 0;
  int node = -1;                          ///< the graph's Input node (its error slots)
  const int32_t* device_count = nullptr;  ///< set_input_device_count: the row count in device memory
  Int3 grid{0, 0, 0};
  Tensor dev_features, dev_indices;  ///< device tensors given to set_input (read in place by forward)
  DevMem raw_feat, raw_idx;          ///< device staging (a device input: its offending rows' coordinates)
  DevMem source;                     ///< InputSource: the device buffers the input step reads
  /// What `source` and the set's count hold (written by a forward; rows -1: nothing current): a forward
  /// rebinding the same buffers and rows writes nothing. Reset by every binding that writes the count another way.
  InputSource written{nullptr, nullptr};
  int64_t written_rows = -1;
  /// Bound on the device without a device count: the input step reads the caller's buffers through `source`.
  bool reads_in_place() const { return on_device && !device_count; }
  PinnedMem host_feat, host_idx, host_count;
  cudaEvent_t copied = nullptr;
  bool copy_pending = false;
};

class CudaEngine final : public Engine {
 public:
  CudaEngine(std::shared_ptr<const EnginePlan> plan, const BuildOptions& options);
  ~CudaEngine() override;

  Backend backend() const override { return Backend::Cuda; }
  void set_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                 const InputLabels& labels) override;
  void set_input_device_count(int index, const Tensor& features, const Tensor& indices, const int32_t* device_count,
                              const Int3& grid, int batch_size, const InputLabels& labels) override;
  void forward(void* stream) override;
  Tensor output(int index) override;
  Tensor output_async(int index) override;
  Tensor output_indices(int index) override;
  void check_errors() override;
  void synchronize() override;
  std::vector<double> time_forward(int warmup, int runs) override;
  std::vector<LayerTiming> profile_layers() override;
  size_t workspace_bytes() const override;
  int autotune_passes() const override { return autotune_passes_; }

 private:
  const Graph& g() const { return *graph_; }
  const GraphAnalysis& an() const { return *plan_->analysis; }
  const FusionPlan& fusion() const { return plan_->fusion; }
  void bind_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                  const InputLabels& labels, const int32_t* device_count);

  // lowering.cpp: the plan's convs and steps for this device
  void lower_convs();
  void lower_steps();
  void plan_conv_storage(ConvPlan& c);
  int add_shadow(int v, int reader, bool to_q, float range);
  void plan_fp16_readers();
  void plan_dual_outputs();
  void choose_tiles();
  bool q8(int v) const;
  float qrange(int v) const;
  int64_t row_elems(int v) const;
  size_t row_bytes(int v) const;
  const void* input_ptr(int n, int k) const;
  QOperand operand(int v) const;
  QEpilogue q_epilogue(const ConvPlan& c) const;
  ConvArgs conv_args(const ConvPlan& c) const;
  void run_step(const Step& st, cudaStream_t s, bool pdl = false, bool map_late = false);
  void build_strided_sites(int slot, cudaStream_t s, bool pdl);
  void emit_strided(int slot, cudaStream_t s, bool pdl);
  void finish_strided(int slot, cudaStream_t s, bool pdl, bool emitted = false);
  LayerTiming describe_step(const Step& st) const;
  void* value_ptr(int v) const { return value_ptr_[size_t(v)]; }
  int64_t read_count(int s) const;

  // weights.cpp
  std::vector<uint16_t> pack_weights(const ConvPlan& c) const;
  void upload_weights(ConvPlan& c);
  DevMem upload_tiled(const ConvPlan& c, int id, const std::vector<uint16_t>& packed) const;
  void ensure_plain_weights(ConvPlan& c);

  // arena.cpp: the device arena of the bound frame
  void ensure_planned();
  void plan_arena();
  void prepare_inputs();
  /// Before a forward's kernels on `s`: what the input steps read that the binding has not written yet (a device
  /// count's rows staged; a device input's buffer addresses and count). `in_capture`: `s` is being captured.
  void stage_inputs(cudaStream_t s, bool in_capture = false);

  // capacity_fit.cpp: capacities fitted to the first frame (FirstFrame) and grown on overflow (Grow)
  std::vector<int64_t> capacities() const;
  void resize_input(int index, int64_t rows);
  void set_capacities(const std::vector<int64_t>& caps);
  std::vector<int64_t> overflow_rows(const std::vector<ErrSlot>& e, bool& other_errors) const;
  bool measure_forward(std::vector<int64_t>& need);
  bool grow_until_fits(std::vector<int64_t> need);
  void fit_to_first_frame();
  bool grow_on_overflow(const std::vector<ErrSlot>& e);

  // schedule.cpp
  void plan_release_points();
  void create_streams();
  void destroy_streams();
  void destroy_graph();
  void capture(cudaStream_t s);
  cudaGraphExec_t bucket_graph(cudaStream_t s);
  void enqueue(cudaStream_t s, std::vector<cudaEvent_t>* ev);

  // autotune.cpp
  void autotune();
  std::vector<int> osplit_configs_for(const ConvPlan& c) const;
  std::vector<ConvKernel> conv_candidates(const ConvPlan& c) const;
  void tune_or_load();
  TuningCache tuning_key() const;
  void apply_tuning(const TuningBucket& bucket, const std::string& file);

  // tile_buckets.cpp
  void select_bucket(bool device_count);
  bool bucket_tuned() const { return bucket_tiles_.count(bucket_.label) > 0; }
  /// The next forward only replays the bound bucket's captured graph (nothing to fit, tune or capture first).
  bool graph_ready() const {
    return use_graph_ && exec_valid_ && !fit_pending_ && (!autotune_ || bucket_tuned()) && execs_.count(bucket_.label);
  }
  void record_bucket_tiles();
  void keep_needed_weights();

  // errors.cpp
  void reset_errors();
  std::string error_message(int node, int kind, const ErrSlot& e) const;
  ErrSlot* err_of(int node) const { return errors_.get<ErrSlot>() + size_t(node) * kNumErrKinds; }

  std::shared_ptr<const EnginePlan> plan_;
  FramePlan frame_;  ///< grids, batch and shapes the arena is planned for
  const CudaOptions& opt() const { return options_.cuda; }
  /// Kernels may launch programmatically: CudaOptions::programmatic_launch is on and the GPU has it (sm_90).
  bool programmatic() const { return opt().programmatic_launch != CudaProgrammaticLaunch::Off && cc_major_ >= 9; }

  int device_ = 0;
  int sm_count_ = 1;
  int cc_major_ = 0;
  cudaStream_t own_stream_ = nullptr;
  cudaEvent_t done_event_ = nullptr;
  bool use_graph_ = true;
  bool autotune_ = true;
  std::vector<int> tune_skip_;         ///< tile ids CudaOptions::tune_skip names
  std::vector<int> tune_skip_osplit_;  ///< osplit config ids it names
  int forced_cfg_ = -1;

  // size buckets (tile_buckets.cpp): with the autotuner on, tiles are chosen per bucket of the frame size
  SizeBucket bucket_;                                            ///< the bound frame's
  std::map<std::string, std::vector<ConvKernel>> bucket_tiles_;  ///< per bucket label: every conv's kernel
  std::optional<TuningCache> cache_;                             ///< CudaOptions::tuning_cache as read / written
  int autotune_passes_ = 0;

  // schedule
  int lookahead_ = 3;
  cudaStream_t side_stream_ = nullptr;
  cudaStream_t capture_stream_ = nullptr;  ///< highest priority; graph capture only
  std::vector<int> release_node_, map_order_;
  std::vector<int> release_base_;  ///< release points before plan_arena's memory-aware delays
  std::vector<cudaEvent_t> ev_release_, ev_built_;
  cudaEvent_t ev_join_ = nullptr;
  /// CudaOptions::sites_ahead: per map slot its root (plan/arena_layout.h sites_ahead_roots, -1: none); the
  /// sites stream builds those slots' site sets, ev_sites_ marks each slot's sites built
  std::vector<int> sites_root_;
  cudaStream_t sites_stream_ = nullptr;
  std::vector<cudaEvent_t> ev_sites_;
  cudaEvent_t ev_sites_join_ = nullptr;
  std::map<std::string, cudaGraphExec_t> execs_;  ///< the captured graph of each size bucket met
  bool exec_valid_ = false;  ///< false: every captured graph holds stale addresses (re-capture on use)

  // lowering
  std::vector<ConvPlan> convs_;
  std::vector<Shadow> shadows_;
  std::map<std::pair<int, int>, int> reader_shadow_;  ///< (Concat / ScatterDense node, input) -> shadow
  std::vector<SiteInfo> sites_;
  std::vector<Step> steps_;  ///< the plan's steps with the Convert steps of INT8 engines
  std::vector<InputSlot> inputs_;
  std::vector<DevMem> out_compact_;

  // the bound frame and its arena
  int batch_ = 1;
  bool planned_ = false;
  /// The arena of every buffer of the plan, shared with the output tensors handed out (output, output_async,
  /// output_indices): a re-plan moves to a new arena, the old one lives as long as they do.
  std::shared_ptr<DevMem> arena_ = std::make_shared<DevMem>();
  DevMem errors_, counts_;
  std::vector<int32_t*> map_ptr_;
  std::vector<void*> value_ptr_;
  bool forwarded_ = false;  ///< done_event_ has been recorded (a forward, profile or measuring run was enqueued)
  /// A forward ran since the last binding: output(), output_async() and output_indices() read its results. Every
  /// binding clears it (a re-plan moves the buffers, and the CPU engine's outputs end at a binding too).
  bool outputs_valid_ = false;
  bool fit_pending_ = false;      ///< CapacitySource::FirstFrame before its measuring forward
  bool caller_captured_ = false;  ///< a forward was recorded into the caller's own CUDA graph
};

}  // namespace scn::cuda
