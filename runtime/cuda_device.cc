#include "runtime/cuda_device.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/allocator.h"
#include "runtime/tensor.h"
#include "runtime/trace.h"

#ifdef GRAPHJIT_HAVE_CUDA_H
#include <cuda.h>

#include "cuda_emulator/cuemu.h"
#endif

namespace graphjit {

#ifndef GRAPHJIT_HAVE_CUDA_H

// Built without the CUDA toolkit's cuda.h: no CUDA devices.
struct CudaDevice::Api {};
StatusOr<std::shared_ptr<CudaDevice>> CudaDevice::Get(const std::string&, int) {
  return Unimplemented("this build of graphjit has no CUDA support (the CUDA toolkit's cuda.h was not found)");
}
CudaDevice::~CudaDevice() = default;
CudaDevice::Stream::~Stream() = default;
// Without a device (Get fails) none of these is reached.
static Status NoCuda() { return Unimplemented("no CUDA support in this build"); }
StatusOr<uint64_t> CudaDevice::Allocate(size_t) { return NoCuda(); }
Status CudaDevice::MakeCurrent() const { return NoCuda(); }
void CudaDevice::Free(uint64_t) {}
size_t CudaDevice::bytes_in_use() const { return 0; }
size_t CudaDevice::bytes_cached() const { return 0; }
size_t CudaDevice::LimitMemory(size_t) { return 0; }
Status CudaDevice::CheckDeviceMemory(uint64_t, size_t) const { return NoCuda(); }
Status CudaDevice::RecordUse(uint64_t, void*) { return NoCuda(); }
Status CudaDevice::Fault() const { return Status::Ok(); }
Status CudaDevice::Stream::WaitFor(void*) { return NoCuda(); }
Status CudaDevice::Stream::CopyOnDevice(uint64_t, uint64_t, size_t) { return NoCuda(); }
bool CudaDevice::IsPinned(const void*, size_t) const { return false; }
StatusOr<CudaDevice::Kernel> CudaDevice::LoadKernel(const std::string&, const std::string&, int) { return NoCuda(); }
StatusOr<std::unique_ptr<CudaDevice::Stream>> CudaDevice::NewStream() { return NoCuda(); }
StatusOr<CudaDevice::LaunchCounters> CudaDevice::LastLaunchCounters() const { return NoCuda(); }
CudaDevice::Graph::~Graph() = default;
bool CudaDevice::has_graphs() const { return false; }
Status CudaDevice::Stream::BeginCapture() { return NoCuda(); }
StatusOr<std::shared_ptr<CudaDevice::Graph>> CudaDevice::Stream::EndCapture(std::shared_ptr<Graph>) { return NoCuda(); }
Status CudaDevice::Stream::Launch(const Graph&) { return NoCuda(); }
Status CudaDevice::Stream::CopyToDevice(uint64_t, const void*, size_t) { return NoCuda(); }
Status CudaDevice::Stream::CopyToHost(void*, uint64_t, size_t) { return NoCuda(); }
Status CudaDevice::Stream::Launch(const Kernel&, const unsigned[3], const unsigned[3], unsigned, std::vector<void*>, unsigned) {
  return NoCuda();
}
StatusOr<int> CudaDevice::Stream::Record() { return NoCuda(); }
StatusOr<float> CudaDevice::Stream::ElapsedMillis(int, int) { return NoCuda(); }
void CudaDevice::Stream::ClearPoints() {}
Status CudaDevice::Stream::Synchronize() { return NoCuda(); }

#else

// The driver entry points the device uses, with their cuda.h types, by exported name.
#define GRAPHJIT_CUDA_FUNCTIONS(X)                        \
  X(cuGetErrorName, "cuGetErrorName")                     \
  X(cuDeviceGet, "cuDeviceGet")                           \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                   \
  X(cuMemAlloc, "cuMemAlloc_v2")                          \
  X(cuMemFree, "cuMemFree_v2")                            \
  X(cuMemGetAddressRange, "cuMemGetAddressRange_v2")      \
  X(cuMemHostAlloc, "cuMemHostAlloc")                     \
  X(cuMemFreeHost, "cuMemFreeHost")                       \
  X(cuModuleLoadData, "cuModuleLoadData")                 \
  X(cuModuleGetFunction, "cuModuleGetFunction")           \
  X(cuFuncSetAttribute, "cuFuncSetAttribute")             \
  X(cuStreamCreate, "cuStreamCreate")                     \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                \
  X(cuStreamSynchronize, "cuStreamSynchronize")           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")            \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")            \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")            \
  X(cuStreamWaitEvent, "cuStreamWaitEvent")               \
  X(cuEventQuery, "cuEventQuery")                         \
  X(cuLaunchKernel, "cuLaunchKernel")                     \
  X(cuLaunchKernelEx, "cuLaunchKernelEx")                 \
  X(cuEventCreate, "cuEventCreate")                       \
  X(cuEventDestroy, "cuEventDestroy_v2")                  \
  X(cuEventRecord, "cuEventRecord")                       \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2")
