// The JIT's entry points (jit/jit.h), the process's Jit (jit/jit_instance.h), and the answer
// to clustering's question "can this be compiled?".
#include "jit/jit.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "clustering/pass.h"
#include "ir/device.h"
#include "ir/logging.h"
#include "jit/cluster_kernel.h"
#include "jit/fault_injection.h"
#include "jit/fusion_plan.h"
#include "jit/jit_instance.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

void Count(const ClusterCounters& cluster, JitStats* stats) {
  if (cluster.runs == 0) return;
  ++stats->clusters;
  ++(cluster.fell_back ? stats->fallback : stats->compiled);
}

SessionOptions FlagsOfTheProcess() {
  SessionOptions options;
  if (const char* env = std::getenv("GRAPHJIT_FLAGS")) {
    Status s = ApplyFlags(env, &options);
    if (!s.ok()) GJ_LOG(WARNING) << s.message();
  }
  return options;
}

// The process's JIT, made at first use and never destroyed (its kernels may run until
// exit); at exit the process waits for its background compiles (LLVM's globals must
// outlive a compile).
Jit& TheJit() {
  static Jit* const jit = [] {
    auto* j = new Jit(FlagsOfTheProcess);
    std::atexit([] { TheJit().WaitForBackgroundCompiles(); });
    return j;
  }();
  return *jit;
}

// Clustering's question, answered by the emitters (WhyNotCompilable) for the devices this
// JIT compiles for: the CPU, the GPU (GEMMs through cuBLASLt, convolutions through cuDNN,
// with their epilogues), and XLA's CPU and GPU device names. Some ops are compiled for GPUs
// only (OpTraits::gpu_only): GatherV2 and a TensorList's SetItem (_GraphjitSetRow), because
// an index out of range is an error of TensorFlow's CPU kernels (and of the reference
// kernels), which a compiled kernel cannot raise; on a GPU, a gather reads it as zero, as
// TensorFlow's GPU kernel does, and SetItem clamps it into the list, as XLA's
// dynamic-update-slice does (a loop's counter never leaves its list). Convolutions, pools
// and batch norms, which the CPU runs with oneDNN or its own kernels. Some take a float
// output on GPUs only, as float32 (OpTraits::float_as_float32_on_gpus_only): Range, whose
// compiled kernel computes start + i * step as TensorFlow's GPU kernel does, where its CPU
// kernel adds the step once per element (an integer Range is the same either way; a 16-bit
// one would round at each step).
class JitCompilability : public CompilabilityOracle {
 public:
  std::string WhyNotCompilable(const Node& node, const std::vector<DType>& input_types, const std::vector<DType>& output_types,
                               const DeviceName& device) const override {
    if (!device.IsCpu() && !device.IsGpu()) return "no compiler for device " + device.ToString();
    if (const char* why = TraitsOf(node.op).gpu_only; why && device.IsCpu())
      return node.op + " is compiled for GPUs only (" + why + ")";
    if (const char* why = TraitsOf(node.op).float_as_float32_on_gpus_only;
        why && !output_types.empty() && !IsInteger(output_types[0]) && (device.IsCpu() || output_types[0] != DType::kFloat))
      return node.op + " is compiled for integers, and for float32 on GPUs (" + why + ")";
    if (device.IsGpu())
      if (std::string why = WhyNotCompilableOnGpu(node, input_types); !why.empty()) return why;
    return graphjit::WhyNotCompilable(node, input_types, output_types);
  }
  // Specialize computes them from the inputs' shapes (jit/specialize.h).
  bool ComputesShapeValues() const override { return true; }
};

}  // namespace

// ---- the Jit ----------------------------------------------------------------------------

ClusterCounters::~ClusterCounters() { jit->Retire(*this); }

Jit::Jit(std::function<SessionOptions()> read_process_options) : read_process_options_(std::move(read_process_options)) {}

const SessionOptions& Jit::process_options() const {
  std::call_once(process_once_, [&] { process_ = read_process_options_(); });
  return process_;
}

KernelCache& Jit::cache() const {
  std::call_once(cache_once_, [&] {
    const int64_t mb = process_options().jit_cache_mb > 0 ? process_options().jit_cache_mb : 1024;
    cache_ = std::make_unique<KernelCache>(4096, static_cast<size_t>(mb) << 20);
  });
  return *cache_;
}

