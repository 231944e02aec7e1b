// The GPU backend: the emitted gpu.module compiled by backends/nvptx to PTX (or a cubin)
// for the target's compute capability, its library calls planned (jit/gpu_library.h), and
// both made an executable on the session's GPU (jit/gpu_executable.h); the code kept in
// the disk cache with the library algorithms chosen.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "backends/nvptx/nvptx_compiler.h"
#include "jit/backend.h"
#include "jit/gpu_executable.h"
#include "jit/gpu_library.h"
#include "jit/passes/lower_cnn_ops.h"
#include "jit/passes/unfuse_convs.h"
#include "jit/passes/unfuse_matmuls.h"
#include "runtime/cuda_device.h"
#include "runtime/op_traits.h"
#include "runtime/session_options.h"

namespace graphjit {

namespace {

// The code of a GPU executable as the disk cache keeps it: a first line with the algorithm
// chosen for each kernel's library call (its index among those the library offers; -1 for a
// kernel of the module), then the module (PTX text, or a cubin).
constexpr char kAlgorithmsLine[] = "graphjit library algorithms:";
std::string GpuCode(const std::vector<int>& algorithms, const std::string& module) {
  std::string code = kAlgorithmsLine;
  for (int a : algorithms) code += " " + std::to_string(a);
  return code + "\n" + module;
}
StatusOr<std::pair<std::vector<int>, std::string>> ParseGpuCode(const std::string& code, size_t kernels) {
  const size_t end = code.find('\n');
  if (code.rfind(kAlgorithmsLine, 0) != 0 || end == std::string::npos)
    return InvalidArgument("the code has no line of library algorithms");
  std::vector<int> algorithms;
  std::istringstream line(code.substr(sizeof kAlgorithmsLine - 1, end - (sizeof kAlgorithmsLine - 1)));
  for (int a; line >> a;) algorithms.push_back(a);
  if (!line.eof() || algorithms.size() != kernels)
    return InvalidArgument("the code's library algorithms are not one per kernel (" + std::to_string(kernels) + ")");
  return std::make_pair(std::move(algorithms), code.substr(end + 1));
}

// The shapes of a library call's arguments (all its buffers but the last, its result).
std::vector<Shape> ArgumentShapes(const ClusterProgram& program, const EmittedKernel& kernel) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i + 1 < kernel.buffers.size(); ++i) shapes.push_back(program.buffers[kernel.buffers[i]].shape);
  return shapes;
}

class GpuTarget : public Backend {
 public:
  GpuTarget(std::shared_ptr<CudaDevice> cuda, DeviceKind device, int sm, bool ptxas_check, bool tf32, bool autotune,
            RunRecorder* recorder)
      : cuda_(std::move(cuda)),
        device_(device),
        sm_(sm),
        ptxas_check_(ptxas_check),
        tf32_(tf32),
        autotune_(autotune),
        recorder_(recorder),
        description_(DescriptionOf(cuda_ ? cuda_->info() : NominalCudaDevice(sm), sm)),
        target_(Describe(cuda_.get(), sm, description_) + (tf32 ? ", GEMMs in TF32" : "") + (autotune ? "" : ", GEMMs untuned")) {
  }
  const TargetDescription& description() const override { return description_; }
  const std::string& target() const override { return target_; }

  // The device's limits, for code of sm_`sm`: the code may use what that target has (its
  // compute capability, not the device's: sm_80 code has no thread-block clusters on an
  // sm_90 device).
  static TargetDescription DescriptionOf(const CudaDeviceInfo& info, int sm) {
    TargetDescription d;
    d.schedule = Schedule::kGpu;
    d.gpu.compute_capability = std::min(info.compute_capability_major * 10 + info.compute_capability_minor, sm);
    d.gpu.multiprocessors = info.multiprocessors;
    d.gpu.warp_size = info.warp_size;
    d.gpu.max_threads_per_block = info.max_threads_per_block;
    d.gpu.max_blocks_per_multiprocessor = info.max_blocks_per_multiprocessor;
    d.gpu.max_threads_per_multiprocessor = info.max_threads_per_multiprocessor;
    d.gpu.shared_memory_per_block = info.shared_memory_per_block;
    d.gpu.shared_memory_per_block_optin = info.shared_memory_per_block_optin;
    d.gpu.registers_per_block = info.registers_per_block;
    d.gpu.l2_bytes = info.l2_cache_bytes;
    d.gpu.dram_bytes_per_s = info.PeakDramBytesPerSecond();
    return d;
  }