// Optional: launch graphs.
#define GRAPHJIT_CUDA_GRAPH_FUNCTIONS(X)                        \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2")            \
  X(cuStreamEndCapture, "cuStreamEndCapture")                   \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags") \
  X(cuGraphExecUpdate, "cuGraphExecUpdate_v2")                  \
  X(cuGraphLaunch, "cuGraphLaunch")                             \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")                   \
  X(cuGraphDestroy, "cuGraphDestroy")

struct CudaDevice::Api {
#define GRAPHJIT_CUDA_MEMBER(fn, symbol) decltype(&::fn) fn = nullptr;
  GRAPHJIT_CUDA_FUNCTIONS(GRAPHJIT_CUDA_MEMBER)
  GRAPHJIT_CUDA_GRAPH_FUNCTIONS(GRAPHJIT_CUDA_MEMBER)
#undef GRAPHJIT_CUDA_MEMBER
  bool graphs = true;
  decltype(&::cuPointerGetAttribute) cuPointerGetAttribute = nullptr;  // optional: which device memory is on
};

namespace {

// Size classes: powers of two from 256 bytes (cuMemAlloc's alignment).
size_t SizeClass(size_t bytes) { return std::bit_ceil(std::max<size_t>(bytes, 256)); }

}  // namespace

StatusOr<std::shared_ptr<CudaDevice>> CudaDevice::Get(const std::string& library, int ordinal) {
  GJ_RETURN_IF_ERROR(CheckNotForkedAfterCuda());
  static std::mutex mu;
  static auto* devices = new std::map<std::pair<std::string, int>, std::shared_ptr<CudaDevice>>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = devices->find({library, ordinal}); it != devices->end()) {
    GJ_RETURN_IF_ERROR(it->second->Fault());
    return it->second;
  }
  std::shared_ptr<CudaDevice> device(new CudaDevice);
  GJ_ASSIGN_OR_RETURN(device->driver_, CudaDriver::Open(library, ordinal));
  device->api_ = std::make_unique<Api>();
  Api& api = *device->api_;
#define GRAPHJIT_CUDA_LOAD(fn, symbol)                                         \
  api.fn = reinterpret_cast<decltype(&::fn)>(device->driver_->Symbol(symbol)); \
  if (!api.fn) return InvalidArgument(library + " has no " + symbol);
  GRAPHJIT_CUDA_FUNCTIONS(GRAPHJIT_CUDA_LOAD)
#undef GRAPHJIT_CUDA_LOAD
#define GRAPHJIT_CUDA_LOAD_OPTIONAL(fn, symbol)                                \
  api.fn = reinterpret_cast<decltype(&::fn)>(device->driver_->Symbol(symbol)); \
  api.graphs = api.graphs && api.fn;
  GRAPHJIT_CUDA_GRAPH_FUNCTIONS(GRAPHJIT_CUDA_LOAD_OPTIONAL)
