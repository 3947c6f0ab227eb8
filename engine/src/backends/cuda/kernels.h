// The CUDA backend's kernels as seen from host code: plain structs describing device buffers and
// one launcher per kernel. Every launcher enqueues on the given stream and never synchronises.
// Counts of rows live on the device (int32); grids are sized by capacities and kernels read the
// count, so a captured CUDA graph stays valid for any voxel count up to the capacity.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define SCN_HD __host__ __device__
#else
#define SCN_HD
#endif

namespace scn::cuda {

/// Error kinds recorded on the device, one slot per (node, kind).
enum ErrKind : int {
  kErrOverflow = 0,   ///< more output sites than the planned capacity (v0 = sites, v1 = capacity)
  kErrBatch = 1,      ///< input row with a batch index outside 0..batch-1
  kErrRange = 2,      ///< input row with a coordinate outside the grid
  kErrDuplicate = 3,  ///< input row on the same site as another row
  kErrNonFinite = 4,  ///< input feature that is NaN, infinite or beyond float16 (|x| >= 65520)
  kNumErrKinds = 5,
};

struct ErrSlot {
  unsigned long long hits;  ///< number of occurrences
  long long row;            ///< smallest offending row (LLONG_MAX: none)
  long long v0;             ///< overflow: largest site count seen
  long long v1;             ///< overflow: capacity
};

/// A site set on the device: coordinates plus a bitmap over (batch x grid) with a two-level
/// popcount prefix (rank) so that "site -> row" is O(1): rank(key) = rank_block[w >> 10] +
/// rank_local[w] + popc(bits[w] & below(key)). Generated sets are sorted by key (row = rank) or in
/// neighbour-row order (site_order.cu); input sets keep the user's row order. Both map rank -> row
/// through perm.
struct SiteIndex {
  uint64_t* bits = nullptr;        ///< [words]
  uint16_t* rank_local = nullptr;  ///< [words] prefix within its block of kRankBlock words
  uint32_t* rank_block = nullptr;  ///< [blocks] exclusive prefix of the block sums
  int32_t* perm = nullptr;         ///< [cap] sorted rank -> row; nullptr when row = rank
  int4* coords = nullptr;          ///< [cap] (b, i0, i1, i2)
  int* count = nullptr;            ///< device row count (already clamped to cap)
  int64_t words = 0;
  int64_t cap = 0;
  int s0 = 0, s1 = 0, s2 = 0;
  int batch = 1;
};

constexpr int kRankBlock = 1024;  ///< words per rank block (1024 * 64 bits < 65536)

inline int64_t rank_blocks(int64_t words) { return (words + kRankBlock - 1) / kRankBlock; }

/// Geometry of a kernel map.
/// Kernel taps per axis a strided conv may have on the GPU (the map kernels hold them in a 32-bit mask;
/// the engine refuses larger kernels when it is built, naming the node).
constexpr int kMaxTapsPerAxis = 32;

struct MapGeom {
  int k0, k1, k2;     ///< kernel size
  int st0, st1, st2;  ///< stride
  int p0, p1, p2;     ///< padding
  int d0, d1, d2;     ///< dilation
  SCN_HD int K() const { return k0 * k1 * k2; }
};

// ---- site_index.cu ----------------------------------------------------------------------------
// `pdl` (here, in site_order.cu and kernel_map.cu): launch programmatically (launch_chained, common.cuh); each of these
// kernels first waits for the kernel before it on the stream, so any predecessor is safe, and then lets the
// next kernel launch at once (the engine asks for it on the main stream only: wait_previous_kernel). The one
// exception is launch_input_sites_features, which writes its features and coordinates before its wait: its
// predecessor must be launch_clear_bits (below).
/// The caller's device buffers of an input bound on the device, read in place by the input step. The forward
/// writes them on the device in stream order (launch_set_input_source) before the step, so one captured graph
/// serves every binding.
struct InputSource {
  const void* features;
  const int32_t* indices;
};
/// Where the input step reads its rows: `features` / `indices` (the engine's staging of a host input, addresses the
/// graph holds), or with `source` non-null the buffers *source names, the offending rows' coordinates then copied to
/// `indices` for the error messages (docs/errors.md names the row and its site).
struct InputRows {
  const void* features = nullptr;
  int32_t* indices = nullptr;
  const InputSource* source = nullptr;
};
/// The input step: N = *count raw rows (indices int32 [N,4], features [N, C] float16 or float32)
/// -> coords, bitmap bits (duplicates detected by the atomic OR), padded float16 rows [N, cp] (zeros
/// in the padding); batch / grid / duplicate / non-finite errors recorded in `err`. The bitmap is zero once the
/// kernel before it on the stream has finished (launch_clear_bits): with `pdl` the features and coordinates are
/// converted while that kernel runs, the bits inserted after it.
void launch_input_sites_features(InputRows rows, bool raw_fp32, int C, int cp, void* out, SiteIndex s, ErrSlot* err,
                                 int sm_count, cudaStream_t st, bool pdl = false);
/// Zeroes s.bits (s.words words), letting its successor launch programmatically at once.
void launch_clear_bits(SiteIndex s, int sm_count, cudaStream_t st);
/// Marks the output sites of a strided conv in `out.bits`.
void launch_strided_mark(SiteIndex in, SiteIndex out, MapGeom g, int sm_count, cudaStream_t st);
/// The strided set's bitmap made from the input set's bitmap (each output word once: no memset, no atomics, no read
/// of in.coords), then its rank and count as launch_rank(out, true, err): the same set as launch_strided_mark + rank
/// wherever no capacity overflowed (a site an input overflow dropped still marks its outputs; the forward fails or
/// grows on that overflow either way). Needs strided_sites_from_bits_fits(g).
void launch_strided_sites_from_bits(SiteIndex in, SiteIndex out, MapGeom g, ErrSlot* err, int sm_count, cudaStream_t st,
                                    bool pdl = false);
/// The launcher's precondition: a stride along the last axis and plan/strided_window.h's window constraint.
bool strided_sites_from_bits_fits(const MapGeom& g);
/// Popcount prefix of out.bits; `block_tmp` holds rank_blocks(words) uint32. When `set_count`,
/// writes min(total, cap) to *out.count and records an overflow for the node in `err`.
void launch_rank(SiteIndex s, bool set_count, ErrSlot* err, int sm_count, cudaStream_t st, bool pdl = false);
/// Generated sets: coords[rank] = site for every set bit.
void launch_emit_coords(SiteIndex s, int sm_count, cudaStream_t st, bool pdl = false);
/// Input sets: perm[rank(row's site)] = row.
void launch_build_perm(SiteIndex s, int sm_count, cudaStream_t st, bool pdl = false);

// ---- site_order.cu ----------------------------------------------------------------------------
constexpr int kSiteOrderRows = 256;  ///< rows per group (one block) of the order's counting sort
constexpr int kSiteOrderKeys = 64;   ///< sort keys: one bit per kernel row off the site's plane

/// A generated set's temporaries while it is put in neighbour-row order.
struct SiteOrderBuffers {
  int4* coords_by_rank = nullptr;  ///< [cap] the emitted coordinates, row = rank
  uint8_t* keys = nullptr;         ///< [cap]
  uint32_t* hist = nullptr;        ///< [kSiteOrderKeys x groups] counts per (key, group of rows), then the key totals
};
/// Generated set `s` (bits, ranks and count built) in neighbour-row order, in place of launch_emit_coords: its
/// coordinates emitted by rank into t.coords_by_rank, each row's key (which of the six kernel rows at the neighbouring
/// planes i0 - 1 and i0 + 1 hold a site), a stable counting sort by key, then s.perm[rank] = row and s.coords[row].
/// Deterministic. `max_blocks` > 0 caps the keys' and scatter kernels' grids below their default (a few blocks per SM),
/// so that tests make blocks walk several groups.
void launch_site_order(SiteIndex s, const SiteOrderBuffers& t, int sm_count, cudaStream_t st, bool pdl = false,
                       int max_blocks = 0);
/// Reads the site order kernels' occupancy on the current device (once per device; launch_site_order reads it too,
/// so this only moves the query ahead of graph capture).
void site_order_init();

// ---- kernel_map.cu ----------------------------------------------------------------------------
/// Which kernel builds submanifold and strided maps (both give bitwise the same map): by kernel rows
/// (one thread per (output row, (r0, r1)) fills the k2 entries along the last axis, sharing bitmap
/// words; the default), or the plain one lookup per (row, offset) kernel, kept as the baseline the
/// tests compare the row-wise kernels with (CudaOptions::map_kernel).
enum class MapKernel { Rows, General };
/// out_in[o*K + k] for a submanifold map on site set s.
void launch_subm_map(SiteIndex s, MapGeom g, int32_t* out_in, MapKernel kind, int sm_count, cudaStream_t st,
                     bool pdl = false);
/// out_in[o*K + k] for a strided conv: output set `out`, input set `in`.
void launch_strided_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, MapKernel kind, int sm_count,
                        cudaStream_t st, bool pdl = false);
