#include "backends/nvptx/nvptx_compiler.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "backends/kernel_cleanup.h"
#include "backends/mlir_diagnostics.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
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
#include "mlir/Target/LLVMIR/Export.h"

namespace graphjit::nvptx {
namespace {

// The math ops convert-gpu-to-nvvm (MLIR 19) leaves alone, as calls of libdevice's
// functions, declared in the gpu.module that calls them.
void CallLibdevice(mlir::ModuleOp module) {
  static const std::map<std::string, std::string, std::less<>> kFunctions = {
      {"math.asin", "__nv_asinf"},   {"math.acos", "__nv_acosf"},   {"math.sinh", "__nv_sinhf"},  {"math.cosh", "__nv_coshf"},
      {"math.asinh", "__nv_asinhf"}, {"math.acosh", "__nv_acoshf"}, {"math.atanh", "__nv_atanhf"}};
  std::vector<std::pair<mlir::Operation*, std::string>> calls;
  module->walk([&](mlir::Operation* op) {
    auto it = kFunctions.find(op->getName().getStringRef());
    if (it != kFunctions.end() && op->getNumResults() == 1 && op->getResult(0).getType().isF32())
      calls.emplace_back(op, it->second);
  });
  for (auto& [op, name] : calls) {
    auto kernels = op->getParentOfType<mlir::gpu::GPUModuleOp>();
    if (!kernels) continue;
    auto function = kernels.lookupSymbol<mlir::LLVM::LLVMFuncOp>(name);
    const mlir::Type f32 = op->getResult(0).getType();
    if (!function) {
      mlir::OpBuilder builder(module.getContext());
      builder.setInsertionPointToStart(&kernels.getBodyRegion().front());
      function = builder.create<mlir::LLVM::LLVMFuncOp>(op->getLoc(), name, mlir::LLVM::LLVMFunctionType::get(f32, {f32}));
    }
    mlir::OpBuilder builder(op);
    auto call = builder.create<mlir::LLVM::CallOp>(op->getLoc(), function, op->getOperands());
    op->getResult(0).replaceAllUsesWith(call.getResult());
    op->erase();
  }
}

using Clock = std::chrono::steady_clock;

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    // NVPTX only: the host's target is the CPU backend's (a release links in only what is used).
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
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

// libdevice's bitcode, read once (each compile links what it needs from a lazy module).
StatusOr<const llvm::MemoryBuffer*> LibdeviceBitcode(const std::string& path) {
  static std::mutex mu;
  static auto* buffers = new std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& buffer = (*buffers)[path];
  if (!buffer) {
    auto read = llvm::MemoryBuffer::getFile(path);
    if (!read) return NotFound("cannot read " + path + ": " + read.getError().message());
    buffer = std::move(*read);
  }
  return buffer.get();
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
      if (!dir.empty() && std::filesystem::exists(dir + "/ptxas")) return std::filesystem::path(dir).parent_path().string();
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
  auto keep = [&](const char* stage) {
    if (!options.keep_stages) return;
    std::string printed;
    llvm::raw_string_ostream os(printed);
    module->print(os);
    out.report.mlir_stages.emplace_back(stage, std::move(printed));
  };
  if (mlir::failed(kernel_cleanup::Run(*module))) return Internal("the kernels' clean-up failed: " + diagnostics.text());
  keep("cleaned_up");

  // 1. The kernels to the NVVM and LLVM dialects: math ops as calls to libdevice, those
  // libdevice does not implement (absi, fma, ...) as LLVM intrinsics.
  CallLibdevice(*module);
  const std::string sm = "sm_" + std::to_string(options.sm);
  const std::string to_nvvm =
      "gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
      "convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts)";
  {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::parsePassPipeline(to_nvvm, pm))) return Internal("bad NVPTX pipeline: " + diagnostics.text());
    if (mlir::failed(pm.run(*module))) return Internal("lowering to NVVM failed: " + diagnostics.text());
  }
  // Square roots correctly rounded (sqrt.rn), as IEEE and TensorFlow's CPU kernels have
  // them: libdevice's __nv_sqrtf, which convert-gpu-to-nvvm calls, is sqrt.approx unless
  // __nvvm_reflect("__CUDA_PREC_SQRT") says otherwise, and LLVM 19 answers it 0.
  module->walk([](mlir::LLVM::CallOp call) {
    if (call.getCallee() != "__nv_sqrtf") return;
    mlir::OpBuilder builder(call);
    call.getResult().replaceAllUsesWith(builder.create<mlir::LLVM::SqrtOp>(call.getLoc(), call.getOperand(0)));
    call.erase();
  });
  keep("nvvm");
  mlir::gpu::GPUModuleOp kernels;
  module->walk([&](mlir::gpu::GPUModuleOp m) { kernels = m; });
  if (!kernels) return InvalidArgument("the MLIR module has no gpu.module");