#undef GRAPHJIT_CUDA_LOAD_OPTIONAL
  api.cuPointerGetAttribute =
      reinterpret_cast<decltype(&::cuPointerGetAttribute)>(device->driver_->Symbol("cuPointerGetAttribute"));
  CUdevice dev = 0;
  GJ_RETURN_IF_ERROR(device->Check(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet"));
  CUcontext context = nullptr;
  GJ_RETURN_IF_ERROR(device->Check(api.cuDevicePrimaryCtxRetain(&context, dev), "cuDevicePrimaryCtxRetain"));
  device->context_ = context;
  // (The device is never destroyed: see below.)
  CudaDevice* d = device.get();
  device->host_allocator_ = std::make_shared<Allocator>(
      Allocator::kDefaultMaxAllocationBytes, Allocator::kDefaultMaxCachedBytes,
      Allocator::Backing{[d](size_t bytes) { return d->AllocateHost(bytes); }, [d](void* p) { d->FreeHost(p); }});
  devices->emplace(std::make_pair(library, ordinal), device);
  return device;
}

// The device lives as long as the process: its context is the driver's primary one,
// released by the driver at exit.
CudaDevice::~CudaDevice() = default;

namespace {

// The errors after which CUDA's context is unusable: every later call of the process on the
// device fails with the same error (cuda.h: "the process must be terminated and relaunched").
bool BreaksTheContext(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_LAUNCH_TIMEOUT: return true;
    default: return false;
  }
}

}  // namespace

std::string CudaDevice::Label() const { return "gpu:" + std::to_string(ordinal()) + " (" + info().name + ")"; }

Status CudaDevice::Fault() const {
  std::lock_guard<std::mutex> lock(fault_mu_);
  if (fault_.empty()) return Status::Ok();
  return Internal(fault_);
}

Status CudaDevice::Check(int result, const char* call) const {
  if (result == CUDA_SUCCESS) return Status::Ok();
  const char* name = nullptr;
  if (api_->cuGetErrorName(static_cast<CUresult>(result), &name) != CUDA_SUCCESS) name = nullptr;
  const std::string error = name ? name : std::to_string(result);
  {
    std::lock_guard<std::mutex> lock(fault_mu_);
    if (!fault_.empty()) return Internal(fault_);
    if (BreaksTheContext(static_cast<CUresult>(result))) {
      fault_ = Label() + " had a fault CUDA cannot recover from: " + error + " (first reported by " + call +
               "); every later use of this GPU by this process fails: restart the process";
      return Internal(fault_);
    }
  }
  return Internal(std::string(call) + " failed on " + info().name + ": " + error);
}

Status CudaDevice::MakeCurrent() const {
  GJ_RETURN_IF_ERROR(Fault());
  return Check(api_->cuCtxSetCurrent(static_cast<CUcontext>(context_)), "cuCtxSetCurrent");
}

size_t CudaDevice::LimitMemory(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!limit_) limit_ = std::max<size_t>(bytes, 1);
  return limit_;
}

Status CudaDevice::CheckDeviceMemory(uint64_t address, size_t bytes) const {
  GJ_RETURN_IF_ERROR(MakeCurrent());
  int owner = ordinal();
  if (api_->cuPointerGetAttribute &&
      api_->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address) == CUDA_SUCCESS && owner != ordinal()) {
    char at[32];
    std::snprintf(at, sizeof at, "0x%llx", static_cast<unsigned long long>(address));
    auto other = CudaDriver::Open(info().library, owner);
    return InvalidArgument(std::string("the device memory at ") + at + " is on gpu:" + std::to_string(owner) +
                           (other.ok() ? " (" + (*other)->device().name + ")" : "") + ", not on the session's " + Label() +
                           ": a tensor must be on the GPU that runs it");
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  const char* what = nullptr;
  if (api_->cuMemGetAddressRange(&base, &size, address) != CUDA_SUCCESS)
    what = "is not device memory of ";
  else if (address + bytes > base + size)
    what = "runs past the end of its allocation on ";
  if (!what) return Status::Ok();
  char range[96];
  std::snprintf(range, sizeof range, "[0x%llx, 0x%llx) ", static_cast<unsigned long long>(address),
                static_cast<unsigned long long>(address + bytes));
  return InvalidArgument(std::string(range) + what + info().name);
}