/// out_in[i*K + k] for an inverse conv: rows i of `in` (the strided conv's input set) and their
/// strided outputs in `out` (looked up).
void launch_inverse_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, int sm_count, cudaStream_t st,
                        bool pdl = false);

// ---- implicit_gemm.cu -------------------------------------------------------------------------
enum class Act : int { None = 0, ReLU = 1, Sigmoid = 2, LeakyReLU = 3 };

/// One convolution for the implicit GEMM.
struct ConvArgs {
  const void* x = nullptr;          ///< half [n_in, cin_p]
  const int32_t* out_in = nullptr;  ///< [cap_out, K]
  const void* w = nullptr;          ///< half [K][cout_w][cin_p]
  const void* w_tma = nullptr;      ///< TMA configs: half slices [K][cin_p/BK][ny][BN][BK+8] (see igemm_tile_weights)
  const float* bias = nullptr;      ///< [cout_w] (zeros when absent)
  const void* residual = nullptr;   ///< half [n_out, cout_p] or nullptr
  void* y = nullptr;                ///< half [n_out, cout_p]
  const int* n_out = nullptr;       ///< device count of output rows
  int64_t cap_out = 0;
  int K = 1;
  int cin_p = 16;
  int cout = 16;    ///< real output channels (columns >= cout are written as 0)
  int cout_p = 16;  ///< row stride of y / residual
  int cout_w = 16;  ///< padded weight rows (multiple of 128)
  Act act = Act::None;
  float alpha = 0.f;
  bool relu_after = false;  ///< ReLU after the residual add
  bool pdl_late = false;    ///< let the next kernel launch at the last tile's epilogue, not its start
  bool map_late = false;    ///< its map comes from a kernel it may overlap (the one before it on its stream, or the
                            ///< map-stream kernel it joins): read no map entry before griddepcontrol.wait

