// Session configuration, mirroring TensorFlow's ConfigProto.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/device.h"
#include "ir/proto/config.pb.h"
#include "ir/status.h"

namespace graphjit {

enum class JitLevel { kDefault = 0, kOff = -1, kOn1 = 1, kOn2 = 2 };

const char* JitLevelName(JitLevel level);
// "off", "on" (= ON_1), "on_1", "on_2", "default".
bool ParseJitLevel(const std::string& text, JitLevel* out);

struct SessionOptions {
  int intra_op_threads = 0;  // 0: one per core
  int inter_op_threads = 0;  // 0: one per core
  JitLevel jit_level = JitLevel::kDefault;
  bool cpu_global_jit = false;
  tensorflow::RewriterConfig rewrite_options;

  // Clustering (see clustering/): TensorFlow's defaults are 4 and unlimited. 0: the
  // level's own minimum: 2 at ON_1 (graphjit's CPU backend gains from fusing two ops
  // already), 1 at ON_2 (the whole model, a lone op too, as jit_compile and JAX compile it).
  int min_cluster_size = 0;
  int max_cluster_size = 0;  // 0: no limit
  std::vector<std::string> cluster_exclude_ops;
  int64_t clustering_fuel = -1;  // at most this many merges; -1: no limit

  // Graph optimizations (see passes/): which to skip by name, and where to write the
  // graph after each one. rewrite_options above holds TensorFlow's toggles.
  std::vector<std::string> disabled_passes;
  std::string dump_to;  // also where the JIT writes each compiled cluster's stages
  // A cluster the JIT cannot compile is an error instead of running op by op.
  bool jit_strict = false;
  // One line on stderr per cluster compiled: its name, ops, kernels and milliseconds.
  bool jit_verbose = false;
  // The numerics guard: every compiled cluster also runs op by op on the same inputs, and
  // the outputs are compared within the JIT's tolerance (jit/jit.h). kWarn reports each
  // cluster's first mismatch (and writes its kernel's stages); kFail also makes every
  // mismatch the run's error. A session that leaves it off takes GRAPHJIT_FLAGS'.
  enum class NumericsCheck { kOff, kWarn, kFail };
  NumericsCheck jit_check_numerics = NumericsCheck::kOff;
  // Asynchronous compilation (--jit_async): a cluster's new signature runs op by op while
  // a background thread compiles it; later runs use the kernel. A session that leaves it
  // off takes GRAPHJIT_FLAGS'.
  bool jit_async = false;
  // The CPU the JIT generates code for: an LLVM CPU name (empty: the host, as detected),
  // features on top of it ("+avx512f,-avx512bw"), and the widest vectors its loops use in
  // bits (0: graphjit's default, 512 on AVX-512 CPUs, else 256). A session that leaves
  // these unset takes them from GRAPHJIT_FLAGS, which applies to the whole process.
  std::string jit_cpu, jit_cpu_features;
  int prefer_vector_width = 0;
  // The bound of the process's kernel cache in MiB (0: 1024), counting each kernel's code,
  // execution engine and constants; least recently used kernels go first. Read from
  // GRAPHJIT_FLAGS only: the cache is the process's, not a session's.
  int64_t jit_cache_mb = 0;
  // The kernel cache on disk (--cache_dir): compiled kernels kept in this directory for
  // later processes, keyed by their full signature (with the compiler's build id). A
  // session that leaves it empty takes GRAPHJIT_FLAGS'. `cache_max_mb` bounds the
  // directory (0: 1024 MiB; least recently used entries go first).
  std::string cache_dir;
  int64_t cache_max_mb = 0;
  // The device clusters are compiled for: the CPU, a GPU (through the CUDA driver,
  // libcuda.so.1) or the CUDA emulator (cuda_emulator/, which runs the GPU's kernels on
  // the CPU). `cuda_driver` names the driver library to open instead, and implies kGpu.
  DeviceKind device = DeviceKind::kCpu;
  int gpu_index = 0;  // which of the driver's GPUs (gpu:N, gpu-emu:N)
  std::string cuda_driver;
  // The GPU code is generated for: "sm_80" or "sm_90"; empty: the device's (sm_90 for a
  // compute capability of 9.0 and above, else sm_80).
  std::string gpu_arch;
  // Every GPU module the JIT compiles is also assembled by ptxas (the CUDA toolkit's) for
  // sm_80 and sm_90, and a kernel ptxas rejects or that spills registers is a compile
  // error: a check for tests (a missing ptxas is an error too).
  bool gpu_ptxas_check = false;
  // When the GPU cannot be opened (no driver), the session runs on the CPU, but the JIT
  // still compiles each cluster for the GPU (for gpu_arch, sm_90 by default), so its PTX
  // can be dumped (`graphjit dump --device gpu`). Not a flag: set by that command.
  bool gpu_compile_only = false;
  // Each GPU kernel's launch is followed by a synchronize and recorded (with what the CUDA
  // emulator counted, or its time on a GPU): see jit/jit.h's TakeGpuProfiles. For
  // `graphjit bench`.
  bool gpu_profile = false;
  // A compiled cluster's kernels and library calls are captured into a CUDA graph once per
  // signature (and set of buffer addresses) and replayed with one launch; off: launched one
  // by one. (gpu_profile times each kernel, so it launches them one by one.)
  bool gpu_graphs = true;
  // GEMMs on the GPU multiply operands rounded to TF32 (10-bit mantissas, float32's range,
  // products summed in float32), as TensorFlow allows by default on Ampere and later
  // (tf.config.experimental.enable_tensor_float_32_execution); off: float32 products.
  bool gpu_tf32 = true;
  // Each GEMM shape's algorithm is chosen by timing the best few cuBLASLt's heuristic offers
  // (up to 8) once on the device, and kept with the kernels (in the disk cache too, so
  // another process does not time it again); off: the heuristic's first, untimed (the
  // same algorithm in every process).
  bool gpu_autotune = true;
  // TensorFlow's gpu_options: the share of the GPU's memory the process may hold (0: all
  // of it; at most 1), counting the blocks its allocator keeps for reuse. As in
  // TensorFlow, the first session to open the GPU sets it for the process. graphjit's
  // allocator always grows as needed (allow_growth is read and kept, and a false one
  // reserves nothing up front).
  double gpu_memory_fraction = 0;
  bool gpu_allow_growth = false;