Jit::~Jit() {
  {
    std::lock_guard<std::mutex> lock(compile_mu_);
    stopping_ = true;  // the thread ends once the tasks asked for are done
  }
  compile_wake_.notify_all();
  if (compile_thread_.joinable()) compile_thread_.join();
}

DiskCache* Jit::DiskCacheFor(const SessionOptions* options) {
  const SessionOptions& own = options && !options->cache_dir.empty() ? *options : process_options();
  if (own.cache_dir.empty()) return nullptr;
  if (BuildId().empty()) {
    std::call_once(no_build_id_warning_,
                   [] { GJ_LOG(WARNING) << "--cache_dir is ignored: this binary has no build id to key kernels by"; });
    return nullptr;
  }
  const int64_t mb = own.cache_max_mb > 0 ? own.cache_max_mb : 1024;
  std::lock_guard<std::mutex> lock(disk_mu_);
  std::unique_ptr<DiskCache>& cache = disk_caches_[own.cache_dir];  // the first session's bound holds
  if (!cache) cache = std::make_unique<DiskCache>(own.cache_dir, mb << 20);
  return cache.get();
}

uint64_t Jit::Intern(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(intern_mu_);
  return interned_.emplace(prefix, interned_.size()).first->second;
}

void Jit::Track(const std::shared_ptr<const ClusterCounters>& cluster) {
  std::lock_guard<std::mutex> lock(clusters_mu_);
  clusters_.erase(std::remove_if(clusters_.begin(), clusters_.end(), [](const auto& w) { return w.expired(); }), clusters_.end());
  clusters_.push_back(cluster);
}

void Jit::Retire(const ClusterCounters& cluster) {
  std::lock_guard<std::mutex> lock(clusters_mu_);
  Count(cluster, &retired_);
}

JitStats Jit::Stats() const {
  JitStats stats;
  {
    std::lock_guard<std::mutex> lock(clusters_mu_);
    stats = retired_;
    for (const auto& weak : clusters_)
      if (auto cluster = weak.lock()) Count(*cluster, &stats);
  }
  const CacheStats kernels = cache().stats();
  stats.cache_hits = kernels.hits;
  stats.cache_misses = kernels.misses;
  stats.cache_entries = kernels.entries;
  stats.cache_bytes = kernels.bytes;
  stats.cache_evictions = kernels.evictions;
  stats.compile_ms = kernels.compile_ms;
  stats.compiles = kernels.compiles;
  {
    std::lock_guard<std::mutex> lock(disk_mu_);
    for (const auto& [dir, disk] : disk_caches_) {
      const DiskCacheStats d = disk->stats();
      stats.disk_hits += d.hits;
      stats.disk_writes += d.writes;
      stats.disk_dropped += d.dropped;
      stats.disk_evictions += d.evicted;
    }
  }
  stats.internal_errors = internal_errors.load();
  stats.gpu_launches = gpu_launches_.load();
  stats.graph_launches = graph_launches_.load();
  stats.gemms_autotuned = gemms_autotuned_.load();
  stats.convs_autotuned = convs_autotuned_.load();
  stats.captures_failed = captures_failed_.load();
  stats.aligned_copies = aligned_copies_.load();
  stats.numerics_checked = numerics_checked.load();
  stats.numerics_mismatches = numerics_mismatches.load();
  stats.async_runs = async_runs.load();
  if (const int64_t calls = hit_calls.load()) stats.hit_overhead_us = hit_overhead_ns.load() / 1e3 / calls;
  return stats;
}

void Jit::RecordGpuProfile(GpuKernelProfile profile) {
  std::lock_guard<std::mutex> lock(profiles_mu_);
  profiles_.push_back(std::move(profile));
}

std::vector<GpuKernelProfile> Jit::TakeGpuProfiles() {
  std::lock_guard<std::mutex> lock(profiles_mu_);
  return std::exchange(profiles_, {});
}

void Jit::InjectCompileFailure(std::string reason) {
  std::lock_guard<std::mutex> lock(fault_mu_);
  injected_failure_ = std::move(reason);
}

void Jit::InjectMiscompile(std::string from, std::string to) {
  std::lock_guard<std::mutex> lock(fault_mu_);
  injected_miscompile_ = {std::move(from), std::move(to)};
}

std::string Jit::injected_failure() const {
  std::lock_guard<std::mutex> lock(fault_mu_);
  return injected_failure_;
}