  /// INT8 engines (kernel modes kF16Q / kI8, docs/int8.md): the epilogue's parameters in device
  /// memory. (Behind a pointer on purpose: a larger ConvArgs made ptxas give the fp16 kernels up to
  /// 20 more registers, costing a block per SM.) With mode kI8, x rows and w are int8 and cin_p
  /// counts 16-bit units (two int8 channels).
  const struct QEpilogue* q = nullptr;
};

/// The quantization-aware epilogue of an INT8-engine conv (docs/int8.md); y and the residual may be
/// int8 or fp16.
struct QEpilogue {
  const float* mult = nullptr;  ///< [cout_w] kI8: s_x * s_w[c]
  int y_stride = 0;             ///< row stride of y in its elements (int8: 16, or round_up(cout, 32))
  int res_stride = 0;           ///< row stride of the residual in its elements
  bool y_q = false;             ///< y stored int8 on the grid 1 / y_inv
  float y_inv = 0.f;
  bool conv_q = false;  ///< with a residual: the conv's own value is stored int8 (grid conv_inv)
  float conv_inv = 0.f, conv_s = 0.f;
  bool res_q = false;  ///< the residual is stored int8 with scale res_s
  float res_s = 0.f;
  bool add_q = false;  ///< the residual Add runs in int8: operand grids a (conv) and b (residual)
  float add_inv_a = 0.f, add_sa = 0.f, add_inv_b = 0.f, add_sb = 0.f;
  void* y2 = nullptr;  ///< optional second output: the fp16 y quantized for an int8 reader
  float y2_inv = 0.f;
  int y2_stride = 0;
};

struct IgemmConfig {
  int bm, bn, bk, warps_m, warps_n, stages;
  bool tma;                ///< weights through TMA bulk copies (sm_90)
  int group;               ///< offsets per pipeline step (> 1 needs bk == cin_p)
  int split;               ///< > 1: split over kernel offsets in a cluster of this many CTAs (sm_90, K <= 32)
  int mode;                ///< 0: fp16; 1: fp16 operands, quantization-aware epilogue; 2: int8 operands (INT8 engines)
  const char* name;        ///< igemm_config_name(*this), set when the instance is registered
  bool wgmma = false;      ///< warpgroup MMA from swizzled shared memory (sm_90a object; compute capability 9.0 only)
  int min_blocks = 1;      ///< > 1: registers capped for this many blocks per SM (__launch_bounds__)
  bool ws = false;         ///< warp-specialised: a producer warpgroup gathers, consumer warpgroups issue wgmma
  bool map_ahead = false;  ///< ws: the next tile's map fetched by one bulk copy while the current tile runs
};

