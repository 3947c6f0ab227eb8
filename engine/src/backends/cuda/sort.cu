// Row order by neighbour mask: rows with similar masks share tiles in the implicit GEMM, so a
// tile's union of active kernel offsets stays close to its rows' own. CUB's radix sort is stable:
// the order is deterministic, and the conv results do not depend on it (each row keeps its
// summation order).
#include <cub/device/device_radix_sort.cuh>

#include "backends/cuda/common.cuh"

namespace scn::cuda {

namespace {

__global__ void sort_prep_kernel(uint32_t* masks, const int* count, int64_t cap) {
  const int64_t n = rows_of(count, cap);
  for (int64_t i = n + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < cap; i += int64_t(gridDim.x) * blockDim.x)
    masks[i] = 0xffffffffu;
}

__global__ void iota_kernel(int32_t* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = int32_t(i);
}

}  // namespace

size_t sort_rows_temp_bytes(int64_t cap, int bits) {
  size_t bytes = 0;
  SCN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                                 static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                 static_cast<int32_t*>(nullptr), int64_t(cap), 0, bits));
  return bytes;
}

void launch_sort_rows(uint32_t* masks, const int* count, int64_t cap, int bits, const int32_t* iota,
                      uint32_t* keys_out, int32_t* order, void* temp, size_t temp_bytes, cudaStream_t st) {
  sort_prep_kernel<<<512, 256, 0, st>>>(masks, count, cap);
  SCN_CUDA_LAUNCHED();
  // all ones sorts last: with `bits` < 32 the padding rows still end up behind every real row
  SCN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, masks, keys_out, iota, order, int64_t(cap), 0, bits,
                                                 st));
}

void launch_iota(int32_t* p, int64_t n, cudaStream_t st) {
  if (n <= 0) return;
  iota_kernel<<<512, 256, 0, st>>>(p, n);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
