// scn — building and running an engine.
//
//   scn::EngineBuilder b;
//   auto x = b.push_input("0", 5);
//   x = b.push_sparse_conv("conv0", x, conv_attrs);
//   ...
//   b.push_output(b.push_dense("scatter0", x, dense_attrs));
//   auto engine = b.build(options);
//   engine->set_input(0, features, indices, {41, 1440, 1440});
//   engine->forward(stream);
//   scn::Tensor map = engine->output(0);
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "scn/error.h"
#include "scn/graph.h"
#include "scn/tensor.h"
#include "scn/types.h"

namespace scn {

struct GraphAnalysis;  // engine/src/graph/analysis.h

/// When a convolution lets the next one launch programmatically (sm_90, maps on the map stream). Any
/// value but Off also chains the site-index and map kernels of the input and map steps programmatically.
enum class CudaProgrammaticLaunch {
  Off = 0,            ///< plain stream order for every kernel
  LastTileStart = 1,  ///< at the start of each block's last tile
  LastEpilogue = 2,   ///< at the epilogue of each block's last tile (default: leaves the map stream room)
};

/// Which kernel builds submanifold and strided kernel maps (both give bitwise the same map).
enum class CudaMapKernel {
  Rows = 0,     ///< one thread per (output row, kernel row), sharing bitmap words (default)
  General = 1,  ///< one lookup per (row, offset): the plain baseline the tests compare with
};

/// How the site set of a strided convolution is found (both give the same set, hence bitwise the same outputs).
enum class CudaStridedSites {
  /// FromBitmap where the conv reads a set an earlier strided conv generated (CenterPoint's strided convs after the
  /// first), FromRows where it reads the network's input voxels: the full-resolution grid is so sparse that
  /// reading its bitmap costs more than the atomics of its rows (docs/benchmarks.md, session 25)
  Auto = 0,
  /// every word of the output bitmap from the words of the input bitmap it reaches: no memset, no atomics, no read
  /// of the input set's coordinates (a kernel reaching more than 64 sites along the last axis runs FromRows)
  FromBitmap = 1,
  /// one thread per input row sets its output sites' bits with atomics
  FromRows = 2,
};

/// Row order of the site sets strided convolutions generate (docs/cuda_backend.md "Site sets"). Either order
/// gives bitwise the same outputs: a row's sum does not depend on its position, only the work does.
enum class CudaSiteOrder {
  /// NeighbourRows for the sets whose submanifold convs all have 64 or more input channels: their wgmma tiles
  /// skip whole offset steps; at the 16/32-channel levels the order's three kernels cost more than it saves
  /// (docs/benchmarks.md, session 22)
  Auto = 0,
  Bitmap = 1,  ///< rows in bitmap (key) order
  /// rows grouped by which of their six kernel rows off the site's own plane (i0 - 1, i0 + 1) have a
  /// neighbour, bitmap order within a group: a tile of rows then has fewer offsets and 16-row blocks with
  /// any neighbour to multiply (every set read by a submanifold conv and not returned as a sparse output)
  NeighbourRows = 2,
};

/// CUDA backend settings (docs/cuda_backend.md). Validated with the rest of BuildOptions when an
/// engine is built; a bad value is an scn::Error naming the field.
struct CudaOptions {
  bool autotune = true;  ///< time every fitting tile per conv on the first frame of each size bucket, keep the fastest
  /// Force one tile configuration where it fits (e.g. "m64n64k32s4t", "igemm-i8 m64n64k32s4t";
  /// cuda_tile_configs() lists them); empty = heuristic + autotuner. Forcing a tile turns the tuner off.
  std::string tile;
  /// Tile names (or shapes) and osplit configs ("osplit c32x32r32p2s3w20", prefix optional; cuda_osplit_configs()
  /// lists them) the autotuner leaves out; an osplit class left with no config is an error.
  std::vector<std::string> tune_skip;
  int map_lookahead = 3;  ///< kernel maps released this many slots ahead on a map stream; 0 = one stream
  /// Convs' graph nodes above the map stream's (blocks of both waiting: the conv's first). Off by default: the
  /// map-stream kernels then find room beside level 0 and the next level's sets are ready for its first conv
  /// (measured: docs/benchmarks.md, session 26).
  bool stream_priorities = false;
  CudaProgrammaticLaunch programmatic_launch = CudaProgrammaticLaunch::LastEpilogue;
  /// Split-K class of every fp16 conv with >= 64 output channels: 0 = by layer shape and planned batch
  /// (128 -> 128 channel 3x3x3 convs split in two on sm_90 when max_batch is 1, others unsplit; an engine
  /// planned for several frames sums those convs unsplit, so its bits differ from a one-frame engine's there),
  /// 1 = unsplit, 2 = split in two.
  int split = 0;
  /// Offset groups of the 16- and 32-channel 3x3x3 convs (16 -> 16, 32 -> 32, 16 -> 32), which fixes
  /// the fp16 summation order like `split`: 0 = by GPU (the warp-independent osplit kernel with two
  /// offset groups on sm_90, the implicit-GEMM tiles elsewhere), 1 = the implicit-GEMM tiles (offsets
  /// in one chain), 2 = osplit with two groups wherever it fits (docs/cuda_backend.md). INT8 engines'
  /// convs of these shapes follow it too: fp16 ones with a quantizing epilogue in the same order, int8
  /// ones (exact sums) with the same bits either way.
  int offset_groups = 0;
  CudaMapKernel map_kernel = CudaMapKernel::Rows;
  CudaSiteOrder site_order = CudaSiteOrder::Auto;
  CudaStridedSites strided_sites = CudaStridedSites::Auto;
  /// With a map stream: every site set made from a generated set's bitmap (strided_sites) is built (bitmap, rank,
  /// coordinates, neighbour-row order) on a third stream as soon as the set it comes from has its bitmap, one level
  /// after another during the first levels' convs, rather than when its strided map is released; the maps stay on
  /// the map stream. Those sets are alive beside the first level's peak of memory, and beside the default
  /// one-priority schedule it is no faster (it was with stream_priorities; figures: docs/benchmarks.md, sessions
  /// 25-26), hence off by default.
  bool sites_ahead = false;
  /// File of saved autotuner decisions (docs/cuda_backend.md "Tuning cache"): read at the first input
  /// when its key (GPU, CUDA versions, scn version, model digest, capacities, options) matches, else
  /// tuned and written (atomically). Empty = tune every time. Used only while autotune is on.
  std::string tuning_cache;
  /// Size buckets of the autotuner (docs/cuda_backend.md "Size buckets"): tiles are tuned per bucket of
  /// the bound frame's voxel count, on the first frame of each bucket (its set_input), and a CUDA graph
  /// is kept per bucket. Buckets: counts below tune_bucket_base, then [e, e * tune_bucket_factor) from
  /// e = tune_bucket_base up. Factor 0 = one bucket: tune on the first frame only and keep its tiles
  /// for every size. Frames bound with set_input_device_count share one bucket of their own.
  int64_t tune_bucket_base = 8192;
  double tune_bucket_factor = 1.5;  ///< 0, or 1.1 to 16
};

/// Where the CUDA engine's rows per site set (level) come from (docs/cuda_backend.md "Memory and
/// capacities").
enum class CapacitySource {
  Bounds = 0,      ///< max_input_voxels / output_bound x max_batch, tightened by the geometry (default)
  FirstFrame = 1,  ///< the first bound frame's measured rows per level x capacity_margin (one extra forward)
};

/// What the CUDA engine does with a frame that needs more rows than planned.
enum class CapacityOverflow {
  Error = 0,  ///< set_input / check_errors() / output() throw scn::Error naming the input or node (default)
  /// The capacities grow to the needed rows x capacity_margin, the arena is re-planned and the forward
  /// re-run from the still-bound input before check_errors() / output() return (a correct result, never
  /// a truncated one); set_input grows the input staging at once.
  Grow = 1,
};

struct BuildOptions {
  Backend backend = Backend::Auto;        ///< Auto: CUDA when built with it and a usable GPU is present
  Precision precision = Precision::Fp16;  ///< activations stored in this precision
  int num_threads = 0;                    ///< CPU backend threads; 0 = all cores
  /// CUDA: capacity planned for the input voxels. 0 = the largest output_bound of the graph.
  int64_t max_input_voxels = 0;
  int max_batch = 1;                                                ///< CUDA: batch size the capacities are planned for
  CapacitySource capacity_source = CapacitySource::Bounds;          ///< CUDA
  CapacityOverflow on_capacity_overflow = CapacityOverflow::Error;  ///< CUDA
  /// CUDA: rows planned per measured row when capacities follow a frame (FirstFrame, Grow); >= 1.
  double capacity_margin = 1.1;
  bool cuda_graph = true;  ///< CUDA: capture forward into a CUDA graph and replay
  int device = 0;          ///< CUDA device ordinal
  CudaOptions cuda;        ///< CUDA backend settings
};

/// LayerTiming::op of the profiled steps that are not a node's operator: a graph input's validation and conversion,
/// the kernel map (and site set) a conv reads, and an INT8 engine's quantize / dequantize of a value for its reader.
inline constexpr const char* kStepInput = "Input";
inline constexpr const char* kStepKernelMap = "KernelMap";
inline constexpr const char* kStepConvert = "Convert";

/// Per-layer timing, filled by backends that measure it (bench).
struct LayerTiming {
  std::string node;
  std::string op;  ///< op_type_name of the node's operator, or kStepInput / kStepKernelMap / kStepConvert
  std::string algorithm;
  double ms = 0.0;
  /// A conv step's split-K cluster: how many CTAs share each row tile, each summing its own kernel offsets
  /// (their partial sums reduced in rank order); 1 for an unsplit conv and for every other step. Last, so that
  /// brace-initialised {node, op, algorithm, ms} keeps its meaning.
  int split_k = 1;
};

/// Labels used in input-validation messages (the CLI passes the file paths).
struct InputLabels {
  std::string features = "features";
  std::string indices = "indices";
};

class Engine {
 public:
  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual Backend backend() const = 0;
  Precision precision() const { return options_.precision; }
  const Graph& graph() const { return *graph_; }

