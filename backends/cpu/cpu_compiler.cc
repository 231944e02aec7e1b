#include "backends/cpu/cpu_compiler.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
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
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace graphjit::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double Millis(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// From loops over memrefs to the LLVM dialect, as passes nested in the module's pass
// manager, in two stages. The loops stay scalar here: LLVM's loop vectorizer turns them
// into vector code for the host's widest registers.
constexpr const char* kToControlFlow = "func.func(convert-linalg-to-loops), lower-affine, convert-scf-to-cf";
constexpr const char* kToLlvm =
    "convert-math-to-llvm, expand-strided-metadata, finalize-memref-to-llvm, convert-arith-to-llvm, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, convert-cf-to-llvm, reconcile-unrealized-casts";

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
  });
}

const mlir::DialectRegistry& Registry() {
  static const mlir::DialectRegistry* registry = [] {
    auto* r = new mlir::DialectRegistry();
    mlir::registerAllDialects(*r);
    mlir::registerAllExtensions(*r);
    mlir::registerAllToLLVMIRTranslations(*r);
    return r;
  }();
  return *registry;
}

StatusOr<std::unique_ptr<llvm::TargetMachine>> HostTargetMachine() {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return Internal("cannot describe the host CPU: " + llvm::toString(builder.takeError()));
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = builder->createTargetMachine();
  if (!tm) return Internal("no code generator for the host CPU: " + llvm::toString(tm.takeError()));
  return std::move(*tm);
}

std::string Assembly(llvm::Module& module, llvm::TargetMachine& tm) {
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) return "(no assembly printer)";
  pm.run(*copy);
  return std::string(text.str());
}

}  // namespace

struct Executable::Engine {
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

Executable::Executable(std::unique_ptr<Engine> engine, CompileReport report)
    : engine_(std::move(engine)), report_(std::move(report)) {}

Executable::~Executable() = default;

StatusOr<Executable::PackedFunction> Executable::Function(const std::string& name) const {
  auto fn = engine_->engine->lookupPacked(name);
  if (!fn) return NotFound("no function '" + name + "' in the compiled module: " + llvm::toString(fn.takeError()));
  return *fn;
}

Status Executable::Call(const std::string& function, const std::vector<void*>& buffers) const {
  GJ_ASSIGN_OR_RETURN(PackedFunction fn, Function(function));
  // The packed interface takes a pointer to each argument.
  std::vector<void*> pointers = buffers;
  std::vector<void*> args;
  for (void*& p : pointers) args.push_back(&p);
  fn(args.data());
  return Status::Ok();
}

StatusOr<std::unique_ptr<Executable>> Compile(const std::string& mlir, const CompileOptions& options) {
  InitializeOnce();
  auto start = Clock::now();
  CompileReport report;
  mlir::MLIRContext context(Registry(), mlir::MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    os << (diagnostics.empty() ? "" : "; ") << d.getLocation() << ": " << d.str();
    return mlir::success();
  });

  // 1. Parse and verify.
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(mlir, &context);
  if (!module) return InvalidArgument("the MLIR module does not parse: " + diagnostics);

  // 2. exp, tanh, erf, ... as polynomials (vectorizable, no libm calls), then lowering.
  auto keep = [&](const char* stage) {
    if (!options.keep_stages) return;
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    report.mlir_stages.emplace_back(stage, std::move(text));
  };
  mlir::RewritePatternSet approximations(&context);
  mlir::populateMathPolynomialApproximationPatterns(approximations);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(*module, std::move(approximations))))
    return Internal("math approximation did not converge: " + diagnostics);
  keep("math_approximated");
  for (const auto& [pipeline, stage] : {std::pair{kToControlFlow, "control_flow"}, std::pair{kToLlvm, "llvm_dialect"}}) {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::parsePassPipeline(pipeline, pm))) return Internal("bad lowering pipeline: " + diagnostics);
    if (mlir::failed(pm.run(*module))) return Internal(std::string("lowering to ") + stage + " failed: " + diagnostics);
    keep(stage);
  }
  report.mlir_ms = Millis(start);

  // 3. LLVM: optimize for the host, then generate code in process.
  start = Clock::now();
  GJ_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, HostTargetMachine());
  GJ_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> asm_tm, HostTargetMachine());
  auto optimize = mlir::makeOptimizingTransformer(options.llvm_opt_level, 0, tm.get());
  // ExecutionEngineOptions::transformer is a function_ref: this must outlive create().
  auto transform = [&](llvm::Module* m) -> llvm::Error {
    if (llvm::Error e = optimize(m)) return e;
    if (options.keep_stages) {
      llvm::raw_string_ostream os(report.llvm_ir);
      m->print(os, nullptr);
      report.assembly = Assembly(*m, *asm_tm);
    }
    return llvm::Error::success();
  };
  mlir::ExecutionEngineOptions engine_options;
  engine_options.transformer = transform;
  engine_options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  engine_options.enableGDBNotificationListener = false;
  engine_options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, engine_options, std::move(tm));
  if (!engine) return Internal("code generation failed: " + llvm::toString(engine.takeError()) + diagnostics);
  report.llvm_ms = Millis(start);
  auto holder = std::make_unique<Executable::Engine>();
  holder->engine = std::move(*engine);
  return std::unique_ptr<Executable>(new Executable(std::move(holder), std::move(report)));
}

std::string HostCpu() {
  std::string features;
  std::vector<std::string> on;
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    if (f.getValue()) on.push_back("+" + f.getKey().str());
  std::sort(on.begin(), on.end());
  for (const std::string& f : on) features += (features.empty() ? "" : ",") + f;
  return llvm::sys::getHostCPUName().str() + " " + features;
}

}  // namespace graphjit::cpu