  // The code's target and what decides its form: the driver (the emulator takes PTX), the
  // device's compute capability (a GPU of sm_XX's major version gets a cubin, others PTX)
  // and the limits the grids are sized by.
  static std::string Describe(const CudaDevice* cuda, int sm, const TargetDescription& d) {
    std::string text = "nvptx sm_" + std::to_string(sm);
    if (!cuda) return text + " (compile only), " + d.CodeDecidingFacts();
    const CudaDeviceInfo& info = cuda->info();
    return text + " " + info.library + " gpu:" + std::to_string(info.ordinal) + " cc " +
           std::to_string(info.compute_capability_major) + "." + std::to_string(info.compute_capability_minor) +
           (info.emulated ? " emulated" : "") + ", " + d.CodeDecidingFacts();
  }

  StatusOr<std::unique_ptr<ClusterExecutable>> Compile(ClusterProgram program, bool keep_stages, CompileStages* stages,
                                                       std::string* code) const override {
    for (size_t k = 0; k < program.module.kernels.size(); ++k) {  // a library call it cannot make is Unimplemented
      const EmittedKernel& kernel = program.module.kernels[k];
      if (kernel.library_node < 0) continue;
      const std::vector<Shape> shapes = ArgumentShapes(program, kernel);
      GJ_RETURN_IF_ERROR(IsConv(program.calls[k]) ? ConvOf(program.calls[k], shapes, tf32_).status()
                                                  : GemmOf(program.calls[k], shapes, tf32_).status());
    }
    std::string ptx;
    if (!program.module.mlir.empty()) {
      nvptx::CompileOptions options;
      options.sm = sm_;
      options.keep_stages = keep_stages;
      GJ_ASSIGN_OR_RETURN(nvptx::CompiledModule compiled, nvptx::Compile(program.module.mlir, options));
      ptx = std::move(compiled.ptx);
      stages->mlir_ms = compiled.report.mlir_ms;
      stages->codegen_ms = compiled.report.llvm_ms;
      if (keep_stages) {
        for (const auto& [stage, text] : compiled.report.mlir_stages) stages->files.emplace_back(stage + ".mlir", text);
        stages->files.emplace_back("llvm_ir.ll", compiled.report.llvm_ir);
        stages->files.emplace_back("fusions.ptx", ptx);
        std::string launches;
        for (const EmittedKernel& k : program.module.kernels)
          launches += k.function + ": grid " + std::to_string(k.grid) + ", block " + std::to_string(k.block) +
                      (k.cluster > 1 ? ", clusters of " + std::to_string(k.cluster) + " blocks" : "") +
                      (k.shared_bytes ? ", dynamic shared memory " + std::to_string(k.shared_bytes) + " bytes" : "") + "\n";
        stages->files.emplace_back("launch.txt", launches);
      }
      if (ptxas_check_ || keep_stages) {
        // ptxas on the code for both targets (only sm_90 where a kernel runs in thread-block
        // clusters); spills are errors under the check.
        std::string reports;
        const bool clusters = std::any_of(program.module.kernels.begin(), program.module.kernels.end(),
                                          [](const EmittedKernel& k) { return k.cluster > 1; });
        for (int sm : {80, 90}) {
          if (clusters && sm < 90) {
            reports += "# sm_" + std::to_string(sm) + ": not assembled (the kernels run in thread-block clusters)\n";
            continue;
          }
          std::string code = ptx;
          if (sm != sm_) {
            nvptx::CompileOptions other;
            other.sm = sm;
            GJ_ASSIGN_OR_RETURN(nvptx::CompiledModule compiled, nvptx::Compile(program.module.mlir, other));
            code = std::move(compiled.ptx);
          }
          auto report = nvptx::Assemble(code, sm, /*spills_are_errors=*/ptxas_check_);
          if (!report.ok() && ptxas_check_) return Internal("ptxas sm_" + std::to_string(sm) + ": " + report.status().message());
          reports +=
              "# ptxas -arch=sm_" + std::to_string(sm) + " -v\n" + (report.ok() ? report->log : report.status().message() + "\n");
        }
        if (keep_stages) stages->files.emplace_back("ptxas.txt", reports);
      }
    }
    if (!cuda_) return FailedPrecondition("compiled for sm_" + std::to_string(sm_) + " but not run: no GPU driver");
    // A GPU gets a cubin when ptxas is there and the GPU runs sm_XX code as is (same major
    // version, else the driver compiles the PTX for it); the CUDA emulator always gets PTX.
    std::string module = std::move(ptx);
    const CudaDeviceInfo& info = cuda_->info();
    const bool runs_cubin = info.compute_capability_major == sm_ / 10 && info.compute_capability_minor >= sm_ % 10;
    if (!info.emulated && runs_cubin && !module.empty()) {
      auto assembled = nvptx::Assemble(module, sm_, /*spills_are_errors=*/false, /*keep_cubin=*/true);
      if (assembled.ok() && !assembled->cubin.empty()) module = std::move(assembled->cubin);
    }
    std::vector<int> algorithms;
    auto executable = Make(std::move(program), module, &algorithms);
    if (executable.ok()) *code = GpuCode(algorithms, module);
    return executable;
  }

