// The CUDA driver API of cuda.h, for emulated GPUs whose kernels run on the CPU: an H100
// SXM, or the device CUEMU_DEVICE names (h100, h200, a100); CUEMU_DEVICE_COUNT of them (1 to
// 8, default 1; else cuInit fails with CUDA_ERROR_INVALID_VALUE), each with its own primary
// context and CUEMU_MEMORY_MB of memory at addresses of its own (unified addressing:
// cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) and cuMemGetAddressRange find
// any device's allocation). There is no peer access: in a context of device B, a copy or
// memset with device A's memory, or a free of it, is CUDA_ERROR_INVALID_VALUE, and a kernel
// that touches it faults with CUDA_ERROR_ILLEGAL_ADDRESS (sticky for B's context).
// Defining the functions under cuda.h's names gives them its versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2, ...), so programs linked against the toolkit's stub
// libcuda.so run on this library unchanged.
//
// Work queued on a stream (launches, async copies and memsets) runs only when something
// waits for it: a stream, event or context synchronization, or a synchronous call, which
// like the legacy default stream first runs the pending work of the NULL stream and of
// every blocking stream. A program that forgets to synchronize sees stale results.
// CU_STREAM_PER_THREAD is the calling thread's own default stream of the context (made on
// first use), a blocking stream: it and the legacy default stream (NULL, CU_STREAM_LEGACY)
// wait for each other's earlier work, and cuStreamSynchronize(CU_STREAM_PER_THREAD) waits
// for the calling thread's stream only.
//
// Graphs come from stream capture: between cuStreamBeginCapture and cuStreamEndCapture a
// stream's work is recorded, not queued, and a call that would need the device at once
// (an allocation, a free, a synchronous copy, a synchronization of the capturing stream)
// fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, as the
// driver's capture modes say; a free (cuMemFree, cuMemFreeHost) may synchronize the device,
// so from any thread it does so to every capture but a relaxed one. An instantiated graph runs its nodes in capture order;
// cuGraphExecUpdate takes a graph of the same nodes (kinds and kernels) with new parameters.
// Cross-stream capture (events recorded or waited on during a capture) is not emulated: it
// fails as unsupported.
//
// After cuInit, a child of fork() gets CUDA_ERROR_NOT_INITIALIZED from every call (cuInit
// included), as from NVIDIA's driver.
#include <cuda.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "cuda_emulator/ptx.h"
#include "cuda_emulator/ptxas.h"
#include "cuda_emulator/simt.h"

#define CUEMU_API extern "C" __attribute__((visibility("default")))

namespace cuemu {
namespace {

constexpr int kDriverVersion = 13000;
constexpr int kSharedDefault = 48 * 1024;
constexpr int kRegistersPerBlock = 65536;

// What distinguishes the devices the emulator can be, as their drivers report them.
struct DeviceModel {
  const char* key;  // CUEMU_DEVICE's value
  const char* name;
  int major, minor;
  const char* arch;  // what ptxas assembles PTX for
  int multiprocessors;
  int shared_optin;  // per block, opted in
  int shared_per_sm;
  int l2_bytes;
  int clock_khz, memory_clock_khz, memory_bus_bits;  // DRAM: 2 x clock x bus / 8 bytes/s
};
constexpr DeviceModel kDevices[] = {
    {"h100", "NVIDIA H100 SXM (graphjit CUDA emulator)", 9, 0, "sm_90", 132, 232448, 233472, 50 << 20, 1980000, 2619000, 5120},
    {"h200", "NVIDIA H200 (graphjit CUDA emulator)", 9, 0, "sm_90", 132, 232448, 233472, 50 << 20, 1980000, 3201000, 6144},
    {"a100", "NVIDIA A100-SXM4-40GB (graphjit CUDA emulator)", 8, 0, "sm_80", 108, 166912, 167936, 40 << 20, 1410000, 1215000,
     5120},
};

struct Stream;
struct Context;

}  // namespace
}  // namespace cuemu

struct CUstream_st;
struct CUevent_st;

struct CUmod_st;

struct CUfunc_st {
  CUmod_st* module = nullptr;
  const cuemu::Kernel* kernel = nullptr;
  cuemu::KernelResources resources;  // registers -1: unknown (no ptxas)
  int max_dynamic_shared = cuemu::kSharedDefault;
  std::vector<uint64_t> constant_values;
};

struct CUmod_st {
  CUctx_st* ctx = nullptr;
  cuemu::Module module;
  std::vector<uint64_t> global_addresses;
  std::vector<std::unique_ptr<CUfunc_st>> functions;
};

// A node of a graph: what it does each time the graph runs, and what cuGraphExecUpdate
// may not change (its kind, and the kernel a kernel node launches).
struct CUgraphNode_st {
  CUgraphNodeType type;
  const void* callee = nullptr;  // a kernel node's CUfunction (or a library task's function)
  std::function<CUresult()> run;
};

struct CUgraph_st {
  CUctx_st* ctx = nullptr;
  std::vector<std::shared_ptr<CUgraphNode_st>> nodes;  // in capture order
};

struct CUgraphExec_st {
  CUctx_st* ctx = nullptr;
  std::vector<std::shared_ptr<CUgraphNode_st>> nodes;
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  bool blocking = true;
  struct Task {
    uint64_t seq;
    std::function<CUresult()> run;
  };
  std::deque<Task> queue;
  // While capturing: the graph its work goes to instead of `queue`.
  struct Capture {
    std::unique_ptr<CUgraph_st> graph;
    CUstreamCaptureMode mode;
    std::thread::id thread;
    bool invalidated = false;
    uint64_t id = 0;             // unique among the process's captures
    CUgraphNode last = nullptr;  // the node the stream's next work depends on
  };
  std::unique_ptr<Capture> capture;
};

struct CUevent_st {
  CUctx_st* ctx = nullptr;
  CUstream_st* stream = nullptr;
  uint64_t seq = 0;
  bool recorded = false, done = false;
  bool timing = true;
  std::chrono::steady_clock::time_point time;
};

struct CUctx_st {
  CUdevice device = 0;
  bool primary = false;
  int refcount = 0;
  unsigned flags = 0;
  CUresult sticky = CUDA_SUCCESS;  // a kernel's fault breaks the context, as on a GPU
  CUstream_st null_stream;
  std::set<CUstream_st*> streams;               // those created, and the per-thread default streams
  std::map<uint64_t, CUstream_st*> per_thread;  // CU_STREAM_PER_THREAD of each thread (ThreadSerial)
  std::set<CUmod_st*> modules;
  std::set<CUevent_st*> events;
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  std::set<uint64_t> allocations;
};