void CudaDevice::ReclaimUsedBlocks() {
  if (used_.empty() || !MakeCurrent().ok()) return;
  std::erase_if(used_, [&](Used& u) {
    for (void* e : u.events)
      if (api_->cuEventQuery(static_cast<CUevent>(e)) == CUDA_ERROR_NOT_READY) return false;
    for (void* e : u.events) api_->cuEventDestroy(static_cast<CUevent>(e));
    free_[u.size].push_back(u.address);
    cached_ += u.size;
    in_use_ -= u.size;
    return true;
  });
}

Status CudaDevice::RecordUse(uint64_t address, void* stream) {
  GJ_RETURN_IF_ERROR(MakeCurrent());
  CUevent event = nullptr;
  GJ_RETURN_IF_ERROR(Check(api_->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  if (Status s = Check(api_->cuEventRecord(event, static_cast<CUstream>(stream)), "cuEventRecord on the caller's stream");
      !s.ok()) {
    api_->cuEventDestroy(event);
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!live_.count(address)) {  // not this allocator's block (the caller's own memory)
    api_->cuEventDestroy(event);
    return Status::Ok();
  }
  uses_[address].push_back(event);
  return Status::Ok();
}

void CudaDevice::CaptureBegins() {
  std::lock_guard<std::mutex> lock(mu_);
  ++captures_;
}

void CudaDevice::CaptureEnds() {
  std::vector<void*> frees;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--captures_ > 0) return;
    frees.swap(host_frees_);
  }
  no_captures_.notify_all();
  for (void* p : frees) FreeHost(p);
}

StatusOr<uint64_t> CudaDevice::Allocate(size_t bytes) {
  const size_t size = SizeClass(bytes);
  std::unique_lock<std::mutex> lock(mu_);
  ReclaimUsedBlocks();
  if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
    uint64_t address = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    in_use_ += size;
    live_[address] = size;
    return address;
  }
  GJ_RETURN_IF_ERROR(MakeCurrent());
  auto release_cache = [&] {
    no_captures_.wait(lock, [&] { return captures_ == 0; });  // (the lock is let go meanwhile)
    for (auto& [cls, blocks] : free_)
      for (uint64_t block : blocks) api_->cuMemFree(block);
    free_.clear();
    cached_ = 0;
  };
  auto out_of_memory = [&](const std::string& why) {
    return ResourceExhausted("out of device memory on " + info().name + ": " + std::to_string(bytes) + " bytes asked for, " +
                             std::to_string(in_use_) + " bytes in use" + why);
  };
  if (limit_ && in_use_ + cached_ + size > limit_) {
    release_cache();
    if (in_use_ + size > limit_)
      return out_of_memory(", the process's limit is " + std::to_string(limit_) +
                           " bytes (gpu_options.per_process_gpu_memory_fraction)");
  }
  CUdeviceptr address = 0;
  CUresult r = api_->cuMemAlloc(&address, size);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && cached_ > 0) {  // give the cache back, then try again
    release_cache();
    r = api_->cuMemAlloc(&address, size);
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return out_of_memory("");
  GJ_RETURN_IF_ERROR(Check(r, "cuMemAlloc"));
  in_use_ += size;
  live_[address] = size;
  return static_cast<uint64_t>(address);
}

void CudaDevice::Free(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(address);
  if (it == live_.end()) return;
  if (auto uses = uses_.find(address); uses != uses_.end()) {  // in use until its events are done
    used_.push_back({address, it->second, std::move(uses->second)});
    uses_.erase(uses);
    live_.erase(it);
    return;
  }
  free_[it->second].push_back(address);
  cached_ += it->second;
  in_use_ -= it->second;
  live_.erase(it);
}

