// A CUDA device for the runtime, through the driver API of runtime/cuda_driver.h: its
// primary context, a caching allocator of device memory, streams (one per session) with
// copies, kernel launches and timing events, and PTX modules loaded once.
// No CUDA header is visible here: device memory is a uint64_t address, handles are opaque.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/cuda_driver.h"

namespace graphjit {

class Allocator;
class Tensor;
class Tracer;

// What a GPU session's stream did: copies between the host and the device, each way
// (bytes and calls), and launches of graphs; and the ops its runs computed on the CPU
// (GpuContext::cpu_ops).
struct StreamCounts {
  int64_t h2d_bytes = 0, d2h_bytes = 0, h2d_copies = 0, d2h_copies = 0;
  int64_t graph_launches = 0;
  int64_t cpu_ops = 0;
  StreamCounts operator-(const StreamCounts& o) const {
    return {h2d_bytes - o.h2d_bytes,   d2h_bytes - o.d2h_bytes,           h2d_copies - o.h2d_copies,
            d2h_copies - o.d2h_copies, graph_launches - o.graph_launches, cpu_ops - o.cpu_ops};
  }
  // "h2d_bytes=N d2h_bytes=N h2d_copies=N d2h_copies=N graph_launches=N cpu_ops=N"
  std::string ToString() const;
};

class CudaDevice {
 public:
  // The device `ordinal` of the driver `library` (gpu:N), opened once per library and
  // device for the process.
  static StatusOr<std::shared_ptr<CudaDevice>> Get(const std::string& library, int ordinal = 0);
  ~CudaDevice();

  const CudaDeviceInfo& info() const { return driver_->device(); }
  int ordinal() const { return info().ordinal; }
  // "gpu:N (NAME)", for messages.
  std::string Label() const;
  // Makes the device's context current on the calling thread (for libraries that use it).
  Status MakeCurrent() const;

  // After a fault that breaks the device's context (an illegal or misaligned address, a
  // kernel that failed), CUDA fails every later call of the process on the device with
  // the same error: from then on every call here fails with one message that names the
  // first fault and says the process must be restarted.
  Status Fault() const;

  // Device memory. Freed blocks are kept by size class (powers of two from 256 bytes)
  // and handed out again, as TensorFlow's and PyTorch's allocators do: cuMemAlloc and
  // cuMemFree synchronize the device. A block may be freed once its last use is queued
  // on a stream and reused by later work of that stream (stream order); work on another
  // stream must synchronize first. When memory runs out, the cache is given back and the
  // allocation tried again (after every stream capture under way has ended: a free may
  // synchronize the device, which would break a capture).
  // With a memory limit, the blocks in use and cached stay within it: the cache is given
  // back first, then the allocation fails (ResourceExhausted).
  StatusOr<uint64_t> Allocate(size_t bytes);
  void Free(uint64_t address);
  // Work queued on `stream` (a CUstream of the caller's, CU_STREAM_LEGACY included) so far
  // uses the block at `address`: once freed, it is not handed out again before that work
  // has finished (an event recorded now, queried before reuse).
  Status RecordUse(uint64_t address, void* stream);
  size_t bytes_in_use() const;
  size_t bytes_cached() const;
  // Bounds the memory the allocator holds, for the process, once (TensorFlow's
  // per_process_gpu_memory_fraction: its first GPU session sets it); later calls leave the
  // first limit in place. Returns the limit in force.
  size_t LimitMemory(size_t bytes);
  // InvalidArgument unless [address, address + bytes) lies in one allocation of this
  // device's memory (the caller's, or this allocator's); the message names the device the
  // memory is on where it is another GPU's.
  Status CheckDeviceMemory(uint64_t address, size_t bytes) const;

  // Host memory for tensors that cross to or from the device: page-locked (cuMemHostAlloc),
  // so copies run at the bus's speed and asynchronously, where the driver grants it, else
  // ordinary memory. Its blocks are cached for reuse as an Allocator's are.
  Allocator* host_allocator() const { return host_allocator_.get(); }
  // Whether [host, host + bytes) lies in page-locked memory of this device's host allocator.
  bool IsPinned(const void* host, size_t bytes) const;
  // How a copy of [host, host + bytes) goes, for traces: "pinned", "staged" (pageable memory
  // through page-locked staging) or "pageable" (a small copy, left to the driver).
  const char* HostMemoryKind(const void* host, size_t bytes) const;

  // A kernel of a module: PTX text or a cubin for the device (each image is loaded once),
  // allowed `dynamic_shared` bytes of dynamic shared memory per block (above 48 KB a kernel
  // must opt in).
  struct Kernel {
    void* function = nullptr;  // CUfunction
    std::string name;
  };
  StatusOr<Kernel> LoadKernel(const std::string& image, const std::string& name, int dynamic_shared = 0);

