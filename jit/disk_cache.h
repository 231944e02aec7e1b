// The kernel cache on disk (--cache_dir): compiled code (x86 object files, PTX, cubins) by
// full signature, kept across processes and shared by those running at once.
//
// One file per signature, named by a hash of it; the file holds the whole signature, so a
// different signature with the same hash is told apart. An entry is written to a
// temporary file and renamed into place (atomic on one file system): a reader sees a whole
// entry or none, and of two processes writing one signature the last rename wins. Each
// entry ends in a checksum of all before it: a corrupt, truncated or foreign file is
// dropped (removed) with one warning, and its signature compiled again. A read refreshes
// the file's time; when the directory's entries exceed the bound, the least recently used
// go first.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace graphjit {

// What an entry holds: the code and what the code claims to be (the program's
// Interface, jit/backend.h), which a load compares with the program it is loaded for.
struct DiskEntry {
  std::string interface;
  std::string code;
};

struct DiskCacheStats {
  int64_t hits = 0, misses = 0, writes = 0, dropped = 0, evicted = 0;
};

class DiskCache {
 public:
  // Entries of `dir` (created if need be), up to `max_bytes` in all.
  DiskCache(std::string dir, int64_t max_bytes);

  // Why an entry may not be used (empty: it may), asked of every entry read whole.
  using Check = std::function<std::string(const DiskEntry&)>;
  // The entry stored for `signature` if there is one and `check` takes it, else nullopt (an
  // entry it refuses is dropped with a warning giving its reason, like a corrupt one).
  std::optional<DiskEntry> Load(const std::string& signature, const Check& check = nullptr);
  // Stores `entry` for `signature`, then evicts beyond the bound. A failure to write is a
  // warning (the cache is an optimization), once per directory.
  void Store(const std::string& signature, const DiskEntry& entry);

  const std::string& dir() const { return dir_; }
  // What this cache did in this process.
  DiskCacheStats stats() const;
  // The file an entry of `signature` is kept in.
  std::string PathOf(const std::string& signature) const;

 private:
  void Evict();
  void DropFile(const std::string& path, const std::string& why);

  const std::string dir_;
  const int64_t max_bytes_;
  std::mutex mu_;  // Evict, one at a time in this process
  std::once_flag write_warning_;
  std::atomic<int64_t> hits_{0}, misses_{0}, writes_{0}, dropped_{0}, evicted_{0};
};

// What identifies the compiler in every signature on disk: graphjit's version, the GNU
// build id of the binary the JIT is linked into (it changes with any change to the code),
// and LLVM's version. Empty if the binary has no build id: then nothing is kept on disk.
const std::string& BuildId();

// The 64-bit FNV-1a hash of n bytes: entries' file names and checksums, interfaces' module.
uint64_t Fnv1a(const char* data, size_t n, uint64_t h = 14695981039346656037ull);

}  // namespace graphjit
