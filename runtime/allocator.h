// Tensor memory: 64-byte aligned, reference-counted buffers from an allocator that
// counts what it hands out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/status.h"

namespace graphjit {

struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocations = 0;
};

// Released blocks are kept on free lists by size (up to a cap) and handed out again:
// a graph run repeatedly allocates the same sizes. Returning large blocks to the OS
// each time costs page faults that dwarf the kernels; small ones would go through
// aligned malloc and free, a good part of the cost of a small node.
// An allocator owned by a shared_ptr (as a Session's is) stays alive while any of its
// buffers does, so tensors may outlive whoever made them.
class Allocator : public std::enable_shared_from_this<Allocator> {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kPageRoundedBytes = size_t{64} << 10;  // and above: sizes rounded to 4 KiB
  // Requests above max_allocation_bytes fail with ResourceExhausted instead of asking
  // the OS; at most max_cached_bytes of released blocks are kept for reuse.
  // `backing`: where blocks come from and go back to, instead of aligned_alloc and free (a
  // GPU's page-locked host memory, say); its `allocate` returns memory aligned to
  // kAlignment, or null.
  struct Backing {
    std::function<void*(size_t)> allocate;
    std::function<void(void*)> free;
  };
  static constexpr int64_t kDefaultMaxAllocationBytes = int64_t{8} << 30;
  static constexpr int64_t kDefaultMaxCachedBytes = int64_t{256} << 20;
  explicit Allocator(int64_t max_allocation_bytes = kDefaultMaxAllocationBytes, int64_t max_cached_bytes = kDefaultMaxCachedBytes,
                     Backing backing = {})
      : max_allocation_bytes_(max_allocation_bytes), max_cached_bytes_(max_cached_bytes), backing_(std::move(backing)) {}
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  StatusOr<void*> Allocate(size_t bytes);
  void Deallocate(void* ptr, size_t bytes);

  AllocatorStats stats() const;
  void set_max_allocation_bytes(int64_t bytes) { max_allocation_bytes_ = bytes; }
  void ResetPeak();

  // The process-wide allocator used when none is given.
  static Allocator* Default();

 private:
  static size_t RoundedSize(size_t bytes);
  void Release(void* p) { backing_.free ? backing_.free(p) : std::free(p); }

  std::atomic<int64_t> max_allocation_bytes_;
  int64_t max_cached_bytes_;
  Backing backing_;
  std::mutex cache_mu_;
  std::map<size_t, std::vector<void*>> cache_;  // rounded size -> free blocks
  int64_t cached_bytes_ = 0;
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> count_{0};
};

class DeviceMemory;  // runtime/cuda_device.h

// A block of tensor memory; freed (back to its allocator) with its last reference.
// Its bytes may also be on a GPU: a GPU kernel's output lives there alone until a CPU op
// or a fetch needs it (then data() is nullptr until FillHostOnce), and a host buffer a GPU
// kernel read keeps its copy on the device. A buffer's bytes never change once written (the
// executor writes no output into a buffer with a device copy), so both sides stay equal.
class Buffer {
 public:
  static StatusOr<std::shared_ptr<Buffer>> Create(Allocator* allocator, size_t bytes);
  // A buffer of `bytes` whose bytes are in `memory` alone; host memory for them comes from
  // `allocator` when FillHostOnce asks for it.
  static std::shared_ptr<Buffer> OnDevice(std::shared_ptr<DeviceMemory> memory, size_t bytes, Allocator* allocator);
  // The host bytes of `buffer` under another buffer, with device copies of its own: a
  // run's view of a fed tensor, whose copies on a device must not outlive the run (the
  // caller may change the bytes before the next).
  static std::shared_ptr<Buffer> Alias(std::shared_ptr<Buffer> buffer);
  // The caller's host memory at `data`, read in place and never freed here; `keep` (which
  // holds it, or releases it as it goes) goes with the buffer's last reference.
  static std::shared_ptr<Buffer> External(void* data, size_t bytes, std::shared_ptr<void> keep);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_.load(std::memory_order_acquire); }
  size_t size() const { return size_; }

  // The buffer's bytes on `device` (a CudaDevice), if it has them there; with a `form`, a
  // form of them a library made there (a filter in cuDNN's layout), if it made one.
  std::shared_ptr<DeviceMemory> DeviceCopy(const void* device, const std::string& form = "") const;
  bool HasDeviceCopy() const;
  // Keeps `memory`, which holds the host bytes (or their `form`) on its device, for later
  // readers there.
  void AddDeviceCopy(std::shared_ptr<DeviceMemory> memory, std::string form = "");
  // Host memory for a buffer that has none yet, filled by `copy` (once: concurrent callers
  // wait for the first, and a failed copy leaves the buffer as it was).
  Status FillHostOnce(const std::function<Status(void* host)>& copy);

 private:
  Buffer(std::shared_ptr<Allocator> owner, Allocator* a, void* d, size_t s)
      : owner_(std::move(owner)), allocator_(a), data_(d), size_(s) {}
  std::shared_ptr<Allocator> owner_;  // set when the allocator is shared-owned
  Allocator* allocator_;              // null for an alias
  std::shared_ptr<Buffer> aliased_;   // an alias's buffer
  std::shared_ptr<void> external_;    // what holds an external buffer's memory
  std::atomic<void*> data_;
  size_t size_;
  // Two locks: a copy to the host holds fill_mu_ and then takes the stream's lock; a cluster
  // holds the stream's lock and then takes device_mu_.
  std::mutex fill_mu_;
  mutable std::mutex device_mu_;
  std::vector<std::pair<std::string, std::shared_ptr<DeviceMemory>>> device_;  // (form, memory): one per device and form
};

}  // namespace graphjit