/// The configuration's name, derived from its fields as CUTLASS derives procedural_name():
/// "<kernel> m<BM>n<BN>k<BK>s<STAGES>[t][w<warps>][g<G>][r<B>][x<S>][wg][ws[a]]" with kernel "igemm" (fp16),
/// "igemm-q" (fp16 operands, quantizing epilogue) or "igemm-i8" (int8 operands); t: TMA weights,
/// w: warps when not 4, g: offsets per pipeline step, r: registers capped for B blocks per SM,
/// x: split-K cluster size, wg: wgmma, ws: warp-specialised producer, a: its next tile's map fetched ahead
/// (tile_names.cpp).
std::string igemm_config_name(const IgemmConfig& c);

/// Halves per shared-memory row of a tile's A and B operands (and of a pre-tiled TMA weight row).
/// Rows of 16 or more halves get 8 halves of padding, which makes every ldmatrix phase (8 rows of
/// 16 bytes) conflict-free. 16-byte rows (int8 tiles of 16 channels, bk = 8) are conflict-free
/// unpadded, and padding would both halve the rows per stage and cause 2-way conflicts. wgmma
/// tiles use the 128-byte swizzle instead.
constexpr int igemm_smem_row(int bk, bool wgmma) { return wgmma || bk == 8 ? bk : bk + 8; }
/// wgmma tiles: the 16-byte chunk where chunk `c` of row `r` is stored in a swizzled row of `row_units`
/// 16-bit units — the 128-byte swizzle for 64-unit rows, the 64-byte swizzle for 32-unit rows (int8
/// tiles of 64 channels): the layouts the wgmma descriptors name (implicit_gemm.cuh wg_desc).
constexpr int wg_swizzle_chunk(int c, int r, int row_units) {
  return row_units == 64 ? c ^ (r & 7) : c ^ ((r >> 1) & 3);
}

/// The compiled tile configurations.
int igemm_num_configs();
const IgemmConfig& igemm_config(int id);
/// True when config `id` can run a conv with these channels (bk divides cin_p) on this GPU.
bool igemm_config_fits(int id, int cin_p, int cc_major, int K = 27, int mode = 0);
/// Config id by name ("igemm m64n128k64s3t" or "m64n128k64s3t"), -1 when absent.
int igemm_find_config(const char* name);
/// Blocks per SM the occupancy calculator gives for config `id` on the current device (after igemm_init).
int igemm_blocks_per_sm(int id);
/// Weights [K][cout_w][cin_p] (host, fp16 bits) re-tiled for a TMA config: for every offset k,
/// channel chunk c and N tile j, BN rows of igemm_smem_row halves (zero padded), contiguous; for a wgmma
/// config BN rows of BK units in the swizzle wg_swizzle_chunk places.
std::vector<uint16_t> igemm_tile_weights(int id, const std::vector<uint16_t>& w, int K, int cout_w, int cin_p,
                                         int cout_p);
/// Launches config `id` (grid sized for cap_out, persistent over the device count). `pdl`: as a
/// programmatic dependent launch (sm_90 images): the kernel may start while the previous kernel of
/// `st` runs, reading a.n_out and (unless a.map_late) a.out_in before it waits for that kernel, so the
/// row count must not be written by it, nor the map unless a.map_late is set.
void launch_igemm(int id, const ConvArgs& a, int sm_count, cudaStream_t st, bool pdl = false);
/// True when the current device runs the sm_90a (wgmma) configs: compute capability 9.0.
bool igemm_wgmma_device();
/// Prepares the kernels for the current device once (shared-memory limits, occupancy, cluster
/// residency: a table per device, immutable afterwards); later calls for that device return at once.
/// Thread-safe: engines on other threads (and devices) keep launching meanwhile.
void igemm_init();

// ---- elementwise.cu ---------------------------------------------------------------------------
/// *dst = src and *count = rows, in stream order (one thread): an input bound on the device.
void launch_set_input_source(InputSource* dst, InputSource src, int* count, int rows, cudaStream_t st);
/// Stages an input whose row count is on the device: *dst_count = min(*src_count, cap) and the
/// first rows of features (feat_row_bytes each, even) and indices [., 4] copied; a count above
/// cap (or negative) is recorded in err (v0 = count, v1 = cap).
/// The row an input's device-count error is recorded with (ErrSlot::row of kErrOverflow at an Input node): which
/// limit the count passed. Rows past the bound buffers are reported before the capacity (no growth fixes them).
constexpr int64_t kCountRowNegative = -1, kCountRowBeyondCapacity = 0, kCountRowBeyondBuffers = 1;
/// Stages a device-count input's first min(*src_count, cap, bound_rows) rows (the bound buffers hold bound_rows).
void launch_stage_counted_rows(const void* src_feat, void* dst_feat, int feat_row_bytes, const int32_t* src_idx,
                               int32_t* dst_idx, const int* src_count, int* dst_count, int64_t cap, int64_t bound_rows,
                               ErrSlot* err, int sm_count, cudaStream_t st);
