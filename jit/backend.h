// The JIT's targets behind one interface (internal to jit/). The pipeline (jit/pipeline.h)
// specializes, plans and emits a cluster body once per signature for a backend's target
// description (jit/target.h, read from its device); the Backend compiles what the
// emitters made into a ClusterExecutable, which runs the body's kernels on a call's inputs:
//  - cpu (jit/backend_cpu.cc): x86 code through backends/cpu, run in-process, each kernel's
//    rows split across the intra-op threads; library calls run the op's CPU kernel;
//  - gpu (jit/backend_gpu.cc): PTX through backends/nvptx, loaded and launched through the
//    CUDA driver (or the emulator) on the session's stream; inputs are copied to the
//    device and outputs back.
// The backend's target (the CPU and its features, the GPU's compute capability, driver and
// the limits its grids are sized by) is part of every signature.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jit/fusion_emitter.h"
#include "jit/fusion_plan.h"
#include "jit/jit.h"
#include "runtime/op_registry.h"

namespace graphjit {

struct SessionOptions;

// Where executables report what they run: the JIT that made them counts the kernels
// launched on GPUs (JitStats) and keeps their profiles (TakeGpuProfiles).
class RunRecorder {
 public:
  virtual ~RunRecorder() = default;
  virtual void CountGpuLaunches(int64_t launches) = 0;
  virtual void CountGraphLaunches(int64_t launches) = 0;
  virtual void CountGemmsAutotuned(int64_t gemms) = 0;
  virtual void CountConvsAutotuned(int64_t convs) = 0;
  virtual void CountFailedCaptures(int64_t captures) = 0;
  virtual void CountAlignedCopies(int64_t copies) = 0;
  virtual void RecordGpuProfile(GpuKernelProfile profile) = 0;
};

// A library call of a cluster (a GEMM or a convolution): its node and what the op's kernel needs.
struct LibraryCall {
  const OpDef* op = nullptr;
  std::shared_ptr<const Node> node;
  std::shared_ptr<const void> state;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
};

// What the emitters made of a cluster body at one signature.
struct ClusterProgram {
  EmittedModule module;
  std::vector<LibraryCall> calls;  // per kernel of the module (those with a library_node)
  std::vector<FusionPlan::Buffer> buffers;
  std::vector<Tensor> constants;
  std::vector<int> outputs;  // the buffer of each body output
};

// What a compile produced besides its code, for dumps and traces: the stages' texts by
// file name ("nvvm.mlir", "llvm_ir.ll", "fusions.ptx", ...), in order, and their times.
struct CompileStages {
  std::vector<std::pair<std::string, std::string>> files;
  double mlir_ms = 0;     // parse and MLIR passes
  double codegen_ms = 0;  // LLVM and code generation
};

// What a program's code claims to be, one line each: every output (its buffer, dtype,
// shape), every kernel (entry point, launch, buffers), every buffer (kind, dtype, shape) and
// the module (a hash of its MLIR). Programs of one signature have one interface; the disk
// cache keeps it with the code and a load compares it with the program it is loaded for.
std::string Interface(const ClusterProgram& program);

// Ok if `program` takes ctx's inputs (count, dtypes, sizes) and makes the outputs ctx
// expects (count, dtypes, shapes); else an internal error naming the first that differs.
Status CheckCall(const ClusterProgram& program, const KernelContext& ctx);

class ClusterExecutable {
 public:
  explicit ClusterExecutable(ClusterProgram program) : program_(std::move(program)) {}
  virtual ~ClusterExecutable() = default;
  // What it was compiled from: its buffers, kernels and outputs.
  const ClusterProgram& program() const { return program_; }
  // Runs the body on ctx's inputs and forwards its outputs to ctx. When traced, each kernel
  // is an event "<name>/fusion_<k>". Adds the time spent in kernels to *in_kernels.
  virtual Status Run(KernelContext& ctx, const std::string& name, std::chrono::steady_clock::duration* in_kernels) const = 0;
  // The memory this holds (code, constants), for the cache's bound.
  virtual size_t bytes() const = 0;

 protected:
  const ClusterProgram program_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The device as the schedules size code for it.
  virtual const TargetDescription& description() const = 0;
  Schedule schedule() const { return description().schedule; }
  // The target as signatures include it: "cpu znver4 +avx2,... vw=512", "nvptx sm_90 <driver>
  // cc 9.0, 132 SMs x 32 blocks x 2048 threads, warp 32, 1024 threads".
  virtual const std::string& target() const = 0;
  // FailedPrecondition: the code cannot run here (e.g. made for another CPU); Unimplemented:
  // the program has what this target does not take; anything else is a compiler bug.
  // `*code` gets the code as Load takes it back: an x86 object file when the program has
  // any; for a GPU, a line naming each GEMM's cuBLASLt algorithm, then the module (PTX or a
  // cubin).
  virtual StatusOr<std::unique_ptr<ClusterExecutable>> Compile(ClusterProgram program, bool keep_stages, CompileStages* stages,
                                                               std::string* code) const = 0;
  // The executable of `code` that a Compile of this program made (the disk cache's),
  // without compiling. InvalidArgument if the code does not load.
  virtual StatusOr<std::unique_ptr<ClusterExecutable>> Load(ClusterProgram program, const std::string& code) const = 0;
  // Ahead of time (graphjit aot): the program's kernels as a position-independent object
  // file, their entry points `<symbol_prefix><function>`, with `data` as read-only symbols
  // `<symbol_prefix><name>`. Unimplemented where the target has no such form.
  virtual StatusOr<std::string> CompileObject(const ClusterProgram& program, const std::string& symbol_prefix,
                                              const std::vector<std::pair<std::string, std::string>>& data) const {
    return Unimplemented("code compiled ahead of time is for the CPU only");
  }
};

// The CPU backend for a session's options (its CPU, features and vector width, else the
// process's, GRAPHJIT_FLAGS', else the host's). InvalidArgument for a CPU or feature LLVM
// does not know.
StatusOr<std::shared_ptr<const Backend>> CpuBackend(const SessionOptions* options, const SessionOptions& process);

// Empty if the GPU backend takes `node` (its GEMMs are cuBLASLt's and its convolutions
// cuDNN's: float32, float16 or bfloat16, with the epilogues they fuse or leave to the next
// kernel; pools of windows it writes out), else why not; what every target takes is
// graphjit::WhyNotCompilable's.
std::string WhyNotCompilableOnGpu(const Node& node, const std::vector<DType>& input_types);

// The GPU backend of a session's device: PTX for sm_90 if the device has compute
// capability 9.0 or above, else sm_80, or as the options' gpu_arch says (else
// the process's). FailedPrecondition if the device cannot run that code. Its executables
// report to `recorder`.
StatusOr<std::shared_ptr<const Backend>> GpuBackend(const GpuContext& gpu, const SessionOptions* options,
                                                    const SessionOptions& process, RunRecorder* recorder);

}  // namespace graphjit