namespace cuemu {
namespace {

// One of the CUEMU_DEVICE_COUNT devices: its memory, at addresses of its own (unified
// addressing: a pointer says which device it is on), and its primary context.
struct Device {
  std::unique_ptr<DeviceMemory> memory;
  CUctx_st* primary = nullptr;
};
constexpr int kMaxDevices = 8;
constexpr uint64_t kDeviceAddressSpan = 1ull << 40;  // each device's range of addresses

struct Driver {
  std::recursive_mutex mu;
  bool initialized = false;
  bool forked = false;  // a child of fork() after cuInit: nothing works, cuInit included
  std::vector<Device> devices;
  CUctx_st* running = nullptr;  // the context whose stream work is running, if any
  std::set<CUctx_st*> contexts;
  uint64_t seq = 0;
  ThreadOrder order = ThreadOrder::kForward;
  uint64_t seed = 0;
  std::string last_error;
  CUemuCounters last_counters{};
  bool quiet = false;
  uint64_t max_warp_instructions = 0;
  const DeviceModel* device = &kDevices[0];
};

Driver& D() {
  static Driver* d = new Driver;
  return *d;
}

thread_local std::vector<CUctx_st*> context_stack;

CUctx_st* Current() { return context_stack.empty() ? nullptr : context_stack.back(); }

bool ValidDevice(CUdevice dev) { return dev >= 0 && dev < static_cast<int>(D().devices.size()); }
DeviceMemory& MemoryOf(const CUctx_st* ctx) { return *D().devices[ctx->device].memory; }

// The allocation of any device that holds [ptr, ptr + bytes), and its device.
DeviceMemory::Allocation* FindOnAnyDevice(CUdeviceptr ptr, size_t bytes, int* device) {
  for (size_t d = 0; d < D().devices.size(); ++d)
    if (DeviceMemory::Allocation* a = D().devices[d].memory->Find(ptr, bytes)) {
      if (device) *device = static_cast<int>(d);
      return a;
    }
  return nullptr;
}

void Report(const std::string& message) {
  D().last_error = message;
  if (!D().quiet) std::fprintf(stderr, "cuda emulator: %s\n", message.c_str());
}

// The checks every call that works in the current context starts with.
CUresult Enter(CUctx_st** ctx) {
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *ctx = Current();
  if (!*ctx) return CUDA_ERROR_INVALID_CONTEXT;
  return (*ctx)->sticky;
}

// A number of the calling thread's own, never reused (std::thread::id is, after a join).
uint64_t ThreadSerial() {
  static std::atomic<uint64_t> next{0};
  thread_local const uint64_t serial = ++next;
  return serial;
}

// CU_STREAM_PER_THREAD is the calling thread's default stream of the context, made on first
// use: a blocking stream, so it and the legacy default stream wait for each other.
CUstream_st* StreamOf(CUctx_st* ctx, CUstream s) {
  if (s == nullptr || s == CU_STREAM_LEGACY) return &ctx->null_stream;
  if (s == CU_STREAM_PER_THREAD) {
    CUstream_st*& mine = ctx->per_thread[ThreadSerial()];
    if (!mine) {
      mine = new CUstream_st;
      mine->ctx = ctx;
      ctx->streams.insert(mine);
    }
    return mine;
  }
  return ctx->streams.count(s) ? s : nullptr;
}

CUresult Drain(CUctx_st* ctx, CUstream_st* s, uint64_t upto);

CUresult RunTask(CUctx_st* ctx, CUstream_st* s, CUstream_st::Task& task) {
  // The legacy default stream waits for earlier work of blocking streams, and they for it.
  if (s == &ctx->null_stream) {
    for (CUstream_st* b : ctx->streams)
      if (b->blocking) Drain(ctx, b, task.seq - 1);
  } else if (s->blocking) {
    Drain(ctx, &ctx->null_stream, task.seq - 1);
  }
  if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky;
  CUctx_st* outer = D().running;
  D().running = ctx;
  CUresult r = task.run();
  D().running = outer;
  if (r != CUDA_SUCCESS) ctx->sticky = r;
  return r;
}

CUresult Drain(CUctx_st* ctx, CUstream_st* s, uint64_t upto) {
  while (!s->queue.empty() && s->queue.front().seq <= upto) {
    CUstream_st::Task task = std::move(s->queue.front());
    s->queue.pop_front();
    RunTask(ctx, s, task);
  }
  if (ctx->sticky != CUDA_SUCCESS) {
    s->queue.clear();
    return ctx->sticky;
  }
  return CUDA_SUCCESS;
}

CUresult DrainAll(CUctx_st* ctx) {
  Drain(ctx, &ctx->null_stream, UINT64_MAX);
  for (CUstream_st* s : ctx->streams) Drain(ctx, s, UINT64_MAX);
  return ctx->sticky;
}

// What a synchronous call does first: the NULL stream's work and that of blocking streams.
CUresult SyncLegacy(CUctx_st* ctx) {
  Drain(ctx, &ctx->null_stream, UINT64_MAX);
  for (CUstream_st* s : ctx->streams)
    if (s->blocking) Drain(ctx, s, UINT64_MAX);
  return ctx->sticky;
}

void Enqueue(CUstream_st* s, std::function<CUresult()> run) { s->queue.push_back({++D().seq, std::move(run)}); }

// Work for a stream: queued, or a node of the graph the stream captures.
CUresult Submit(CUstream_st* s, CUgraphNodeType type, const void* callee, std::function<CUresult()> run) {
  if (s->capture) {
    if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    s->capture->graph->nodes.push_back(std::make_shared<CUgraphNode_st>(CUgraphNode_st{type, callee, std::move(run)}));
    s->capture->last = s->capture->graph->nodes.back().get();
    return CUDA_SUCCESS;
  }
  Enqueue(s, std::move(run));
  return CUDA_SUCCESS;
}

// Ends a capture with an error: its graph is dropped, cuStreamEndCapture says so.
CUresult Invalidate(CUstream_st* s, CUresult why, const std::string& call) {
  s->capture->invalidated = true;
  Report(call + " during stream capture: the capture is invalidated");
  return why;
}

// A call that is not ordered in a stream (an allocation, a free, a synchronous copy or
// memset, a context synchronization) is refused while the calling thread captures (in
// global or thread-local mode) or another thread captures in global mode, as in the
// driver's default (global) mode for threads; it invalidates those captures. A free
// (`frees`) may synchronize the device: it is refused, and invalidates the capture, also
// while another thread captures in thread-local mode; only relaxed captures let it be.
CUresult UnsafeCall(const char* call, bool frees = false) {
  CUresult r = CUDA_SUCCESS;
  for (CUctx_st* ctx : D().contexts)
    for (CUstream_st* s : ctx->streams) {
      CUstream_st::Capture* c = s->capture.get();
      if (!c || c->mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
      if (c->thread == std::this_thread::get_id() || c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL || frees)
        r = Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call);
    }
  return r;
}

// Work on the legacy default stream waits for the blocking streams: not for one that
// captures (the dependency cannot be captured).
CUresult LegacyCall(CUctx_st* ctx, const char* call) {
  CUresult r = CUDA_SUCCESS;
  for (CUstream_st* s : ctx->streams)
    if (s->blocking && s->capture) r = Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, call);
  return r;
}

// [ptr, ptr + bytes) must lie in one live allocation of the device's memory.
bool ValidRange(DeviceMemory* memory, CUdeviceptr ptr, size_t bytes) { return bytes == 0 || memory->Find(ptr, bytes) != nullptr; }
uint8_t* HostOf(DeviceMemory* memory, CUdeviceptr ptr) {
  DeviceMemory::Allocation* a = memory->Find(ptr, 1);
  return a->data.get() + (ptr - a->base);
}

void DestroyContextResources(CUctx_st* ctx) {
  for (CUgraphExec_st* e : ctx->execs) delete e;
  ctx->execs.clear();
  for (CUgraph_st* g : ctx->graphs) delete g;
  ctx->graphs.clear();
  for (CUstream_st* s : ctx->streams) delete s;
  ctx->streams.clear();
  ctx->per_thread.clear();
  ctx->null_stream.queue.clear();
  for (CUevent_st* e : ctx->events) delete e;
  ctx->events.clear();
  for (CUmod_st* m : ctx->modules) {
    for (uint64_t a : m->global_addresses) MemoryOf(ctx).Free(a);
    delete m;
  }
  ctx->modules.clear();
  for (uint64_t a : ctx->allocations) MemoryOf(ctx).Free(a);
  ctx->allocations.clear();
  ctx->sticky = CUDA_SUCCESS;
}

void RemoveFromStacks(CUctx_st* ctx) {
  context_stack.erase(std::remove(context_stack.begin(), context_stack.end(), ctx), context_stack.end());
}

ThreadOrder OrderFromEnvironment(uint64_t* seed) {
  const char* env = std::getenv("CUEMU_THREAD_ORDER");
  if (!env) return ThreadOrder::kForward;
  std::string v = env;
  if (v == "reverse") return ThreadOrder::kReverse;
  if (v.rfind("shuffle", 0) == 0) {
    *seed = v.size() > 8 ? std::strtoull(v.c_str() + 8, nullptr, 10) : 1;
    return ThreadOrder::kShuffle;
  }
  return ThreadOrder::kForward;
}

int MaxThreads(const CUfunc_st* f) {
  int limit = 1024;
  const Kernel* k = f->kernel;
  if (k->reqntid[0]) limit = std::min(limit, k->reqntid[0] * k->reqntid[1] * k->reqntid[2]);
  if (k->maxntid[0]) limit = std::min(limit, k->maxntid[0] * k->maxntid[1] * k->maxntid[2]);
  if (f->resources.registers > 0) {
    int per_thread = (f->resources.registers + 7) / 8 * 8;  // allocated in units of 8
    limit = std::min(limit, kRegistersPerBlock / (per_thread * 32) * 32);
  }
  return limit;
}

}  // namespace
}  // namespace cuemu