  StatusOr<std::unique_ptr<ClusterExecutable>> Load(ClusterProgram program, const std::string& code) const override {
    GJ_ASSIGN_OR_RETURN(auto parsed, ParseGpuCode(code, program.module.kernels.size()));
    return Make(std::move(program), parsed.second, &parsed.first);
  }

 private:
  // The executable of `module` (PTX, or a cubin). Each library call is planned once (a GEMM
  // by cuBLASLt, a convolution by cuDNN), with the algorithm `*algorithms` names for its
  // kernel, or, if it is empty, the fastest of those the library offers (timed, under
  // --gpu_autotune) or its heuristic's first, which are then written there (-1 for the
  // module's kernels).
  StatusOr<std::unique_ptr<ClusterExecutable>> Make(ClusterProgram program, const std::string& module,
                                                    std::vector<int>* algorithms) const {
    if (!cuda_) return FailedPrecondition("no GPU driver to load sm_" + std::to_string(sm_) + " code");
    const bool chosen = !algorithms->empty();
    if (!chosen) algorithms->assign(program.module.kernels.size(), -1);
    std::vector<LibraryPlan> calls(program.module.kernels.size());
    std::shared_ptr<const nvptx::CublasLt> blas;
    std::shared_ptr<const nvptx::Cudnn> dnn;
    for (size_t k = 0; k < calls.size(); ++k) {
      const EmittedKernel& kernel = program.module.kernels[k];
      int& algorithm = (*algorithms)[k];
      if (kernel.library_node < 0) {
        if (algorithm != -1)
          return InvalidArgument("kernel " + std::to_string(k) + " is not a library call but has an algorithm");
        continue;
      }
      LibraryPlan& call = calls[k];
      call.conv = IsConv(program.calls[k]);
      int offered = 0;
      if (call.conv) {
        GJ_ASSIGN_OR_RETURN(call.convolution, ConvOf(program.calls[k], ArgumentShapes(program, kernel), tf32_));
        if (call.convolution.empty) {  // no call: the algorithm is 0
          if (chosen && algorithm != 0) return InvalidArgument("an empty convolution was kept with an algorithm");
          algorithm = 0;
          continue;
        }
        if (!dnn) {
          GJ_ASSIGN_OR_RETURN(dnn, OpenCudnn(device_, *cuda_));
        }
        nvptx::ConvPlan& plan = call.convolution.plan;
        GJ_ASSIGN_OR_RETURN(plan, dnn->Plan(plan.conv, kConvWorkspaceBytes, kLibraryAlgorithms));
        offered = static_cast<int>(plan.workspaces.size());
      } else {
        std::vector<int> aligned;
        for (int b : kernel.buffers) aligned.push_back(BaseAlignment(program, b));
        GJ_ASSIGN_OR_RETURN(call.gemm, GemmOf(program.calls[k], ArgumentShapes(program, kernel), tf32_, aligned));
        if (!blas) {
          GJ_ASSIGN_OR_RETURN(blas, OpenCublasLt(device_, *cuda_));
        }
        nvptx::GemmPlan& plan = call.gemm.plan;
        GJ_ASSIGN_OR_RETURN(plan, blas->Plan(plan.gemm, kGemmWorkspaceBytes, kLibraryAlgorithms));
        offered = static_cast<int>(plan.workspaces.size());
      }
      const char* library = call.conv ? "cuDNN" : "cuBLASLt";
      if (chosen && (algorithm < 0 || algorithm >= offered))
        return InvalidArgument(std::string("the library call of kernel ") + std::to_string(k) + " was kept with algorithm " +
                               std::to_string(algorithm) + ", and " + library + " offers " + std::to_string(offered));
      if (!chosen && autotune_ && offered > 1) {
        if (call.conv) {
          GJ_ASSIGN_OR_RETURN(algorithm, FastestAlgorithm(*cuda_, *dnn, call.convolution.plan));
          recorder_->CountConvsAutotuned(1);
        } else {
          GJ_ASSIGN_OR_RETURN(algorithm, FastestAlgorithm(*cuda_, *blas, call.gemm.plan));
          recorder_->CountGemmsAutotuned(1);
        }
      } else if (!chosen) {
        algorithm = 0;
      }
      (call.conv ? call.convolution.plan.algorithm : call.gemm.plan.algorithm) = algorithm;
    }
    return MakeGpuExecutable(std::move(program), cuda_, module, std::move(blas), std::move(dnn), std::move(calls), recorder_);
  }

