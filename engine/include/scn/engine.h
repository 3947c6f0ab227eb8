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

struct BuildOptions {
  Backend backend = Backend::Auto;        ///< Auto: CUDA when built with it and a GPU is present
  Precision precision = Precision::Fp16;  ///< activations stored in this precision
  int num_threads = 0;                    ///< CPU backend threads; 0 = all cores
  /// CUDA: capacity planned for the input voxels. 0 = the largest output_bound of the graph.
  int64_t max_input_voxels = 0;
  int max_batch = 1;                      ///< CUDA: batch size the capacities are planned for
  bool cuda_graph = true;                 ///< CUDA: capture forward into a CUDA graph and replay
  int device = 0;                         ///< CUDA device ordinal
};

/// Per-layer timing, filled by backends that measure it (bench).
struct LayerTiming {
  std::string node;
  std::string op;
  std::string algorithm;
  double ms = 0.0;
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
  virtual void set_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid,
                         int batch_size = 1, const InputLabels& labels = {}) = 0;
  /// Runs the graph. CUDA: enqueued on `stream` (a cudaStream_t), no host synchronisation.
  virtual void forward(void* stream = nullptr) = 0;
  /// A graph output (dense output: the tensor; sparse output: its features [N, C]). Lives on the
  /// backend's device; valid until the next forward.
  virtual Tensor output(int index) = 0;
  /// Indices [N, 4] of a sparse output.
  virtual Tensor output_indices(int index) = 0;
  /// A dense output without waiting for the forward: a view of the engine's buffer, valid in the
  /// order of the stream given to forward() (work enqueued after forward on that stream sees the
  /// result) and until the next forward. Sparse outputs need their row count on the host, so they
  /// (and backends without an override) fall back to output(), which waits.
  virtual Tensor output_async(int index) { return output(index); }
  /// Raises a pending device-side error (overflow, bad device input) after the stream is done.
  virtual void check_errors() {}
  /// Times `runs` forwards after `warmup` ones on the bound input and returns milliseconds per
  /// run (CUDA: CUDA events on the engine's stream, CUDA graph replay when enabled; CPU: wall clock).
  virtual std::vector<double> time_forward(int warmup, int runs);
  /// Runs one forward step by step and times every layer (CUDA: events around each step, no
  /// graph capture). Backends that cannot split a forward return an empty list.
  virtual std::vector<LayerTiming> profile_layers() { return {}; }
  /// Bytes the engine holds for activations, kernel maps and workspace (device memory for CUDA).
  virtual size_t workspace_bytes() const { return 0; }

 protected:
  Engine(std::shared_ptr<const Graph> graph, BuildOptions options)
      : graph_(std::move(graph)), options_(options) {}
  std::shared_ptr<const Graph> graph_;
  BuildOptions options_;
};

/// Value handle returned by the push_* calls.
using ValueId = int;

/// Builds the graph one validated node at a time. Every push checks its node at once and
/// throws scn::Error naming it.
class EngineBuilder {
 public:
  explicit EngineBuilder(std::string source = "<builder>");

  ValueId push_input(const std::string& name, int32_t channels);
  ValueId push_sparse_conv(const std::string& name, ValueId x, const ConvAttrs& attrs,
                           const QuantAttrs& quant = {}, const std::string& output_name = "");
  ValueId push_add(const std::string& name, ValueId a, ValueId b, const QuantAttrs& quant = {},
                   const std::string& output_name = "");
  ValueId push_relu(const std::string& name, ValueId x, const std::string& output_name = "");
  ValueId push_concat(const std::string& name, const std::vector<ValueId>& xs,
                      const std::string& output_name = "");
  ValueId push_dense(const std::string& name, ValueId x, const DenseAttrs& attrs,
                     const QuantAttrs& quant = {}, const std::string& output_name = "");
  ValueId push_reshape(const std::string& name, ValueId x, const std::vector<int64_t>& dims,
                       const std::string& output_name = "");
  ValueId push_transpose(const std::string& name, ValueId x, const std::vector<int64_t>& dims,
                         const std::string& output_name = "");
  void push_output(ValueId x);
  /// Adds text attributes for `scn inspect` to the last pushed node.
  void annotate_last(const std::string& key, const std::string& value);

  const Graph& graph() const { return *graph_; }
  /// Whole-graph checks (outputs present, inverse convs find their strided conv, ...) and the
  /// backend's engine. The builder can keep building afterwards without affecting the engine.
  std::unique_ptr<Engine> build(const BuildOptions& options) const;

 private:
  ValueId add_node(Node node, Value value);
  const Value& value(ValueId id, const std::string& node, const char* role) const;
  std::shared_ptr<Graph> graph_;
  std::unordered_set<std::string> value_names_;  ///< every value name in graph_
  std::unordered_set<std::string> node_names_;   ///< every node name in graph_
};

/// True when this build of scn has the CUDA backend and a CUDA device is visible.
bool cuda_available();

/// Names of the implicit-GEMM tile configurations compiled into the CUDA backend (the values
/// SCN_CUDA_IGEMM accepts): the fp16 ones (e.g. "m64n64k32s4t"), or with Precision::Int8 those of
/// INT8 engines ("igemm-i8 m64n64k32s4t" on int8 operands, "igemm-q ..." fp16 operands with a
/// quantizing epilogue). Empty in a build without CUDA.
std::vector<std::string> cuda_tile_configs(Precision precision = Precision::Fp16);

}  // namespace scn