void* CudaDevice::AllocateHost(size_t bytes) {
  void* p = nullptr;
  if (MakeCurrent().ok() && api_->cuMemHostAlloc(&p, bytes, 0) == CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(mu_);
    pinned_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  return std::aligned_alloc(Allocator::kAlignment, bytes);  // the driver would not lock more
}

void CudaDevice::FreeHost(void* p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pinned_.find(static_cast<const char*>(p));
    if (it == pinned_.end()) {
      std::free(p);
      return;
    }
    if (captures_ > 0) {  // cuMemFreeHost may synchronize the device: after the captures
      host_frees_.push_back(p);
      return;
    }
    pinned_.erase(it);
  }
  if (MakeCurrent().ok()) api_->cuMemFreeHost(p);
}

bool CudaDevice::IsPinned(const void* host, size_t bytes) const {
  const char* p = static_cast<const char*>(host);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pinned_.upper_bound(p);
  if (it == pinned_.begin()) return false;
  --it;
  return p + bytes <= it->first + it->second;
}

size_t CudaDevice::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t CudaDevice::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

StatusOr<CudaDevice::Kernel> CudaDevice::LoadKernel(const std::string& ptx, const std::string& name, int dynamic_shared) {
  std::lock_guard<std::mutex> lock(mu_);
  GJ_RETURN_IF_ERROR(MakeCurrent());
  auto [it, fresh] = modules_.try_emplace(ptx, nullptr);
  if (fresh) {
    CUmodule module = nullptr;
    Status loaded = Check(api_->cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData");
    if (!loaded.ok()) {
      modules_.erase(it);
      return loaded;
    }
    it->second = module;
  }
  CUfunction function = nullptr;
  GJ_RETURN_IF_ERROR(
      Check(api_->cuModuleGetFunction(&function, static_cast<CUmodule>(it->second), name.c_str()), "cuModuleGetFunction"));
  if (dynamic_shared > 0)
    GJ_RETURN_IF_ERROR(Check(
        api_->cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_shared),
        ("cuFuncSetAttribute of " + name + ": " + std::to_string(dynamic_shared) + " bytes of dynamic shared memory").c_str()));
  return Kernel{function, name};
}