using namespace cuemu;

// ---------------------------------------------------------------------------------------
// Errors

namespace {
struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
}  // namespace

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorText& e : kErrors)
    if (e.code == error) return *str = e.name, CUDA_SUCCESS;
  *str = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorText& e : kErrors)
    if (e.code == error) return *str = e.text, CUDA_SUCCESS;
  *str = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------------------------------
// Initialization and the device

namespace {
void RegisterForkHandlers();
}  // namespace

CUresult CUDAAPI cuInit(unsigned int flags) {
  std::lock_guard lock(D().mu);
  if (D().forked) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) {
    RegisterForkHandlers();
    if (const char* env = std::getenv("CUEMU_DEVICE")) {
      D().device = nullptr;
      for (const DeviceModel& m : kDevices)
        if (std::string(env) == m.key) D().device = &m;
      if (!D().device) {
        D().device = &kDevices[0];
        Report("CUEMU_DEVICE='" + std::string(env) + "' is not a device the emulator can be (h100, h200, a100)");
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    int count = 1;
    if (const char* env = std::getenv("CUEMU_DEVICE_COUNT")) {
      char* end = nullptr;
      const long n = std::strtol(env, &end, 10);
      if (end == env || *end != '\0' || n < 1 || n > kMaxDevices) {
        Report("CUEMU_DEVICE_COUNT='" + std::string(env) + "' is not a device count the emulator can have (1 to 8)");
        return CUDA_ERROR_INVALID_VALUE;
      }
      count = static_cast<int>(n);
    }
    uint64_t mb = 4096;
    if (const char* env = std::getenv("CUEMU_MEMORY_MB")) mb = std::strtoull(env, nullptr, 10);
    D().devices.clear();
    for (int d = 0; d < count; ++d)
      D().devices.push_back({std::make_unique<DeviceMemory>(mb << 20, 0x7e0000000000ull + d * kDeviceAddressSpan), nullptr});
    D().order = OrderFromEnvironment(&D().seed);
    D().quiet = std::getenv("CUEMU_QUIET") != nullptr;
    const char* limit = std::getenv("CUEMU_MAX_WARP_INSTRUCTIONS");
    D().max_warp_instructions = limit ? std::strtoull(limit, nullptr, 10) : 1000000000ull;
    D().initialized = true;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = static_cast<int>(D().devices.size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, len, "%s", D().device->name);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = D().devices[dev].memory->capacity();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *major = D().device->major;
  *minor = D().device->minor;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice dev) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  const DeviceModel& m = *D().device;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = kSharedDefault; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = m.shared_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = m.shared_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = kRegistersPerBlock; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = m.clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = m.memory_clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = m.memory_bus_bits; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = m.l2_bytes; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *value = 512; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = m.multiprocessors; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = m.major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = m.minor; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 3; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: *value = 2; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *value = m.major >= 9; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = dev; break;  // one bus per device, device 0's as before
    default: *value = 0; break;                                // features the emulator does not provide (managed memory, ...)
  }
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------
// Contexts

namespace {
CUctx_st* NewContext(CUdevice dev, unsigned flags, bool primary) {
  auto* ctx = new CUctx_st;
  ctx->device = dev;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->null_stream.ctx = ctx;
  D().contexts.insert(ctx);
  return ctx;
}
}  // namespace

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  std::lock_guard lock(D().mu);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st*& primary = D().devices[dev].primary;
  if (!primary) primary = NewContext(dev, 0, true);
  ++primary->refcount;
  *pctx = primary;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* primary = D().devices[dev].primary;
  if (!primary || primary->refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--primary->refcount == 0) DestroyContextResources(primary);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (CUctx_st* primary = D().devices[dev].primary) DestroyContextResources(primary);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  std::lock_guard lock(D().mu);
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const CUctx_st* primary = D().devices[dev].primary;
  *flags = primary ? primary->flags : 0;
  *active = primary && primary->refcount > 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st*& primary = D().devices[dev].primary;
  if (!primary) primary = NewContext(dev, flags, true);
  primary->flags = flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice dev) {
  std::lock_guard lock(D().mu);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ValidDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (params && (params->execAffinityParams || params->cigParams)) return CUDA_ERROR_NOT_SUPPORTED;
  CUctx_st* ctx = NewContext(dev, flags, false);
  ctx->refcount = 1;
  context_stack.push_back(ctx);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

// The CUDA 11/12 signature, for programs built against older headers.
CUEMU_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate(pctx, nullptr, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx || !D().contexts.count(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  DestroyContextResources(ctx);
  RemoveFromStacks(ctx);
  D().contexts.erase(ctx);
  delete ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx && !D().contexts.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  // Replaces the top of this thread's context stack (null: no current context).
  if (context_stack.empty()) {
    if (ctx) context_stack.push_back(ctx);
  } else {
    context_stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *pctx = Current();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx || !D().contexts.count(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  context_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = context_stack.back();
  context_stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  CUctx_st* ctx;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!(ctx = Current())) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (CUresult r = UnsafeCall("cuCtxSynchronize")) return r;
  return DrainAll(ctx);
}

// ---------------------------------------------------------------------------------------
// Modules and functions

namespace {

void WriteLog(const std::string& text, char* buffer, size_t size) {
  if (!buffer || size == 0) return;
  size_t n = std::min(text.size(), size - 1);
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

CUresult LoadModule(CUmodule* out, const void* image, char* error_log, size_t error_size, char* info_log, size_t info_size) {
  CUctx_st* ctx;
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  const unsigned char* bytes = static_cast<const unsigned char*>(image);
  if ((bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F') ||
      (bytes[0] == 0x50 && bytes[1] == 0xed && bytes[2] == 0x55 && bytes[3] == 0xba)) {
    std::string message = "the emulator runs PTX only; a cubin or fatbin was given";
    Report(message);
    WriteLog(message, error_log, error_size);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const std::string ptx(static_cast<const char*>(image));
  // 1. ptxas, as the driver's own PTX compiler would.
  // sm_90a PTX (arch-specific features) is assembled for sm_90a, which an H100 is.
  const std::string arch = D().device->arch;
  const bool arch_specific = arch == "sm_90" && ptx.find(".target sm_90a") != std::string::npos;
  PtxasResult ptxas = RunPtxas(ptx, arch_specific ? "sm_90a" : arch);
  if (ptxas.ran && !ptxas.accepted) {
    Report("ptxas rejected the module:\n" + ptxas.log);
    WriteLog(ptxas.log, error_log, error_size);
    return CUDA_ERROR_INVALID_PTX;
  }
  WriteLog(ptxas.log, info_log, info_size);
  // 2. The emulator's own decoding.
  auto m = std::make_unique<CUmod_st>();
  std::string error;
  if (!ParsePtx(ptx, &m->module, &error)) {
    Report("cannot run this PTX: " + error);
    WriteLog(error, error_log, error_size);
    return ptxas.ran ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_PTX;
  }
  if (m->module.ptx_major * 10 + m->module.ptx_minor > 90) {
    Report("PTX ISA " + std::to_string(m->module.ptx_major) + "." + std::to_string(m->module.ptx_minor) +
           " is newer than this driver (9.0)");
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  // A module for a newer GPU than this one does not load (ptxas, when it ran, said so too).
  const int target = m->module.target.rfind("sm_", 0) == 0 ? std::atoi(m->module.target.c_str() + 3) : 0;
  if (target > D().device->major * 10 + D().device->minor) {
    Report("the module targets " + m->module.target + "; this device is " + D().device->arch);
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  // 3. Module-scope variables get device memory.
  for (const GlobalVar& g : m->module.globals) {
    uint64_t a = MemoryOf(ctx).Allocate(std::max<uint64_t>(g.size, 1));
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    // .global and .const variables start as their initializer, else as zeros (the ISA's rule).
    std::memset(HostOf(&MemoryOf(ctx), a), 0, g.size);
    if (!g.init.empty()) std::memcpy(HostOf(&MemoryOf(ctx), a), g.init.data(), g.init.size());
    m->global_addresses.push_back(a);
  }
  m->ctx = ctx;
  for (const Kernel& k : m->module.kernels) {
    auto f = std::make_unique<CUfunc_st>();
    f->module = m.get();
    f->kernel = &k;
    if (auto it = ptxas.kernels.find(k.name); it != ptxas.kernels.end()) f->resources = it->second;
    for (const Constant& c : k.constants)
      f->constant_values.push_back(c.global >= 0 ? m->global_addresses[c.global] + c.value : c.value);
    m->functions.push_back(std::move(f));
  }
  *out = m.get();
  ctx->modules.insert(m.release());
  return CUDA_SUCCESS;
}

}  // namespace

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  std::lock_guard lock(D().mu);
  return LoadModule(module, image, nullptr, 0, nullptr, 0);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int num_options, CUjit_option* options,
                                    void** values) {
  std::lock_guard lock(D().mu);
  char *error_log = nullptr, *info_log = nullptr;
  size_t error_size = 0, info_size = 0;
  for (unsigned i = 0; i < num_options; ++i) {
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER: error_log = static_cast<char*>(values[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: error_size = reinterpret_cast<uintptr_t>(values[i]); break;
      case CU_JIT_INFO_LOG_BUFFER: info_log = static_cast<char*>(values[i]); break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: info_size = reinterpret_cast<uintptr_t>(values[i]); break;
      default: break;  // optimization levels, targets, ...: nothing changes for the emulator
    }
  }
  return LoadModule(module, image, error_log, error_size, info_log, info_size);
}

CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* path) {
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::stringstream text;
  text << in.rdbuf();
  std::string data = text.str();
  return cuModuleLoadData(module, data.c_str());
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!(ctx = Current())) return CUDA_ERROR_INVALID_CONTEXT;
  if (!module || !ctx->modules.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = UnsafeCall("cuModuleUnload")) return r;
  DrainAll(ctx);  // queued launches may use it
  for (uint64_t a : module->global_addresses) MemoryOf(ctx).Free(a);
  ctx->modules.erase(module);
  delete module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (!module || !ctx->modules.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& fn : module->functions)
    if (fn->kernel->name == name) return *f = fn.get(), CUDA_SUCCESS;
  return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule module, const char* name) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (!module || !ctx->modules.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  for (size_t i = 0; i < module->module.globals.size(); ++i) {
    if (module->module.globals[i].name != name) continue;
    if (dptr) *dptr = module->global_addresses[i];
    if (bytes) *bytes = module->module.globals[i].size;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction f) {
  std::lock_guard lock(D().mu);
  if (!value || !f) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  const Kernel& k = *f->kernel;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = MaxThreads(f); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = k.static_shared_bytes; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = std::max(k.local_bytes, f->resources.stack_bytes); break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = std::max(f->resources.registers, 0); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = f->module->module.ptx_major * 10 + f->module->module.ptx_minor; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = f->max_dynamic_shared; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  std::lock_guard lock(D().mu);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value + f->kernel->static_shared_bytes > D().device->shared_optin) return CUDA_ERROR_INVALID_VALUE;
      f->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return value < -1 || value > 100 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// ---------------------------------------------------------------------------------------
// Memory

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = UnsafeCall("cuMemAlloc")) return r;
  uint64_t a = MemoryOf(ctx).Allocate(bytes);
  if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx->allocations.insert(a);
  *dptr = a;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  if (!ctx->allocations.count(dptr)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = UnsafeCall("cuMemFree", true)) return r;
  if (CUresult r = DrainAll(ctx)) return r;  // frees synchronize, as on a GPU
  MemoryOf(ctx).Free(dptr);
  ctx->allocations.erase(dptr);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  *total = MemoryOf(ctx).capacity();
  *free_bytes = MemoryOf(ctx).capacity() - MemoryOf(ctx).used();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  DeviceMemory::Allocation* a = FindOnAnyDevice(dptr, 1, nullptr);  // unified addressing: any device's
  if (!a) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = a->base;
  if (size) *size = a->size;
  return CUDA_SUCCESS;
}

// Unified addressing: the allocation of any device that holds `ptr`, whatever the current
// context. Of the attributes, those of device memory (a pointer that is no allocation of
// device memory is CUDA_ERROR_INVALID_VALUE).
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  std::lock_guard lock(D().mu);
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  int device = 0;
  DeviceMemory::Allocation* a = FindOnAnyDevice(ptr, 1, &device);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = device; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT: {
      CUcontext owner = nullptr;
      for (CUctx_st* ctx : D().contexts) {
        if (ctx->allocations.count(a->base)) owner = ctx;
        for (CUmod_st* m : ctx->modules)
          if (std::count(m->global_addresses.begin(), m->global_addresses.end(), a->base)) owner = ctx;
      }
      *static_cast<CUcontext*>(data) = owner;
      break;
    }
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data) = CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = ptr; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = a->base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = a->size; break;
    default:
      Report("cuPointerGetAttribute: attribute " + std::to_string(attribute) + " is not emulated");
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Page-locked host memory: page-aligned, as the driver's; freeing anything else is an error.
namespace {
std::mutex host_mu;
std::set<void*>& HostBlocks() {
  static auto* blocks = new std::set<void*>();
  return *blocks;
}

// fork() after cuInit: as with NVIDIA's driver, the child cannot use the device; every call
// there (cuInit too) is CUDA_ERROR_NOT_INITIALIZED. The driver's locks are held across the
// fork, so the child's copy of the state is whole, and the child starts with new ones.
void RegisterForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(
        [] {
          D().mu.lock();
          host_mu.lock();
        },
        [] {
          host_mu.unlock();
          D().mu.unlock();
        },
        [] {
          new (&host_mu) std::mutex;
          new (&D().mu) std::recursive_mutex;  // (the parent's owner is no thread here)
          if (D().initialized) {
            D().forked = true;
            D().initialized = false;
          }
          context_stack.clear();
        });
  });
}
}  // namespace

CUresult CUDAAPI cuMemAllocHost(void** pp, size_t bytes) {
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(D().mu);
    if (D().forked) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult r = UnsafeCall("cuMemAllocHost")) return r;
  }
  constexpr size_t kPage = 4096;
  *pp = std::aligned_alloc(kPage, (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage);
  if (!*pp) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(host_mu);
  HostBlocks().insert(*pp);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  if (flags & CU_MEMHOSTALLOC_DEVICEMAP) return CUDA_ERROR_NOT_SUPPORTED;
  return cuMemAllocHost(pp, bytes);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
  {
    std::lock_guard lock(D().mu);
    if (D().forked) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult r = UnsafeCall("cuMemFreeHost", true)) return r;
  }
  {
    std::lock_guard<std::mutex> lock(host_mu);
    if (!HostBlocks().erase(p)) return CUDA_ERROR_INVALID_VALUE;
  }
  std::free(p);
  return CUDA_SUCCESS;
}

