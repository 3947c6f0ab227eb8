// scn — the builder graph: values (sparse or dense tensors) and the nodes that produce them.
// EngineBuilder fills it, the backends execute it. Nodes are stored in a valid execution
// order (every input is produced by an earlier node or is a graph input).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scn/tensor.h"
#include "scn/types.h"

namespace scn {

enum class OpType { Input, SparseConv, Add, Relu, Concat, ScatterDense, Reshape, Transpose };
const char* op_type_name(OpType op);

/// INT8 description carried by every node (used once INT8 kernels exist; validated now).
struct QuantAttrs {
  Precision precision = Precision::Fp16;         ///< "int8" -> Int8, anything else Fp16
  Precision output_precision = Precision::Fp16;
  float input_dynamic_range = -1.f;              ///< < 0: absent
  float input0_dynamic_range = -1.f;             ///< Add / QuantAdd
  float input1_dynamic_range = -1.f;
  std::vector<float> weight_dynamic_ranges;      ///< per output channel (SparseConvolution)
};

/// The most rows a set of sites (the voxels of a whole batch at one level) may plan: row indices, map entries and
/// counts are int32 on the device. output_bound, max_input_voxels and their products with max_batch stay within it.
constexpr int64_t kMaxSiteRows = 2147483647;

struct ConvAttrs {
  int32_t in_channels = 0;
  int32_t out_channels = 0;
  Int3 kernel_size{1, 1, 1};
  Int3 stride{1, 1, 1};
  Int3 padding{0, 0, 0};
  Int3 dilation{1, 1, 1};
  bool subm = false;
  bool inverse = false;
  std::string rulebook;                 ///< spconv indice_key; empty when the layer had none
  Activation activation = Activation::None;
  float activation_alpha = 0.f;         ///< LeakyReLU slope (required for LeakyReLU)
  int64_t output_bound = 0;             ///< capacity hint for output voxels; 0 = not given
  Tensor weight;                        ///< host [Cout, k0, k1, k2, Cin], float16 or float32
  Tensor bias;                          ///< host [Cout] or undefined (no bias)
};

struct DenseAttrs {
  Int3 input_spatial_shape{0, 0, 0};
  std::vector<int64_t> output_shape;    ///< [N, C, s0, s1, s2]
  std::string format = "zyx";           ///< index order of the input, informational
  std::string layout = "NCHW";          ///< only NCHW is supported
};

struct Node {
  OpType op = OpType::Input;
  std::string name;                     ///< ONNX node name (or the input's name)
  std::vector<int> inputs;              ///< value ids
  int output = -1;                      ///< value id
  ConvAttrs conv;                       ///< SparseConv
  DenseAttrs dense;                     ///< ScatterDense
  std::vector<int64_t> dims;            ///< Reshape target / Transpose permutation
  QuantAttrs quant;
  /// Attributes written by exporters that scn only reports (inspect), as name=value text.
  std::vector<std::pair<std::string, std::string>> info;
};

struct Value {
  std::string name;
  bool sparse = true;
  int32_t channels = 0;                 ///< sparse values
  std::vector<int64_t> shape;           ///< dense values (known statically from the attributes)
  int producer = -1;                    ///< node id
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;              ///< value ids of graph inputs
  std::vector<int> outputs;             ///< value ids of graph outputs
  std::string source = "<builder>";     ///< file the graph came from, for messages

  /// Value id by name, -1 when absent.
  int find_value(const std::string& name) const;
  /// "node 'conv3' (SparseConvolution)" — the prefix of every message about a node.
  std::string describe(int node) const;
};

}  // namespace scn
