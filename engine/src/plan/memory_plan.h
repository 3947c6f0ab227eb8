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

/// Buffers live on [first, last]. Greedy placement (each buffer at the best-fitting gap among the
/// buffers alive with it) under several orders (size, size x lifetime, lifetime, first use), best
/// fit and first fit; the smallest arena wins. Deterministic.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 256);

/// The most bytes alive at any one step (each request rounded up to `alignment`): a lower bound
/// on any plan's arena.
size_t peak_live_bytes(const std::vector<BufferRequest>& requests, size_t alignment = 256);

}  // namespace scn
