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

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace graphjit {

struct DiskCacheStats {
  int64_t hits = 0, misses = 0, writes = 0, dropped = 0, evicted = 0;
};

class DiskCache {
 public:
  // Entries of `dir` (created if need be), up to `max_bytes` in all.
  DiskCache(std::string dir, int64_t max_bytes);

  // The code stored for `signature`, or nullopt if there is none (or it was dropped).
  std::optional<std::string> Load(const std::string& signature);
  // Stores `code` for `signature`, then evicts beyond the bound. A failure to write is a
  // warning (the cache is an optimization), once per directory.
  void Store(const std::string& signature, const std::string& code);
  // Removes the entry of `signature` with a warning: its code did not load.
  void Drop(const std::string& signature, const std::string& why);

  const std::string& dir() const { return dir_; }
  // The file an entry of `signature` is kept in.
  std::string PathOf(const std::string& signature) const;

 private:
  void Evict();
  void DropFile(const std::string& path, const std::string& why);

  const std::string dir_;
  const int64_t max_bytes_;
  std::mutex mu_;  // Evict, one at a time in this process
  std::once_flag write_warning_;
};

// The process's disk cache of `dir` (one per directory; the first call's bound holds).
DiskCache& DiskCacheAt(const std::string& dir, int64_t max_bytes);
DiskCacheStats GetDiskCacheStats();

// What identifies the compiler in every signature on disk: graphjit's version, the GNU
// build id of the binary the JIT is linked into (it changes with any change to the code),
// and LLVM's version. Empty if the binary has no build id: then nothing is kept on disk.
const std::string& BuildId();

}  // namespace graphjit