  // What the CUDA emulator counted for the last kernel the device ran (see
  // cuda_emulator/cuemu.h); NotFound for a driver that does not count (a GPU's).
  struct LaunchCounters {
    uint64_t thread_instructions = 0;
    uint64_t load_bytes = 0, store_bytes = 0;  // what the threads asked for
    uint64_t request_sectors = 0;              // the 32-byte sectors of each warp's accesses, summed
    uint64_t footprint_sectors = 0;            // the distinct 32-byte sectors loaded and stored
    uint64_t float_ops = 0;
    int registers = 0, spill_bytes = 0, shared_bytes = 0;   // per thread, per thread, per block (static and dynamic)
    uint64_t load_requests = 0, load_sectors = 0;           // warp-level global loads, and their sectors
    uint64_t load_waits = 0, loads_in_flight_at_waits = 0;  // memory-level parallelism (cuemu.h)
  };
  StatusOr<LaunchCounters> LastLaunchCounters() const;

  // Work captured from a stream, instantiated to be launched again and again (a CUDA graph:
  // one launch for all its kernels). Destroyed with its last reference; a launch already
  // queued still runs.
  class Graph {
   public:
    ~Graph();
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

   private:
    friend class CudaDevice;
    explicit Graph(CudaDevice* device) : device_(device) {}
    CudaDevice* device_;
    void* exec_ = nullptr;  // CUgraphExec
  };
  // Whether the driver has the graph API (CUDA 12 or later).
  bool has_graphs() const;

  class Stream {
   public:
    ~Stream();
    // Queues the copy. Pageable host memory of kStagedCopyBytes or more is copied through
    // page-locked staging memory in chunks (the driver's own path for pageable memory is a
    // synchronous copy at a fraction of the bus's speed); the staging is reused once the
    // stream is synchronized. Page-locked memory must stay unchanged until then.
    static constexpr size_t kStagedCopyBytes = size_t{64} << 10;
    Status CopyToDevice(uint64_t device, const void* host, size_t bytes);
    // Copies and waits for the stream.
    Status CopyToHost(void* host, uint64_t device, size_t bytes);
    // `args` point at the arguments' values, in the kernel's parameter order. A `cluster`
    // above 1: thread-block clusters of that many blocks along x (sm_90 and later).
    Status Launch(const Kernel& kernel, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                  std::vector<void*> args, unsigned cluster = 1);
    // Records a point on the stream; milliseconds between two points once both are done.
    StatusOr<int> Record();
    StatusOr<float> ElapsedMillis(int from, int to);
    // Forgets the recorded points (their indices start from 0 again).
    void ClearPoints();
    void* handle() const { return stream_; }  // the CUstream, for libraries (cuBLASLt)
    Status Synchronize();
    // Later work of this stream waits for the work queued on `other` so far (a CUstream of
    // the caller's, or CU_STREAM_LEGACY / CU_STREAM_PER_THREAD), on the device: an event
    // recorded there and waited for here; the host does not wait.
    Status WaitFor(void* other);
    // Copies between two places of the device's memory.
    Status CopyOnDevice(uint64_t to, uint64_t from, size_t bytes);

    // Between BeginCapture and EndCapture the stream's launches and copies are recorded,
    // not run, and nothing may use the device otherwise (allocate or free its memory, copy
    // synchronously, synchronize): the driver refuses it and the capture fails.
    Status BeginCapture();
    // The recorded work as a graph. With `reuse`, a graph of the same kernels in the same
    // order is updated in place (new arguments: cheaper than a new graph) and returned.
    // After a failure the stream is no longer capturing.
    StatusOr<std::shared_ptr<Graph>> EndCapture(std::shared_ptr<Graph> reuse = nullptr);
    Status Launch(const Graph& graph);

    // What was queued on this stream since it was made.
    StreamCounts counts() const;

   private:
    friend class CudaDevice;
    explicit Stream(CudaDevice* device) : device_(device) {}
    CudaDevice* device_;
    void* stream_ = nullptr;                        // CUstream
    std::vector<void*> events_;                     // CUevent, by Record's index
    void* wait_event_ = nullptr;                    // CUevent, WaitFor's (re-recorded each time)
    std::vector<std::pair<void*, size_t>> staged_;  // staging of queued copies, from host_allocator()
    std::atomic<int64_t> h2d_bytes_{0}, d2h_bytes_{0}, h2d_copies_{0}, d2h_copies_{0};
    std::atomic<int64_t> graph_launches_{0};
  };
  StatusOr<std::unique_ptr<Stream>> NewStream();

 private:
  struct Api;
  CudaDevice() = default;
  Status Check(int result, const char* call) const;
  void* AllocateHost(size_t bytes);  // host_allocator()'s backing
  void FreeHost(void* p);
  // Moves the blocks whose recorded uses have finished to the cache (mu_ held).
  void ReclaimUsedBlocks();
  // Stream captures under way on the device; cuMemFree and cuMemFreeHost wait for none.
  void CaptureBegins();
  void CaptureEnds();

