// The CPU backend: the emitted functions compiled by backends/cpu for the session's CPU,
// each kernel's rows split across the intra-op threads, library calls run by the op's CPU
// kernel, buffers in host memory.
#include <unistd.h>

#include <cstdio>

#include "backends/cpu/cpu_compiler.h"
#include "jit/backend.h"
#include "runtime/session_options.h"
#include "runtime/thread_pool.h"
#include "runtime/trace.h"

namespace graphjit {

namespace {

using Clock = std::chrono::steady_clock;

class CpuExecutable : public ClusterExecutable {
 public:
  struct Kernel {
    cpu::Executable::PackedFunction fn = nullptr;  // null for a library call
    int64_t rows = 1, cost_per_row = 1;
    std::vector<int> buffers;
    const LibraryCall* call = nullptr;
  };

  CpuExecutable(ClusterProgram program, std::unique_ptr<cpu::Executable> exe)
      : ClusterExecutable(std::move(program)), exe_(std::move(exe)) {}

  Status Init() {
    for (size_t k = 0; k < program_.module.kernels.size(); ++k) {
      const EmittedKernel& emitted = program_.module.kernels[k];
      Kernel kernel;
      kernel.buffers = emitted.buffers;
      if (emitted.library_node >= 0) {
        kernel.call = &program_.calls[k];
      } else {
        GJ_ASSIGN_OR_RETURN(kernel.fn, exe_->Function(emitted.function));
        kernel.rows = emitted.rows;
        kernel.cost_per_row = emitted.cost_per_row;
      }
      kernels_.push_back(std::move(kernel));
    }
    return Status::Ok();
  }

  size_t bytes() const override {
    size_t bytes = exe_ ? exe_->bytes() : 0;
    for (const Tensor& c : program_.constants) bytes += c.bytes();
    return bytes;
  }

  // Runs the kernels in order; buffers are the inputs, the constants, views of other
  // buffers, or allocated here.
  Status Run(KernelContext& ctx, const std::string& name, Clock::duration* in_kernels) const override {
    std::vector<Tensor> values(program_.buffers.size());
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const Kernel& kernel = kernels_[k];
      const int64_t start = ctx.tracer ? ctx.tracer->NowMicros() : 0;
      const auto kernel_start = Clock::now();
      if (kernel.call) {
        const LibraryCall& call = *kernel.call;
        std::vector<Tensor> inputs, outputs(call.dtypes.size());
        for (size_t i = 0; i + 1 < kernel.buffers.size(); ++i) {
          GJ_ASSIGN_OR_RETURN(const Tensor* t, Resolve(ctx, kernel.buffers[i], values));
          inputs.push_back(*t);
        }
        KernelContext call_ctx{*call.node,    inputs,       call.dtypes,      call.shapes, outputs,
                               ctx.allocator, ctx.intra_op, call.state.get(), ctx.options};
        GJ_RETURN_IF_ERROR(call.op->compute(call_ctx));
        values[kernel.buffers.back()] = std::move(outputs[0]);
      } else {
        GJ_RETURN_IF_ERROR(RunKernel(ctx, kernel, values));
      }
      *in_kernels += Clock::now() - kernel_start;
      if (ctx.tracer) {
        int64_t bytes = 0;
        for (int b : kernel.buffers) bytes += values[b].valid() ? static_cast<int64_t>(values[b].bytes()) : 0;
        ctx.tracer->Add({name + "/fusion_" + std::to_string(k), kernel.call ? kernel.call->node->op : "fusion", start,
                         ctx.tracer->NowMicros() - start, CurrentThreadId(), bytes});
      }
    }
    for (size_t i = 0; i < program_.outputs.size(); ++i) {
      GJ_ASSIGN_OR_RETURN(const Tensor* out, Resolve(ctx, program_.outputs[i], values));
      ctx.ForwardOutput(static_cast<int>(i), *out);
    }
    return Status::Ok();
  }

