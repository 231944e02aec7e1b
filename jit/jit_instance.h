// The JIT of a process (internal to jit/): what RegisterJit makes, once, and hands to every
// cluster kernel, backend and executable it makes: the options GRAPHJIT_FLAGS gives, the
// kernel cache, the disk caches, the clusters' counters, the background compile thread, the
// GPU profiles and fault injection. Code reaches it through the pointer it was handed; only
// the entry points of jit.h (stats, fault injection, profiles) find the process's own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jit/backend.h"
#include "jit/disk_cache.h"
#include "jit/jit.h"
#include "jit/kernel_cache.h"
#include "runtime/op_registry.h"
#include "runtime/session_options.h"

namespace graphjit {

class Jit;

// What a cluster counts for JitStats while it lives; the Jit adds it up, and keeps the
// counts of those gone with their sessions.
struct ClusterCounters {
  explicit ClusterCounters(Jit* jit) : jit(jit) {}
  virtual ~ClusterCounters();
  Jit* const jit;
  mutable std::atomic<int64_t> runs{0};
  mutable std::atomic<bool> fell_back{false};  // ran op by op at least once
};

class Jit final : public RunRecorder {
 public:
  // `read_process_options` is called once, at the first use of what it gives (a library
  // that links graphjit hears about bad GRAPHJIT_FLAGS when it first compiles).
  explicit Jit(std::function<SessionOptions()> read_process_options);
  ~Jit() override;

  // GRAPHJIT_FLAGS, which apply to every session of the process (as XLA_FLAGS do).
  const SessionOptions& process_options() const;
  // Bounded by the process's --jit_cache_mb (thread-safe).
  KernelCache& cache() const;
  // The session's disk cache (else GRAPHJIT_FLAGS'), if it names one and the binary has a
  // build id to key kernels by (else null, with one warning).
  DiskCache* DiskCacheFor(const SessionOptions* options);
  // Equal strings, compared whole, get one id; different ones different ids.
  uint64_t Intern(const std::string& prefix);

  // The reference _JitCluster kernel (a body op by op), which clusters fall back on.
  const OpDef& reference() const { return reference_; }
  void set_reference(OpDef reference) { reference_ = std::move(reference); }

  void Track(const std::shared_ptr<const ClusterCounters>& cluster);
  void Retire(const ClusterCounters& cluster);
  JitStats Stats() const;
  // Counted as they happen (see JitStats).
  std::atomic<int64_t> internal_errors{0}, numerics_checked{0}, numerics_mismatches{0}, async_runs{0};
  std::atomic<int64_t> hit_calls{0}, hit_overhead_ns{0};

  void CountGpuLaunches(int64_t launches) override { gpu_launches_ += launches; }
  void CountGraphLaunches(int64_t launches) override { graph_launches_ += launches; }
  void CountGemmsAutotuned(int64_t gemms) override { gemms_autotuned_ += gemms; }
  void CountConvsAutotuned(int64_t convs) override { convs_autotuned_ += convs; }
  void CountFailedCaptures(int64_t captures) override { captures_failed_ += captures; }
  void CountAlignedCopies(int64_t copies) override { aligned_copies_ += copies; }
  void RecordGpuProfile(GpuKernelProfile profile) override;
  std::vector<GpuKernelProfile> TakeGpuProfiles();

  // Fault injection (jit.h).
  void InjectCompileFailure(std::string reason);
  void InjectMiscompile(std::string from, std::string to);
  std::string injected_failure() const;
  std::pair<std::string, std::string> injected_miscompile() const;

  // One background thread compiles, in the order asked (--jit_async).
  void CompileInBackground(std::function<void()> task);
  void WaitForBackgroundCompiles();

 private:
  void CompileLoop();

  const std::function<SessionOptions()> read_process_options_;
  mutable std::once_flag process_once_;
  mutable SessionOptions process_;
  mutable std::once_flag cache_once_;
  mutable std::unique_ptr<KernelCache> cache_;
  OpDef reference_;

  mutable std::mutex disk_mu_;
  std::map<std::string, std::unique_ptr<DiskCache>> disk_caches_;  // by directory
  std::once_flag no_build_id_warning_;

  std::mutex intern_mu_;
  std::unordered_map<std::string, uint64_t> interned_;

  mutable std::mutex clusters_mu_;
  std::vector<std::weak_ptr<const ClusterCounters>> clusters_;
  JitStats retired_;

  std::atomic<int64_t> gpu_launches_{0}, graph_launches_{0}, gemms_autotuned_{0}, convs_autotuned_{0};
  std::atomic<int64_t> captures_failed_{0}, aligned_copies_{0};
  std::mutex profiles_mu_;
  std::vector<GpuKernelProfile> profiles_;

  mutable std::mutex fault_mu_;
  std::string injected_failure_;
  std::pair<std::string, std::string> injected_miscompile_;

  std::mutex compile_mu_;
  std::condition_variable compile_wake_, compile_idle_;
  std::deque<std::function<void()>> compile_tasks_;
  int compile_pending_ = 0;
  bool stopping_ = false;
  std::thread compile_thread_;  // started by the first background compile
};

}  // namespace graphjit
