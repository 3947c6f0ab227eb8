// Liveness-based memory plan: every activation buffer gets an offset in one arena so that
// buffers whose lifetimes overlap never share bytes. Planned once (CUDA: at build time from
// capacities; CPU: per bound input size) and never re-allocated during forward.
#pragma once

#include <cstddef>
#include <vector>

namespace scn {

struct BufferRequest {
  size_t bytes = 0;
  int first = 0;  ///< first step (node index) that writes the buffer
  int last = 0;   ///< last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  ///< per request, aligned to `alignment`
  size_t total = 0;             ///< arena size
};

/// Greedy best-fit by decreasing size; buffers live on [first, last].
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 256);

}  // namespace scn