  int num_inputs() const { return static_cast<int>(graph_->inputs.size()); }
  int num_outputs() const { return static_cast<int>(graph_->outputs.size()); }
  const std::string& input_name(int i) const;
  const std::string& output_name(int i) const;
  int input_index(const std::string& name) const;   ///< throws when absent
  int output_index(const std::string& name) const;  ///< throws when absent
  bool output_is_sparse(int i) const;

  /// Binds a sparse input: features [N, C] float16/float32, indices [N, 4] int32 (batch, i0, i1,
  /// i2) in the model's index order, grid (s0, s1, s2) in that order, batch size. Host tensors are
  /// validated here (range, duplicates, batch, shapes); the CUDA backend checks device tensors
  /// on the device and reports problems from forward().
  virtual void set_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size = 1,
                         const InputLabels& labels = {}) = 0;
  /// Binds a sparse input whose row count lives in device memory (a Voxelizer's device_count()):
  /// features [rows, C] and indices [rows, 4] are device buffers of which the first *device_count
  /// rows are valid; forward() reads the count on the device (no host synchronisation), and a
  /// count above the buffers' rows or the capacity planned at build is a device error raised by check_errors() (no
  /// row past either is read; CapacityOverflow::Grow grows the capacity, never past the buffers). Enqueue the producer
  /// and forward() on one stream you name, or name none to either: Voxelizer::run(points) then runs on the legacy
  /// default stream and forward() after it (see forward()).
  /// Backends without it throw scn::Error (docs/voxelize.md, "One graph from points to BEV").
  virtual void set_input_device_count(int index, const Tensor& features, const Tensor& indices,
                                      const int32_t* device_count, const Int3& grid, int batch_size = 1,
                                      const InputLabels& labels = {});
  /// Runs the graph. CUDA: enqueued on `stream` (a cudaStream_t), no host synchronisation. nullptr: the engine's own
  /// stream, after the work enqueued so far on the legacy default stream when an input is bound on the device (its
  /// producer: Voxelizer::run(points), a kernel or copy on stream 0); output() and check_errors() wait for it, and
  /// output_async() is ordered on that own stream only. On a default stream (cudaStreamLegacy, cudaStreamPerThread:
  /// e.g. torch's default stream, which cannot be captured into a CUDA graph) a captured graph is replayed on that
  /// stream; a forward that has to capture (or tune, or fit capacities) first runs on the engine's own stream, ordered
  /// after and before that stream's work by events. When the caller is capturing `stream` into their own CUDA graph
  /// (BuildOptions::cuda_graph = false), the forward is recorded into it; synchronise that stream before output() /
  /// check_errors().
  virtual void forward(void* stream = nullptr) = 0;
  /// A graph output (dense output: the tensor; sparse output: its features [N, C]). Lives on the
  /// backend's device; valid until the next forward. Requested after a binding (set_input) with no forward since, or
  /// after check_errors() raised the forward's error, it is an scn::Error ("requested before forward()").
  virtual Tensor output(int index) = 0;
  /// Indices [N, 4] of a sparse output.
  virtual Tensor output_indices(int index) = 0;
  /// A dense output without waiting for the forward: a view of the engine's buffer, valid in the
  /// order of the stream given to forward() (work enqueued after forward on that stream sees the
  /// result) and overwritten by the next forward. The tensor shares the buffer: when a larger frame moves the
  /// engine to new buffers, it keeps the old one and its forward's values. Sparse outputs need their row count on
  /// the host, so they (and backends without an override) fall back to output(), which waits.
  virtual Tensor output_async(int index) { return output(index); }
  /// Raises a pending device-side error (overflow, bad device input) after the stream is done.
  virtual void check_errors() {}
  /// Waits until the last forward has finished on the device, without looking for device errors (CUDA; the CPU
  /// backend's forward returns when it is done). Needed before the memory of bound device inputs may be released.
  virtual void synchronize() {}
  /// Times `runs` forwards after `warmup` ones on the bound input and returns milliseconds per
  /// run (CUDA: CUDA events on the engine's stream, CUDA graph replay when enabled; CPU: wall clock).
  virtual std::vector<double> time_forward(int warmup, int runs);
  /// Runs one forward step by step and times every layer (CUDA: events around each step, no
  /// graph capture). Backends that cannot split a forward return an empty list.
  virtual std::vector<LayerTiming> profile_layers() { return {}; }
  /// Bytes the engine holds for activations, kernel maps and workspace (device memory for CUDA).
  virtual size_t workspace_bytes() const { return 0; }
  /// CUDA: how many times the autotuner has timed the tiles: once per size bucket met
  /// (CudaOptions::tune_bucket_factor), not for a bucket read from the tuning cache; other backends 0.
  virtual int autotune_passes() const { return 0; }
  /// Why the engine runs on another backend than asked, e.g. Backend::Auto on a GPU the CUDA
  /// backend cannot use (also printed on stderr when the engine is built); empty otherwise.
  const std::string& notice() const { return notice_; }
  void set_notice(std::string n) { notice_ = std::move(n); }

