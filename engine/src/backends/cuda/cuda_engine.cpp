// The CUDA backend (docs/cuda_backend.md): FP16 and INT8 activations, kernel maps built on the GPU
// (bitmap + rank site index), implicit GEMM on tensor cores with fused epilogues, one fused
// densify kernel, one device arena planned with plan_memory, no host synchronisation and no
// allocation inside forward(), optional CUDA graph capture.
//
// Build:      analyse the graph, fuse (conv -> Relu, conv -> Add -> Relu), choose a kernel per conv,
//             upload weights, plan capacities, allocate input staging.
// set_input:  validate and stage the input; (re)plan the arena when the grid or batch changes.
// forward:    input copy/wait outside the graph, then the captured graph (or the steps directly).
// INT8:       int8::plan() (shared with the CPU oracle) says which values are stored int8 and on
//             which grid; int8 convs run the kI8 kernels, fp16 convs touching int8 storage the kF16Q
//             ones, and a Convert step quantizes / dequantizes a conv's, Concat's or ScatterDense's
//             input where its storage differs from what the reader takes (docs/int8.md).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>

#include "backends/backend_factory.h"
#include "plan/int8_arith.h"
#include "plan/int8_plan.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels.h"
#include "core/half.h"
#include "core/input_check.h"
#include "graph/analysis.h"
#include "plan/memory_plan.h"

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