/// y = a + b (then ReLU when relu) over rows < *count, rows of cp halves.
void launch_add(const void* a, const void* b, void* y, int cp, const int* count, int64_t cap, bool relu, int sm_count,
                cudaStream_t st);
void launch_relu(const void* x, void* y, int cp, const int* count, int64_t cap, int sm_count, cudaStream_t st);
/// y[:, c0 : c0 + c] = x[:, 0 : c] (x rows of xp halves, y rows of yp halves).
void launch_copy_columns(const void* x, int xp, int c, void* y, int yp, int c0, const int* count, int64_t cap,
                         int sm_count, cudaStream_t st);
/// Zeroes columns [c0, yp) of y.
void launch_zero_columns(void* y, int yp, int c0, const int* count, int64_t cap, int sm_count, cudaStream_t st);

/// Densify with the output permutation folded in: the output is a 5-d tensor with axes
/// out_axis[j] in {0:b, 1:c, 2:i0, 3:i1, 4:i2} and sizes out_size[j]; every element is written
/// exactly once (the site's feature or zero).
struct DensifyArgs {
  SiteIndex sites;
  const void* x = nullptr;  ///< half [n, cp]
  int cp = 0;
  int channels = 0;
  void* y = nullptr;  ///< half, dense
  int out_axis[5];    ///< source axis of each output axis (0 b, 1 c, 2 i0, 3 i1, 4 i2)
  int64_t out_size[5];
};
/// `pdl`: as a programmatic dependent launch (sm_90 images): the kernel looks its sites up and stores the
/// zeros of empty positions before it waits for the kernel before it on `st`, which may write a.x but
/// neither a.sites nor a.y (the engine passes true after a conv, with y kept apart from that conv's
/// buffers by the arena plan).
void launch_densify(const DensifyArgs& a, int sm_count, cudaStream_t st, bool pdl = false);

/// Generic dense permutation of up to 8 axes: y[i] = x[sum_d idx_d(i) * src_stride[d]] where
/// idx_d(i) are the coordinates of i in out_shape.
struct PermuteArgs {
  const void* x = nullptr;
  void* y = nullptr;
  int nd = 0;
  int64_t out_shape[8];
  int64_t src_stride[8];
  int64_t total = 0;
};
void launch_permute(const PermuteArgs& a, int sm_count, cudaStream_t st);

/// Copies rows < count of x (stride xp) into y (stride c) so a sparse output is [N, C].
void launch_compact_rows(const void* x, int xp, void* y, int c, int64_t n, cudaStream_t st);

// ---- INT8 engines (quant.cu, docs/int8.md) ------------------------------------------------
/// An operand of an int8-aware elementwise kernel: rows of `stride` elements, int8 (q, scale s)
/// or fp16.
struct QOperand {
  const void* p = nullptr;
  int stride = 0;
  bool q = false;
  float s = 0.f;
};
/// Rows < *count, channels < c: y = int8 quantize(x) on the grid 1/inv (x fp16) or
/// y = half(float(q) * s) (x int8); padding columns up to y_stride are zeroed.
void launch_convert(QOperand x, void* y, int y_stride, bool y_q, float y_inv, int c, const int* count, int64_t cap,
                    int sm_count, cudaStream_t st);
/// The Add node of an INT8 engine: int8 (y = float(qa)*sa + float(qb)*sb, operands on the grids
/// 1/inv_a, 1/inv_b) or fp16 (y = a + b of the fp16 operands); stored int8 (y_q) or fp16. (A Relu
/// after it runs as its own step.)
struct QAddArgs {
  QOperand a, b;
  bool add_q = false;
  float inv_a = 0.f, sa = 0.f, inv_b = 0.f, sb = 0.f;
  void* y = nullptr;
  int y_stride = 0;
  bool y_q = false;
  float y_inv = 0.f;
  int c = 0;
};
void launch_qadd(const QAddArgs& a, const int* count, int64_t cap, int sm_count, cudaStream_t st);
/// ReLU on int8 rows (max(q, 0)), rows of `stride` bytes.
void launch_relu_i8(const void* x, void* y, int stride, const int* count, int64_t cap, int sm_count, cudaStream_t st);

}  // namespace scn::cuda