  const std::shared_ptr<CudaDevice> cuda_;
  const DeviceKind device_;  // kGpu or kGpuEmu
  const int sm_;
  const bool ptxas_check_;
  const bool tf32_;      // GEMMs' products of operands rounded to TF32 (--gpu_tf32)
  const bool autotune_;  // GEMMs' algorithms timed (--gpu_autotune)
  RunRecorder* const recorder_;
  const TargetDescription description_;
  const std::string target_;
};

}  // namespace

std::string WhyNotCompilableOnGpu(const Node& node, const std::vector<DType>& input_types) {
  if (node.op == "MaxPool" || node.op == "AvgPool") {
    auto ksize = GetIntListAttr(node, "ksize");
    if (!ksize.ok() || ksize->size() != 4 || (*ksize)[1] * (*ksize)[2] > kMaxPoolWindowElements)
      return "a pool's window of more than " + std::to_string(kMaxPoolWindowElements) + " elements is not written out";
    return "";
  }
  if (!IsLibraryOp(node.op)) return "";
  const bool conv = TraitsOf(node.op).pattern == OpPattern::kConv;
  // A convolution's data inputs (Conv2DBackpropInput's first is a shape) are of its type.
  std::vector<DType> data;
  for (size_t i = 0; i < input_types.size(); ++i)
    if (IsDataInput(node, static_cast<int>(i))) data.push_back(input_types[i]);
  if (auto type = GemmType(data); !type.ok())
    return conv ? "convolutions on the GPU (cuDNN) are of float32, float16 or bfloat16 tensors of one type"
                : type.status().message();
  const tensorflow::AttrValue* fused = node.FindAttr("fused_ops");
  if (conv) {
    if (!fused || UnfusesConv({fused->list().s().begin(), fused->list().s().end()})) return "";
    return "a fused convolution's epilogue on the GPU is BiasAdd, then Add, then Relu, Relu6, Elu, Tanh or Sigmoid";
  }
  // An activation cuBLASLt does not fuse is fused into the next kernel (see BuildProgram).
  const DType dtype = input_types.empty() ? DType::kInvalid : input_types[0];
  if (fused && UnfusesMatMul({fused->list().s().begin(), fused->list().s().end()}, dtype)) return "";
  auto epilogue = EpilogueOf(node);
  return epilogue.ok() ? "" : epilogue.status().message();
}

StatusOr<std::shared_ptr<const Backend>> GpuBackend(const GpuContext& gpu, const SessionOptions* options,
                                                    const SessionOptions& process, RunRecorder* recorder) {
  const std::string arch = options && !options->gpu_arch.empty() ? options->gpu_arch : process.gpu_arch;
  const bool check = (options && options->gpu_ptxas_check) || process.gpu_ptxas_check;
  const bool tf32 = options ? options->gpu_tf32 : process.gpu_tf32;
  const bool autotune = options ? options->gpu_autotune : process.gpu_autotune;
  if (!gpu.cuda)
    return std::shared_ptr<const Backend>(
        std::make_shared<GpuTarget>(nullptr, gpu.device, arch == "sm_80" ? 80 : 90, check, tf32, autotune, recorder));
  const CudaDeviceInfo& info = gpu.cuda->info();
  int sm = info.compute_capability_major >= 9 ? 90 : 80;
  if (!arch.empty()) sm = arch == "sm_80" ? 80 : 90;
  if (info.compute_capability_major * 10 + info.compute_capability_minor < sm)
    return FailedPrecondition("the GPU (" + info.name + ", compute capability " + std::to_string(info.compute_capability_major) +
                              "." + std::to_string(info.compute_capability_minor) + ") cannot run sm_" + std::to_string(sm) +
                              " code; graphjit generates code for sm_80 and sm_90");
  return std::shared_ptr<const Backend>(std::make_shared<GpuTarget>(gpu.cuda, gpu.device, sm, check, tf32, autotune, recorder));
}

}  // namespace graphjit