namespace {

// A synchronous call runs after the legacy default stream's pending work; an async one
// is queued on its stream.
CUresult RunOrEnqueue(CUctx_st* ctx, bool async, CUstream stream, CUgraphNodeType type, std::function<CUresult()> run) {
  if (!async) {
    if (CUresult r = UnsafeCall("a synchronous copy or memset")) return r;
    if (CUresult r = LegacyCall(ctx, "a synchronous copy or memset")) return r;
    if (CUresult r = SyncLegacy(ctx)) return r;
    return run();
  }
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s == &ctx->null_stream)
    if (CUresult r = LegacyCall(ctx, "work on the legacy default stream")) return r;
  return Submit(s, type, nullptr, std::move(run));
}

enum class Copy { kHtoD, kDtoH, kDtoD };

CUresult MemcpyImpl(Copy kind, void* host_dst, const void* host_src, CUdeviceptr dst, CUdeviceptr src, size_t bytes, bool async,
                    CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  // Without peer access, a context copies its own device's memory only.
  DeviceMemory* memory = &MemoryOf(ctx);
  bool ok = true;
  if (kind != Copy::kDtoH) ok &= ValidRange(memory, dst, bytes);
  if (kind != Copy::kHtoD) ok &= ValidRange(memory, src, bytes);
  if ((kind == Copy::kHtoD && !host_src) || (kind == Copy::kDtoH && !host_dst)) ok = false;
  if (!ok) {
    Report("cuMemcpy: a range outside every allocation of the context's device");
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Host memory is staged when the copy is issued, as drivers do for pageable memory: the
  // caller may reuse its buffer as soon as the call returns. (A captured copy reads it each
  // time its graph runs.)
  CUstream_st* s = async ? StreamOf(ctx, stream) : nullptr;
  std::shared_ptr<std::vector<uint8_t>> staged;
  if (kind == Copy::kHtoD && async && !(s && s->capture)) {
    const uint8_t* from = static_cast<const uint8_t*>(host_src);
    staged = std::make_shared<std::vector<uint8_t>>(from, from + bytes);
  }
  auto run = [=]() {  // (holds `staged` until the copy has run)
    switch (kind) {
      case Copy::kHtoD: std::memcpy(HostOf(memory, dst), staged ? staged->data() : host_src, bytes); break;
      case Copy::kDtoH: std::memcpy(host_dst, HostOf(memory, src), bytes); break;
      case Copy::kDtoD: std::memmove(HostOf(memory, dst), HostOf(memory, src), bytes); break;
    }
    return CUDA_SUCCESS;
  };
  return RunOrEnqueue(ctx, async, stream, CU_GRAPH_NODE_TYPE_MEMCPY, run);
}

CUresult MemsetImpl(CUdeviceptr dst, uint32_t value, int width, size_t count, bool async, CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (count == 0) return CUDA_SUCCESS;
  DeviceMemory* memory = &MemoryOf(ctx);
  if (dst % width != 0 || !ValidRange(memory, dst, count * width)) return CUDA_ERROR_INVALID_VALUE;
  auto run = [=]() {
    uint8_t* p = HostOf(memory, dst);
    for (size_t i = 0; i < count; ++i) std::memcpy(p + i * width, &value, width);
    return CUDA_SUCCESS;
  };
  return RunOrEnqueue(ctx, async, stream, CU_GRAPH_NODE_TYPE_MEMSET, run);
}

}  // namespace

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  return MemcpyImpl(Copy::kHtoD, nullptr, src, dst, 0, bytes, false, nullptr);
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  return MemcpyImpl(Copy::kDtoH, dst, nullptr, 0, src, bytes, false, nullptr);
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return MemcpyImpl(Copy::kDtoD, nullptr, nullptr, dst, src, bytes, false, nullptr);
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  return MemcpyImpl(Copy::kHtoD, nullptr, src, dst, 0, bytes, true, stream);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return MemcpyImpl(Copy::kDtoH, dst, nullptr, 0, src, bytes, true, stream);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return MemcpyImpl(Copy::kDtoD, nullptr, nullptr, dst, src, bytes, true, stream);
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  return MemsetImpl(dst, value, 1, count, false, nullptr);
}
CUresult CUDAAPI cuMemsetD16(CUdeviceptr dst, unsigned short value, size_t count) {
  return MemsetImpl(dst, value, 2, count, false, nullptr);
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  return MemsetImpl(dst, value, 4, count, false, nullptr);
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  return MemsetImpl(dst, value, 1, count, true, stream);
}
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, CUstream stream) {
  return MemsetImpl(dst, value, 2, count, true, stream);
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
  return MemsetImpl(dst, value, 4, count, true, stream);
}