StatusOr<std::unique_ptr<CudaDevice::Stream>> CudaDevice::NewStream() {
  GJ_RETURN_IF_ERROR(MakeCurrent());
  std::unique_ptr<Stream> stream(new Stream(this));
  CUstream s = nullptr;
  GJ_RETURN_IF_ERROR(Check(api_->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  stream->stream_ = s;
  return stream;
}

CudaDevice::Stream::~Stream() {
  if (!stream_) return;
  (void)Synchronize();  // (the staging goes back once its copies are done)
  (void)device_->MakeCurrent();
  for (void* e : events_) device_->api_->cuEventDestroy(static_cast<CUevent>(e));
  if (wait_event_) device_->api_->cuEventDestroy(static_cast<CUevent>(wait_event_));
  device_->api_->cuStreamDestroy(static_cast<CUstream>(stream_));
}

Status CudaDevice::Stream::CopyToDevice(uint64_t device, const void* host, size_t bytes) {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  h2d_bytes_ += static_cast<int64_t>(bytes);
  ++h2d_copies_;
  auto copy = [&](uint64_t to, const void* from, size_t n) {
    return device_->Check(device_->api_->cuMemcpyHtoDAsync(to, from, n, static_cast<CUstream>(stream_)), "cuMemcpyHtoDAsync");
  };
  if (bytes < kStagedCopyBytes || device_->IsPinned(host, bytes)) return copy(device, host, bytes);
  GJ_ASSIGN_OR_RETURN(void* staging, device_->host_allocator_->Allocate(bytes));
  staged_.emplace_back(staging, bytes);
  // Chunks, so the copy of one overlaps the memcpy of the next.
  constexpr size_t kChunk = size_t{256} << 10;
  for (size_t at = 0; at < bytes; at += kChunk) {
    const size_t n = std::min(kChunk, bytes - at);
    std::memcpy(static_cast<char*>(staging) + at, static_cast<const char*>(host) + at, n);
    GJ_RETURN_IF_ERROR(copy(device + at, static_cast<char*>(staging) + at, n));
  }
  return Status::Ok();
}

Status CudaDevice::Stream::CopyOnDevice(uint64_t to, uint64_t from, size_t bytes) {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  return device_->Check(device_->api_->cuMemcpyDtoDAsync(to, from, bytes, static_cast<CUstream>(stream_)), "cuMemcpyDtoDAsync");
}

Status CudaDevice::Stream::WaitFor(void* other) {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  const CudaDevice::Api& api = *device_->api_;
  if (!wait_event_) {
    CUevent event = nullptr;
    GJ_RETURN_IF_ERROR(device_->Check(api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
    wait_event_ = event;
  }
  // (A wait takes the event's state when it is queued: the event may be recorded again at once.)
  CUevent event = static_cast<CUevent>(wait_event_);
  GJ_RETURN_IF_ERROR(
      device_->Check(api.cuEventRecord(event, static_cast<CUstream>(other)), "cuEventRecord on the caller's stream"));
  return device_->Check(api.cuStreamWaitEvent(static_cast<CUstream>(stream_), event, 0), "cuStreamWaitEvent");
}

Status CudaDevice::Stream::CopyToHost(void* host, uint64_t device, size_t bytes) {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  d2h_bytes_ += static_cast<int64_t>(bytes);
  ++d2h_copies_;
  GJ_RETURN_IF_ERROR(
      device_->Check(device_->api_->cuMemcpyDtoHAsync(host, device, bytes, static_cast<CUstream>(stream_)), "cuMemcpyDtoHAsync"));
  return Synchronize();  // the host reads it next
}

Status CudaDevice::Stream::Launch(const Kernel& kernel, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                                  std::vector<void*> args, unsigned cluster) {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  if (cluster <= 1)
    return device_->Check(
        device_->api_->cuLaunchKernel(static_cast<CUfunction>(kernel.function), grid[0], grid[1], grid[2], block[0], block[1],
                                      block[2], shared_bytes, static_cast<CUstream>(stream_), args.data(), nullptr),
        ("cuLaunchKernel of " + kernel.name).c_str());
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = cluster;
  attribute.value.clusterDim.y = attribute.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid[0], config.gridDimY = grid[1], config.gridDimZ = grid[2];
  config.blockDimX = block[0], config.blockDimY = block[1], config.blockDimZ = block[2];
  config.sharedMemBytes = shared_bytes;
  config.hStream = static_cast<CUstream>(stream_);
  config.attrs = &attribute;
  config.numAttrs = 1;
  return device_->Check(device_->api_->cuLaunchKernelEx(&config, static_cast<CUfunction>(kernel.function), args.data(), nullptr),
                        ("cuLaunchKernelEx of " + kernel.name + " in clusters of " + std::to_string(cluster)).c_str());
}

StatusOr<int> CudaDevice::Stream::Record() {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  CUevent event = nullptr;
  GJ_RETURN_IF_ERROR(device_->Check(device_->api_->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
  events_.push_back(event);
  GJ_RETURN_IF_ERROR(device_->Check(device_->api_->cuEventRecord(event, static_cast<CUstream>(stream_)), "cuEventRecord"));
  return static_cast<int>(events_.size()) - 1;
}

StatusOr<float> CudaDevice::Stream::ElapsedMillis(int from, int to) {
  if (from < 0 || to < 0 || from >= static_cast<int>(events_.size()) || to >= static_cast<int>(events_.size()))
    return InvalidArgument("no such recorded point on the stream");
  GJ_RETURN_IF_ERROR(Synchronize());
  float ms = 0;
  GJ_RETURN_IF_ERROR(device_->Check(
      device_->api_->cuEventElapsedTime(&ms, static_cast<CUevent>(events_[from]), static_cast<CUevent>(events_[to])),
      "cuEventElapsedTime"));
  return ms;
}

bool CudaDevice::has_graphs() const { return api_->graphs; }

CudaDevice::Graph::~Graph() {
  if (!exec_) return;
  (void)device_->MakeCurrent();
  device_->api_->cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));
}

Status CudaDevice::Stream::BeginCapture() {
  if (!device_->has_graphs()) return Unimplemented("the CUDA driver has no graph API");
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  device_->CaptureBegins();
  Status s =
      device_->Check(device_->api_->cuStreamBeginCapture(static_cast<CUstream>(stream_), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                     "cuStreamBeginCapture");
  if (!s.ok()) device_->CaptureEnds();
  return s;
}

StatusOr<std::shared_ptr<CudaDevice::Graph>> CudaDevice::Stream::EndCapture(std::shared_ptr<Graph> reuse) {
  const Api& api = *device_->api_;
  Status current = device_->MakeCurrent();
  CUgraph graph = nullptr;
  const CUresult ended = current.ok() ? api.cuStreamEndCapture(static_cast<CUstream>(stream_), &graph) : CUDA_SUCCESS;
  device_->CaptureEnds();
  GJ_RETURN_IF_ERROR(current);
  GJ_RETURN_IF_ERROR(device_->Check(ended, "cuStreamEndCapture"));
  std::unique_ptr<CUgraph_st, decltype(api.cuGraphDestroy)> owned(graph, api.cuGraphDestroy);
  if (reuse) {
    CUgraphExecUpdateResultInfo info{};
    if (api.cuGraphExecUpdate(static_cast<CUgraphExec>(reuse->exec_), graph, &info) == CUDA_SUCCESS) return reuse;
  }
  std::shared_ptr<Graph> made(new Graph(device_));
  CUgraphExec exec = nullptr;
  GJ_RETURN_IF_ERROR(device_->Check(api.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate"));
  made->exec_ = exec;
  return made;
}

Status CudaDevice::Stream::Launch(const Graph& graph) {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  ++graph_launches_;
  return device_->Check(device_->api_->cuGraphLaunch(static_cast<CUgraphExec>(graph.exec_), static_cast<CUstream>(stream_)),
                        "cuGraphLaunch");
}

StatusOr<CudaDevice::LaunchCounters> CudaDevice::LastLaunchCounters() const {
  using GetCounters = CUresult (*)(CUemuCounters*);
  auto get = reinterpret_cast<GetCounters>(driver_->Symbol("cuemuGetLastLaunchCounters"));
  if (!get) return NotFound("the CUDA driver counts nothing per launch (only the CUDA emulator does)");
  GJ_RETURN_IF_ERROR(MakeCurrent());
  CUemuCounters c{};
  GJ_RETURN_IF_ERROR(Check(get(&c), "cuemuGetLastLaunchCounters"));
  LaunchCounters out;
  out.thread_instructions = c.thread_instructions;
  out.load_bytes = c.global_load_bytes;
  out.store_bytes = c.global_store_bytes;
  out.request_sectors = c.global_load_sectors + c.global_store_sectors;
  out.footprint_sectors = c.global_load_footprint_sectors + c.global_store_footprint_sectors;
  out.float_ops = c.float_ops;
  out.registers = c.registers;
  out.spill_bytes = c.spill_store_bytes + c.spill_load_bytes;
  out.shared_bytes = c.static_shared_bytes + c.dynamic_shared_bytes;
  out.load_requests = c.global_load_requests;
  out.load_sectors = c.global_load_sectors;
  out.load_waits = c.load_waits;
  out.loads_in_flight_at_waits = c.loads_in_flight_at_waits;
  return out;
}

void CudaDevice::Stream::ClearPoints() {
  if (events_.empty() || !device_->MakeCurrent().ok()) return;
  for (void* e : events_) device_->api_->cuEventDestroy(static_cast<CUevent>(e));
  events_.clear();
}

Status CudaDevice::Stream::Synchronize() {
  GJ_RETURN_IF_ERROR(device_->MakeCurrent());
  GJ_RETURN_IF_ERROR(device_->Check(device_->api_->cuStreamSynchronize(static_cast<CUstream>(stream_)), "cuStreamSynchronize"));
  for (auto [staging, bytes] : staged_) device_->host_allocator_->Deallocate(staging, bytes);
  staged_.clear();
  return Status::Ok();
}

#endif  // GRAPHJIT_HAVE_CUDA_H

const char* CudaDevice::HostMemoryKind(const void* host, size_t bytes) const {
  return IsPinned(host, bytes) ? "pinned" : bytes >= Stream::kStagedCopyBytes ? "staged" : "pageable";
}

std::string StreamCounts::ToString() const {
  return "h2d_bytes=" + std::to_string(h2d_bytes) + " d2h_bytes=" + std::to_string(d2h_bytes) +
         " h2d_copies=" + std::to_string(h2d_copies) + " d2h_copies=" + std::to_string(d2h_copies) +
         " graph_launches=" + std::to_string(graph_launches) + " cpu_ops=" + std::to_string(cpu_ops);
}

StreamCounts CudaDevice::Stream::counts() const {
  return {h2d_bytes_.load(), d2h_bytes_.load(), h2d_copies_.load(), d2h_copies_.load(), graph_launches_.load(), 0};
}

StatusOr<std::shared_ptr<DeviceMemory>> DeviceMemory::Allocate(std::shared_ptr<CudaDevice> device, size_t bytes) {
  GJ_ASSIGN_OR_RETURN(uint64_t address, device->Allocate(std::max<size_t>(bytes, 1)));
  return std::make_shared<DeviceMemory>(std::move(device), address);
}

bool OnDeviceOnly(const Tensor& t) { return t.buffer() != nullptr && t.buffer()->data() == nullptr; }

Status GpuContext::CopyToHost(const Tensor& t, Tracer* tracer, const std::string& trace_name) {
  if (!OnDeviceOnly(t)) return Status::Ok();
  std::shared_ptr<DeviceMemory> memory = cuda ? t.buffer()->DeviceCopy(cuda.get()) : nullptr;
  if (!memory) return Internal("a tensor on another device than the session's GPU");
  const int64_t start = tracer ? tracer->NowMicros() : 0;
  const size_t bytes = t.buffer()->size();
  GJ_RETURN_IF_ERROR(t.buffer()->FillHostOnce([&](void* host) {
    std::lock_guard<std::mutex> lock(mu);
    return stream->CopyToHost(host, memory->address(), bytes);
  }));
  if (tracer)
    tracer->Add({trace_name, "DtoH", start, tracer->NowMicros() - start, CurrentThreadId(), static_cast<int64_t>(bytes),
                 cuda->IsPinned(t.buffer()->data(), bytes) ? "pinned" : "pageable"});
  return Status::Ok();
}

StatusOr<std::unique_ptr<GpuContext>> GpuContext::Open(DeviceKind device, const std::string& cuda_driver, double memory_fraction,
                                                       int ordinal) {
  auto gpu = std::make_unique<GpuContext>();
  gpu->device = device == DeviceKind::kCpu ? DeviceKind::kGpu : device;
  GJ_ASSIGN_OR_RETURN(gpu->library, CudaDriverLibrary(gpu->device, cuda_driver));
  GJ_ASSIGN_OR_RETURN(gpu->cuda, CudaDevice::Get(gpu->library, ordinal));
  if (memory_fraction > 0)
    gpu->cuda->LimitMemory(static_cast<size_t>(memory_fraction * static_cast<double>(gpu->cuda->info().total_memory)));
  GJ_ASSIGN_OR_RETURN(gpu->stream, gpu->cuda->NewStream());
  return gpu;
}

}  // namespace graphjit
