// scn_trace: a CUPTI activity tracer that the CUDA driver loads through CUDA_INJECTION64_PATH.
//
//   CUDA_INJECTION64_PATH=build/tools/trace/libscn_trace.so SCN_TRACE_FILE=trace.csv scn bench ...
//
// It records every kernel, memcpy and memset with its GPU start/end timestamps (graph launches included,
// with their graph node ids) and writes them as CSV when the process exits; tools/trace/trace_report.py
// turns that into a per-forward timeline. Why our own: Nsight Systems is not installed on the lent GPUs,
// and per-step CUDA events (`scn bench --layers`) serialise the streams and add launch gaps.
#include <cupti.h>
#include <cxxabi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

constexpr size_t kBufferBytes = 8u << 20;

std::mutex g_mutex;
std::string g_rows;  // CSV rows collected from completed CUPTI buffers
bool g_written = false;

void warn(const char* what, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::fprintf(stderr, "scn_trace: %s failed: %s\n", what, s ? s : "unknown CUPTI error");
}

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  std::free(d);
  for (char& c : out)  // the CSV has no quoting: commas in template argument lists become ';'
    if (c == ',') c = ';';
  return out;
}

void append_row(const char* kind, uint64_t start, uint64_t end, uint32_t stream, uint32_t corr, uint32_t graph,
                uint64_t node, long grid, int block, int regs, long smem, const std::string& name) {
  char head[256];
  std::snprintf(head, sizeof(head), "%s,%llu,%llu,%u,%u,%u,%llu,%ld,%d,%d,%ld,", kind, (unsigned long long)start,
                (unsigned long long)end, stream, corr, graph, (unsigned long long)node, grid, block, regs, smem);
  g_rows += head;
  g_rows += name;
  g_rows += '\n';
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        append_row("kernel", k->start, k->end, k->streamId, k->correlationId, k->graphId, k->graphNodeId,
                   long(k->gridX) * k->gridY * k->gridZ, k->blockX * k->blockY * k->blockZ, k->registersPerThread,
                   long(k->staticSharedMemory) + k->dynamicSharedMemory, demangle(k->name));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        append_row("memcpy", m->start, m->end, m->streamId, m->correlationId, m->graphId, m->graphNodeId,
                   long(m->bytes), 0, 0, 0, "memcpy kind " + std::to_string(int(m->copyKind)));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        append_row("memset", m->start, m->end, m->streamId, m->correlationId, m->graphId, m->graphNodeId,
                   long(m->bytes), 0, 0, 0, "memset");
        break;
      }
      default:
        break;
    }
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  if (dropped) std::fprintf(stderr, "scn_trace: %zu records dropped\n", dropped);
  std::free(buffer);
}

void write_file() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_written) return;
  g_written = true;
  const char* path = std::getenv("SCN_TRACE_FILE");
  if (!path || !*path) path = "scn_trace.csv";
  FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "scn_trace: cannot write %s: %s\n", path, std::strerror(errno));
    return;
  }
  std::fputs("kind,start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,regs,smem,name\n", f);
  std::fwrite(g_rows.data(), 1, g_rows.size(), f);
  std::fclose(f);
  std::fprintf(stderr, "scn_trace: wrote %s\n", path);
}

// The driver tears the context down after the runtime's exit handlers; flush the records of a
// context before it goes.
void CUPTIAPI on_resource(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void*) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

}  // namespace

extern "C" int InitializeInjection(void) {
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    warn("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
    r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) warn("cuptiActivityEnable", r);
  }
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_resource, nullptr) == CUPTI_SUCCESS)
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  std::atexit(write_file);
  return 1;
}