// ---------------------------------------------------------------------------------------
// Streams and events

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int flags) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (flags & ~CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  auto* s = new CUstream_st;
  s->ctx = ctx;
  s->blocking = !(flags & CU_STREAM_NON_BLOCKING);
  ctx->streams.insert(s);
  *stream = s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  return cuStreamCreate(stream, flags);
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!(ctx = Current())) return CUDA_ERROR_INVALID_CONTEXT;
  if (!stream || !ctx->streams.count(stream)) return CUDA_ERROR_INVALID_HANDLE;
  for (const auto& [thread, mine] : ctx->per_thread)
    if (mine == stream) return CUDA_ERROR_INVALID_HANDLE;  // a default stream is not destroyed
  Drain(ctx, stream, UINT64_MAX);                          // work already queued still completes (a capture is dropped)
  ctx->streams.erase(stream);
  for (CUevent_st* e : ctx->events)
    if (e->stream == stream) e->stream = nullptr;
  delete stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture) return Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamSynchronize of the capturing stream");
  if (s == &ctx->null_stream)
    if (CUresult r = LegacyCall(ctx, "cuStreamSynchronize of the legacy default stream")) return r;
  return Drain(ctx, s, UINT64_MAX);
}

CUresult CUDAAPI cuStreamQuery(CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture) return Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamQuery of the capturing stream");
  if (s->queue.empty()) return CUDA_SUCCESS;
  // Not done yet; it completes "in the background", i.e. now, for the next query.
  if (CUresult r = Drain(ctx, s, UINT64_MAX)) return r;
  return CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s || !event || !ctx->events.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture)  // (the event was not recorded in this capture: events never are here)
    return Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "cuStreamWaitEvent of an event from outside the capture");
  if (!event->recorded || event->done || !event->stream) return CUDA_SUCCESS;
  CUstream_st* other = event->stream;
  uint64_t seq = event->seq;
  Enqueue(s, [ctx, other, seq]() {
    // A destroyed stream finished its work when it was destroyed.
    if (other != &ctx->null_stream && !ctx->streams.count(other)) return CUDA_SUCCESS;
    return Drain(ctx, other, seq);
  });
  return CUDA_SUCCESS;
}

// The host function runs in stream order, when the stream's work up to it runs (at a
// synchronization), with the driver's lock held: it must not call the driver.
CUresult CUDAAPI cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* user_data) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  return Submit(s, CU_GRAPH_NODE_TYPE_HOST, nullptr, [fn, user_data]() {
    fn(user_data);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int flags) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  auto* e = new CUevent_st;
  e->ctx = ctx;
  e->timing = !(flags & CU_EVENT_DISABLE_TIMING);
  ctx->events.insert(e);
  *event = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!(ctx = Current())) return CUDA_ERROR_INVALID_CONTEXT;
  if (!event || !ctx->events.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  ctx->events.erase(event);
  // A record still queued refers to it: it marks nothing once the event is gone.
  for (CUstream_st* s : ctx->streams) Drain(ctx, s, UINT64_MAX);
  Drain(ctx, &ctx->null_stream, UINT64_MAX);
  delete event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s || !event || !ctx->events.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture)
    return Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuEventRecord (cross-stream capture is not emulated)");
  const uint64_t seq = D().seq + 1;
  Enqueue(s, [event, seq]() {
    if (event->seq == seq) {  // not re-recorded since
      event->done = true;
      event->time = std::chrono::steady_clock::now();
    }
    return CUDA_SUCCESS;
  });
  event->stream = s;
  event->seq = seq;
  event->recorded = true;
  event->done = false;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!event || !ctx->events.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (!event->recorded || event->done || !event->stream) return CUDA_SUCCESS;
  return Drain(ctx, event->stream, event->seq);
}

CUresult CUDAAPI cuEventQuery(CUevent event) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!event || !ctx->events.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (!event->recorded || event->done || !event->stream) return CUDA_SUCCESS;
  if (CUresult r = Drain(ctx, event->stream, event->seq)) return r;
  return CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (!start || !end || !ctx->events.count(start) || !ctx->events.count(end)) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->timing || !end->timing) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->done || !end->done) return CUDA_ERROR_NOT_READY;
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------
// Launching

