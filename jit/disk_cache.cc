#include "jit/disk_cache.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_compiler.h"
#include "ir/logging.h"

namespace graphjit {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[4] = {'G', 'J', 'K', 'C'};
constexpr uint32_t kFormat = 2;  // 2: with the code's interface
constexpr const char* kSuffix = ".gjk";

void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }

// Reads a u64 at *at, advancing it; false past the end.
bool GetU64(const std::string& in, size_t* at, uint64_t* v) {
  if (in.size() - *at < sizeof *v) return false;
  std::memcpy(v, in.data() + *at, sizeof *v);
  *at += sizeof *v;
  return true;
}

// Reads a u64 size and that many bytes at *at into *out, advancing *at; false past the end.
bool GetBytes(const std::string& in, size_t* at, std::string* out) {
  uint64_t size = 0;
  if (!GetU64(in, at, &size) || in.size() - *at < size) return false;
  out->assign(in, *at, size);
  *at += size;
  return true;
}

void PutBytes(std::string* out, const std::string& bytes) {
  PutU64(out, bytes.size());
  *out += bytes;
}

// The entry if `bytes` is a whole entry of `signature`, else why not.
std::optional<DiskEntry> Parse(const std::string& bytes, const std::string& signature, std::string* why) {
  if (bytes.size() < sizeof kMagic + sizeof kFormat || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    *why = "not a graphjit cache entry";
    return std::nullopt;
  }
  uint32_t format = 0;
  std::memcpy(&format, bytes.data() + sizeof kMagic, sizeof format);
  if (format != kFormat) {
    *why = "entry format " + std::to_string(format) + ", not " + std::to_string(kFormat);
    return std::nullopt;
  }
  size_t at = sizeof kMagic + sizeof kFormat;
  std::string stored_signature;
  DiskEntry entry;
  if (!GetBytes(bytes, &at, &stored_signature) || !GetBytes(bytes, &at, &entry.interface) || !GetBytes(bytes, &at, &entry.code)) {
    *why = "truncated";
    return std::nullopt;
  }
  const size_t summed = at;
  uint64_t checksum = 0;
  if (!GetU64(bytes, &at, &checksum) || at != bytes.size()) {
    *why = at < bytes.size() ? "longer than its contents" : "truncated";
    return std::nullopt;
  }
  if (Fnv1a(bytes.data(), summed) != checksum) {
    *why = "its checksum does not match (corrupt)";
    return std::nullopt;
  }
  if (stored_signature != signature) {
    *why = "it holds another signature";
    return std::nullopt;
  }
  return entry;
}

// The GNU build id note of the loaded object that contains `address`, in hex.
std::string BuildIdOf(const void* address) {
  struct Search {
    uintptr_t address;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(address), ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool contains = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->address >= begin && s->address < begin + ph.p_memsz) contains = true;
        }
        if (!contains) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            std::memcpy(&note, p, sizeof note);
            const char* name = p + sizeof note;
            const char* desc = name + ((note.n_namesz + 3) & ~3u);
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
                desc + note.n_descsz <= end) {
              static const char* hex = "0123456789abcdef";
              for (uint32_t k = 0; k < note.n_descsz; ++k) {
                const auto byte = static_cast<unsigned char>(desc[k]);
                s->id += hex[byte >> 4];
                s->id += hex[byte & 15];
              }
              return 1;
            }
            p = desc + ((note.n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

}  // namespace

uint64_t Fnv1a(const char* data, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

const std::string& BuildId() {
  static const std::string id = [] {
    const std::string build = BuildIdOf(reinterpret_cast<const void*>(&BuildIdOf));
    if (build.empty()) return std::string();
    return std::string("graphjit ") + GRAPHJIT_VERSION + " build " + build + " llvm " + cpu::LlvmVersion();
  }();
  return id;
}

DiskCache::DiskCache(std::string dir, int64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
}

std::string DiskCache::PathOf(const std::string& signature) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(Fnv1a(signature.data(), signature.size())));
  return dir_ + "/" + name + kSuffix;
}

std::optional<DiskEntry> DiskCache::Load(const std::string& signature, const Check& check) {
  const std::string path = PathOf(signature);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ++misses_;
    return std::nullopt;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string why;
  std::optional<DiskEntry> entry = Parse(bytes, signature, &why);
  if (entry && check) why = check(*entry);
  if (!entry || !why.empty()) {
    DropFile(path, why);
    ++misses_;
    return std::nullopt;
  }
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now: last in line for eviction
  ++hits_;
  return entry;
}

void DiskCache::Store(const std::string& signature, const DiskEntry& entry) {
  std::string bytes(kMagic, sizeof kMagic);
  bytes.append(reinterpret_cast<const char*>(&kFormat), sizeof kFormat);
  PutBytes(&bytes, signature);
  PutBytes(&bytes, entry.interface);
  PutBytes(&bytes, entry.code);
  PutU64(&bytes, Fnv1a(bytes.data(), bytes.size()));
  // A name no other writer uses (process, thread, a count), renamed into place when whole.
  static std::atomic<uint64_t> count{0};
  const std::string tmp = dir_ + "/.tmp." + std::to_string(getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
                          std::to_string(count++);
  bool ok = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ok = static_cast<bool>(out.flush());
  }
  ok = ok && std::rename(tmp.c_str(), PathOf(signature).c_str()) == 0;
  if (!ok) {
    const int error = errno;
    std::remove(tmp.c_str());
    std::call_once(write_warning_,
                   [&] { GJ_LOG(WARNING) << "cannot write the kernel cache in " << dir_ << ": " << std::strerror(error); });
    return;
  }
  ++writes_;
  Evict();
}

void DiskCache::DropFile(const std::string& path, const std::string& why) {
  GJ_LOG(WARNING) << "dropped " << path << " from the kernel cache: " << why << "; compiling again";
  std::remove(path.c_str());
  ++dropped_;
}

void DiskCache::Evict() {
  std::lock_guard<std::mutex> lock(mu_);
  struct File {
    fs::path path;
    fs::file_time_type used;
    uintmax_t bytes;
  };
  std::vector<File> files;
  int64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    std::error_code entry_ec;
    const std::string name = e.path().filename().string();
    const auto used = e.last_write_time(entry_ec);
    const uintmax_t bytes = e.file_size(entry_ec);
    if (entry_ec) continue;  // gone meanwhile (another process)
    if (name.rfind(".tmp.", 0) == 0) {
      // Left by a writer that died before its rename.
      if (now - used > std::chrono::hours(1)) fs::remove(e.path(), entry_ec);
      continue;
    }
    if (e.path().extension() != kSuffix) continue;
    files.push_back({e.path(), used, bytes});
    total += static_cast<int64_t>(bytes);
  }
  if (total <= max_bytes_) return;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.used < b.used; });
  for (const File& f : files) {
    if (total <= max_bytes_) break;
    std::error_code remove_ec;
    if (fs::remove(f.path, remove_ec)) ++evicted_;
    total -= static_cast<int64_t>(f.bytes);
  }
}

DiskCacheStats DiskCache::stats() const { return {hits_, misses_, writes_, dropped_, evicted_}; }

}  // namespace graphjit