  // 2. LLVM IR: the gpu.module translated, the libdevice functions it calls linked in (and
  // internalized), subnormals not flushed (nvvm-reflect-ftz 0), optimized at O3 with
  // NVPTX's own passes (NVVMReflect among them).
  const auto llvm_start = Clock::now();
  llvm::LLVMContext llvm_context;
  std::unique_ptr<llvm::Module> ir = mlir::translateModuleToLLVMIR(kernels, llvm_context, "kernels");
  if (!ir) return Internal("translating the kernels to LLVM IR failed: " + diagnostics.text());
  // MLIR 19 makes gpu.dynamic_shared_memory an internal global of no elements, which NVPTX
  // emits as a static variable of its own (`.shared .b8 x;`, among the others). The
  // dynamic shared memory is an external one (`.extern .shared .b8 x[];`), which the driver
  // places after the static.
  for (llvm::GlobalVariable& g : ir->globals()) {
    if (g.getAddressSpace() == 3 && g.getValueType()->isArrayTy() && g.getValueType()->getArrayNumElements() == 0) {
      g.setInitializer(nullptr);
      g.setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
  }
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return Internal("LLVM has no NVPTX target: " + error);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, sm, "+ptx80", llvm::TargetOptions(), std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  ir->setTargetTriple(triple);
  ir->setDataLayout(machine->createDataLayout());
  GJ_ASSIGN_OR_RETURN(const llvm::MemoryBuffer* bitcode, LibdeviceBitcode(libdevice));
  auto lib = llvm::getLazyBitcodeModule(bitcode->getMemBufferRef(), llvm_context);
  if (!lib) return Internal("cannot read " + libdevice + ": " + llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(triple);
  (*lib)->setDataLayout(ir->getDataLayout());
  const bool link_failed = llvm::Linker::linkModules(
      *ir, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded, [](llvm::Module& m, const llvm::StringSet<>& linked) {
        llvm::internalizeModule(m, [&](const llvm::GlobalValue& v) { return !v.hasName() || !linked.count(v.getName()); });
      });
  if (link_failed) return Internal("linking libdevice into the kernels failed");
  ir->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", static_cast<uint32_t>(0));
  if (llvm::Error e = mlir::makeOptimizingTransformer(3, /*sizeLevel=*/0, machine.get())(ir.get()))
    return Internal("optimizing the kernels' LLVM IR failed: " + llvm::toString(std::move(e)));
  // LLVM's unroller has decided which loops stay loops: ptxas is told not to unroll them
  // again (.pragma "nounroll"). Unrolled by ptxas, a 17-trip loop of int64-to-float
  // conversions took 255 registers and spilled on sm_80.
  for (llvm::Function& f : *ir) {
    if (f.isDeclaration()) continue;
    llvm::DominatorTree dominators(f);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) llvm::addStringMetadataToLoop(loop, "llvm.loop.unroll.disable");
  }
  if (options.keep_stages) {
    llvm::raw_string_ostream os(out.report.llvm_ir);
    ir->print(os, nullptr);
  }
  // 3. PTX from the NVPTX backend.
  llvm::SmallString<0> ptx;
  {
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager pm;
    if (machine->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      return Internal("LLVM's NVPTX backend cannot print PTX");
    pm.run(*ir);
  }
  out.ptx = ptx.str().str();
  if (out.ptx.empty()) return Internal("no PTX was produced");
  out.report.llvm_ms = std::chrono::duration<double, std::milli>(Clock::now() - llvm_start).count();
  out.report.mlir_ms = std::chrono::duration<double, std::milli>(llvm_start - start).count();
  return out;
}

StatusOr<PtxasReport> Assemble(const std::string& ptx, int sm, bool spills_are_errors, bool keep_cubin) {
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
  const std::string cubin = keep_cubin ? std::string(path) + ".cubin" : "/dev/null";
  std::string command = "'" + root + "/bin/ptxas' -arch=sm_" + std::to_string(sm) + " -v " +
                        (spills_are_errors ? "--warn-on-spills -Werror " : "") + "-o '" + cubin + "' '" + path + "' 2>&1";
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
  if (keep_cubin) {
    std::ifstream file(cubin, std::ios::binary);
    report.cubin.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    std::remove(cubin.c_str());
  }
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