 private:
  // Buffer b's tensor, made on first use.
  StatusOr<const Tensor*> Resolve(const KernelContext& ctx, int b, std::vector<Tensor>& values) const {
    if (values[b].valid()) return &values[b];
    const FusionPlan::Buffer& buffer = program_.buffers[b];
    switch (buffer.kind) {
      case FusionPlan::Buffer::Kind::kArgument: values[b] = ctx.inputs[buffer.source]; break;
      case FusionPlan::Buffer::Kind::kConstant: values[b] = program_.constants[buffer.source]; break;
      case FusionPlan::Buffer::Kind::kView: {
        GJ_ASSIGN_OR_RETURN(const Tensor* viewed, Resolve(ctx, buffer.source, values));
        values[b] = viewed->Reshaped(buffer.shape);
        break;
      }
      case FusionPlan::Buffer::Kind::kTemp: {
        GJ_ASSIGN_OR_RETURN(values[b], Tensor::Allocate(buffer.dtype, buffer.shape, ctx.allocator));
        break;
      }
    }
    return &values[b];
  }

  // An array of n pointers, on the stack up to kInline (nothing allocated per call), else
  // on the heap.
  class Pointers {
   public:
    explicit Pointers(size_t n) : heap_(n > kInline ? n : 0) {}
    void** data() { return heap_.empty() ? inline_ : heap_.data(); }

   private:
    static constexpr size_t kInline = 32;
    void* inline_[kInline];
    std::vector<void*> heap_;
  };

  // Runs one compiled kernel over its rows, split across the intra-op threads. Its packed
  // arguments (pointers to the row range and to each buffer's address) are Pointers.
  Status RunKernel(KernelContext& ctx, const Kernel& kernel, std::vector<Tensor>& values) const {
    const size_t n = kernel.buffers.size();
    Pointers buffers(n);
    void** pointers = buffers.data();
    for (size_t i = 0; i < n; ++i) {
      GJ_ASSIGN_OR_RETURN(const Tensor* t, Resolve(ctx, kernel.buffers[i], values));
      pointers[i] = const_cast<void*>(t->raw());
    }
    struct Call {
      const Kernel* kernel;
      void** pointers;
      size_t n;
    } call{&kernel, pointers, n};
    // Captures one pointer: std::function keeps it without allocating.
    ctx.ParallelFor(kernel.rows, kernel.cost_per_row, [c = &call](int64_t begin, int64_t end) {
      Pointers packed(c->n + 2);
      void** args = packed.data();
      args[0] = &begin;
      args[1] = &end;
      for (size_t i = 0; i < c->n; ++i) args[i + 2] = &c->pointers[i];
      c->kernel->fn(args);
    });
    return Status::Ok();
  }

  const std::unique_ptr<cpu::Executable> exe_;
  std::vector<Kernel> kernels_;
};

// The outputs whose stores bypass the caches (cpu::CompileOptions::streaming_store_bytes):
// from 8 times a core's L2 cache (16 MiB where it is not known). Smaller ones stay cached
// for the next kernel, which reads them: on a Xeon with 2 MiB of L2, one thread,
// `jit_bench --benchmark_filter=StreamingStores` (y = 1.5 x + 1, then z = 1.5 y + 1) took
// 1.66x, 1.12x, 1.06x, 1.07x the cached stores' time streamed at 1, 2, 4 and 8 MiB, the
// same at 16, and 0.87x and 0.83x at 32 and 64 MiB.
int64_t StreamingStoreBytes(const CpuDescription& cpu) { return cpu.l2_bytes > 0 ? 8 * cpu.l2_bytes : int64_t{16} << 20; }

class CpuTarget : public Backend {
 public:
  CpuTarget(cpu::Target target, std::string description, TargetDescription device)
      : target_(std::move(target)),
        description_("cpu " + description + ", streaming stores from " + std::to_string(StreamingStoreBytes(device.cpu) >> 10) +
                     " KiB"),
        device_(std::move(device)) {}
  const TargetDescription& description() const override { return device_; }
  const std::string& target() const override { return description_; }

