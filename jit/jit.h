// jit/: graphjit's JIT as a runtime plugin. RegisterJit() puts the compiling `_JitCluster`
// kernel in the op registry (keeping the reference one, which runs a body op by op, as
// the fallback) and registers the clustering pass.
//
// At a `_JitCluster` node the kernel computes the signature of the call (the body, the
// input dtypes and shapes, the target: the CPU and its features, or the GPU's compute
// capability, driver and limits, the compiler's version and options), finds or compiles
// its kernel in the process's Jit (jit/jit_instance.h: its kernel cache), and launches it
// (jit/backend.h). A cluster placed on a GPU runs
// there when the session has one; with the JIT level off, each of its ops is a kernel of
// its own (the unfused baseline). A body the emitters do not take yet runs op by op, with
// one warning per cluster saying why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/gpu_model.h"

namespace graphjit {

struct SessionOptions;

void RegisterJit();

// InvalidArgument if the options (or GRAPHJIT_FLAGS, for what they leave unset) name a
// CPU, a CPU feature or a vector width the JIT cannot generate code for.
Status CheckJitTarget(const SessionOptions& options);

// Returns when no background compile (--jit_async) is pending or running.
void WaitForBackgroundCompiles();

// Counted per cluster: `compiled` clusters ran compiled kernels only; `fallback` ones ran
// op by op at least once (not compilable, megamorphic). `internal_errors`: compiles that
// failed for another reason than an unsupported cluster (a compiler bug; they also run op
// by op, and are errors under --jit_strict).
struct JitStats {
  int clusters = 0, compiled = 0, fallback = 0;
  int64_t internal_errors = 0;
  int64_t cache_hits = 0, cache_misses = 0;
  // The kernel cache now: its kernels and the bytes they hold (bounded by --jit_cache_mb),
  // and how many it has evicted.
  int64_t cache_entries = 0, cache_bytes = 0, cache_evictions = 0;
  // Time spent making kernels (compiling them, or loading them from the disk cache), and
  // how many were compiled: the backend's MLIR passes and code generation ran.
  double compile_ms = 0;
  int64_t compiles = 0;
  // The disk cache (--cache_dir): kernels loaded from it, written to it, entries dropped
  // (corrupt, truncated, foreign or not loading) and evicted (beyond --cache_max_mb).
  int64_t disk_hits = 0, disk_writes = 0, disk_dropped = 0, disk_evictions = 0;
  // Per cache hit: the time of a compiled cluster's call outside its kernels (the
  // signature, the cache lookup, the buffers), in microseconds.
  double hit_overhead_us = 0;
  // Kernels and library calls launched on GPUs one by one, and launch graphs (each replays
  // a cluster's kernels). (The --stats line has the last run's graph launches, from its
  // session.)
  int64_t gpu_launches = 0, graph_launches = 0;
  // GEMM shapes whose cuBLASLt algorithms, and convolutions whose cuDNN algorithms, were
  // timed on the device (--gpu_autotune): once per shape and process, none for a kernel
  // loaded from the disk cache.
  int64_t gemms_autotuned = 0, convs_autotuned = 0;
  // Captures of a cluster's kernels into a CUDA graph that failed (its kernels are then
  // launched one by one), and device feeds copied because the kernels need their address
  // aligned (a slice's is not).
  int64_t captures_failed = 0, aligned_copies = 0;
  // The numerics guard (SessionOptions::jit_check_numerics): compiled runs checked against
  // op by op, and those whose outputs differed beyond the JIT's tolerance: integers and
  // bools exactly; floats within rtol x (|reference| + the output's largest |reference|),
  // rtol 1e-4 for float32 and float64, 1e-2 for float16, 3e-2 for bfloat16 (they compute in
  // float32 and round), and an output of a cluster that computes in float16 or bfloat16 as
  // that type; NaN exactly where the reference has NaN, and the same infinities.
  int64_t numerics_checked = 0, numerics_mismatches = 0;
  // Runs op by op while their signature compiled in the background (--jit_async).
  int64_t async_runs = 0;
};
JitStats GetJitStats();

// A GPU kernel launched in a session with SessionOptions::gpu_profile.
struct GpuKernelProfile {
  std::string name;  // "<cluster>/<kernel>": fusion_3, or a phase of one (fusion_3_reduce0_finish)
  int64_t grid = 0, block = 0;
  int64_t cluster = 1;     // blocks per thread-block cluster
  int64_t io_bytes = 0;    // its buffers' (and scratch areas') bytes: reading its inputs and writing its outputs once
  double measured_us = 0;  // from events around it (the emulator's time on gpu-emu)
  // What the CUDA emulator counted (counted = false on a GPU): the distinct 32-byte sectors
  // it loaded and stored (x 32: the bytes it moves), the bytes its threads asked for and the
  // sectors of each warp's accesses (their ratio: coalescing), its floating-point operations.
  bool counted = false;
  bool library = false;  // a cuBLASLt or cuDNN call: counted as its operands once and 2 flops per multiply-add
  int64_t moved_bytes = 0, requested_bytes = 0, request_sectors = 0, float_ops = 0;
  int registers = 0, spill_bytes = 0, shared_bytes = 0;
  // Per warp: the global loads in flight when it waits for one, and the bytes (32-byte
  // sectors) of a load; 0 when not counted (see runtime/gpu_model.h).
  double loads_in_flight = 0, bytes_per_load = 0;
  // The launch as the performance model takes it (without counters, a GPU's: its inputs
  // and outputs once; a library call on the whole device).
  KernelWork Work() const;
};
// The profiles recorded since the last call, in launch order.
std::vector<GpuKernelProfile> TakeGpuProfiles();
// "jit: clusters=N compiled=N fallback=N cache_hits=N cache_misses=N compile_ms=X internal_errors=N
// cache_kernels=N cache_mb=X cache_evictions=N gpu_launches=N numerics_checked=N numerics_mismatches=N
// async_runs=N compiles=N disk_hits=N disk_writes=N disk_dropped=N disk_evictions=N gemms_autotuned=N convs_autotuned=N"
std::string JitStatsLine();

}  // namespace graphjit
