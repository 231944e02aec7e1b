#include "runtime/allocator.h"

#include <cstdlib>
#include <string>

namespace graphjit {

StatusOr<void*> Allocator::Allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(max_allocation_bytes_))
    return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes: the limit for one tensor is " +
                             std::to_string(max_allocation_bytes_) + " bytes");
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) return ResourceExhausted("out of memory allocating " + std::to_string(bytes) + " bytes");
  int64_t now = in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  count_.fetch_add(1);
  return p;
}

void Allocator::Deallocate(void* ptr, size_t bytes) {
  std::free(ptr);
  in_use_.fetch_sub(static_cast<int64_t>(bytes));
}

AllocatorStats Allocator::stats() const { return {in_use_.load(), peak_.load(), count_.load()}; }

void Allocator::ResetPeak() { peak_.store(in_use_.load()); }

Allocator* Allocator::Default() {
  static Allocator* a = new Allocator();
  return a;
}

StatusOr<std::shared_ptr<Buffer>> Buffer::Create(Allocator* allocator, size_t bytes) {
  GJ_ASSIGN_OR_RETURN(void* p, allocator->Allocate(bytes));
  return std::shared_ptr<Buffer>(new Buffer(allocator, p, bytes));
}

Buffer::~Buffer() { allocator_->Deallocate(data_, size_); }

}  // namespace graphjit