  StatusOr<std::unique_ptr<ClusterExecutable>> Compile(ClusterProgram program, bool keep_stages, CompileStages* stages,
                                                       std::string* code) const override {
    std::unique_ptr<cpu::Executable> exe;
    if (!program.module.mlir.empty()) {
      cpu::CompileOptions options;
      options.keep_stages = keep_stages;
      options.target = target_;
      options.streaming_store_bytes = StreamingStoreBytes(device_.cpu);
      cpu::CompileReport r;
      GJ_ASSIGN_OR_RETURN(*code, cpu::CompileToObject(program.module.mlir, options, &r));
      if (keep_stages) {
        for (const auto& [stage, text] : r.mlir_stages) stages->files.emplace_back(stage + ".mlir", text);
        stages->files.emplace_back("llvm_ir.ll", r.llvm_ir);
        stages->files.emplace_back("asm.s", r.assembly);
      }
      stages->mlir_ms = r.mlir_ms;
      stages->codegen_ms = r.llvm_ms;
      GJ_ASSIGN_OR_RETURN(exe, cpu::Load(*code, target_, std::move(r)));
    }
    return Make(std::move(program), std::move(exe));
  }

  StatusOr<std::unique_ptr<ClusterExecutable>> Load(ClusterProgram program, const std::string& code) const override {
    std::unique_ptr<cpu::Executable> exe;
    if (!program.module.mlir.empty()) {
      GJ_ASSIGN_OR_RETURN(exe, cpu::Load(code, target_));
    }
    return Make(std::move(program), std::move(exe));
  }

  StatusOr<std::string> CompileObject(const ClusterProgram& program, const std::string& symbol_prefix,
                                      const std::vector<std::pair<std::string, std::string>>& data) const override {
    cpu::CompileOptions options;
    options.ahead_of_time = true;
    options.symbol_prefix = symbol_prefix;
    options.data = data;
    options.target = target_;
    cpu::CompileReport report;
    return cpu::CompileToObject(program.module.mlir.empty() ? "module {}" : program.module.mlir, options, &report);
  }

 private:
  static StatusOr<std::unique_ptr<ClusterExecutable>> Make(ClusterProgram program, std::unique_ptr<cpu::Executable> exe) {
    auto executable = std::make_unique<CpuExecutable>(std::move(program), std::move(exe));
    GJ_RETURN_IF_ERROR(executable->Init());
    return std::unique_ptr<ClusterExecutable>(std::move(executable));
  }

  const cpu::Target target_;
  const std::string description_;
  const TargetDescription device_;
};

// The host's caches, as the C library reads them (0 where it does not know).
int64_t CacheBytes(int name) {
  const long bytes = sysconf(name);
  return bytes > 0 ? bytes : 0;
}

}  // namespace

StatusOr<std::shared_ptr<const Backend>> CpuBackend(const SessionOptions* options, const SessionOptions& process) {
  // The session's CPU if it names one, else the process's (GRAPHJIT_FLAGS'), else the host.
  const SessionOptions& own = options && (!options->jit_cpu.empty() || !options->jit_cpu_features.empty()) ? *options : process;
  cpu::Target target;
  target.cpu = own.jit_cpu;
  target.features = own.jit_cpu_features;
  target.prefer_vector_width =
      options && options->prefer_vector_width ? options->prefer_vector_width : process.prefer_vector_width;
  TargetDescription device;
  device.schedule = Schedule::kCpu;
  GJ_ASSIGN_OR_RETURN(std::string description, cpu::DescribeTarget(target, &device.cpu.vector_bits));
  device.cpu.cores = ThreadPool::DefaultThreads();
  device.cpu.l1d_bytes = CacheBytes(_SC_LEVEL1_DCACHE_SIZE);
  device.cpu.l2_bytes = CacheBytes(_SC_LEVEL2_CACHE_SIZE);
  device.cpu.l3_bytes = CacheBytes(_SC_LEVEL3_CACHE_SIZE);
  return std::shared_ptr<const Backend>(
      std::make_shared<CpuTarget>(std::move(target), std::move(description), std::move(device)));
}

}  // namespace graphjit