 protected:
  Engine(std::shared_ptr<const Graph> graph, BuildOptions options) : graph_(std::move(graph)), options_(options) {}
  std::shared_ptr<const Graph> graph_;
  BuildOptions options_;
  std::string notice_;
};

/// Value handle returned by the push_* calls.
using ValueId = int;

/// Builds the graph one validated node at a time. Every push checks its node at once and
/// throws scn::Error naming it.
class EngineBuilder {
 public:
  explicit EngineBuilder(std::string source = "<builder>");

  ValueId push_input(const std::string& name, int32_t channels);
  ValueId push_sparse_conv(const std::string& name, ValueId x, const ConvAttrs& attrs, const QuantAttrs& quant = {},
                           const std::string& output_name = "");
  ValueId push_add(const std::string& name, ValueId a, ValueId b, const QuantAttrs& quant = {},
                   const std::string& output_name = "");
  ValueId push_relu(const std::string& name, ValueId x, const std::string& output_name = "");
  ValueId push_concat(const std::string& name, const std::vector<ValueId>& xs, const std::string& output_name = "");
  ValueId push_dense(const std::string& name, ValueId x, const DenseAttrs& attrs, const QuantAttrs& quant = {},
                     const std::string& output_name = "");
  ValueId push_reshape(const std::string& name, ValueId x, const std::vector<int64_t>& dims,
                       const std::string& output_name = "");
  ValueId push_transpose(const std::string& name, ValueId x, const std::vector<int64_t>& dims,
                         const std::string& output_name = "");
  void push_output(ValueId x);
  /// Marks every value a node produces as a graph output too (after the existing outputs, in node
  /// order). Outputs are never fused away or overwritten, so an engine built afterwards keeps every
  /// intermediate value readable through output(i) / output_name(i) on any backend (`scn compare
  /// --layers` compares them with a reference, value by value).
  void expose_all_values();
  /// Adds text attributes for `scn inspect` to the last pushed node.
  void annotate_last(const std::string& key, const std::string& value);