namespace {

using namespace scn::cuda;

constexpr int64_t kDefaultCapacity = 200000;   // NVIDIA's exporters write output_bound = 200000
constexpr size_t kMaxBitmapBytes = size_t(1) << 30;
constexpr int64_t kGemmChunk = 65536;           // rows per cuBLAS call on the gather-GEMM path

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Index in `options` of the value of environment switch `name`, `fallback` when it is unset; any
/// other value is an error naming the switch and its options.
int env_choice(const char* name, std::initializer_list<const char*> options, int fallback) {
  const char* e = std::getenv(name);
  if (!e) return fallback;
  std::string list;
  int i = 0;
  for (const char* o : options) {
    if (std::strcmp(e, o) == 0) return i;
    list += (i++ ? ", " : "") + std::string(o);
  }
  throw Error(detail::concat(name, "='", e, "' is not one of ", list));
}

/// Owned CUDA memory: device (cudaMalloc) or pinned host (cudaMallocHost) by `Pinned`.
template <bool Pinned>
class CudaMem {
 public:
  CudaMem() = default;
  CudaMem(const CudaMem&) = delete;
  CudaMem& operator=(const CudaMem&) = delete;
  CudaMem(CudaMem&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  CudaMem& operator=(CudaMem&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = o.p_;
      bytes_ = o.bytes_;
      o.p_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~CudaMem() { reset(); }
  void alloc(size_t bytes) {
    reset();
    if (bytes == 0) {
      if (!Pinned) return;
      bytes = 16;  // pinned staging is always addressable
    }
    if (Pinned)
      SCN_CUDA_CHECK(cudaMallocHost(&p_, bytes));
    else
      SCN_CUDA_CHECK(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
  }
  void reset() {
    if (p_) {
      if (Pinned)
        cudaFreeHost(p_);
      else
        cudaFree(p_);
    }
    p_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};
using DevMem = CudaMem<false>;
using PinnedMem = CudaMem<true>;

Act to_act(Activation a) {
  switch (a) {
    case Activation::None: return Act::None;
    case Activation::ReLU: return Act::ReLU;
    case Activation::Sigmoid: return Act::Sigmoid;
    case Activation::LeakyReLU: return Act::LeakyReLU;
  }
  return Act::None;
}

float tensor_float(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
}

int find_config(const std::string& name) { return igemm_find_config(name.c_str()); }

/// Per-layer tile choice (measured on the CenterPoint frame, docs/benchmarks.md): the N tile
/// follows the output channels, the K tile the input channels; 64+ output channels take their
/// weights through TMA bulk copies on sm_90. Falls back to a config that fits.
int choose_config(int cin_p, int cout_p, int cc, int K, int split) {
  const bool k32 = cin_p % 32 == 0, k64 = cin_p % 64 == 0, tma = cc >= 9;
  std::vector<const char*> pref;
  if (split > 1) {
    if (cout_p > 64)
      pref = split == 4 ? std::vector<const char*>{"m128n128k64s3tx4", "m64n128k64s3tx4"}
                        : std::vector<const char*>{"m64n128k64s2tx2wg", "m64n128k64s3tx2"};
    else if (cout_p > 32)
      pref = split == 4 ? std::vector<const char*>{"m128n64k64s3tx4"}
                        : std::vector<const char*>{"m128n64k64s3tx2", "m128n64k32s3tx2", "m64n64k64s3tx2"};
    else if (cout_p > 16)
      pref = split == 4 ? std::vector<const char*>{"m128n32k32s3x4"} : std::vector<const char*>{"m128n32k32s3x2"};
    else
      pref = {"m128n16k16s4x2"};
  }
  for (const char* n : pref) {
    const int id = find_config(n);
    if (id >= 0 && igemm_config_fits(id, cin_p, cc, K)) return id;
  }
  pref.clear();
  if (cout_p <= 16) {
    if (tma) pref.push_back("m128n16k16s4t");
    pref.push_back("m128n16k16s4");
    pref.push_back("m128n16k32s3");
  } else if (cout_p <= 32) {
    if (tma && k32) pref.push_back("m128n32k32s3tw8r4");
    if (tma && k32) pref.push_back("m128n32k32s4t");
    if (cin_p == 16) pref.push_back("m128n32k16s4w8");
    pref.push_back("m128n32k32s4");
    pref.push_back("m128n32k16s4");
  } else if (cout_p <= 64) {
    if (tma && k32) pref.push_back("m64n64k32s4t");
    pref.push_back(k32 ? "m64n64k32s3" : "m64n64k16s3");
  } else {
    if (tma && k64) pref.push_back("m32n128k64s3t");
    if (tma && k32) pref.push_back("m32n128k32s4t");
    if (k64) pref.push_back("m64n128k64s3");
    pref.push_back("m64n128k16s3");
  }
  for (const char* n : pref) {
    const int id = find_config(n);
    if (id >= 0 && igemm_config_fits(id, cin_p, cc, K)) return id;
  }
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (igemm_config(id).split == 1 && igemm_config_fits(id, cin_p, cc, K)) return id;
  return -1;
}

/// Candidates the autotuner times for a conv: every compiled config of the kernel mode that fits,
/// with an N tile of the output width (rounded up to a power of two, at most 128) or half of it.
std::vector<int> tune_candidates(int cin_p, int cout_p, int cc, int K, int split, int mode = 0) {
  int bn = 16;
  while (bn < cout_p && bn < 128) bn *= 2;
  std::vector<int> v;
  for (int id = 0; id < igemm_num_configs(); ++id) {
    const IgemmConfig& c = igemm_config(id);
    if (c.split != split || !igemm_config_fits(id, cin_p, cc, K, mode)) continue;
    if (c.bn == bn || (c.bn * 2 == bn && c.bn >= 16)) v.push_back(id);
  }
  return v;
}

/// INT8 engines' kernels (modes kF16Q / kI8): the heuristic pick before the autotuner runs is the
/// first candidate, preferring TMA weights on sm_90; any config of the mode that fits otherwise.
int choose_config_q(int cin_p, int cout_p, int cc, int K, int mode) {
  const std::vector<int> cands = tune_candidates(cin_p, cout_p, cc, K, 1, mode);
  for (int id : cands)
    if (igemm_config(id).tma == (cc >= 9)) return id;
  if (!cands.empty()) return cands[0];
  for (int id = 0; id < igemm_num_configs(); ++id)
    if (igemm_config_fits(id, cin_p, cc, K, mode)) return id;
  return -1;
}

/// Which kernel maps get their rows grouped by neighbour mask (SCN_CUDA_SORT_ROWS=0|auto|1|2;
/// default 0). Auto: the maps of convs with at most 32 input channels, except the first map built
/// (it is on the critical path). Measured on the H200 (docs/benchmarks.md): the grouping makes the
/// 16->32 and 32-channel convs ~10-15 % faster and does nothing at 64/128 channels, but the three
/// bucket sorts cost as much GPU time as they save (they run beside the convs on the map stream and
/// take SMs from them), so the graph median is the same and the masks and orders cost 7 MB: off.
enum class RowSort { Off = 0, All = 1, AllWithPositions = 2, Auto = 3 };

struct SortPlan {
  bool on = false;
  int64_t cap = 0;
  RowKey key;
  int req_masks = -1, req_scratch = -1, req_order = -1;
  uint32_t* masks = nullptr;
  uint32_t* scratch = nullptr;  // bucket histogram + cursors
  int32_t* order = nullptr;
};

struct ConvPlan {
  int node = -1;
  int slot = -1;
  int cin = 0, cout = 0, cin_p = 0, cout_p = 0, cout_w = 0, K = 1;
  Act act = Act::None;
  float alpha = 0.f;
  bool relu_after = false;
  int residual = -1;   // value fused as residual (Add)
  int add_node = -1;   // the fused Add node
  int add_conv_operand = 0;  // which input of the Add (0 / 1) is the conv's value
  int out_value = -1;  // value the conv writes after fusion
  std::vector<int> absorbed;  // Relu / Add nodes folded into this conv
  int cfg = -1;
  bool gemm = false;
  bool tuned = false;
  int split = 1;  ///< reduction class: configs of one class give bitwise-identical results
  // INT8 engines
  int mode = 0;          ///< kernel mode: 0 fp16, 1 fp16 + quantization-aware epilogue, 2 int8
  int shadow = -1;       ///< converted copy of the input this conv reads (Convert step), or -1
  int dual = -1;         ///< shadow this conv also writes: its output quantized for an int8 reader
  int y_stride = 0;      ///< output row stride in its elements
  DevMem w, bias, w_tma, mult, qargs;  // qargs: the QEpilogue of modes 1 and 2
};

/// A converted copy of a value for one reader (INT8 engines): the value quantized onto the
/// reader's int8 grid, or int8 storage dequantized to fp16.
struct Shadow {
  int value = -1;
  int reader = -1;  ///< the node that reads it (the Convert step runs right before it)
  bool to_q = false;
  float inv = 0.f;  ///< to_q: 127 / range
  int stride = 0;   ///< row stride in its elements
  int producer = -1;  ///< to_q written by this conv's epilogue as a second output (no Convert step)
  int req = -1;
  void* ptr = nullptr;
};

struct SiteInfo {
  int64_t cap_build = 0;  // capacity from the build options (before clipping by the grid)
  int64_t cap = 0;
  Int3 grid{0, 0, 0};
  int64_t words = 0;
  bool generated = false;
  int producer_step = 0;
  int index_last = 0;   // last step reading bitmap/rank/perm
  int coords_last = 0;  // last step reading coords
  int req_coords = -1, req_bits = -1, req_rank_local = -1, req_rank_block = -1, req_perm = -1;
  SiteIndex dev;
};

struct InputSlot {
  bool bound = false;
  bool on_device = false;
  bool raw_fp32 = false;
  int64_t n = 0;
  int channels = 0;
  Int3 grid{0, 0, 0};
  Tensor dev_features, dev_indices;  // device tensors given to set_input (read by forward)
  DevMem raw_feat, raw_idx;          // device staging
  PinnedMem host_feat, host_idx, host_count;
  cudaEvent_t copied = nullptr;
  bool copy_pending = false;
};

enum class StepKind { Input, Map, Conv, Add, Relu, Concat, Densify, Permute, Convert };

struct Step {
  StepKind kind;
  int node = -1;  // graph node (Map: first conv of the slot)
  int slot = -1;  // Map: slot index; Input: input index; Convert: shadow index
};

class CudaEngine final : public Engine {
 public:
  CudaEngine(std::shared_ptr<const Graph> graph, const BuildOptions& options) : Engine(std::move(graph), options) {
    const Graph& g = *graph_;
    SCN_CHECK(options.precision == Precision::Fp16 || options.precision == Precision::Int8, g.source,
              ": the CUDA backend stores activations in fp16 or int8; build it with Precision::Fp16 or "
              "Precision::Int8 (fp32 runs on the CPU backend)");
    // An fp16 engine runs every node in fp16 and ignores the nodes' INT8 attributes (docs/int8.md);
    // an int8 engine runs every node with its own precision, as int8::plan() states.
    int8_ = options.precision == Precision::Int8;
    if (int8_) q_ = int8::plan(g);
    int count = 0;
    SCN_CHECK(cudaGetDeviceCount(&count) == cudaSuccess && count > 0,
              "the CUDA backend was requested but no CUDA device is visible");
    cudaGetLastError();
    SCN_CHECK(options.device >= 0 && options.device < count, "CUDA device ", options.device, " does not exist (",
              count, " visible)");
    SCN_CHECK(options.max_batch >= 1, "BuildOptions.max_batch must be >= 1, got ", options.max_batch);
    SCN_CHECK(options.max_input_voxels >= 0, "BuildOptions.max_input_voxels must be >= 0");
    device_ = options.device;
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    SCN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    sm_count_ = prop.multiProcessorCount;
    cc_major_ = prop.major;
    SCN_CHECK(prop.major >= 8, "the CUDA backend needs a GPU of compute capability 8.0 or newer (", prop.name,
              " is ", prop.major, ".", prop.minor, ")");
    igemm_init();
    SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
    SCN_CUDA_CHECK(cudaEventCreateWithFlags(&done_event_, cudaEventDisableTiming));

    if (const char* e = std::getenv("SCN_CUDA_ALGO")) force_gemm_ = std::string(e) == "gemm";
    if (const char* e = std::getenv("SCN_CUDA_IGEMM")) forced_cfg_ = e;
    if (const char* e = std::getenv("SCN_CUDA_MAP_LOOKAHEAD")) lookahead_ = std::max(0, std::atoi(e));
    if (const char* e = std::getenv("SCN_CUDA_AUTOTUNE")) autotune_ = std::string(e) != "0";
    // tile shapes the autotuner leaves out, in every kernel mode (A/B of tile sets): comma-separated
    // shape names such as m64n32k16s2tg4, each of which must exist
    if (const char* e = std::getenv("SCN_CUDA_TUNE_SKIP")) {
      std::stringstream ss(e);
      for (std::string name; std::getline(ss, name, ',');) {
        if (name.empty()) continue;
        bool found = false;
        for (int id = 0; id < igemm_num_configs(); ++id) {
          const std::string full = igemm_config(id).name;
          if (full == name || full.substr(full.find(' ') + 1) == name) {
            tune_skip_.push_back(id);
            found = true;
          }
        }
        if (!found) throw Error(detail::concat("SCN_CUDA_TUNE_SKIP: no tile config named '", name, "'"));
      }
    }
    // 0 off, 1 every map, 2 every map with finer buckets, auto (enumerator order = option order)
    sort_rows_ = RowSort(env_choice("SCN_CUDA_SORT_ROWS", {"0", "1", "2", "auto"}, int(sort_rows_)));
    if (const char* e = std::getenv("SCN_CUDA_MAP_STAGE")) map_sync_ = std::string(e) == "sync";
    // (enumerator order = option order)
    subm_map_ = SubmMapKernel(env_choice("SCN_CUDA_SUBM_MAP", {"rows", "sym", "general"}, int(subm_map_)));
    strided_map_ =
        StridedMapKernel(env_choice("SCN_CUDA_STRIDED_MAP", {"rows", "scatter", "general"}, int(strided_map_)));
    priority_ = env_choice("SCN_CUDA_PRIORITY", {"0", "1"}, int(priority_)) != 0;
    // 0 off, 1 the next conv launched at the start of the last tile, 2 at its epilogue
    pdl_ = env_choice("SCN_CUDA_PDL", {"0", "1", "2"}, pdl_);
    if (const char* e = std::getenv("SCN_CUDA_SPLIT")) {
      const int v = std::atoi(e);
      deep_split_ = (v == 2 || v == 4) ? v : 1;
    }
    SCN_CHECK(!(force_gemm_ && int8_), g.source,
              ": SCN_CUDA_ALGO=gemm (the cuBLAS gather-GEMM path) runs fp16 engines only, not precision int8");
    if (force_gemm_ || !forced_cfg_.empty()) autotune_ = false;
    use_graph_ = options.cuda_graph && !force_gemm_;

    an_ = analyze_graph(g);
    consumers_.assign(g.values.size(), {});
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int v : g.nodes[n].inputs) consumers_[size_t(v)].push_back(int(n));
    is_output_.assign(g.values.size(), false);
    for (int v : g.outputs) is_output_[size_t(v)] = true;

    plan_fusion();
    plan_capacities();
    plan_steps();
    prepare_inputs();
    if (lookahead_ > 0) {
      SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&side_stream_, cudaStreamNonBlocking));
      if (priority_ && use_graph_) {
        // The graph is captured from a stream of the highest priority (the map stream keeps the lowest), and
        // instantiated with per-node priorities: when a conv and map kernels both have blocks waiting, the
        // conv's go first. Each conv grid is sized to fill the GPU once, so a map block that takes its place
        // would push a conv block into a second wave; map blocks fill the convs' tails instead.
        int least = 0, greatest = 0;
        SCN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        SCN_CUDA_CHECK(cudaStreamCreateWithPriority(&capture_stream_, cudaStreamNonBlocking, greatest));
      }
      ev_release_.assign(an_.maps.size(), nullptr);
      ev_built_.assign(an_.maps.size(), nullptr);
      for (auto& e : ev_release_) SCN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      for (auto& e : ev_built_) SCN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      SCN_CUDA_CHECK(cudaEventCreateWithFlags(&ev_join_, cudaEventDisableTiming));
    }

    errors_.alloc(g.nodes.size() * kNumErrKinds * sizeof(ErrSlot));
    counts_.alloc(size_t(std::max(1, an_.num_site_sets)) * sizeof(int));
    SCN_CUDA_CHECK(cudaMemset(counts_.get(), 0, counts_.bytes()));
    reset_errors();
  }

  ~CudaEngine() override {
    cudaSetDevice(device_);
    if (own_stream_) cudaStreamSynchronize(own_stream_);
    if (done_event_) cudaEventSynchronize(done_event_);
    destroy_graph();
    for (auto& in : inputs_)
      if (in.copied) {
        cudaEventSynchronize(in.copied);
        cudaEventDestroy(in.copied);
      }
    if (cublas_) cublasDestroy(cublas_);
    if (side_stream_) cudaStreamSynchronize(side_stream_);
    for (auto e : ev_release_) cudaEventDestroy(e);
    for (auto e : ev_built_) cudaEventDestroy(e);
    if (ev_join_) cudaEventDestroy(ev_join_);
    if (side_stream_) cudaStreamDestroy(side_stream_);
    if (capture_stream_) cudaStreamDestroy(capture_stream_);
    if (done_event_) cudaEventDestroy(done_event_);
    if (own_stream_) cudaStreamDestroy(own_stream_);
  }

  Backend backend() const override { return Backend::Cuda; }

  void set_input(int index, const Tensor& features, const Tensor& indices, const Int3& grid, int batch_size,
                 const InputLabels& labels) override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    const std::string& name = input_name(index);
    InputSlot& in = inputs_[size_t(index)];
    check_sparse_input_shapes(features, indices, grid, batch_size, in.channels, name, labels);
    SCN_CHECK(features.device() == indices.device(), labels.features, ": input '", name,
              "': features and indices must both be on the host or both on the device");
    SCN_CHECK(batch_size <= options_.max_batch, "input '", name, "': batch size ", batch_size,
              " exceeds BuildOptions.max_batch = ", options_.max_batch, " the CUDA engine was planned for");
    const int64_t n = features.dim(0);
    const SiteInfo& si = sites_[size_t(an_.value_sites[size_t(graph_->inputs[size_t(index)])])];
    SCN_CHECK(n <= si.cap_build, labels.features, ": input '", name, "': ", n,
              " voxels exceed the capacity ", si.cap_build,
              " planned at build (BuildOptions.max_input_voxels x max_batch; 0 = the largest output_bound of the "
              "graph, else ", kDefaultCapacity, "); rebuild with a larger max_input_voxels");
    for (size_t i = 0; i < inputs_.size(); ++i)
      SCN_CHECK(!inputs_[i].bound || int(i) == index || batch_size == batch_, "input '", name, "': batch size ",
                batch_size, " differs from the other inputs' ", batch_);

    const bool fp32 = features.dtype() == DType::Float32;
    const size_t staging = size_t(si.cap_build) * size_t(in.channels) * 4 + 16;
    if (fp32 && in.raw_feat.bytes() < staging) {  // the first fp32 input: fp32-sized staging
      if (in.copy_pending) SCN_CUDA_CHECK(cudaEventSynchronize(in.copied));
      if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
      SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
      in.raw_feat.alloc(staging);
      exec_valid_ = false;  // the captured graph holds the old staging address
    }
    if (features.device() == Device::Host) {
      check_sparse_input(features, indices, grid, batch_size, in.channels, name, labels);
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
      const int s = an_.value_sites[size_t(graph_->inputs[size_t(index)])];
      SCN_CUDA_CHECK(cudaMemcpyAsync(counts_.get<int>() + s, in.host_count.get(), sizeof(int), cudaMemcpyHostToDevice,
                                     own_stream_));
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
    if (in.raw_fp32 != fp32) exec_valid_ = false;
    in.raw_fp32 = fp32;
    in.n = n;
    in.grid = grid;
    in.bound = true;
    batch_ = batch_size;
    bool all = true;
    for (const auto& i : inputs_) all = all && i.bound;
    if (all) {
      ensure_planned();
      if (autotune_ && !tuned_) autotune();
    }
  }

  void forward(void* stream) override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    const Graph& g = *graph_;
    for (size_t k = 0; k < inputs_.size(); ++k)
      SCN_CHECK(inputs_[k].bound, g.source, ": forward() before set_input() for input '", input_name(int(k)), "'");
    ensure_planned();
    if (autotune_ && !tuned_) autotune();
    cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : own_stream_;
    stage_inputs(s);
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    SCN_CUDA_CHECK(cudaStreamIsCapturing(s, &cap));
    if (use_graph_ && cap == cudaStreamCaptureStatusNone) {
      if (!exec_valid_) capture(s);
      SCN_CUDA_CHECK(cudaGraphLaunch(exec_, s));
    } else {
      enqueue(s, nullptr);
    }
    SCN_CUDA_CHECK(cudaEventRecord(done_event_, s));
    forwarded_ = true;
  }