  static SessionOptions FromConfigProto(const tensorflow::ConfigProto& config);
  // Reads a text-format ConfigProto.
  static StatusOr<SessionOptions> FromConfigFile(const std::string& path);
  tensorflow::ConfigProto ToConfigProto() const;
};

// Applies GRAPHJIT_FLAGS-style flags, as TF_XLA_FLAGS does for TensorFlow:
// --jit_level=off|on|on_1|on_2, --min_cluster_size=N, --max_cluster_size=N,
// --cluster_exclude_ops=A,B, --clustering_fuel=N, --disable_pass=A,B, --dump_to=DIR,
// --jit_strict, --jit_verbose, --jit_check_numerics[=warn|fail|off], --jit_async, --jit_cpu=NAME,
// --jit_cpu_features=+a,-b,
// --prefer_vector_width=128|256|512, --jit_cache_mb=N, --cache_dir=DIR, --cache_max_mb=N,
// --device=cpu|gpu|gpu-emu (gpu:N, gpu-emu:N: the driver's device N),
// --cuda_driver=PATH, --gpu_arch=sm_80|sm_90, --gpu_ptxas_check, --gpu_graphs=on|off,
// --gpu_tf32=on|off, --gpu_autotune=on|off, --v=N (the process's verbose level: checked
// here, read by the logger, ir/logging.h).
// Unknown flags are an error, so a typo
// does not go unnoticed.
Status ApplyFlags(const std::string& flags, SessionOptions* options);

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> SplitList(const std::string& list);

}  // namespace graphjit