  const Graph& graph() const { return *graph_; }
  /// Whole-graph checks (inverse convs find their strided conv, Add / Concat on one site set, ...);
  /// throws naming the node. The result is kept: build() does not analyse the graph again unless
  /// a node was pushed since.
  void check_graph() const;
  /// Whole-graph checks (outputs present, inverse convs find their strided conv, ...) and the
  /// backend's engine. The builder can keep building afterwards without affecting the engine.
  std::unique_ptr<Engine> build(const BuildOptions& options) const;

 private:
  ValueId add_node(Node node, Value value);
  const Value& value(ValueId id, const std::string& node, const char* role) const;
  void touched() { std::atomic_store(&analysis_, std::shared_ptr<const GraphAnalysis>()); }
  std::shared_ptr<Graph> graph_;
  mutable std::shared_ptr<const GraphAnalysis> analysis_;  ///< check_graph()'s result for graph_
  std::unordered_set<std::string> value_names_;            ///< every value name in graph_
  std::unordered_set<std::string> node_names_;             ///< every node name in graph_
};

/// True when this build of scn has the CUDA backend and a CUDA device is visible.
bool cuda_available();

/// Names of the implicit-GEMM tile configurations compiled into the CUDA backend (the values
/// CudaOptions::tile accepts): the fp16 ones (e.g. "m64n64k32s4t"), or with Precision::Int8 those of
/// INT8 engines ("igemm-i8 m64n64k32s4t" on int8 operands, "igemm-q ..." fp16 operands with a
/// quantizing epilogue). Empty in a build without CUDA.
std::vector<std::string> cuda_tile_configs(Precision precision = Precision::Fp16);

/// Names of the warp-independent offset-split kernel configurations compiled into the CUDA backend, which the
/// autotuner times for the 16/32-channel convs (e.g. "osplit c32x32r32p2s3w20"; "osplit qc..." and "osplit i8c..."
/// for the INT8 engines' modes): with the tile names, the values CudaOptions::tune_skip accepts. Empty in a build
/// without CUDA.
std::vector<std::string> cuda_osplit_configs();

}  // namespace scn