std::pair<std::string, std::string> Jit::injected_miscompile() const {
  std::lock_guard<std::mutex> lock(fault_mu_);
  return injected_miscompile_;
}

void Jit::CompileInBackground(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(compile_mu_);
  if (!compile_thread_.joinable()) compile_thread_ = std::thread([this] { CompileLoop(); });
  compile_tasks_.push_back(std::move(task));
  ++compile_pending_;
  compile_wake_.notify_one();
}

void Jit::WaitForBackgroundCompiles() {
  std::unique_lock<std::mutex> lock(compile_mu_);
  compile_idle_.wait(lock, [&] { return compile_pending_ == 0; });
}

void Jit::CompileLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(compile_mu_);
      compile_wake_.wait(lock, [&] { return !compile_tasks_.empty() || stopping_; });
      if (compile_tasks_.empty()) return;
      task = std::move(compile_tasks_.front());
      compile_tasks_.pop_front();
    }
    task();
    std::lock_guard<std::mutex> lock(compile_mu_);
    if (--compile_pending_ == 0) compile_idle_.notify_all();
  }
}

// ---- jit.h ------------------------------------------------------------------------------

void RegisterJit() {
  static std::once_flag once;
  std::call_once(once, [] {
    Jit& jit = TheJit();
    OpDef registered = *OpRegistry::Global()->Find("_JitCluster");
    (void)OpRegistry::Global()->Replace(MakeClusterKernel(&jit, std::move(registered))).value();
    static const JitCompilability oracle;
    RegisterClusteringPass(&oracle);
  });
}

Status CheckJitTarget(const SessionOptions& options) { return CpuBackend(&options, TheJit().process_options()).status(); }

void WaitForBackgroundCompiles() { TheJit().WaitForBackgroundCompiles(); }
void InjectCompileFailure(const std::string& reason) { TheJit().InjectCompileFailure(reason); }
void InjectMiscompile(const std::string& from, const std::string& to) { TheJit().InjectMiscompile(from, to); }
JitStats GetJitStats() { return TheJit().Stats(); }
std::vector<GpuKernelProfile> TakeGpuProfiles() { return TheJit().TakeGpuProfiles(); }

KernelWork GpuKernelProfile::Work() const {
  KernelWork k;
  k.grid = library ? 0 : grid;
  k.block = block;
  k.registers = registers;
  k.shared_bytes = shared_bytes;
  k.moved_bytes = counted ? moved_bytes : io_bytes;
  k.float_ops = static_cast<double>(float_ops);
  k.loads_in_flight = loads_in_flight;
  k.bytes_per_load = bytes_per_load;
  return k;
}

std::string JitStatsLine() {
  JitStats s = GetJitStats();
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "jit: clusters=%d compiled=%d fallback=%d cache_hits=%lld cache_misses=%lld compile_ms=%.1f "
                "internal_errors=%lld cache_kernels=%lld cache_mb=%.1f cache_evictions=%lld gpu_launches=%lld "
                "numerics_checked=%lld numerics_mismatches=%lld async_runs=%lld compiles=%lld disk_hits=%lld "
                "disk_writes=%lld disk_dropped=%lld disk_evictions=%lld gemms_autotuned=%lld convs_autotuned=%lld "
                "captures_failed=%lld aligned_copies=%lld",
                s.clusters, s.compiled, s.fallback, static_cast<long long>(s.cache_hits), static_cast<long long>(s.cache_misses),
                s.compile_ms, static_cast<long long>(s.internal_errors), static_cast<long long>(s.cache_entries),
                s.cache_bytes / 1048576.0, static_cast<long long>(s.cache_evictions), static_cast<long long>(s.gpu_launches),
                static_cast<long long>(s.numerics_checked), static_cast<long long>(s.numerics_mismatches),
                static_cast<long long>(s.async_runs), static_cast<long long>(s.compiles), static_cast<long long>(s.disk_hits),
                static_cast<long long>(s.disk_writes), static_cast<long long>(s.disk_dropped),
                static_cast<long long>(s.disk_evictions), static_cast<long long>(s.gemms_autotuned),
                static_cast<long long>(s.convs_autotuned), static_cast<long long>(s.captures_failed),
                static_cast<long long>(s.aligned_copies));
  return buf;
}

}  // namespace graphjit
