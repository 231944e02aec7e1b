// Compiled kernels by signature: thread-safe, one compile per signature while other
// callers wait for it, bounded (least recently used out, by entries and bytes), counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "ir/status.h"

namespace graphjit {

struct CacheStats {
  int64_t hits = 0, misses = 0, compiles = 0, evictions = 0, failures = 0;
  double compile_ms = 0;           // in compiles, and in making the entries loaded from disk
  int64_t entries = 0, bytes = 0;  // held now
};

class KernelCache {
 public:
  // What a compile made: a kernel (any type) and its size for the bound, or why not.
  struct Entry {
    std::shared_ptr<const void> kernel;  // null when compiling failed
    std::string failure;
    bool internal = false;       // the failure is a compiler bug, not an unsupported cluster
    bool out_of_memory = false;  // the device's memory ran out loading it: its runs fail
    size_t bytes = 0;
    bool from_disk = false;  // loaded, not compiled (not counted as a compile)
  };
  using CompileFn = std::function<Entry()>;

  KernelCache(size_t max_entries, size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // The entry for `key` (the full signature, compared whole): compiled now by `compile`
  // if absent, or waited for if another caller is compiling it. `*hit` tells which.
  std::shared_ptr<const Entry> Get(const std::string& key, const CompileFn& compile, bool* hit);
  // Asynchronous compilation: the entry for `key` if it is compiled, else null; then,
  // unless another caller is compiling it, the compile `make_compile` makes (only then) is
  // handed to `start`, which runs it on another thread, and the entry is there for a later
  // call. `*hit`: false if this call started the compile.
  std::shared_ptr<const Entry> GetIfCompiled(const std::string& key, const std::function<CompileFn()>& make_compile,
                                             const std::function<void(std::function<void()>)>& start, bool* hit);

  CacheStats stats() const;

 private:
  struct Slot {
    std::shared_ptr<const Entry> entry;  // null while compiling
    std::list<std::string>::iterator lru;
  };
  void EvictLocked();
  // Runs `compile` for the placeholder slot of `key` and stores what it made.
  std::shared_ptr<const Entry> CompileAndStore(const std::string& key, const CompileFn& compile);

  const size_t max_entries_, max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable compiled_;
  std::unordered_map<std::string, Slot> slots_;
  std::list<std::string> lru_;  // most recent first; only compiled entries
  size_t bytes_ = 0;
  CacheStats stats_;
};

}  // namespace graphjit