namespace {

bool ParamsFromExtra(const Kernel& k, void** extra, std::vector<uint8_t>* params, std::string* why) {
  void* buffer = nullptr;
  size_t* size = nullptr;
  for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      size = static_cast<size_t*>(extra[i + 1]);
    else
      return *why = "an unknown entry in `extra`", false;
  }
  if (!buffer || !size) return *why = "`extra` without CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE", false;
  int max_align = 1;
  for (const Param& p : k.params) max_align = std::max(max_align, p.align);
  size_t padded = (k.param_bytes + max_align - 1) / max_align * max_align;
  if (*size != static_cast<size_t>(k.param_bytes) && *size != padded) {
    *why = "the parameter buffer has " + std::to_string(*size) + " bytes; the kernel's " + std::to_string(k.params.size()) +
           " parameters take " + std::to_string(k.param_bytes);
    return false;
  }
  if (k.param_bytes > 0) std::memcpy(params->data(), buffer, k.param_bytes);
  return true;
}

// cuLaunchKernel and cuLaunchKernelEx: a launch of clusters of `cluster` blocks.
CUresult LaunchKernel(const char* api, CUfunction f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                      unsigned int shared_bytes, CUstream stream, void** kernel_params, void** extra) {
  const unsigned gx = grid[0], gy = grid[1], gz = grid[2], bx = block[0], by = block[1], bz = block[2];
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (f->module->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  const Kernel& k = *f->kernel;
  auto invalid = [&](const std::string& why, CUresult r = CUDA_ERROR_INVALID_VALUE) {
    Report(std::string(api) + " of '" + k.name + "': " + why);
    return r;
  };
  // 1. The launch's shape against the device's limits and the kernel's.
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return invalid("a zero grid or block dimension");
  if (gx > 2147483647u || gy > 65535 || gz > 65535)
    return invalid("grid (" + std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) +
                   ") exceeds (2147483647,65535,65535)");
  uint64_t threads = static_cast<uint64_t>(bx) * by * bz;
  if (bx > 1024 || by > 1024 || bz > 64 || threads > 1024)
    return invalid("block (" + std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
                   ") exceeds 1024 threads or (1024,1024,64)");
  if (k.reqntid[0] && (bx != static_cast<unsigned>(k.reqntid[0]) || by != static_cast<unsigned>(k.reqntid[1]) ||
                       bz != static_cast<unsigned>(k.reqntid[2])))
    return invalid("the block differs from the kernel's .reqntid");
  if (k.maxntid[0] && threads > static_cast<uint64_t>(k.maxntid[0]) * k.maxntid[1] * k.maxntid[2])
    return invalid("the block exceeds the kernel's .maxntid");
  if (f->resources.registers > 0 && threads > static_cast<uint64_t>(MaxThreads(f)))
    return invalid(std::to_string(threads) + " threads of " + std::to_string(f->resources.registers) +
                       " registers exceed the 65536 registers of a block",
                   CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  if (shared_bytes > static_cast<unsigned>(f->max_dynamic_shared))
    return invalid(std::to_string(shared_bytes) + " bytes of dynamic shared memory exceed the kernel's " +
                   std::to_string(f->max_dynamic_shared) +
                   " (above 48 KB needs cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES))");
  if (k.static_shared_bytes + static_cast<uint64_t>(shared_bytes) > static_cast<uint64_t>(D().device->shared_optin))
    return invalid("static and dynamic shared memory exceed the device's " + std::to_string(D().device->shared_optin / 1024) +
                   " KB");
  if (shared_bytes == 0 && k.static_shared_bytes > kSharedDefault) return invalid("more than 48 KB of static shared memory");
  const uint64_t cluster_size = static_cast<uint64_t>(cluster[0]) * cluster[1] * cluster[2];
  if (cluster_size > 1) {
    if (D().device->major < 9)
      return invalid("thread-block clusters need compute capability 9.0; the device has " + std::to_string(D().device->major) +
                         "." + std::to_string(D().device->minor),
                     CUDA_ERROR_NOT_SUPPORTED);
    for (int d = 0; d < 3; ++d)
      if (cluster[d] == 0 || grid[d] % cluster[d] != 0)
        return invalid("cluster (" + std::to_string(cluster[0]) + "," + std::to_string(cluster[1]) + "," +
                           std::to_string(cluster[2]) + ") does not divide grid (" + std::to_string(gx) + "," +
                           std::to_string(gy) + "," + std::to_string(gz) + ")",
                       CUDA_ERROR_INVALID_CLUSTER_SIZE);
    if (cluster_size > 8)
      return invalid(std::to_string(cluster_size) + " blocks per cluster exceed the portable 8", CUDA_ERROR_INVALID_CLUSTER_SIZE);
  }
  // 2. The parameters, copied now (the caller may reuse its buffers when this returns).
  if (kernel_params && extra) return invalid("both kernelParams and extra are given");
  std::vector<uint8_t> params(k.param_bytes);
  if (!k.params.empty()) {
    if (!kernel_params && !extra)
      return invalid("the kernel takes " + std::to_string(k.params.size()) + " parameters; none were given");
    if (kernel_params) {
      for (size_t i = 0; i < k.params.size(); ++i) {
        if (!kernel_params[i]) return invalid("kernelParams[" + std::to_string(i) + "] (" + k.params[i].name + ") is null");
        std::memcpy(params.data() + k.params[i].offset, kernel_params[i], k.params[i].size);
      }
    } else {
      std::string why;
      if (!ParamsFromExtra(k, extra, &params, &why)) return invalid(why);
    }
  }
  // 3. Queued: it runs when the stream is synchronized.
  auto launch = std::make_shared<Launch>();
  launch->kernel = &k;
  launch->kernel_name = k.name;
  launch->constant_values = f->constant_values;
  launch->grid[0] = gx, launch->grid[1] = gy, launch->grid[2] = gz;
  launch->block[0] = bx, launch->block[1] = by, launch->block[2] = bz;
  std::copy(cluster, cluster + 3, launch->cluster);
  launch->dynamic_shared = shared_bytes;
  launch->multiprocessors = D().device->multiprocessors;
  launch->params = std::move(params);
  launch->order = D().order;
  launch->seed = D().seed;
  launch->max_warp_instructions = D().max_warp_instructions;
  KernelResources resources = f->resources;
  DeviceMemory* memory = &MemoryOf(ctx);  // another device's memory is an illegal address
  return Submit(s, CU_GRAPH_NODE_TYPE_KERNEL, f, [launch, resources, memory]() {
    Stats stats;
    std::string message;
    Fault fault = RunGrid(*launch, memory, &stats, &message);
    CUemuCounters& c = D().last_counters;
    c = CUemuCounters{};
    c.blocks = stats.blocks;
    c.threads = stats.threads;
    c.warp_instructions = stats.warp_instructions;
    c.thread_instructions = stats.thread_instructions;
    c.global_load_requests = stats.global_load_requests;
    c.global_load_bytes = stats.global_load_bytes;
    c.global_load_sectors = stats.global_load_sectors;
    c.global_store_requests = stats.global_store_requests;
    c.global_store_bytes = stats.global_store_bytes;
    c.global_store_sectors = stats.global_store_sectors;
    c.shared_requests = stats.shared_requests;
    c.shared_bank_conflicts = stats.shared_bank_conflicts;
    c.global_load_footprint_sectors = stats.load_sector_set.size();
    c.global_store_footprint_sectors = stats.store_sector_set.size();
    c.float_ops = stats.float_ops;
    c.load_waits = stats.load_waits;
    c.loads_in_flight_at_waits = stats.loads_in_flight_at_waits;
    c.registers = resources.registers;
    c.spill_store_bytes = resources.spill_store_bytes;
    c.spill_load_bytes = resources.spill_load_bytes;
    c.static_shared_bytes = launch->kernel->static_shared_bytes;
    c.dynamic_shared_bytes = static_cast<int>(launch->dynamic_shared);
    switch (fault) {
      case Fault::kNone: return CUDA_SUCCESS;
      case Fault::kIllegalAddress: Report(message); return CUDA_ERROR_ILLEGAL_ADDRESS;
      case Fault::kMisalignedAddress: Report(message); return CUDA_ERROR_MISALIGNED_ADDRESS;
      case Fault::kTrap: Report(message); return CUDA_ERROR_ILLEGAL_INSTRUCTION;
      case Fault::kLaunchFailed: Report(message); return CUDA_ERROR_LAUNCH_FAILED;
      case Fault::kTimeout: Report(message); return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
    return CUDA_ERROR_UNKNOWN;
  });
}

}  // namespace

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                                unsigned int bz, unsigned int shared_bytes, CUstream stream, void** kernel_params, void** extra) {
  std::lock_guard lock(D().mu);
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz}, cluster[3] = {1, 1, 1};
  return LaunchKernel("cuLaunchKernel", f, grid, block, cluster, shared_bytes, stream, kernel_params, extra);
}

