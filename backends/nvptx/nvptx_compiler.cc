#include "backends/nvptx/nvptx_compiler.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#include "backends/mlir_diagnostics.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace graphjit::nvptx {
namespace {

using Clock = std::chrono::steady_clock;

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    mlir::registerAllPasses();
  });
}

const mlir::DialectRegistry& Registry() {
  static const mlir::DialectRegistry* registry = [] {
    auto* r = new mlir::DialectRegistry();
    mlir::registerAllDialects(*r);
    mlir::registerAllExtensions(*r);
    mlir::registerAllToLLVMIRTranslations(*r);
    mlir::NVVM::registerNVVMTargetInterfaceExternalModels(*r);
    return r;
  }();
  return *registry;
}

std::string Libdevice() {
  std::string root = CudaRoot();
  std::string path = root + "/nvvm/libdevice/libdevice.10.bc";
  return !root.empty() && std::filesystem::exists(path) ? path : "";
}

}  // namespace

std::string CudaRoot() {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* v = std::getenv(var);
    if (v && *v && std::filesystem::exists(std::string(v) + "/bin/ptxas")) return v;
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (!dir.empty() && std::filesystem::exists(dir + "/ptxas"))
        return std::filesystem::path(dir).parent_path().string();
    }
  }
  return std::filesystem::exists("/usr/local/cuda/bin/ptxas") ? "/usr/local/cuda" : "";
}

StatusOr<CompiledModule> Compile(const std::string& text, const CompileOptions& options) {
  if (options.sm != 80 && options.sm != 90)
    return InvalidArgument("the NVPTX backend targets sm_80 and sm_90, not sm_" + std::to_string(options.sm));
  const std::string libdevice = Libdevice();
  if (libdevice.empty())
    return NotFound("libdevice (nvvm/libdevice/libdevice.10.bc of the CUDA toolkit) was not found: set CUDA_HOME");
  InitializeOnce();
  const auto start = Clock::now();
  mlir::MLIRContext context(Registry(), mlir::MLIRContext::Threading::DISABLED);
  MlirDiagnostics diagnostics(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!module) return InvalidArgument("the MLIR module does not parse: " + diagnostics.text());
  CompiledModule out;

  // 1. The kernels to NVVM, with the target (and libdevice) attached to their gpu.module;
  // math ops libdevice does not implement (absi, fma, ...) as LLVM intrinsics.
  const std::string sm = "sm_" + std::to_string(options.sm);
  const std::string to_nvvm = "nvvm-attach-target{chip=" + sm + " features=+ptx80 O=3 l=" + libdevice +
                              "},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
                              "convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts)";
  // 2. LLVM IR, libdevice linked, optimized, and PTX from the NVPTX backend.
  const std::string to_ptx = "gpu-module-to-binary{format=isa}";
  for (const auto& [pipeline, stage] : {std::pair{to_nvvm, "nvvm"}, std::pair{to_ptx, ""}}) {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::parsePassPipeline(pipeline, pm))) return Internal("bad NVPTX pipeline: " + diagnostics.text());
    if (mlir::failed(pm.run(*module))) return Internal(std::string("lowering to ") + (*stage ? stage : "PTX") + " failed: " + diagnostics.text());
    // Square roots correctly rounded (sqrt.rn), as IEEE and TensorFlow's CPU kernels have
    // them: libdevice's __nv_sqrtf, which convert-gpu-to-nvvm calls, is sqrt.approx unless
    // __nvvm_reflect("__CUDA_PREC_SQRT") says otherwise, and LLVM 19 answers it 0.
    if (*stage) {
      module->walk([](mlir::LLVM::CallOp call) {
        if (call.getCallee() != "__nv_sqrtf") return;
        mlir::OpBuilder builder(call);
        call.getResult().replaceAllUsesWith(builder.create<mlir::LLVM::SqrtOp>(call.getLoc(), call.getOperand(0)));
        call.erase();
      });
    }
    if (*stage && options.keep_stages) {
      std::string printed;
      llvm::raw_string_ostream os(printed);
      module->print(os);
      out.report.mlir_stages.emplace_back(stage, std::move(printed));
    }
  }
  // 3. The PTX is the gpu.binary's object.
  module->walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute object : binary.getObjects()) {
      if (auto o = mlir::dyn_cast<mlir::gpu::ObjectAttr>(object)) out.ptx += o.getObject().getValue().str();
    }
  });
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();  // MLIR ends it with a NUL
  if (out.ptx.empty()) return Internal("no PTX was produced (is there a gpu.module?)");
  out.report.mlir_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return out;
}

StatusOr<PtxasReport> Assemble(const std::string& ptx, int sm, bool spills_are_errors) {
  const std::string root = CudaRoot();
  if (root.empty()) return NotFound("ptxas (the CUDA toolkit) was not found: set CUDA_HOME");
  char path[] = "/tmp/graphjit-XXXXXX.ptx";
  int fd = mkstemps(path, 4);
  if (fd < 0) return Internal("cannot create a temporary file for ptxas");
  {
    std::ofstream file(path);
    file << ptx;
  }
  close(fd);
  std::string command = "'" + root + "/bin/ptxas' -arch=sm_" + std::to_string(sm) + " -v " +
                        (spills_are_errors ? "--warn-on-spills -Werror " : "") + "-o /dev/null '" + path + "' 2>&1";
  PtxasReport report;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::remove(path);
    return Internal("cannot run ptxas");
  }
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) report.log.append(buffer, n);
  int status = pclose(pipe);
  std::remove(path);
  for (size_t at; (at = report.log.find(path)) != std::string::npos;) report.log.replace(at, std::string(path).size(), "<ptx>");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return InvalidArgument("ptxas -arch=sm_" + std::to_string(sm) + " rejects the PTX: " + report.log);
  // ptxas info : Compiling entry function 'k' for 'sm_90'
  //     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  // ptxas info : Used 14 registers, used 0 barriers, 16 bytes smem, 380 bytes cmem[0]
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream lines(report.log);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, entry)) {
      report.kernels.push_back({m[1]});
    } else if (report.kernels.empty()) {
      continue;
    } else if (std::regex_search(line, m, frame)) {
      report.kernels.back().stack_bytes = std::stoi(m[1]);
      report.kernels.back().spill_stores = std::stoi(m[2]);
      report.kernels.back().spill_loads = std::stoi(m[3]);
    } else if (std::regex_search(line, m, used)) {
      report.kernels.back().registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) report.kernels.back().shared_bytes = std::stoi(m[1]);
    }
  }
  return report;
}

}  // namespace graphjit::nvptx