  std::unique_ptr<CudaDriver> driver_;
  std::unique_ptr<Api> api_;
  void* context_ = nullptr;  // CUcontext
  mutable std::mutex mu_;
  std::map<size_t, std::vector<uint64_t>> free_;  // size class -> cached blocks
  std::map<uint64_t, size_t> live_;               // address -> size class
  std::map<uint64_t, std::vector<void*>> uses_;   // live address -> CUevents of work on other streams that uses it
  struct Used {
    uint64_t address;
    size_t size;
    std::vector<void*> events;
  };
  std::vector<Used> used_;  // freed blocks that wait for their uses' events
  size_t cached_ = 0, in_use_ = 0;
  int captures_ = 0;
  std::condition_variable_any no_captures_;
  std::vector<void*> host_frees_;  // page-locked blocks freed during a capture, released after
  mutable std::mutex fault_mu_;
  mutable std::string fault_;             // the first fault that broke the context
  size_t limit_ = 0;                      // 0: none
  std::map<std::string, void*> modules_;  // PTX text -> CUmodule
  std::map<const char*, size_t> pinned_;  // page-locked host blocks: start -> bytes
  std::shared_ptr<Allocator> host_allocator_;
};

// Memory of a CudaDevice, given back to its allocator with the last reference: a tensor's
// bytes on the device (held by its Buffer, runtime/allocator.h).
class DeviceMemory {
 public:
  static StatusOr<std::shared_ptr<DeviceMemory>> Allocate(std::shared_ptr<CudaDevice> device, size_t bytes);
  // Takes over `address`, from device->Allocate.
  DeviceMemory(std::shared_ptr<CudaDevice> device, uint64_t address) : device_(std::move(device)), address_(address) {}
  // The caller's memory at `address`, used in place and never freed here; `keep` (which
  // holds it, or releases it as it goes) goes with the last reference.
  static std::shared_ptr<DeviceMemory> Borrow(std::shared_ptr<CudaDevice> device, uint64_t address,
                                              std::shared_ptr<void> keep = nullptr) {
    auto memory = std::make_shared<DeviceMemory>(std::move(device), address);
    memory->owned_ = false;
    memory->keep_ = std::move(keep);
    return memory;
  }
  ~DeviceMemory() {
    if (owned_) device_->Free(address_);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  const CudaDevice* device() const { return device_.get(); }
  uint64_t address() const { return address_; }
  // Work the caller queued on `stream` (a CUstream) reads or writes this memory: once its
  // last reference goes, the memory is not handed out again before that work has finished
  // (PyTorch's record_stream). Nothing to do for borrowed memory.
  Status RecordUse(void* stream) const { return owned_ ? device_->RecordUse(address_, stream) : Status::Ok(); }

 private:
  const std::shared_ptr<CudaDevice> device_;
  const uint64_t address_;
  bool owned_ = true;
  std::shared_ptr<void> keep_;  // what holds a borrowed address's memory
};

// A session's GPU: the device and the session's stream, on which one cluster at a time
// copies and launches (`mu`). Without `cuda` (SessionOptions::gpu_compile_only and no
// driver), kernels are compiled for it but not run.
//
// Tensors made on the GPU stay there (their Buffer holds the DeviceMemory, and no host
// bytes) until something on the host reads them: then CopyToHost gives the buffer its
// host bytes, once, for every later reader.
struct GpuContext {
  DeviceKind device = DeviceKind::kGpu;  // kGpu or kGpuEmu
  std::string library;                   // the driver library it was opened with
  std::shared_ptr<CudaDevice> cuda;
  std::unique_ptr<CudaDevice::Stream> stream;
  std::mutex mu;

  // The device named by a session's `device` (a GPU, or the emulator) and `cuda_driver`
  // options (see CudaDriverLibrary), with a new stream; errors say what is missing.
  // `ordinal` names the GPU among the driver's (gpu:N).
  // `memory_fraction` (in (0, 1]) bounds the device's memory for the process, if no session
  // did before.
  static StatusOr<std::unique_ptr<GpuContext>> Open(DeviceKind device, const std::string& cuda_driver, double memory_fraction = 0,
                                                    int ordinal = 0);

  // Gives `t` its bytes on the host if it has them on the device alone (one copy, kept with
  // its buffer); traced as `trace_name` ("DtoH") when `tracer` is set. Takes `mu`.
  Status CopyToHost(const Tensor& t, Tracer* tracer, const std::string& trace_name);
  // Nodes the session's runs (nested graphs too) computed on the CPU: every op but sources,
  // views, shape-only ops, loops and conditionals (their bodies' nodes count for themselves)
  // and clusters on the GPU.
  std::atomic<int64_t> cpu_ops{0};
  // The copies on the session's stream so far, and cpu_ops.
  StreamCounts counts() const {
    StreamCounts c = stream ? stream->counts() : StreamCounts{};
    c.cpu_ops = cpu_ops.load();
    return c;
  }
};

// Whether `t`'s bytes are on the device alone (a GPU kernel's output not yet read on the host).
bool OnDeviceOnly(const Tensor& t);

}  // namespace graphjit