// Of the launch attributes, the cluster's dimensions (a zero cluster is no cluster).
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra) {
  std::lock_guard lock(D().mu);
  if (!config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  unsigned cluster[3] = {1, 1, 1};
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      Report("cuLaunchKernelEx: launch attribute " + std::to_string(a.id) + " is not emulated");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    const unsigned x = a.value.clusterDim.x, y = a.value.clusterDim.y, z = a.value.clusterDim.z;
    if (x == 0 && y == 0 && z == 0) continue;  // no cluster
    if (x == 0 || y == 0 || z == 0) {
      Report("cuLaunchKernelEx: cluster (" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) +
             ") has a zero dimension");
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    cluster[0] = x, cluster[1] = y, cluster[2] = z;
  }
  return LaunchKernel("cuLaunchKernelEx", f, grid, block, cluster, config->sharedMemBytes, config->hStream, kernel_params, extra);
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f, int block_size, size_t dynamic_shared) {
  std::lock_guard lock(D().mu);
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!blocks || !f || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  int warps = (block_size + 31) / 32;
  int by_threads = 2048 / (warps * 32);
  int regs = std::max(f->resources.registers, 1);
  int by_registers = 65536 / (((regs + 7) / 8 * 8) * 32 * warps);
  size_t shared = f->kernel->static_shared_bytes + dynamic_shared + 1024;
  int by_shared = static_cast<int>(233472 / shared);
  *blocks = std::max(0, std::min({32, by_threads, by_registers, by_shared}));
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------
// Graphs: stream capture, instantiation, launch and update

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s == &ctx->null_stream) {
    Report("cuStreamBeginCapture: the legacy default stream cannot be captured");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = std::make_unique<CUstream_st::Capture>();
  s->capture->graph = std::make_unique<CUgraph_st>();
  s->capture->graph->ctx = ctx;
  s->capture->mode = mode;
  s->capture->thread = std::this_thread::get_id();
  static uint64_t captures = 0;
  s->capture->id = ++captures;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (!s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  if (s->capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->capture->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  std::unique_ptr<CUstream_st::Capture> capture = std::move(s->capture);
  *graph = nullptr;
  // CUEMU_INVALIDATE_CAPTURES=1 (read at each call): every capture fails, as one would that
  // met a call it cannot take, so a program's way out of a failed capture can be tested.
  if (const char* env = std::getenv("CUEMU_INVALIDATE_CAPTURES"); env && std::string(env) == "1" && !capture->invalidated) {
    Report("cuStreamEndCapture: the capture is invalidated (CUEMU_INVALIDATE_CAPTURES=1)");
    capture->invalidated = true;
  }
  if (capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  *graph = capture->graph.release();
  ctx->graphs.insert(*graph);
  return CUDA_SUCCESS;
}

namespace {
CUstreamCaptureStatus CaptureStatusOf(const CUstream_st* s) {
  return !s->capture               ? CU_STREAM_CAPTURE_STATUS_NONE
         : s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}
}  // namespace

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  return cuStreamGetCaptureInfo(stream, status, nullptr, nullptr, nullptr, nullptr, nullptr);
}

// The capture's status, id and graph; its dependencies are the last node captured (the
// captured work is a chain), none before the first.
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                        const CUgraphNode** dependencies, const CUgraphEdgeData** edge_data, size_t* count) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  *status = CaptureStatusOf(s);
  const bool active = *status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id && s->capture) *id = s->capture->id;
  if (graph) *graph = active ? s->capture->graph.get() : nullptr;
  if (dependencies) *dependencies = active && s->capture->last ? &s->capture->last : nullptr;
  if (edge_data) *edge_data = nullptr;
  if (count) *count = active && s->capture->last ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (!graph || !ctx->graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  if (nodes) {
    for (size_t i = 0; i < *count; ++i) nodes[i] = i < graph->nodes.size() ? graph->nodes[i].get() : nullptr;
    *count = std::min(*count, graph->nodes.size());
  } else {
    *count = graph->nodes.size();
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!type) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  for (CUgraph_st* g : ctx->graphs)
    for (const auto& n : g->nodes)
      if (n.get() == node) return *type = n->type, CUDA_SUCCESS;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!graph || !ctx->graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  ctx->graphs.erase(graph);
  delete graph;  // (its instantiations keep their nodes)
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (!graph || !ctx->graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  if (flags != 0) {
    Report("cuGraphInstantiateWithFlags: the emulator instantiates with no flags");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  auto* e = new CUgraphExec_st;
  e->ctx = ctx;
  e->nodes = graph->nodes;
  ctx->execs.insert(e);
  *exec = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!exec || !ctx->execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
  ctx->execs.erase(exec);
  delete exec;  // (a launch still queued keeps the nodes it runs)
  return CUDA_SUCCESS;
}

// Runs the graph's nodes in order when the stream reaches it; the nodes are those of the
// launch (a later update does not change a launch already queued).
CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  if (!exec || !ctx->execs.count(exec)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture) return Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuGraphLaunch (a child graph is not emulated)");
  if (s == &ctx->null_stream)
    if (CUresult r = LegacyCall(ctx, "cuGraphLaunch on the legacy default stream")) return r;
  Enqueue(s, [nodes = exec->nodes]() {
    for (const auto& node : nodes)
      if (CUresult r = node->run()) return r;
    return CUDA_SUCCESS;
  });
  return CUDA_SUCCESS;
}

// The graph must have the instantiated graph's nodes, of the same kinds in the same order,
// kernel nodes launching the same kernels; their parameters may differ.
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!info) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  if (!exec || !ctx->execs.count(exec) || !graph || !ctx->graphs.count(graph)) return CUDA_ERROR_INVALID_VALUE;
  *info = CUgraphExecUpdateResultInfo{};
  auto fail = [&](CUgraphExecUpdateResult result, CUgraphNode node) {
    info->result = result;
    info->errorNode = node;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  };
  if (graph->nodes.size() != exec->nodes.size()) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, nullptr);
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const CUgraphNode_st& to = *graph->nodes[i];
    const CUgraphNode_st& from = *exec->nodes[i];
    if (to.type != from.type) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, graph->nodes[i].get());
    if (to.callee != from.callee) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE, graph->nodes[i].get());
  }
  exec->nodes = graph->nodes;
  info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  return CUDA_SUCCESS;
}

CUEMU_API CUresult cuemuLaunchHostTask(CUstream stream, CUresult (*run)(void*), void* data, void (*release)(void*)) {
  std::shared_ptr<void> held(data, [release](void* p) {
    if (release) release(p);
  });
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (!run) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s == &ctx->null_stream)
    if (CUresult r = LegacyCall(ctx, "work on the legacy default stream")) return r;
  return Submit(s, CU_GRAPH_NODE_TYPE_KERNEL, reinterpret_cast<const void*>(run), [run, held]() {
    CUresult r = run(held.get());
    if (r != CUDA_SUCCESS) Report("a library kernel (cuemuLaunchHostTask) failed: error " + std::to_string(r));
    return r;
  });
}

CUEMU_API void cuemuReport(const char* message) {
  std::lock_guard lock(D().mu);
  Report(message ? message : "");
}

