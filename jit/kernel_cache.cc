#include "jit/kernel_cache.h"

#include <chrono>
#include <exception>

namespace graphjit {

std::shared_ptr<const KernelCache::Entry> KernelCache::Get(const std::string& key, const CompileFn& compile, bool* hit) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it != slots_.end()) {
    compiled_.wait(lock, [&] {
      auto again = slots_.find(key);
      return again == slots_.end() || again->second.entry != nullptr;
    });
    it = slots_.find(key);
    if (it != slots_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      ++stats_.hits;
      *hit = true;
      return it->second.entry;
    }
  }
  // Absent: this caller compiles, without holding the lock.
  ++stats_.misses;
  *hit = false;
  slots_[key];  // a placeholder others wait on
  lock.unlock();
  return CompileAndStore(key, compile);
}

std::shared_ptr<const KernelCache::Entry> KernelCache::GetIfCompiled(const std::string& key,
                                                                     const std::function<CompileFn()>& make_compile,
                                                                     const std::function<void(std::function<void()>)>& start,
                                                                     bool* hit) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it != slots_.end()) {
    *hit = true;
    if (!it->second.entry) return nullptr;  // being compiled
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    ++stats_.hits;
    return it->second.entry;
  }
  ++stats_.misses;
  *hit = false;
  slots_[key];
  lock.unlock();
  start([this, key, compile = make_compile()] { CompileAndStore(key, compile); });
  return nullptr;
}

std::shared_ptr<const KernelCache::Entry> KernelCache::CompileAndStore(const std::string& key, const CompileFn& compile) {
  auto start = std::chrono::steady_clock::now();
  // A compile that throws is a failed compile: the placeholder must not be left for
  // others to wait on forever.
  Entry made;
  try {
    made = compile();
  } catch (const std::exception& e) {
    made = Entry{nullptr, std::string("internal compiler error: ") + e.what(), /*internal=*/true};
  } catch (...) {
    made = Entry{nullptr, "internal compiler error: an exception that is not a std::exception", /*internal=*/true};
  }
  auto entry = std::make_shared<const Entry>(std::move(made));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::unique_lock<std::mutex> lock(mu_);
  if (!entry->from_disk) ++stats_.compiles;
  stats_.compile_ms += ms;
  if (!entry->kernel) ++stats_.failures;
  lru_.push_front(key);
  slots_[key] = Slot{entry, lru_.begin()};
  bytes_ += entry->bytes;
  EvictLocked();
  compiled_.notify_all();
  return entry;
}

void KernelCache::EvictLocked() {
  while (!lru_.empty() && (lru_.size() > max_entries_ || bytes_ > max_bytes_) && lru_.size() > 1) {
    auto victim = slots_.find(lru_.back());
    bytes_ -= victim->second.entry->bytes;
    slots_.erase(victim);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = stats_;
  s.entries = static_cast<int64_t>(lru_.size());
  s.bytes = static_cast<int64_t>(bytes_);
  return s;
}

}  // namespace graphjit