  Tensor output(int index) override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    output_name(index);
    SCN_CHECK(forwarded_, graph_->source, ": output(", index, ") requested before forward()");
    SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
    check_errors();
    const int v = graph_->outputs[size_t(index)];
    const Value& val = graph_->values[size_t(v)];
    if (!val.sparse)
      return Tensor::wrap(value_ptr(v), shapes_.dense_shape[size_t(v)], DType::Float16, Device::Cuda);
    const int s = an_.value_sites[size_t(v)];
    const int64_t n = read_count(s);
    const int cp = int(padded(val.channels));
    if (cp == val.channels && !q8(v))
      return Tensor::wrap(value_ptr(v), {n, val.channels}, DType::Float16, Device::Cuda);
    DevMem& ob = out_compact_[size_t(index)];
    if (q8(v))  // graph outputs are fp16: int8 storage dequantized (docs/int8.md)
      launch_convert(operand(v), ob.get(), val.channels, false, 0.f, val.channels, counts_.get<int>() + s, n,
                     sm_count_, own_stream_);
    else
      launch_compact_rows(value_ptr(v), cp, ob.get(), val.channels, n, own_stream_);
    SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
    return Tensor::wrap(ob.get(), {n, val.channels}, DType::Float16, Device::Cuda);
  }

  Tensor output_indices(int index) override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    output_name(index);
    SCN_CHECK(forwarded_, graph_->source, ": output_indices(", index, ") requested before forward()");
    const int v = graph_->outputs[size_t(index)];
    SCN_CHECK(graph_->values[size_t(v)].sparse, "output '", output_name(index), "' is dense and has no indices");
    SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
    check_errors();
    const int s = an_.value_sites[size_t(v)];
    const int64_t n = read_count(s);
    return Tensor::wrap(sites_[size_t(s)].dev.coords, {n, 4}, DType::Int32, Device::Cuda);
  }

  void check_errors() override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    if (!forwarded_) return;
    SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
    const Graph& g = *graph_;
    std::vector<ErrSlot> e(g.nodes.size() * kNumErrKinds);
    SCN_CUDA_CHECK(cudaMemcpy(e.data(), errors_.get(), e.size() * sizeof(ErrSlot), cudaMemcpyDeviceToHost));
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (int k = 0; k < kNumErrKinds; ++k) {
        const ErrSlot& es = e[n * kNumErrKinds + size_t(k)];
        if (es.hits == 0) continue;
        std::string msg = error_message(int(n), k, es);
        reset_errors();
        throw Error(msg);
      }
    }
  }

  std::vector<double> time_forward(int warmup, int runs) override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    for (int i = 0; i < warmup; ++i) forward(own_stream_);
    check_errors();
    cudaEvent_t a, b;
    SCN_CUDA_CHECK(cudaEventCreate(&a));
    SCN_CUDA_CHECK(cudaEventCreate(&b));
    std::vector<double> ms;
    ms.reserve(size_t(std::max(0, runs)));
    for (int i = 0; i < runs; ++i) {
      SCN_CUDA_CHECK(cudaEventRecord(a, own_stream_));
      forward(own_stream_);
      SCN_CUDA_CHECK(cudaEventRecord(b, own_stream_));
      SCN_CUDA_CHECK(cudaEventSynchronize(b));
      float t = 0.f;
      SCN_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(double(t));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    check_errors();
    return ms;
  }

  std::vector<LayerTiming> profile_layers() override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    const Graph& g = *graph_;
    for (size_t k = 0; k < inputs_.size(); ++k)
      SCN_CHECK(inputs_[k].bound, g.source, ": profile_layers() before set_input() for input '", input_name(int(k)),
                "'");
    ensure_planned();
    stage_inputs(own_stream_);
    std::vector<cudaEvent_t> ev(steps_.size() + 1);
    for (auto& e : ev) SCN_CUDA_CHECK(cudaEventCreate(&e));
    enqueue(own_stream_, &ev);
    SCN_CUDA_CHECK(cudaEventRecord(done_event_, own_stream_));
    forwarded_ = true;
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

  size_t workspace_bytes() const override {
    size_t b = arena_.bytes() + errors_.bytes() + counts_.bytes() + gemm_bytes();
    for (const auto& c : convs_)
      b += c.w.bytes() + c.bias.bytes() + c.w_tma.bytes() + c.mult.bytes() + c.qargs.bytes();
    for (const auto& in : inputs_) b += in.raw_feat.bytes() + in.raw_idx.bytes();
    for (const auto& o : out_compact_) b += o.bytes();
    return b;
  }

 private:
  // ---------------------------------------------------------------------------------------------
  // Build-time planning
  // ---------------------------------------------------------------------------------------------
  static int64_t padded(int64_t c) { return round_up(c, 16); }

  bool sole_consumer(int v, OpType op, int* node) const {
    if (is_output_[size_t(v)] || consumers_[size_t(v)].size() != 1) return false;
    const int n = consumers_[size_t(v)][0];
    if (graph_->nodes[size_t(n)].op != op) return false;
    *node = n;
    return true;
  }

  void plan_fusion() {
    const Graph& g = *graph_;
    absorbed_.assign(g.nodes.size(), false);
    conv_of_node_.assign(g.nodes.size(), -1);
    written_by_.assign(g.values.size(), -1);
    materialized_.assign(g.values.size(), true);
    for (size_t n = 0; n < g.nodes.size(); ++n) written_by_[size_t(g.nodes[n].output)] = int(n);
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      if (node.op != OpType::SparseConv) continue;
      convs_.emplace_back();
      ConvPlan& c = convs_.back();
      conv_of_node_[n] = int(convs_.size()) - 1;
      const ConvAttrs& a = node.conv;
      c.node = int(n);
      c.slot = an_.node_map[n];
      c.cin = a.in_channels;
      c.cout = a.out_channels;
      c.cin_p = int(padded(c.cin));
      c.cout_p = int(padded(c.cout));
      c.cout_w = int(round_up(c.cout_p, 128));
      c.K = a.kernel_size[0] * a.kernel_size[1] * a.kernel_size[2];
      c.act = to_act(a.activation);
      c.alpha = a.activation_alpha;
      int cur = node.output, next = -1;
      // conv -> Relu: the activation becomes ReLU (when it is None or already ReLU).
      while ((c.act == Act::None || c.act == Act::ReLU) && sole_consumer(cur, OpType::Relu, &next)) {
        c.act = Act::ReLU;
        c.absorbed.push_back(next);
        cur = g.nodes[size_t(next)].output;
      }
      // conv -> Add(conv, identity) [-> Relu]: residual in the epilogue.
      if (sole_consumer(cur, OpType::Add, &next)) {
        const Node& add = g.nodes[size_t(next)];
        const int id = add.inputs[0] == cur ? add.inputs[1] : add.inputs[0];
        const int id_writer = written_by_[size_t(id)];
        if (id != cur && id_writer < int(n)) {
          c.residual = id;
          c.add_node = next;
          c.add_conv_operand = add.inputs[0] == cur ? 0 : 1;
          c.absorbed.push_back(next);
          cur = add.output;
          if (sole_consumer(cur, OpType::Relu, &next)) {
            c.relu_after = true;
            c.absorbed.push_back(next);
            cur = g.nodes[size_t(next)].output;
          }
        }
      }
      c.out_value = cur;
      for (int a2 : c.absorbed) {
        absorbed_[size_t(a2)] = true;
        materialized_[size_t(g.nodes[size_t(a2)].output)] = false;
      }
      if (cur != node.output) materialized_[size_t(node.output)] = false;
      materialized_[size_t(cur)] = true;
      written_by_[size_t(cur)] = int(n);
      plan_conv_storage(c);
    }
    // Densify: fold the Transposes that follow a ScatterDense into its output layout.
    dense_perm_.assign(g.values.size(), {});
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      if (node.op != OpType::ScatterDense || absorbed_[n]) continue;
      std::vector<int> perm{0, 1, 2, 3, 4};
      int cur = node.output, next = -1;
      while (sole_consumer(cur, OpType::Transpose, &next)) {
        const Node& t = g.nodes[size_t(next)];
        std::vector<int> p(5);
        for (int j = 0; j < 5; ++j) p[size_t(j)] = perm[size_t(t.dims[size_t(j)])];
        perm = p;
        absorbed_[size_t(next)] = true;
        materialized_[size_t(cur)] = false;
        cur = t.output;
      }
      materialized_[size_t(cur)] = true;
      densify_out_[n] = cur;
      dense_perm_[size_t(cur)] = perm;
      written_by_[size_t(cur)] = int(n);
    }
    if (int8_) {
      plan_fp16_readers();
      plan_dual_outputs();
    }
    // Buffer groups: Reshape views its input; an in-place residual writes over the identity.
    group_.resize(g.values.size());
    std::iota(group_.begin(), group_.end(), 0);
    for (const Node& node : g.nodes)
      if (node.op == OpType::Reshape) group_[size_t(node.output)] = root(node.inputs[0]);
    for (ConvPlan& c : convs_) {
      if (c.residual < 0 || is_output_[size_t(c.residual)]) continue;
      // in place only when both rows have one layout (an int8 row over an fp16 one would race)
      if (q8(c.residual) != q8(c.out_value)) continue;
      bool only_before = true;
      for (int r : consumers_[size_t(c.residual)]) {
        const bool is_fused_add =
            std::find(c.absorbed.begin(), c.absorbed.end(), r) != c.absorbed.end();
        if (!is_fused_add && r >= c.node) only_before = false;
      }
      if (only_before) group_[size_t(c.out_value)] = root(c.residual);
    }
  }

  int root(int v) const {
    while (group_[size_t(v)] != v) v = group_[size_t(v)];
    return v;
  }

  // ---- INT8 storage (docs/int8.md) --------------------------------------------------------------
  /// True when value v is stored int8 (INT8 engines only).
  bool q8(int v) const { return int8_ && q_.values[size_t(v)].storage == int8::Storage::Int8; }
  float qrange(int v) const { return q_.values[size_t(v)].range; }
  /// Row stride of sparse value v in its elements: fp16 rows padded to 16 channels; int8 rows to 16
  /// (one m16n8k16 step) up to 16 channels, else to 32 (m16n8k32 steps).
  int64_t row_elems(int v) const {
    const int64_t c = graph_->values[size_t(v)].channels;
    return q8(v) ? int8_row(c) : padded(c);
  }
  static int64_t int8_row(int64_t c) { return c <= 16 ? 16 : round_up(c, 32); }
  size_t row_bytes(int v) const { return size_t(row_elems(v)) * (q8(v) ? 1 : 2); }

  int add_shadow(int v, int reader, bool to_q, float range) {
    Shadow sh;
    sh.value = v;
    sh.reader = reader;
    sh.to_q = to_q;
    sh.inv = to_q ? int8::inv_scale(range) : 0.f;
    const int64_t c = graph_->values[size_t(v)].channels;
    sh.stride = int(to_q ? int8_row(c) : padded(c));
    shadows_.push_back(sh);
    return int(shadows_.size()) - 1;
  }

  /// Kernel mode, input conversion and output layout of a conv (after fusion).
  void plan_conv_storage(ConvPlan& c) {
    const Node& node = graph_->nodes[size_t(c.node)];
    c.y_stride = int(row_elems(c.out_value));
    if (!int8_) return;
    const int8::ConvPlan& qp = q_.convs[size_t(c.node)];
    bool any_q = qp.int8 || q8(node.output) || q8(c.out_value);
    if (c.residual >= 0)
      any_q = any_q || q8(c.residual) || graph_->nodes[size_t(c.add_node)].quant.precision == Precision::Int8;
    c.mode = qp.int8 ? 2 : any_q ? 1 : 0;
    if (c.mode == 2) c.cin_p = int(int8_row(c.cin) / 2);  // 16-bit units of two int8 channels
    const int in = node.inputs[0];
    if (qp.int8 && !q8(in)) c.shadow = add_shadow(in, c.node, true, qp.input_range);
    if (!qp.int8 && q8(in)) c.shadow = add_shadow(in, c.node, false, 0.f);
  }

  /// Where the Concat / ScatterDense node n reads int8 storage, an fp16 copy (INT8 engines).
  void plan_fp16_readers() {
    const Graph& g = *graph_;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      if (node.op != OpType::Concat && node.op != OpType::ScatterDense) continue;
      for (size_t k = 0; k < node.inputs.size(); ++k)
        if (q8(node.inputs[k])) reader_shadow_[{int(n), int(k)}] = add_shadow(node.inputs[k], int(n), false, 0.f);
    }
  }

  /// An int8 conv reading an fp16 value that a conv writes gets the quantized copy from the
  /// writer's epilogue (a second store of quantize(fp16 value)) instead of a Convert step. The writer
  /// then needs the quantization-aware epilogue (an fp16 conv moves to mode 1).
  void plan_dual_outputs() {
    for (size_t k = 0; k < shadows_.size(); ++k) {
      Shadow& sh = shadows_[k];
      if (!sh.to_q || graph_->nodes[size_t(sh.reader)].op != OpType::SparseConv) continue;
      const int w = written_by_[size_t(sh.value)];
      if (w < 0 || conv_of_node_[size_t(w)] < 0) continue;
      ConvPlan& c = convs_[size_t(conv_of_node_[size_t(w)])];
      if (c.out_value != sh.value || c.dual >= 0) continue;
      c.dual = int(k);
      if (c.mode == 0) c.mode = 1;
      sh.producer = c.node;
    }
  }

  /// The pointer node n reads its input k through (a converted copy, or the value itself).
  const void* input_ptr(int n, int k) const {
    const auto it = reader_shadow_.find({n, k});
    if (it != reader_shadow_.end()) return shadows_[size_t(it->second)].ptr;
    return value_ptr(graph_->nodes[size_t(n)].inputs[size_t(k)]);
  }

  QOperand operand(int v) const {
    QOperand o;
    o.p = value_ptr(v);
    o.stride = int(row_elems(v));
    o.q = q8(v);
    o.s = o.q ? int8::scale(qrange(v)) : 0.f;
    return o;
  }

  void plan_capacities() {
    const Graph& g = *graph_;
    int64_t largest_bound = 0;
    for (const Node& n : g.nodes)
      if (n.op == OpType::SparseConv) largest_bound = std::max(largest_bound, n.conv.output_bound);
    const int64_t fallback = largest_bound > 0 ? largest_bound : kDefaultCapacity;
    const int64_t per_sample = options_.max_input_voxels > 0 ? options_.max_input_voxels : fallback;
    sites_.assign(size_t(an_.num_site_sets), SiteInfo{});
    for (int s = 0; s < an_.num_site_sets; ++s)
      if (an_.site_input[size_t(s)] >= 0) sites_[size_t(s)].cap_build = per_sample * options_.max_batch;
    for (const MapSlot& m : an_.maps) {
      if (m.kind != MapKind::Strided) continue;
      for (int d = 0; d < 3; ++d)
        SCN_CHECK(m.kernel_size[d] <= kMaxTapsPerAxis, g.source, ": ", g.describe(m.first_node), ": kernel_size ",
                  m.kernel_size[d], " along axis ", d, " is larger than the ", kMaxTapsPerAxis,
                  " taps per axis the CUDA backend supports for strided convolutions");
      int64_t ob = 0;
      for (int n : m.nodes) ob = std::max(ob, g.nodes[size_t(n)].conv.output_bound);
      SiteInfo& out = sites_[size_t(m.out_sites)];
      out.generated = true;
      // output_bound when given; otherwise the larger of the input capacity and the default
      // capacity, but never more than every input site spreading to all its output sites.
      int64_t fan = 1;
      for (int d = 0; d < 3; ++d) fan *= (m.kernel_size[d] + m.stride[d] - 1) / m.stride[d];
      const int64_t in_cap = sites_[size_t(m.in_sites)].cap_build;
      out.cap_build = ob > 0 ? ob * options_.max_batch
                             : std::min(in_cap * fan, std::max(in_cap, fallback * options_.max_batch));
    }
    // Kernel choice per conv.
    for (ConvPlan& c : convs_) {
      c.gemm = force_gemm_;
      auto heuristic = [&](int split) {
        return c.mode == 0 ? choose_config(c.cin_p, c.cout_p, cc_major_, c.K, split)
                           : choose_config_q(c.cin_p, c.cout_p, cc_major_, c.K, c.mode);
      };
      if (!forced_cfg_.empty()) {
        const int id = find_config(forced_cfg_);
        SCN_CHECK(id >= 0, "SCN_CUDA_IGEMM='", forced_cfg_, "' names no compiled implicit-GEMM configuration");
        c.cfg = igemm_config_fits(id, c.cin_p, cc_major_, c.K, c.mode) ? id : heuristic(1);
      } else {
        c.cfg = heuristic(split_for(c));
      }
      SCN_CHECK(c.cfg >= 0, graph_->source, ": ", graph_->describe(c.node), ": no implicit-GEMM configuration for ",
                c.cin, " -> ", c.cout, " channels (kernel mode ", c.mode, ")");
      c.split = igemm_config(c.cfg).split;
      upload_weights(c);
    }
  }

  /// Split-K class of a conv, fixed by the layer's shape so that every engine sums in the same order
  /// (the tuner only picks among the configs of that class). Default: 128 -> 128-channel (or wider)
  /// 3x3x3 fp16 convs on sm_90 split their offsets over two CTAs; few rows (CenterPoint's last level:
  /// 10k rows, 81-162 tiles) leave SMs idle otherwise (H200: 39-43 -> 34-37 us per conv).
  /// SCN_CUDA_SPLIT=1|2|4 sets the class of every fp16 conv with >= 64 output channels instead.
  int split_for(const ConvPlan& c) const {
    if (cc_major_ < 9 || c.K > 32 || c.mode != 0) return 1;
    if (deep_split_ > 0) return c.cout_p >= 64 ? deep_split_ : 1;
    return c.cin_p >= 128 && c.cout_p >= 128 && c.K >= 27 ? 2 : 1;
  }

  void upload_weights(ConvPlan& c) {
    const ConvAttrs& a = graph_->nodes[size_t(c.node)].conv;
    // [K][cout_w][cin_p] in 16-bit units: fp16 weights, or pairs of int8 weights (mode 2)
    std::vector<uint16_t> w(size_t(c.K) * size_t(c.cout_w) * size_t(c.cin_p), 0);
    if (c.mode == 2) {
      // int8::plan's q_w [K][Cin][Cout] -> rows of 2 * cin_p int8 per output channel
      const int8::ConvPlan& qp = q_.convs[size_t(c.node)];
      auto* w8 = reinterpret_cast<int8_t*>(w.data());
      const size_t row = size_t(c.cin_p) * 2;
      for (int k = 0; k < c.K; ++k)
        for (int ci = 0; ci < c.cin; ++ci)
          for (int co = 0; co < c.cout; ++co)
            w8[(size_t(k) * size_t(c.cout_w) + size_t(co)) * row + size_t(ci)] =
                qp.weight[(size_t(k) * size_t(c.cin) + size_t(ci)) * size_t(c.cout) + size_t(co)];
      std::vector<float> m(size_t(c.cout_w), 0.f);
      for (int co = 0; co < c.cout; ++co) m[size_t(co)] = qp.multiplier[size_t(co)];
      c.mult.alloc(m.size() * 4);
      SCN_CUDA_CHECK(cudaMemcpy(c.mult.get(), m.data(), m.size() * 4, cudaMemcpyHostToDevice));
    } else {
      for (int co = 0; co < c.cout; ++co)
        for (int k = 0; k < c.K; ++k)
          for (int ci = 0; ci < c.cin; ++ci) {
            const float v = tensor_float(a.weight, (int64_t(co) * c.K + k) * c.cin + ci);
            w[(size_t(k) * size_t(c.cout_w) + size_t(co)) * size_t(c.cin_p) + size_t(ci)] = float_to_half(v);
          }
    }
    std::vector<float> b(size_t(c.cout_w), 0.f);
    if (a.bias.defined())
      for (int co = 0; co < c.cout; ++co) b[size_t(co)] = tensor_float(a.bias, co);
    c.w.alloc(w.size() * 2);
    c.bias.alloc(b.size() * 4);
    SCN_CUDA_CHECK(cudaMemcpy(c.w.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    if (!c.gemm && igemm_config(c.cfg).tma) {
      const std::vector<uint16_t> t = igemm_tile_weights(c.cfg, w, c.K, c.cout_w, c.cin_p, c.cout_p);
      c.w_tma.alloc(t.size() * 2);
      SCN_CUDA_CHECK(cudaMemcpy(c.w_tma.get(), t.data(), t.size() * 2, cudaMemcpyHostToDevice));
    }
    SCN_CUDA_CHECK(cudaMemcpy(c.bias.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    if (c.mode != 0) c.qargs.alloc(sizeof(QEpilogue));  // filled by place_arena (it holds arena addresses)
  }

  /// The quantization-aware epilogue's parameters of conv c (docs/int8.md): storage and grids of
  /// its output, of its own value and of the residual, and the fused Add's operand grids.
  QEpilogue q_epilogue(const ConvPlan& c) const {
    const Graph& g = *graph_;
    const Node& node = g.nodes[size_t(c.node)];
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
      const Node& add = g.nodes[size_t(c.add_node)];
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

  void plan_steps() {
    const Graph& g = *graph_;
    steps_.clear();
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      if (absorbed_[n]) continue;
      switch (node.op) {
        case OpType::Input: {
          const auto it = std::find(g.inputs.begin(), g.inputs.end(), node.output);
          steps_.push_back({StepKind::Input, int(n), int(it - g.inputs.begin())});
          break;
        }
        case OpType::SparseConv: {
          const int m = an_.node_map[n];
          if (an_.maps[size_t(m)].first_node == int(n)) steps_.push_back({StepKind::Map, int(n), m});
          const int sh = convs_[size_t(conv_of_node_[n])].shadow;
          if (sh >= 0 && shadows_[size_t(sh)].producer < 0) steps_.push_back({StepKind::Convert, int(n), sh});
          steps_.push_back({StepKind::Conv, int(n), m});
          break;
        }
        case OpType::Add: steps_.push_back({StepKind::Add, int(n), -1}); break;
        case OpType::Relu: steps_.push_back({StepKind::Relu, int(n), -1}); break;
        case OpType::Concat:
        case OpType::ScatterDense:
          for (size_t k = 0; k < node.inputs.size(); ++k) {
            const auto it = reader_shadow_.find({int(n), int(k)});
            if (it != reader_shadow_.end()) steps_.push_back({StepKind::Convert, int(n), it->second});
          }
          steps_.push_back({node.op == OpType::Concat ? StepKind::Concat : StepKind::Densify, int(n), -1});
          break;
        case OpType::Transpose: steps_.push_back({StepKind::Permute, int(n), -1}); break;
        case OpType::Reshape: break;
      }
    }
    // Kernel maps depend only on coordinates: with a map stream, slot j of the build order is
    // released when the main stream reaches the first conv of slot j - lookahead (the slots before
    // right after the inputs) and built on the side stream while earlier levels convolve.
    release_node_.assign(an_.maps.size(), 0);
    map_order_.clear();
    for (const Step& st : steps_)
      if (st.kind == StepKind::Map) map_order_.push_back(st.slot);
    bool inputs_first = true;
    bool seen_other = false;
    for (const Step& st : steps_) {
      if (st.kind == StepKind::Input && seen_other) inputs_first = false;
      if (st.kind != StepKind::Input) seen_other = true;
    }
    if (!inputs_first || force_gemm_) lookahead_ = 0;
    for (size_t j = 0; j < map_order_.size(); ++j) {
      const int m = map_order_[j];
      release_node_[size_t(m)] =
          (lookahead_ > 0 && j >= size_t(lookahead_)) ? an_.maps[size_t(map_order_[j - size_t(lookahead_)])].first_node
          : lookahead_ > 0                           ? 0
                                                     : an_.maps[size_t(m)].first_node;
    }
    release_base_ = release_node_;
  }

  void prepare_inputs() {
    const Graph& g = *graph_;
    inputs_ = std::vector<InputSlot>(g.inputs.size());
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      InputSlot& in = inputs_[k];
      in.channels = g.values[size_t(g.inputs[k])].channels;
      const int64_t cap = sites_[size_t(an_.value_sites[size_t(g.inputs[k])])].cap_build;
      in.raw_feat.alloc(size_t(cap) * size_t(in.channels) * 2 + 16);  // fp16; grows once for fp32 inputs
      in.raw_idx.alloc(size_t(cap) * 16 + 16);
      in.host_feat.alloc(size_t(cap) * size_t(in.channels) * 4 + 16);
      in.host_idx.alloc(size_t(cap) * 16 + 16);
      in.host_count.alloc(16);
      SCN_CUDA_CHECK(cudaEventCreateWithFlags(&in.copied, cudaEventDisableTiming));
    }
    out_compact_ = std::vector<DevMem>(g.outputs.size());
  }

  // ---------------------------------------------------------------------------------------------
  // Arena plan for the bound grids / batch
  // ---------------------------------------------------------------------------------------------
  void ensure_planned() {
    std::vector<Int3> grids;
    for (const auto& in : inputs_) grids.push_back(in.grid);
    if (planned_ && grids == planned_grids_ && batch_ == planned_batch_) return;
    if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
    SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
    plan_arena(grids, batch_);
    planned_grids_ = grids;
    planned_batch_ = batch_;
    planned_ = true;
    exec_valid_ = false;
  }

  void plan_arena(const std::vector<Int3>& grids, int batch) {
    shapes_ = infer_shapes(*graph_, an_, grids, batch);
    release_node_ = release_base_;
    std::vector<BufferRequest> req;
    std::vector<std::string> req_label;
    collect_requests(batch, req, req_label);
    // Map builds released early only where it pays: a map released `lookahead_` slots ahead is
    // alive beside the previous level's activations. From the last map backwards, release it one
    // slot ahead instead when that lowers the most bytes alive at once (the deep levels have small
    // maps and long convolutions, so the map stream keeps its head start where it needs it).
    if (lookahead_ > 1) {
      size_t best = peak_live_bytes(req, 256);
      for (size_t j = map_order_.size(); j-- > size_t(lookahead_);) {
        const int m = map_order_[j];
        const int old = release_node_[size_t(m)];
        const int later = an_.maps[size_t(map_order_[j - 1])].first_node;
        if (later <= old) continue;
        release_node_[size_t(m)] = later;
        std::vector<BufferRequest> r2;
        std::vector<std::string> l2;
        collect_requests(batch, r2, l2);
        const size_t p = peak_live_bytes(r2, 256);
        if (p < best)
          best = p;
        else
          release_node_[size_t(m)] = old;
      }
      req.clear();
      req_label.clear();
      collect_requests(batch, req, req_label);  // the request ids of the kept release points
    }
    place_arena(batch, req, req_label);
  }

  /// Every buffer the forward needs (site indices, kernel maps, row orders, activations, input
  /// staging) with its lifetime in node steps under the current release points; records the
  /// request ids in sites_, map_req_, sort_ and value_req_.
  void collect_requests(int batch, std::vector<BufferRequest>& req, std::vector<std::string>& req_label) {
    const Graph& g = *graph_;
    const int end = int(g.nodes.size());
    std::string label;
    auto add_req = [&](size_t bytes, int first, int last) {
      req.push_back({bytes, first, std::max(first, last)});
      req_label.push_back(label);
      return int(req.size()) - 1;
    };

    // Site sets: capacities clipped by the grid, readers of the index and of the coordinates.
    for (int s = 0; s < an_.num_site_sets; ++s) {
      SiteInfo& si = sites_[size_t(s)];
      si.grid = shapes_.site_shape[size_t(s)];
      const int64_t cells = int64_t(batch) * si.grid[0] * si.grid[1] * si.grid[2];
      si.cap = std::min(si.cap_build, cells);
      if (an_.site_input[size_t(s)] >= 0) si.cap = si.cap_build;  // input overflow is rejected on the host
      si.words = (cells + 63) / 64;
      SCN_CHECK(size_t(si.words) * 10 <= kMaxBitmapBytes, g.source, ": the grid ", int3_string(si.grid),
                " x batch ", batch, " needs a ", si.words * 10 / (1 << 20),
                " MiB site bitmap, more than the CUDA backend's limit of ", kMaxBitmapBytes >> 20, " MiB");
      si.producer_step = an_.site_producer[size_t(s)] >= 0 ? an_.site_producer[size_t(s)] : 0;
      si.index_last = si.producer_step;
      si.coords_last = si.producer_step;
    }
    for (int s = 0; s < an_.num_site_sets; ++s)
      if (an_.site_input[size_t(s)] < 0) {
        // generated: produced at the first conv of its strided slot
        for (const MapSlot& m : an_.maps)
          if (m.kind == MapKind::Strided && m.out_sites == s)
            sites_[size_t(s)].producer_step = release_node_[size_t(&m - &an_.maps[0])];
      }
    auto read_index = [&](int s, int step) {
      sites_[size_t(s)].index_last = std::max(sites_[size_t(s)].index_last, step);
      sites_[size_t(s)].coords_last = std::max(sites_[size_t(s)].coords_last, step);
    };
    for (const MapSlot& m : an_.maps) {
      switch (m.kind) {
        case MapKind::Subm: read_index(m.in_sites, m.first_node); break;
        case MapKind::Strided:
          read_index(m.in_sites, m.first_node);
          read_index(m.out_sites, m.first_node);
          break;
        case MapKind::Inverse: {
          const MapSlot& src = an_.maps[size_t(m.source_slot)];
          read_index(src.in_sites, m.first_node);
          read_index(src.out_sites, m.first_node);
          break;
        }
      }
    }
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (g.nodes[n].op == OpType::ScatterDense && !absorbed_[n])
        read_index(an_.value_sites[size_t(g.nodes[n].inputs[0])], int(n));
    for (int v : g.outputs)
      if (g.values[size_t(v)].sparse) {
        const int s = an_.value_sites[size_t(v)];
        sites_[size_t(s)].coords_last = end;
      }
    for (int s = 0; s < an_.num_site_sets; ++s) {
      SiteInfo& si = sites_[size_t(s)];
      const int p = si.producer_step;
      label = detail::concat("sites", s, " coords");
      si.req_coords = add_req(size_t(si.cap) * 16, p, si.coords_last);
      label = detail::concat("sites", s, " bits/rank/perm");
      si.req_bits = add_req(size_t(si.words) * 8, p, si.index_last);
      si.req_rank_local = add_req(size_t(si.words) * 2, p, si.index_last);
      si.req_rank_block = add_req(size_t(rank_blocks(si.words)) * 4, p, si.index_last);
      si.req_perm = si.generated ? -1 : add_req(size_t(si.cap) * 4, p, si.index_last);
    }
    // Kernel maps: out_in [cap_out x K], alive from the slot's build to its last conv.
    map_req_.assign(an_.maps.size(), -1);
    for (size_t m = 0; m < an_.maps.size(); ++m) {
      const MapSlot& ms = an_.maps[m];
      int last = ms.first_node;
      for (int n : ms.nodes) last = std::max(last, n);
      label = detail::concat("map", m, " (", g.nodes[size_t(ms.first_node)].name, ")");
      map_req_[m] = add_req(size_t(sites_[size_t(ms.out_sites)].cap) * size_t(ms.kernel_volume()) * 4,
                            release_node_[m], last);
    }
    // Row order by neighbour mask (K <= 32): masks and bucket scratch while the map is built, the
    // order for as long as its convs run.
    sort_.assign(an_.maps.size(), SortPlan{});
    for (size_t j = 0; j < map_order_.size() && sort_rows_ != RowSort::Off && !force_gemm_; ++j) {
      const size_t m = size_t(map_order_[j]);
      const MapSlot& ms = an_.maps[m];
      const int K = ms.kernel_volume();
      if (K > 32 || K < 2) continue;
      if (sort_rows_ == RowSort::Auto) {
        int cin_max = 0;
        for (int n : ms.nodes) cin_max = std::max(cin_max, int(padded(g.nodes[size_t(n)].conv.in_channels)));
        if (j == 0 || cin_max > 32 || K < 8) continue;
      }
      SortPlan& sp = sort_[m];
      sp.on = true;
      sp.cap = sites_[size_t(ms.out_sites)].cap;
      sp.key.K = K;
      sp.key.k2 = ms.kernel_size[2];
      sp.key.with_positions = sort_rows_ == RowSort::AllWithPositions;
      int last = ms.first_node;
      for (int n : ms.nodes) last = std::max(last, n);
      const int first = release_node_[m];
      label = detail::concat("map", m, " masks");
      sp.req_masks = add_req(size_t(sp.cap) * 4, first, ms.first_node);
      label = detail::concat("map", m, " bucket scratch");
      sp.req_scratch = add_req(size_t(2 * kRowBuckets) * 4, first, ms.first_node);
      label = detail::concat("map", m, " row order");
      sp.req_order = add_req(size_t(sp.cap) * 4, first, last);
    }
    // Activations: one buffer per group, written at its writer's step, alive to the last reader.
    const size_t nv = g.values.size();
    std::vector<int> first(nv, INT_MAX), last(nv, -1);
    std::vector<size_t> bytes(nv, 0);
    for (size_t v = 0; v < nv; ++v) {
      const int w = written_by_[v];
      const bool materialised = w >= 0 && materialized_[v];
      if (!materialised) continue;
      const int r = root(int(v));
      first[size_t(r)] = std::min(first[size_t(r)], w);
      int lu = an_.last_use[v];
      // a residual read by a fused conv is read at the conv
      last[size_t(r)] = std::max({last[size_t(r)], lu, w});
      const Value& val = g.values[v];
      size_t b;
      if (val.sparse) {
        b = size_t(sites_[size_t(an_.value_sites[v])].cap) * row_bytes(int(v));
      } else {
        int64_t e = 1;
        for (int64_t d : shapes_.dense_shape[v]) e *= d;
        b = size_t(e) * 2;
      }
      bytes[size_t(r)] = std::max(bytes[size_t(r)], b);
    }
    // Values read through a Reshape view: their group lives as long as the view's readers.
    for (size_t v = 0; v < nv; ++v) {
      const int r = root(int(v));
      if (first[size_t(r)] == INT_MAX) continue;
      last[size_t(r)] = std::max(last[size_t(r)], an_.last_use[v]);
    }
    value_req_.assign(nv, -1);
    for (size_t v = 0; v < nv; ++v)
      if (first[v] != INT_MAX) {
        label = detail::concat("value '", g.values[v].name, "'");
        value_req_[v] = add_req(bytes[v], first[v], last[v]);
      }
    // INT8 engines: converted copies, alive at their reader only.
    for (Shadow& sh : shadows_) {
      label = detail::concat("convert '", g.values[size_t(sh.value)].name, "' for ", g.nodes[size_t(sh.reader)].name);
      const size_t cap = size_t(sites_[size_t(an_.value_sites[size_t(sh.value)])].cap);
      sh.req = add_req(cap * size_t(sh.stride) * (sh.to_q ? 1 : 2), sh.producer >= 0 ? sh.producer : sh.reader,
                       sh.reader);
    }

  }

  /// Offsets for the requests in one arena, and every device pointer into it.
  void place_arena(int batch, const std::vector<BufferRequest>& req, const std::vector<std::string>& req_label) {
    const Graph& g = *graph_;
    const size_t nv = g.values.size();
    const MemoryPlan plan = plan_memory(req, 256);
    if (std::getenv("SCN_CUDA_PLAN_TRACE")) {
      std::fprintf(stderr, "[plan] arena %.2f MB (most bytes alive at one step: %.2f MB), %zu buffers\n",
                   double(plan.total) / 1e6, double(peak_live_bytes(req, 256)) / 1e6, req.size());
      for (size_t i = 0; i < req.size(); ++i)
        std::fprintf(stderr, "[plan] %3zu %-28s %10.3f MB  steps %3d..%3d  @%.2f MB\n", i, req_label[i].c_str(),
                     double(req[i].bytes) / 1e6, req[i].first, req[i].last, double(plan.offsets[i]) / 1e6);
    }
    destroy_graph();
    arena_.reset();
    arena_.alloc(plan.total + 256);
    auto* base = arena_.get<uint8_t>();
    auto at = [&](int r) -> void* { return r < 0 ? nullptr : base + plan.offsets[size_t(r)]; };

    for (int s = 0; s < an_.num_site_sets; ++s) {
      SiteInfo& si = sites_[size_t(s)];
      SiteIndex& d = si.dev;
      d.bits = static_cast<uint64_t*>(at(si.req_bits));
      d.rank_local = static_cast<uint16_t*>(at(si.req_rank_local));
      d.rank_block = static_cast<uint32_t*>(at(si.req_rank_block));
      d.perm = static_cast<int32_t*>(at(si.req_perm));
      d.coords = static_cast<int4*>(at(si.req_coords));
      d.count = counts_.get<int>() + s;
      d.words = si.words;
      d.cap = si.cap;
      d.s0 = si.grid[0];
      d.s1 = si.grid[1];
      d.s2 = si.grid[2];
      d.batch = batch;
    }
    map_ptr_.assign(an_.maps.size(), nullptr);
    for (size_t m = 0; m < an_.maps.size(); ++m) map_ptr_[m] = static_cast<int32_t*>(at(map_req_[m]));
    for (SortPlan& sp : sort_) {
      if (!sp.on) continue;
      sp.masks = static_cast<uint32_t*>(at(sp.req_masks));
      sp.scratch = static_cast<uint32_t*>(at(sp.req_scratch));
      sp.order = static_cast<int32_t*>(at(sp.req_order));
    }
    value_ptr_.assign(nv, nullptr);
    for (size_t v = 0; v < nv; ++v) value_ptr_[v] = at(value_req_[size_t(root(int(v)))]);
    for (Shadow& sh : shadows_) sh.ptr = at(sh.req);
    for (ConvPlan& c : convs_)  // epilogue parameters, with the second output's arena address
      if (c.mode != 0) {
        const QEpilogue q = q_epilogue(c);
        SCN_CUDA_CHECK(cudaMemcpy(c.qargs.get(), &q, sizeof(QEpilogue), cudaMemcpyHostToDevice));
      }
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const int v = g.outputs[k];
      const Value& val = g.values[size_t(v)];
      if (val.sparse && (padded(val.channels) != val.channels || q8(v)))
        out_compact_[k].alloc(size_t(sites_[size_t(an_.value_sites[size_t(v)])].cap) * size_t(val.channels) * 2);
    }
    if (force_gemm_) plan_gemm_workspace();
  }

  void plan_gemm_workspace() {
    size_t pairs = 0, acc = 0, gin = 0, pout = 0, counts = 0;
    for (const ConvPlan& c : convs_) {
      const MapSlot& m = an_.maps[size_t(c.slot)];
      const int64_t cap = sites_[size_t(m.out_sites)].cap;
      pairs = std::max(pairs, size_t(cap) * size_t(c.K));
      counts = std::max(counts, size_t((cap + 255) / 256) * size_t(c.K));
      acc = std::max(acc, size_t(cap) * size_t(c.cout_p));
      gin = std::max(gin, size_t(kGemmChunk) * size_t(c.cin_p));
      pout = std::max(pout, size_t(kGemmChunk) * size_t(c.cout_p));
    }
    g_in_idx_.alloc(pairs * 4 + 16);
    g_out_idx_.alloc(pairs * 4 + 16);
    g_counts_.alloc(counts * 4 + 16);
    g_offsets_.alloc(counts * 4 + 16);
    g_acc_.alloc(acc * 4 + 16);
    g_G_.alloc(gin * 2 + 16);
    g_P_.alloc(pout * 4 + 16);
    g_host_counts_.alloc(counts * 4 + 16);
    g_host_offsets_.alloc(counts * 4 + 16);
    g_cublas_ws_.alloc(size_t(32) << 20);
    if (!cublas_) {
      SCN_CHECK(cublasCreate(&cublas_) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
    }
    SCN_CHECK(cublasSetWorkspace(cublas_, g_cublas_ws_.get(), g_cublas_ws_.bytes()) == CUBLAS_STATUS_SUCCESS,
              "cublasSetWorkspace failed");
  }

  size_t gemm_bytes() const {
    return g_in_idx_.bytes() + g_out_idx_.bytes() + g_counts_.bytes() + g_offsets_.bytes() + g_acc_.bytes() +
           g_G_.bytes() + g_P_.bytes() + g_cublas_ws_.bytes();
  }

  void* value_ptr(int v) const { return value_ptr_[size_t(v)]; }

  int64_t read_count(int s) const {
    int n = 0;
    SCN_CUDA_CHECK(cudaMemcpy(&n, sites_[size_t(s)].dev.count, sizeof(int), cudaMemcpyDeviceToHost));
    return n;
  }

  // ---------------------------------------------------------------------------------------------
  // Execution
  // ---------------------------------------------------------------------------------------------
  /// Times every candidate tile configuration of every conv on the bound input (one pass over
  /// the steps on the engine's stream, each conv's candidates timed with events, then the
  /// fastest run for real so later layers see real data) and keeps the fastest per conv. All
  /// candidates sum in the same order, so the choice never changes the results.
  void autotune() {
    tuned_ = true;
    const char* trace = std::getenv("SCN_CUDA_AUTOTUNE_TRACE");
    size_t scratch_bytes = 16;
    for (const ConvPlan& c : convs_)
      scratch_bytes = std::max(scratch_bytes, size_t(sites_[size_t(an_.maps[size_t(c.slot)].out_sites)].cap) *
                                                  size_t(c.cout_p) * 2);
    DevMem scratch;
    scratch.alloc(scratch_bytes);
    cudaEvent_t e0, e1;
    SCN_CUDA_CHECK(cudaEventCreate(&e0));
    SCN_CUDA_CHECK(cudaEventCreate(&e1));
    stage_inputs(own_stream_);
    for (const Step& st : steps_) {
      if (st.kind != StepKind::Conv) {
        run_step(st, own_stream_);
        continue;
      }
      ConvPlan& c = convs_[size_t(conv_of_node_[size_t(st.node)])];
      const std::vector<int> cands = tune_candidates(c.cin_p, c.cout_p, cc_major_, c.K, c.split, c.mode);
      int best = c.cfg;
      double best_ms = 1e30;
      DevMem best_wt;
      std::vector<uint16_t> w_host;
      for (int id : cands) {
        if (std::find(tune_skip_.begin(), tune_skip_.end(), id) != tune_skip_.end()) continue;
        DevMem wt;
        ConvArgs a = conv_args(c);
        if (igemm_config(id).tma) {
          if (w_host.empty()) {
            w_host.resize(size_t(c.K) * size_t(c.cout_w) * size_t(c.cin_p));
            SCN_CUDA_CHECK(cudaMemcpy(w_host.data(), c.w.get(), w_host.size() * 2, cudaMemcpyDeviceToHost));
          }
          const std::vector<uint16_t> t = igemm_tile_weights(id, w_host, c.K, c.cout_w, c.cin_p, c.cout_p);
          wt.alloc(t.size() * 2);
          SCN_CUDA_CHECK(cudaMemcpy(wt.get(), t.data(), t.size() * 2, cudaMemcpyHostToDevice));
          a.w_tma = wt.get();
        } else {
          a.w_tma = nullptr;
        }
        if (a.residual && a.residual == a.y) a.y = scratch.get();  // in place: keep the identity intact
        launch_igemm(id, a, sm_count_, own_stream_);  // warm-up
        launch_igemm(id, a, sm_count_, own_stream_);
        // the median of 11 launches: candidates are often within 1-2 us, and a median of 5 picked
        // a slower tile for some layers from run to run
        std::vector<float> t(11);
        for (float& v : t) {
          SCN_CUDA_CHECK(cudaEventRecord(e0, own_stream_));
          launch_igemm(id, a, sm_count_, own_stream_);
          SCN_CUDA_CHECK(cudaEventRecord(e1, own_stream_));
          SCN_CUDA_CHECK(cudaEventSynchronize(e1));
          SCN_CUDA_CHECK(cudaEventElapsedTime(&v, e0, e1));
        }
        std::sort(t.begin(), t.end());
        const float med = t[t.size() / 2];
        if (trace)
          std::fprintf(stderr, "[autotune] %s %s %.4f ms\n", graph_->nodes[size_t(c.node)].name.c_str(),
                       igemm_config(id).name, double(med));
        if (med < best_ms) {
          best_ms = med;
          best = id;
          best_wt = std::move(wt);
        }
      }
      c.cfg = best;
      c.w_tma = std::move(best_wt);
      c.tuned = true;
      run_step(st, own_stream_);
    }
    SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
    for (ConvPlan& c : convs_)
      if (!c.gemm && igemm_config(c.cfg).tma) c.w.reset();  // TMA kernels read only the tiled copy
    SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    exec_valid_ = false;
  }

  void stage_inputs(cudaStream_t s) {
    for (size_t k = 0; k < inputs_.size(); ++k) {
      InputSlot& in = inputs_[k];
      const SiteInfo& si = sites_[size_t(an_.value_sites[size_t(graph_->inputs[k])])];
      if (in.on_device) {
        const size_t fb = size_t(in.n) * size_t(in.channels) * (in.raw_fp32 ? 4 : 2);
        if (fb) SCN_CUDA_CHECK(cudaMemcpyAsync(in.raw_feat.get(), in.dev_features.data(), fb, cudaMemcpyDeviceToDevice, s));
        if (in.n)
          SCN_CUDA_CHECK(cudaMemcpyAsync(in.raw_idx.get(), in.dev_indices.data(), size_t(in.n) * 16,
                                         cudaMemcpyDeviceToDevice, s));
        launch_set_count(si.dev.count, int(in.n), s);
      } else if (s != own_stream_) {
        // the host data (and its count) were copied on the engine's stream by set_input
        SCN_CUDA_CHECK(cudaStreamWaitEvent(s, in.copied, 0));
      }
    }
  }

  void destroy_graph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
    exec_valid_ = false;
  }

  void capture(cudaStream_t s) {
    destroy_graph();
    if (capture_stream_) s = capture_stream_;  // capture records the stream's priority in every kernel node
    SCN_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      enqueue(s, nullptr);
    } catch (...) {
      cudaStreamEndCapture(s, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    SCN_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    const cudaError_t e =
        cudaGraphInstantiate(&exec_, graph, capture_stream_ ? cudaGraphInstantiateFlagUseNodePriority : 0);
    cudaGraphDestroy(graph);
    SCN_CUDA_CHECK(e);
    exec_valid_ = true;
  }

  void enqueue(cudaStream_t s, std::vector<cudaEvent_t>* ev) {
    if (ev || lookahead_ == 0) {  // profiling, or no map stream: every step in order on `s`
      for (size_t i = 0; i < steps_.size(); ++i) {
        if (ev) SCN_CUDA_CHECK(cudaEventRecord((*ev)[i], s));
        run_step(steps_[i], s);
      }
      if (ev) SCN_CUDA_CHECK(cudaEventRecord(ev->back(), s));
      return;
    }
    // Map builds on the side stream, released at their release node, joined before their first conv,
    // except the first map: the first conv needs it at once, so it is built on `s`, beside the map
    // stream's start on the next maps. Convs launch programmatically (launch_igemm) unless the kernel
    // before them on `s` wrote their map.
    const bool pdl = pdl_ > 0 && cc_major_ >= 9;
    const int inline_map = map_order_.empty() ? -1 : map_order_[0];
    size_t next_build = 0;
    bool inputs_done = false;
    bool map_just_built = false;
    bool side_used = false;  // (joining a stream with no captured work is an error in graph capture)
    auto release_up_to = [&](int node) {
      while (next_build < map_order_.size() && release_node_[size_t(map_order_[next_build])] <= node) {
        const int m = map_order_[next_build++];
        if (m == inline_map) continue;
        side_used = true;
        SCN_CUDA_CHECK(cudaEventRecord(ev_release_[size_t(m)], s));
        SCN_CUDA_CHECK(cudaStreamWaitEvent(side_stream_, ev_release_[size_t(m)], 0));
        run_step(Step{StepKind::Map, an_.maps[size_t(m)].first_node, m}, side_stream_);
        SCN_CUDA_CHECK(cudaEventRecord(ev_built_[size_t(m)], side_stream_));
      }
    };
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& st = steps_[i];
      if (st.kind != StepKind::Input && !inputs_done) {
        inputs_done = true;
        release_up_to(0);
      }
      if (st.kind == StepKind::Map) {
        if (st.slot == inline_map) {
          run_step(st, s);
          map_just_built = true;
        }
        continue;
      }
      if (inputs_done) release_up_to(st.node);
      if (st.kind == StepKind::Conv && st.slot != inline_map && an_.maps[size_t(st.slot)].first_node == st.node)
        SCN_CUDA_CHECK(cudaStreamWaitEvent(s, ev_built_[size_t(st.slot)], 0));
      run_step(st, s, pdl && !map_just_built);
      map_just_built = false;
    }
    if (!inputs_done) release_up_to(0);
    release_up_to(INT_MAX);
    if (side_used) {
      SCN_CUDA_CHECK(cudaEventRecord(ev_join_, side_stream_));
      SCN_CUDA_CHECK(cudaStreamWaitEvent(s, ev_join_, 0));
    }
  }

  ErrSlot* err_of(int node) const { return errors_.get<ErrSlot>() + size_t(node) * kNumErrKinds; }

  static MapGeom geom_of(const MapSlot& m) {
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

  /// Enqueues one step on `s`. `pdl`: a conv may launch programmatically (launch_igemm), i.e. the
  /// kernel before it on `s` did not write its map (maps on the map stream).
  void run_step(const Step& st, cudaStream_t s, bool pdl = false) {
    const Graph& g = *graph_;
    switch (st.kind) {
      case StepKind::Input: {
        const InputSlot& in = inputs_[size_t(st.slot)];
        const int v = g.inputs[size_t(st.slot)];
        SiteInfo& si = sites_[size_t(an_.value_sites[size_t(v)])];
        SCN_CUDA_CHECK(cudaMemsetAsync(si.dev.bits, 0, size_t(si.words) * 8, s));
        launch_input_sites_features(in.raw_idx.get<int32_t>(), in.raw_feat.get(), in.raw_fp32, in.channels,
                                    int(padded(in.channels)), value_ptr(v), si.dev, err_of(st.node), sm_count_, s);
        launch_rank(si.dev, false, nullptr, sm_count_, s);
        launch_build_perm(si.dev, sm_count_, s);
        return;
      }
      case StepKind::Map: {
        const MapSlot& m = an_.maps[size_t(st.slot)];
        const MapGeom geom = geom_of(m);
        int32_t* out_in = map_ptr_[size_t(st.slot)];
        switch (m.kind) {
          case MapKind::Subm:
            launch_subm_map(sites_[size_t(m.in_sites)].dev, geom, out_in, sort_[size_t(st.slot)].masks, subm_map_,
                            sm_count_, s);
            break;
          case MapKind::Strided: {
            SiteInfo& in = sites_[size_t(m.in_sites)];
            SiteInfo& out = sites_[size_t(m.out_sites)];
            SCN_CUDA_CHECK(cudaMemsetAsync(out.dev.bits, 0, size_t(out.words) * 8, s));
            launch_strided_mark(in.dev, out.dev, geom, sm_count_, s);
            launch_rank(out.dev, true, err_of(st.node), sm_count_, s);
            launch_emit_coords(out.dev, sm_count_, s);
            launch_strided_map(in.dev, out.dev, geom, out_in, sort_[size_t(st.slot)].masks, strided_map_,
                               sm_count_, s);
            break;
          }
          case MapKind::Inverse: {
            const MapSlot& src = an_.maps[size_t(m.source_slot)];
            launch_inverse_map(sites_[size_t(src.in_sites)].dev, sites_[size_t(src.out_sites)].dev, geom, out_in,
                               sort_[size_t(st.slot)].masks,
                               sm_count_, s);
            break;
          }
        }
        const SortPlan& sp = sort_[size_t(st.slot)];
        if (sp.on)
          launch_bucket_rows(sp.masks, sites_[size_t(m.out_sites)].dev.count, sp.cap, sp.key, sp.scratch, sp.order,
                             sm_count_, s);
        return;
      }
      case StepKind::Conv: {
        const ConvPlan& c = convs_[size_t(conv_of_node_[size_t(st.node)])];
        const ConvArgs a = conv_args(c);
        if (c.gemm)
          run_gemm_conv(c, a, s);
        else
          launch_igemm(c.cfg, a, sm_count_, s, pdl);
        return;
      }
      case StepKind::Add: {
        const Node& node = g.nodes[size_t(st.node)];
        const int out = node.output;
        const SiteInfo& si = sites_[size_t(an_.value_sites[size_t(out)])];
        if (int8_) {
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
                   int(padded(g.values[size_t(out)].channels)), si.dev.count, si.cap, false, sm_count_, s);
        return;
      }
      case StepKind::Relu: {
        const Node& node = g.nodes[size_t(st.node)];
        const int out = node.output;
        const SiteInfo& si = sites_[size_t(an_.value_sites[size_t(out)])];
        if (q8(out))
          launch_relu_i8(value_ptr(node.inputs[0]), value_ptr(out), int(row_elems(out)), si.dev.count, si.cap,
                         sm_count_, s);
        else
          launch_relu(value_ptr(node.inputs[0]), value_ptr(out), int(padded(g.values[size_t(out)].channels)),
                      si.dev.count, si.cap, sm_count_, s);
        return;
      }
      case StepKind::Concat: {
        const Node& node = g.nodes[size_t(st.node)];
        const int out = node.output;
        const SiteInfo& si = sites_[size_t(an_.value_sites[size_t(out)])];
        const int yp = int(padded(g.values[size_t(out)].channels));
        int c0 = 0;
        for (size_t k = 0; k < node.inputs.size(); ++k) {
          const int c = g.values[size_t(node.inputs[k])].channels;
          launch_copy_columns(input_ptr(st.node, int(k)), int(padded(c)), c, value_ptr(out), yp, c0, si.dev.count,
                              si.cap, sm_count_, s);
          c0 += c;
        }
        launch_zero_columns(value_ptr(out), yp, c0, si.dev.count, si.cap, sm_count_, s);
        return;
      }
      case StepKind::Densify: {
        const Node& node = g.nodes[size_t(st.node)];
        const int in = node.inputs[0];
        const int out = densify_out_.at(st.node);
        DensifyArgs d;
        d.sites = sites_[size_t(an_.value_sites[size_t(in)])].dev;
        d.x = input_ptr(st.node, 0);
        d.cp = int(padded(g.values[size_t(in)].channels));
        d.channels = g.values[size_t(in)].channels;
        d.y = value_ptr(out);
        const auto& perm = dense_perm_[size_t(out)];
        const auto& shape = shapes_.dense_shape[size_t(out)];
        for (int j = 0; j < 5; ++j) {
          d.out_axis[j] = perm[size_t(j)];
          d.out_size[j] = shape[size_t(j)];
        }
        launch_densify(d, sm_count_, s);
        return;
      }
      case StepKind::Convert: {
        const Shadow& sh = shadows_[size_t(st.slot)];
        const SiteInfo& si = sites_[size_t(an_.value_sites[size_t(sh.value)])];
        launch_convert(operand(sh.value), sh.ptr, sh.stride, sh.to_q, sh.inv, g.values[size_t(sh.value)].channels,
                       si.dev.count, si.cap, sm_count_, s);
        return;
      }
      case StepKind::Permute: {
        const Node& node = g.nodes[size_t(st.node)];
        const auto& in_shape = shapes_.dense_shape[size_t(node.inputs[0])];
        const auto& out_shape = shapes_.dense_shape[size_t(node.output)];
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

  ConvArgs conv_args(const ConvPlan& c) const {
    const Graph& g = *graph_;
    const Node& node = g.nodes[size_t(c.node)];
    const MapSlot& m = an_.maps[size_t(c.slot)];
    const SiteInfo& out = sites_[size_t(m.out_sites)];
    ConvArgs a;
    a.x = c.shadow >= 0 ? shadows_[size_t(c.shadow)].ptr : value_ptr(node.inputs[0]);
    a.out_in = map_ptr_[size_t(c.slot)];
    a.w = c.w.get();
    a.w_tma = c.w_tma.get();
    a.bias = c.bias.get<float>();
    a.residual = c.residual >= 0 ? value_ptr(c.residual) : nullptr;
    a.y = value_ptr(c.out_value);
    a.n_out = out.dev.count;
    a.row_order = c.slot >= 0 && size_t(c.slot) < sort_.size() && sort_[size_t(c.slot)].on ? sort_[size_t(c.slot)].order
                                                                                          : nullptr;
    a.cap_out = out.cap;
    a.K = c.K;
    a.cin_p = c.cin_p;
    a.cout = c.cout;
    a.cout_p = c.cout_p;
    a.cout_w = c.cout_w;
    a.act = c.act;
    a.alpha = c.alpha;
    a.relu_after = c.relu_after;
    a.map_sync = map_sync_;
    a.pdl_late = pdl_ == 2;
    a.q = c.mode != 0 ? c.qargs.get<QEpilogue>() : nullptr;
    return a;
  }

  /// The gather-GEMM-scatter path: reads the pair counts back (one synchronisation per conv).
  void run_gemm_conv(const ConvPlan& c, const ConvArgs& a, cudaStream_t s) {
    const int K = c.K;
    const int64_t blocks = (a.cap_out + 255) / 256;
    launch_pair_counts(a.out_in, a.n_out, a.cap_out, K, g_counts_.get<int32_t>(), s);
    int32_t* hc = g_host_counts_.get<int32_t>();
    SCN_CUDA_CHECK(cudaMemcpyAsync(hc, g_counts_.get(), size_t(blocks * K) * 4, cudaMemcpyDeviceToHost, s));
    int n_out = 0;
    SCN_CUDA_CHECK(cudaMemcpyAsync(g_host_offsets_.get(), a.n_out, 4, cudaMemcpyDeviceToHost, s));
    SCN_CUDA_CHECK(cudaStreamSynchronize(s));
    n_out = *g_host_offsets_.get<int>();
    std::vector<int64_t> totals(size_t(K), 0);
    int32_t* ho = g_host_offsets_.get<int32_t>();
    int64_t base = 0;
    for (int k = 0; k < K; ++k) {
      for (int64_t b = 0; b < blocks; ++b) {
        ho[b * K + k] = int32_t(base);
        base += hc[b * K + k];
        totals[size_t(k)] += hc[b * K + k];
      }
    }
    SCN_CUDA_CHECK(cudaMemcpyAsync(g_offsets_.get(), ho, size_t(blocks * K) * 4, cudaMemcpyHostToDevice, s));
    launch_pair_emit(a.out_in, a.n_out, a.cap_out, K, g_offsets_.get<int32_t>(), g_in_idx_.get<int32_t>(),
                     g_out_idx_.get<int32_t>(), s);
    if (n_out > 0)
      SCN_CUDA_CHECK(cudaMemsetAsync(g_acc_.get(), 0, size_t(n_out) * size_t(c.cout_p) * 4, s));
    SCN_CHECK(cublasSetStream(cublas_, s) == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
    const float one = 1.f, zero = 0.f;
    int64_t off = 0;
    for (int k = 0; k < K; ++k) {
      const int64_t nk = totals[size_t(k)];
      const void* wk = static_cast<const uint16_t*>(a.w) + int64_t(k) * c.cout_w * c.cin_p;
      for (int64_t c0 = 0; c0 < nk; c0 += kGemmChunk) {
        const int64_t len = std::min(kGemmChunk, nk - c0);
        launch_gather_rows(a.x, c.cin_p, g_in_idx_.get<int32_t>() + off + c0, len, g_G_.get(), s);
        const cublasStatus_t st =
            cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, c.cout_p, int(len), c.cin_p, &one, wk, CUDA_R_16F,
                         c.cin_p, g_G_.get(), CUDA_R_16F, c.cin_p, &zero, g_P_.get(), CUDA_R_32F, c.cout_p,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        SCN_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasGemmEx failed (status ", int(st), ") in ",
                  graph_->describe(c.node));
        launch_scatter_add(g_P_.get<float>(), c.cout_p, g_out_idx_.get<int32_t>() + off + c0, len,
                           g_acc_.get<float>(), s);
      }
      off += nk;
    }
    launch_gemm_epilogue(g_acc_.get<float>(), a, s);
  }

  LayerTiming describe_step(const Step& st) const {
    const Graph& g = *graph_;
    LayerTiming t;
    switch (st.kind) {
      case StepKind::Input:
        t.node = g.nodes[size_t(st.node)].name;
        t.op = "Input";
        t.algorithm = "validate+convert+bitmap-rank";
        break;
      case StepKind::Map: {
        const MapSlot& m = an_.maps[size_t(st.slot)];
        t.node = g.nodes[size_t(st.node)].name;
        t.op = "KernelMap";
        t.algorithm = m.kind == MapKind::Subm      ? "subm bitmap-rank"
                      : m.kind == MapKind::Strided ? "strided bitmap-rank (sites+map)"
                                                   : "inverse bitmap-rank";
        if (st.slot < int(sort_.size()) && sort_[size_t(st.slot)].on) t.algorithm += " +mask sort";
        break;
      }
      case StepKind::Conv: {
        const ConvPlan& c = convs_[size_t(conv_of_node_[size_t(st.node)])];
        t.node = g.nodes[size_t(st.node)].name;
        t.op = op_type_name(OpType::SparseConv);
        t.algorithm = c.gemm ? "gather-gemm-scatter cublas"
                             : detail::concat(igemm_config(c.cfg).name, " (", igemm_blocks_per_sm(c.cfg), "/SM, ",
                                              c.tuned ? "tuned" : "heuristic", ")");
        if (c.residual >= 0) t.algorithm += "+add";
        if (c.relu_after || (c.act == Act::ReLU && !c.absorbed.empty())) t.algorithm += "+relu";
        break;
      }
      case StepKind::Add: t.node = g.nodes[size_t(st.node)].name; t.op = "Add"; t.algorithm = "elementwise"; break;
      case StepKind::Relu: t.node = g.nodes[size_t(st.node)].name; t.op = "Relu"; t.algorithm = "elementwise"; break;
      case StepKind::Concat: t.node = g.nodes[size_t(st.node)].name; t.op = "Concat"; t.algorithm = "copy"; break;
      case StepKind::Densify:
        t.node = g.nodes[size_t(st.node)].name;
        t.op = op_type_name(OpType::ScatterDense);
        t.algorithm = "densify (zeros+scatter+transpose fused)";
        break;
      case StepKind::Permute:
        t.node = g.nodes[size_t(st.node)].name;
        t.op = op_type_name(OpType::Transpose);
        t.algorithm = "permute";
        break;
      case StepKind::Convert: {
        const Shadow& sh = shadows_[size_t(st.slot)];
        t.node = g.nodes[size_t(st.node)].name;
        t.op = "Convert";
        t.algorithm = detail::concat(sh.to_q ? "quantize fp16->int8 '" : "dequantize int8->fp16 '",
                                     g.values[size_t(sh.value)].name, "'");
        break;
      }
    }
    return t;
  }

  // ---------------------------------------------------------------------------------------------
  // Errors
  // ---------------------------------------------------------------------------------------------
  void reset_errors() {
    std::vector<ErrSlot> init(graph_->nodes.size() * kNumErrKinds);
    for (auto& e : init) {
      e.hits = 0;
      e.row = LLONG_MAX;
      e.v0 = 0;
      e.v1 = 0;
    }
    SCN_CUDA_CHECK(cudaMemcpy(errors_.get(), init.data(), init.size() * sizeof(ErrSlot), cudaMemcpyHostToDevice));
  }

  std::string error_message(int node, int kind, const ErrSlot& e) const {
    const Graph& g = *graph_;
    const Node& n = g.nodes[size_t(node)];
    if (kind == kErrOverflow) {
      return detail::concat(g.source, ": ", g.describe(node), ": ", e.v0, " output sites exceed the capacity of ", e.v1,
                            " planned from output_bound=", n.conv.output_bound, " x max_batch=", options_.max_batch,
                            " (", e.v0 - e.v1,
                            " sites were dropped); rebuild with a larger output_bound or BuildOptions.max_input_voxels");
    }
    // input errors: name the row and read its coordinates back from the staging copy
    int in_idx = 0;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (g.inputs[k] == n.output) in_idx = int(k);
    const InputSlot& in = inputs_[size_t(in_idx)];
    int32_t r[4] = {0, 0, 0, 0};
    if (e.row >= 0 && e.row < in.n)
      cudaMemcpy(r, in.raw_idx.get<int32_t>() + 4 * e.row, 16, cudaMemcpyDeviceToHost);
    const std::string where = detail::concat("input '", n.name, "' (device check): row ", e.row, " (", r[0], ", ",
                                             r[1], ", ", r[2], ", ", r[3], ")");
    const std::string more = e.hits > 1 ? detail::concat(" [", e.hits, " rows affected]") : std::string();
    switch (kind) {
      case kErrBatch:
        return detail::concat(where, " has batch index ", r[0], ", outside 0..", batch_ - 1, " for batch size ", batch_,
                              more);
      case kErrRange:
        return detail::concat(where, " lies outside the grid ", int3_string(in.grid), more);
      case kErrDuplicate:
        return detail::concat(where, " is the same site as another row; duplicate coordinates are not allowed", more);
      case kErrNonFinite:
        return detail::concat("input '", n.name, "' (device check): row ", e.row,
                              " has a feature that is NaN or infinite; features must be finite", more);
      default: break;
    }
    return detail::concat(g.source, ": ", g.describe(node), ": device error ", kind);
  }

  // ---------------------------------------------------------------------------------------------
  GraphAnalysis an_;
  ShapeInfo shapes_;
  int device_ = 0;
  int sm_count_ = 1;
  int cc_major_ = 0;
  cudaStream_t own_stream_ = nullptr;
  cudaEvent_t done_event_ = nullptr;
  cudaStream_t side_stream_ = nullptr;
  cudaStream_t capture_stream_ = nullptr;  // highest priority; graph capture only (SCN_CUDA_PRIORITY)
  int lookahead_ = 3;
  std::vector<int> release_node_, map_order_;
  std::vector<int> release_base_;  // release points before plan_arena's memory-aware delays
  std::vector<cudaEvent_t> ev_release_, ev_built_;
  cudaEvent_t ev_join_ = nullptr;
  bool force_gemm_ = false;
  std::string forced_cfg_;
  bool use_graph_ = true;
  bool autotune_ = true;
  std::vector<int> tune_skip_;  // SCN_CUDA_TUNE_SKIP
  bool map_sync_ = false;       // SCN_CUDA_MAP_STAGE=sync: tile maps staged with plain loads
  int pdl_ = 2;                 // SCN_CUDA_PDL: 0 off, 1 dependents launched at the last tile's start, 2 its epilogue
  bool priority_ = true;        // SCN_CUDA_PRIORITY=0: graph nodes at the launch stream's priority
  SubmMapKernel subm_map_ = SubmMapKernel::Rows;           // SCN_CUDA_SUBM_MAP=rows|sym|general
  StridedMapKernel strided_map_ = StridedMapKernel::Rows;  // SCN_CUDA_STRIDED_MAP=rows|scatter|general
  int deep_split_ = 0;  // SCN_CUDA_SPLIT: split-K class of the >= 64-channel convs (0: split_for's default)
  RowSort sort_rows_ = RowSort::Off;  // SCN_CUDA_SORT_ROWS: which maps order their rows by neighbour mask
  std::vector<SortPlan> sort_;
  bool tuned_ = false;

  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;
  std::vector<bool> absorbed_;
  std::vector<int> conv_of_node_;
  std::vector<int> written_by_;
  std::vector<int> group_;
  std::vector<bool> materialized_;
  std::map<int, int> densify_out_;
  std::vector<std::vector<int>> dense_perm_;
  std::vector<ConvPlan> convs_;
  bool int8_ = false;  // Precision::Int8: every node with its own precision (q_)
  int8::Plan q_;
  std::vector<Shadow> shadows_;
  std::map<std::pair<int, int>, int> reader_shadow_;  // (Concat / ScatterDense node, input) -> shadow
  std::vector<SiteInfo> sites_;
  std::vector<Step> steps_;
  std::vector<InputSlot> inputs_;
  std::vector<DevMem> out_compact_;

  int batch_ = 1;
  bool planned_ = false;
  std::vector<Int3> planned_grids_;
  int planned_batch_ = 0;
  DevMem arena_, errors_, counts_;
  std::vector<int> map_req_, value_req_;
  std::vector<int32_t*> map_ptr_;
  std::vector<void*> value_ptr_;

  cudaGraphExec_t exec_ = nullptr;
  bool exec_valid_ = false;
  bool forwarded_ = false;

  cublasHandle_t cublas_ = nullptr;
  DevMem g_in_idx_, g_out_idx_, g_counts_, g_offsets_, g_acc_, g_G_, g_P_, g_cublas_ws_;
  PinnedMem g_host_counts_, g_host_offsets_;
};

}  // namespace

std::unique_ptr<Engine> create_cuda_engine(std::shared_ptr<const Graph> graph, const BuildOptions& options) {
  return std::make_unique<CudaEngine>(std::move(graph), options);
}

}  // namespace scn