CUEMU_API CUresult cuemuStreamCaptureUnsupported(CUstream stream, const char* call) {
  std::lock_guard lock(D().mu);
  CUctx_st* ctx;
  if (CUresult r = Enter(&ctx)) return r;
  CUstream_st* s = StreamOf(ctx, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (!s->capture) return CUDA_SUCCESS;
  return Invalidate(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call ? call : "a library call");
}

// ---------------------------------------------------------------------------------------
// cuGetProcAddress and the emulator's own entry points

namespace {
struct Entry {
  const char* name;
  void* fn;
};
#define CUEMU_ENTRY(name) {#name, reinterpret_cast<void*>(&name)}
const Entry kEntries[] = {
    CUEMU_ENTRY(cuGetErrorName),
    CUEMU_ENTRY(cuGetErrorString),
    CUEMU_ENTRY(cuInit),
    CUEMU_ENTRY(cuDriverGetVersion),
    CUEMU_ENTRY(cuDeviceGetCount),
    CUEMU_ENTRY(cuDeviceGet),
    CUEMU_ENTRY(cuDeviceGetName),
    CUEMU_ENTRY(cuDeviceTotalMem),
    CUEMU_ENTRY(cuDeviceGetAttribute),
    CUEMU_ENTRY(cuDevicePrimaryCtxRetain),
    CUEMU_ENTRY(cuDevicePrimaryCtxRelease),
    CUEMU_ENTRY(cuDevicePrimaryCtxReset),
    CUEMU_ENTRY(cuDevicePrimaryCtxGetState),
    CUEMU_ENTRY(cuDevicePrimaryCtxSetFlags),
    CUEMU_ENTRY(cuCtxCreate),
    CUEMU_ENTRY(cuCtxDestroy),
    CUEMU_ENTRY(cuCtxSetCurrent),
    CUEMU_ENTRY(cuCtxGetCurrent),
    CUEMU_ENTRY(cuCtxPushCurrent),
    CUEMU_ENTRY(cuCtxPopCurrent),
    CUEMU_ENTRY(cuCtxGetDevice),
    CUEMU_ENTRY(cuCtxSynchronize),
    CUEMU_ENTRY(cuModuleLoad),
    CUEMU_ENTRY(cuModuleLoadData),
    CUEMU_ENTRY(cuModuleLoadDataEx),
    CUEMU_ENTRY(cuModuleUnload),
    CUEMU_ENTRY(cuModuleGetFunction),
    CUEMU_ENTRY(cuModuleGetGlobal),
    CUEMU_ENTRY(cuFuncGetAttribute),
    CUEMU_ENTRY(cuFuncSetAttribute),
    CUEMU_ENTRY(cuFuncSetCacheConfig),
    CUEMU_ENTRY(cuMemAlloc),
    CUEMU_ENTRY(cuMemFree),
    CUEMU_ENTRY(cuMemGetInfo),
    CUEMU_ENTRY(cuMemGetAddressRange),
    CUEMU_ENTRY(cuPointerGetAttribute),
    CUEMU_ENTRY(cuMemAllocHost),
    CUEMU_ENTRY(cuMemHostAlloc),
    CUEMU_ENTRY(cuMemFreeHost),
    CUEMU_ENTRY(cuMemcpyHtoD),
    CUEMU_ENTRY(cuMemcpyDtoH),
    CUEMU_ENTRY(cuMemcpyDtoD),
    CUEMU_ENTRY(cuMemcpyHtoDAsync),
    CUEMU_ENTRY(cuMemcpyDtoHAsync),
    CUEMU_ENTRY(cuMemcpyDtoDAsync),
    CUEMU_ENTRY(cuMemsetD8),
    CUEMU_ENTRY(cuMemsetD16),
    CUEMU_ENTRY(cuMemsetD32),
    CUEMU_ENTRY(cuMemsetD8Async),
    CUEMU_ENTRY(cuMemsetD16Async),
    CUEMU_ENTRY(cuMemsetD32Async),
    CUEMU_ENTRY(cuStreamCreate),
    CUEMU_ENTRY(cuStreamCreateWithPriority),
    CUEMU_ENTRY(cuStreamDestroy),
    CUEMU_ENTRY(cuStreamSynchronize),
    CUEMU_ENTRY(cuStreamQuery),
    CUEMU_ENTRY(cuStreamWaitEvent),
    CUEMU_ENTRY(cuEventCreate),
    CUEMU_ENTRY(cuEventDestroy),
    CUEMU_ENTRY(cuEventRecord),
    CUEMU_ENTRY(cuEventSynchronize),
    CUEMU_ENTRY(cuEventQuery),
    CUEMU_ENTRY(cuEventElapsedTime),
    CUEMU_ENTRY(cuLaunchHostFunc),
    CUEMU_ENTRY(cuLaunchKernel),
    CUEMU_ENTRY(cuLaunchKernelEx),
    CUEMU_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor),
    CUEMU_ENTRY(cuStreamBeginCapture),
    CUEMU_ENTRY(cuStreamEndCapture),
    CUEMU_ENTRY(cuStreamIsCapturing),
    CUEMU_ENTRY(cuStreamGetCaptureInfo),
    CUEMU_ENTRY(cuGraphGetNodes),
    CUEMU_ENTRY(cuGraphNodeGetType),
    CUEMU_ENTRY(cuGraphDestroy),
    CUEMU_ENTRY(cuGraphInstantiateWithFlags),
    CUEMU_ENTRY(cuGraphExecDestroy),
    CUEMU_ENTRY(cuGraphLaunch),
    CUEMU_ENTRY(cuGraphExecUpdate),
    CUEMU_ENTRY(cuemuLaunchHostTask),
    CUEMU_ENTRY(cuGetProcAddress),
    CUEMU_ENTRY(cuemuGetLastLaunchCounters),
    CUEMU_ENTRY(cuemuGetLastErrorMessage),
    CUEMU_ENTRY(cuemuSetThreadOrder),
    CUEMU_ENTRY(cuemuDeviceMemory),
    CUEMU_ENTRY(cuemuReport),
    CUEMU_ENTRY(cuemuStreamCaptureUnsupported),
};
#undef CUEMU_ENTRY
}  // namespace

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

CUEMU_API CUresult cuemuGetLastLaunchCounters(CUemuCounters* counters) {
  std::lock_guard lock(D().mu);
  if (D().forked) return CUDA_ERROR_NOT_INITIALIZED;
  if (!counters) return CUDA_ERROR_INVALID_VALUE;
  *counters = D().last_counters;
  return CUDA_SUCCESS;
}

CUEMU_API const char* cuemuGetLastErrorMessage(void) {
  std::lock_guard lock(D().mu);
  return D().last_error.c_str();
}

CUEMU_API CUresult cuemuDeviceMemory(CUdeviceptr address, size_t bytes, void** host) {
  std::lock_guard lock(D().mu);
  if (!host) return CUDA_ERROR_INVALID_VALUE;
  if (!D().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  // The memory of the device whose work runs (a library's task), else the current context's.
  CUctx_st* ctx = D().running ? D().running : Current();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  DeviceMemory::Allocation* a = MemoryOf(ctx).Find(address, 1);
  if (!a || std::max<uint64_t>(bytes, 1) > a->size - (address - a->base)) return CUDA_ERROR_INVALID_VALUE;
  *host = a->data.get() + (address - a->base);
  return CUDA_SUCCESS;
}

CUEMU_API CUresult cuemuSetThreadOrder(CUemuThreadOrder order, unsigned long long seed) {
  std::lock_guard lock(D().mu);
  if (D().forked) return CUDA_ERROR_NOT_INITIALIZED;
  switch (order) {
    case CUEMU_ORDER_FORWARD: D().order = ThreadOrder::kForward; break;
    case CUEMU_ORDER_REVERSE: D().order = ThreadOrder::kReverse; break;
    case CUEMU_ORDER_SHUFFLE: D().order = ThreadOrder::kShuffle; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  D().seed = seed;
  return CUDA_SUCCESS;
}
