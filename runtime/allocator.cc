#include "runtime/allocator.h"

#include <cstdlib>
#include <string>

#include "runtime/cuda_device.h"

namespace graphjit {

size_t Allocator::RoundedSize(size_t bytes) {
  // Small blocks to the alignment; large ones to 4 KiB pages, so near sizes share lists.
  size_t unit = bytes >= kPageRoundedBytes ? 4096 : kAlignment;
  size_t rounded = (bytes + unit - 1) / unit * unit;
  return rounded == 0 ? kAlignment : rounded;
}

Allocator::~Allocator() {
  for (auto& [size, blocks] : cache_)
    for (void* p : blocks) Release(p);
}

StatusOr<void*> Allocator::Allocate(size_t bytes) {
  const int64_t limit = max_allocation_bytes_.load();
  if (bytes > static_cast<size_t>(limit))
    return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes: the limit for one tensor is " +
                             std::to_string(limit) + " bytes");
  const size_t rounded = RoundedSize(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(rounded);
    if (it != cache_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= static_cast<int64_t>(rounded);
    }
  }
  if (p == nullptr) p = backing_.allocate ? backing_.allocate(rounded) : std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) return ResourceExhausted("out of memory allocating " + std::to_string(bytes) + " bytes");
  int64_t now = in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  count_.fetch_add(1);
  return p;
}

void Allocator::Deallocate(void* ptr, size_t bytes) {
  in_use_.fetch_sub(static_cast<int64_t>(bytes));
  const size_t rounded = RoundedSize(bytes);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cached_bytes_ + static_cast<int64_t>(rounded) <= max_cached_bytes_) {
      cache_[rounded].push_back(ptr);
      cached_bytes_ += static_cast<int64_t>(rounded);
      return;
    }
  }
  Release(ptr);
}

AllocatorStats Allocator::stats() const { return {in_use_.load(), peak_.load(), count_.load()}; }

void Allocator::ResetPeak() { peak_.store(in_use_.load()); }

Allocator* Allocator::Default() {
  static Allocator* a = new Allocator();
  return a;
}

StatusOr<std::shared_ptr<Buffer>> Buffer::Create(Allocator* allocator, size_t bytes) {
  GJ_ASSIGN_OR_RETURN(void* p, allocator->Allocate(bytes));
  return std::shared_ptr<Buffer>(new Buffer(allocator->weak_from_this().lock(), allocator, p, bytes));
}

std::shared_ptr<Buffer> Buffer::OnDevice(std::shared_ptr<DeviceMemory> memory, size_t bytes, Allocator* allocator) {
  std::shared_ptr<Buffer> buffer(new Buffer(allocator->weak_from_this().lock(), allocator, nullptr, bytes));
  buffer->device_.emplace_back("", std::move(memory));
  return buffer;
}

std::shared_ptr<Buffer> Buffer::Alias(std::shared_ptr<Buffer> buffer) {
  std::shared_ptr<Buffer> alias(new Buffer(nullptr, nullptr, buffer->data(), buffer->size()));
  alias->aliased_ = std::move(buffer);
  return alias;
}

std::shared_ptr<Buffer> Buffer::External(void* data, size_t bytes, std::shared_ptr<void> keep) {
  std::shared_ptr<Buffer> buffer(new Buffer(nullptr, nullptr, data, bytes));
  buffer->external_ = std::move(keep);
  return buffer;
}

Buffer::~Buffer() {
  void* p = data_.load(std::memory_order_relaxed);
  if (p && allocator_) allocator_->Deallocate(p, size_);
}

std::shared_ptr<DeviceMemory> Buffer::DeviceCopy(const void* device, const std::string& form) const {
  std::lock_guard<std::mutex> lock(device_mu_);
  for (const auto& [kept_form, memory] : device_)
    if (memory->device() == device && kept_form == form) return memory;
  return nullptr;
}

bool Buffer::HasDeviceCopy() const {
  std::lock_guard<std::mutex> lock(device_mu_);
  return !device_.empty();
}

void Buffer::AddDeviceCopy(std::shared_ptr<DeviceMemory> memory, std::string form) {
  std::lock_guard<std::mutex> lock(device_mu_);
  device_.emplace_back(std::move(form), std::move(memory));
}

Status Buffer::FillHostOnce(const std::function<Status(void* host)>& copy) {
  std::lock_guard<std::mutex> lock(fill_mu_);
  if (data_.load(std::memory_order_relaxed)) return Status::Ok();
  GJ_ASSIGN_OR_RETURN(void* p, allocator_->Allocate(size_));
  if (Status s = copy(p); !s.ok()) {
    allocator_->Deallocate(p, size_);
    return s;
  }
  data_.store(p, std::memory_order_release);
  return Status::Ok();
}

}  // namespace graphjit
