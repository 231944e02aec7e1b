#include "backends/cpu/cpu_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "backends/cpu/fast_exp.h"
#include "backends/kernel_cleanup.h"
#include "backends/mlir_diagnostics.h"
#include "ir/logging.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/VFABIDemangler.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
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
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace graphjit::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double Millis(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

// From loops over memrefs to the LLVM dialect, as passes nested in the module's pass
// manager, in two stages. The loops stay scalar here: LLVM's loop vectorizer turns them
// into vector code for the host's widest registers.
// The packed entry point of kernel f is `_mlir_f` (see AddPackedEntryPoints).
constexpr llvm::StringLiteral kPacked = "_mlir_";

constexpr const char* kToControlFlow = "func.func(convert-linalg-to-loops), lower-affine, convert-scf-to-cf";
constexpr const char* kToLlvm =
    "convert-math-to-llvm, expand-strided-metadata, finalize-memref-to-llvm, convert-arith-to-llvm, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, convert-cf-to-llvm, reconcile-unrealized-casts";

// f32 -> bf16 for code LLVM lowers to a call (x86 without AVX512-BF16): compiler-rt's
// __truncsfbf2, which the JIT otherwise cannot resolve. LLVM still calls it when it folds
// the MLIR-expanded rounding back into an fptrunc. Round to nearest even; NaN stays a
// quiet NaN. The bf16 result travels in the low 16 bits of xmm0, as a float's bits.
float TruncSfBf2(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  uint32_t out = (bits & 0x7fffffffu) > 0x7f800000u ? (bits >> 16) | 0x40u : (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  float result = 0;
  std::memcpy(&result, &out, sizeof out);
  return result;
}

// LLVM reports some errors (an instruction it cannot select, a broken invariant) with
// report_fatal_error, which ends the process: LLVM is built without exceptions. Code
// generation runs in a CrashRecoveryContext instead, and the fatal error handler returns
// from it to the caller, as an error with LLVM's message. (What the abandoned compile had
// allocated is leaked: LLVM cannot unwind.)
thread_local std::string* fatal_message = nullptr;

void OnFatalError(void*, const char* reason, bool) {
  llvm::CrashRecoveryContext* recovery = llvm::CrashRecoveryContext::GetCurrent();
  if (fatal_message == nullptr || recovery == nullptr) {
    GJ_LOG(ERROR) << "LLVM ERROR: " << reason;
    return;  // LLVM ends the process
  }
  *fatal_message = reason;
  recovery->HandleExit(1);
}

Status RunRecoverably(llvm::function_ref<void()> fn) {
  std::string message;
  fatal_message = &message;
  llvm::CrashRecoveryContext recovery;
  const bool finished = recovery.RunSafely(fn);
  fatal_message = nullptr;
  if (finished) return Status::Ok();
  return Internal("LLVM failed: " + (message.empty() ? std::string("it crashed") : message));
}

void InitializeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
    llvm::CrashRecoveryContext::Enable();
    llvm::install_fatal_error_handler(OnFatalError);
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

// The host's features by LLVM's names, each on or off.
const llvm::StringMap<bool>& HostFeatures() {
  static const auto* features = new llvm::StringMap<bool>(llvm::sys::getHostCPUFeatures());
  return *features;
}

bool ValidVectorWidth(int bits) { return bits == 0 || bits == 128 || bits == 256 || bits == 512; }

// A target machine for `target`, and what follows from it.
struct Machine {
  std::unique_ptr<llvm::TargetMachine> tm;
  int vector_width = 0;  // the preferred width, resolved
  bool scalef = false;   // VSCALEFPS in 128, 256 and 512 bits (AVX-512F and VL)
  std::string missing;   // the features its code needs that the host lacks
};

StatusOr<Machine> MakeTargetMachine(const Target& target, bool position_independent = false) {
  if (!ValidVectorWidth(target.prefer_vector_width))
    return InvalidArgument("the preferred vector width must be 128, 256 or 512 bits, got " +
                           std::to_string(target.prefer_vector_width));
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return Internal("cannot describe the host CPU: " + llvm::toString(builder.takeError()));
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  // Names are checked against the host's subtarget first (LLVM would warn and ignore them).
  static const llvm::TargetMachine* host = [&]() -> llvm::TargetMachine* {
    auto tm = builder->createTargetMachine();
    return tm ? tm->release() : nullptr;
  }();
  if (host == nullptr) return Internal("no code generator for the host CPU");
  const llvm::MCSubtargetInfo& known = *host->getMCSubtargetInfo();
  if (!target.cpu.empty()) {
    if (!known.isCPUStringValid(target.cpu))
      return InvalidArgument("LLVM does not know the CPU '" + target.cpu + "' (try x86-64-v3, skylake-avx512, znver4)");
    builder->setCPU(target.cpu);
    builder->getFeatures() = llvm::SubtargetFeatures();
  }
  llvm::SmallVector<llvm::StringRef> extra;
  llvm::StringRef(target.features).split(extra, ',', -1, false);
  for (llvm::StringRef f : extra) {
    f = f.trim();
    if (f.size() < 2 || (f[0] != '+' && f[0] != '-'))
      return InvalidArgument("a CPU feature is written +name or -name, got '" + f.str() + "'");
    const auto& all = known.getAllProcessorFeatures();
    if (std::none_of(all.begin(), all.end(), [&](const llvm::SubtargetFeatureKV& kv) { return f.drop_front() == kv.Key; }))
      return InvalidArgument("LLVM does not know the CPU feature '" + f.drop_front().str() + "'");
    builder->getFeatures().AddFeature(f);
  }
  // Never the hardware's f32 -> bf16 conversions (AVX512-BF16's and AVX-NE-CONVERT's
  // vcvtneps2bf16): they flush subnormals to zero. LLVM uses them for a bf16 value that
  // lives in a register (a select or a phi of bf16), where it would make Relu of a bf16
  // subnormal 0; without them, it rounds as __truncsfbf2 does.
  for (const char* f : {"-avx512bf16", "-avxneconvert"}) builder->getFeatures().AddFeature(f);
  if (position_independent) {
    builder->setRelocationModel(llvm::Reloc::PIC_);
    builder->setCodeModel(llvm::CodeModel::Small);
  }
  auto tm = builder->createTargetMachine();
  if (!tm) return Internal("no code generator for this CPU: " + llvm::toString(tm.takeError()));
  const llvm::MCSubtargetInfo& sti = *(*tm)->getMCSubtargetInfo();
  // graphjit's kernels are x86-64 code: a CPU or features without 64-bit mode or SSE2 (its
  // baseline) cannot run them.
  if (!sti.checkFeatures("+64bit") || !sti.checkFeatures("+sse2"))
    return InvalidArgument("the CPU '" + (target.cpu.empty() ? std::string("host") : target.cpu) + "'" +
                           (target.features.empty() ? "" : " with features " + target.features) +
                           " lacks x86-64's 64-bit mode or SSE2");
  Machine machine;
  for (const llvm::SubtargetFeatureKV& kv : sti.getAllProcessorFeatures()) {
    auto on_host = HostFeatures().find(kv.Key);
    if (sti.getFeatureBits().test(kv.Value) && on_host != HostFeatures().end() && !on_host->getValue())
      machine.missing += (machine.missing.empty() ? "" : ",") + std::string(kv.Key);
  }
  // graphjit's default, not LLVM's per-CPU tuning: the widest registers the CPU has (and
  // a preference for wider ones than it has means those).
  const int widest = sti.checkFeatures("+avx512f") ? 512 : sti.checkFeatures("+avx") ? 256 : 128;
  machine.vector_width = target.prefer_vector_width ? std::min(target.prefer_vector_width, widest) : widest;
  machine.scalef = sti.checkFeatures("+avx512f") && sti.checkFeatures("+avx512vl");
  machine.tm = std::move(*tm);
  return machine;
}

// A loop of more than kMaxUnrolledTrips iterations is vectorized and interleaved as LLVM
// chooses, but its vector loop is not unrolled further (llvm.loop.unroll.disable as the
// vectorizer's follow-up). Fully unrolled, the loops of a row kernel over a row of 1024
// floats were straight-line code in which GVN reused one loop's loads in the next: 64
// vectors live at once, spilled to the stack, and twice the compile time. Short rows
// keep the full unrolling, which holds them in registers from one loop to the next.
constexpr unsigned kMaxUnrolledTrips = 256;

void KeepLongLoopsRolled(llvm::Module& module) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::MDNode* no_unroll = llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
  llvm::Metadata* followup[] = {llvm::MDString::get(ctx, "llvm.loop.vectorize.followup_vectorized"), no_unroll};
  llvm::MDNode* hint = llvm::MDNode::get(ctx, followup);
  llvm::TargetLibraryInfoImpl tli_impl(llvm::Triple(module.getTargetTriple()));
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    llvm::TargetLibraryInfo tli(tli_impl, &f);
    llvm::AssumptionCache ac(f);
    llvm::DominatorTree dt(f);
    llvm::LoopInfo li(dt);
    llvm::ScalarEvolution se(f, tli, ac, dt, li);
    for (llvm::Loop* loop : li.getLoopsInPreorder())
      if (se.getSmallConstantMaxTripCount(loop) > kMaxUnrolledTrips)
        loop->setLoopID(llvm::makePostTransformationMetadata(ctx, loop->getLoopID(), {}, {hint}));
  }
}

// The engine calls each kernel through its packed wrapper, `_mlir_<kernel>`. A kernel
// small enough to be inlined into it was optimized and compiled twice, once on its own
// and once in the wrapper; a kernel never inlined is compiled once (the call costs
// nothing next to a kernel's work).
void CompileKernelsOnce(llvm::Module& module) {
  for (llvm::Function& f : module) {
    if (f.isDeclaration() || !f.getName().starts_with(kPacked)) continue;
    if (llvm::Function* kernel = module.getFunction(f.getName().drop_front(kPacked.size())))
      kernel->addFnAttr(llvm::Attribute::NoInline);
  }
}

// CompileOptions::streaming_store_bytes: a vector store into an argument of at least
// `min_bytes` (its dereferenceable bytes) at an address known to be a multiple of the
// vector's size (the argument's alignment and the loop's index) becomes non-temporal
// (MOVNTPS: the line goes to memory, not into the caches, and is not read first). A
// function with such stores ends with an SFENCE, so that they are visible to whichever
// thread reads the buffer once the caller has seen the function return.
void StreamLargeStores(llvm::Module& module, int64_t min_bytes) {
  if (min_bytes <= 0 || !llvm::Triple(module.getTargetTriple()).isX86()) return;
  const llvm::DataLayout& layout = module.getDataLayout();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::MDNode* nontemporal =
      llvm::MDNode::get(ctx, llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1)));
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    bool streams = false;
    for (llvm::Instruction& i : llvm::instructions(f)) {
      auto* store = llvm::dyn_cast<llvm::StoreInst>(&i);
      if (!store || !store->getValueOperand()->getType()->isVectorTy()) continue;
      auto* arg = llvm::dyn_cast<llvm::Argument>(llvm::getUnderlyingObject(store->getPointerOperand()));
      if (!arg || arg->getDereferenceableBytes() < static_cast<uint64_t>(min_bytes)) continue;
      const uint64_t size = layout.getTypeStoreSize(store->getValueOperand()->getType());
      const llvm::Align known = llvm::getKnownAlignment(store->getPointerOperand(), layout);
      if (known.value() < size) continue;
      store->setAlignment(std::max(store->getAlign(), known));
      store->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
      streams = true;
    }
    if (!streams) continue;
    for (llvm::BasicBlock& block : f)
      if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator()))
        llvm::IRBuilder<>(ret).CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
  }
}

// --- Calls the loop vectorizer widens. A function the kernels call is declared with
// vector variants (VFABI: `_ZGV_LLVM_N<lanes><params>_<f>(<f>_v<lanes>)`, `params` a letter
// per parameter: v a vector, u uniform, l linear with step 1), named on every call of it, so
// that LLVM's loop vectorizer calls the variant of its width where it widens the call. Once
// the module is optimized, every call of the function or a variant is replaced by the
// instructions it stands for.
void DeclareVectorVariants(llvm::Function& f, llvm::StringRef params, llvm::ArrayRef<int> widths) {
  llvm::Module& module = *f.getParent();
  std::vector<std::string> mappings;
  for (int lanes : widths) {
    std::vector<llvm::Type*> types;
    for (size_t i = 0; i < params.size(); ++i) {
      llvm::Type* t = f.getFunctionType()->getParamType(i);
      types.push_back(params[i] == 'v' ? llvm::FixedVectorType::get(t, lanes) : t);
    }
    llvm::Type* result = f.getReturnType();
    if (!result->isVoidTy()) result = llvm::FixedVectorType::get(result, lanes);
    const std::string name = f.getName().str() + "_v" + std::to_string(lanes);
    auto* variant =
        llvm::Function::Create(llvm::FunctionType::get(result, types, false), llvm::GlobalValue::ExternalLinkage, name, module);
    variant->setAttributes(f.getAttributes());
    llvm::appendToCompilerUsed(module, {variant});
    mappings.push_back("_ZGV_LLVM_N" + std::to_string(lanes) + params.str() + "_" + f.getName().str() + "(" + name + ")");
  }
  for (llvm::User* user : f.users())
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(user)) llvm::VFABI::setVectorVariantNames(call, mappings);
}

// --- glibc's vector math library (libmvec). sin and cos are LLVM's intrinsics (see
// KeepLibmAccuracy), which a scalar loop calls as libm's sinf and cosf. Each call names
// libmvec's versions (`_ZGV<isa>N<lanes>v_sinf`) of the widths the CPU runs: SSE's 4 lanes
// (b), AVX2's 8 (d), AVX-512's 16 (e); the loop vectorizer calls the one of its width. The
// JIT resolves them in libmvec.so.1, loaded into the process once; without it (another C
// library), and in ahead-of-time code (which links with -lm alone), the calls stay libm's.
// The other functions the kernels call libm for (see CallLibm) are called by their names.
struct VectorMathFunction {
  const char* intrinsic;  // on f32: an LLVM intrinsic, or libm's function itself
  const char* name;       // libm's float function
  int arity = 1;
};
constexpr VectorMathFunction kVectorMath[] = {
    {"llvm.sin.f32", "sinf"}, {"llvm.cos.f32", "cosf"}, {"tanf", "tanf"},    {"asinf", "asinf"}, {"acosf", "acosf"},
    {"atanf", "atanf"},       {"atan2f", "atan2f", 2},  {"sinhf", "sinhf"},  {"coshf", "coshf"}, {"asinhf", "asinhf"},
    {"acoshf", "acoshf"},     {"atanhf", "atanhf"},     {"expm1f", "expm1f"}};

bool LoadVectorMathLibrary() {
  static const bool loaded = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr;
  return loaded;
}

void UseVectorMathLibrary(llvm::Module& module, const llvm::TargetMachine& machine) {
  const llvm::MCSubtargetInfo& sti = *machine.getMCSubtargetInfo();
  std::vector<std::pair<char, int>> variants = {{'b', 4}};
  if (sti.checkFeatures("+avx2,+fma")) variants.push_back({'d', 8});
  if (sti.checkFeatures("+avx512f")) variants.push_back({'e', 16});
  llvm::LLVMContext& ctx = module.getContext();
  for (const VectorMathFunction& f : kVectorMath) {
    llvm::Function* scalar = module.getFunction(f.intrinsic);
    if (scalar == nullptr || scalar->use_empty()) continue;
    // libm's functions set errno, which nothing here reads: they are pure, as the vectorizer
    // needs a call to be.
    scalar->setDoesNotThrow();
    scalar->setWillReturn();
    scalar->setDoesNotAccessMemory();
    const std::string params(f.arity, 'v');
    std::vector<std::string> mappings;
    for (auto [isa, lanes] : variants) {
      const std::string name = std::string("_ZGV") + isa + "N" + std::to_string(lanes) + params + "_" + f.name;
      auto* type = llvm::FixedVectorType::get(llvm::Type::getFloatTy(ctx), lanes);
      const std::vector<llvm::Type*> args(f.arity, type);
      llvm::FunctionCallee callee = module.getOrInsertFunction(name, llvm::FunctionType::get(type, args, false));
      auto* vector = llvm::cast<llvm::Function>(callee.getCallee());
      vector->setDoesNotThrow();
      vector->setWillReturn();
      vector->setDoesNotAccessMemory();
      llvm::appendToCompilerUsed(module, {vector});
      mappings.push_back("_ZGV_LLVM_N" + std::to_string(lanes) + params + "_" + scalar->getName().str() + "(" + name + ")");
    }
    for (llvm::User* user : scalar->users())
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(user)) llvm::VFABI::setVectorVariantNames(call, mappings);
  }
}

// After optimization: the variants no loop called are dropped (an object names only what it calls).
void DropUncalledVectorMath(llvm::Module& module) {
  std::vector<llvm::Function*> variants;
  for (llvm::Function& f : module)
    if (f.isDeclaration() && f.getName().starts_with("_ZGV")) variants.push_back(&f);
  llvm::removeFromUsedLists(module,
                            [&](llvm::Constant* c) { return std::find(variants.begin(), variants.end(), c) != variants.end(); });
  for (llvm::Function* f : variants) {
    f->removeDeadConstantUsers();
    if (f->use_empty()) f->eraseFromParent();
  }
}

// Replaces each call of the function `name` (lanes 1) or of its vector variants by what
// `lower` builds before it (its result, if any, replacing the call's), and deletes them.
void ReplaceCalls(llvm::Module& module, llvm::StringRef name,
                  llvm::function_ref<llvm::Value*(llvm::IRBuilder<>&, llvm::CallInst&, int lanes)> lower) {
  std::vector<std::pair<llvm::Function*, int>> functions;
  for (llvm::Function& f : module) {
    if (!f.isDeclaration() || !f.getName().starts_with(name)) continue;
    llvm::StringRef rest = f.getName().drop_front(name.size());
    int lanes = 1;
    if (rest.empty() || (rest.consume_front("_v") && !rest.getAsInteger(10, lanes))) functions.push_back({&f, lanes});
  }
  llvm::removeFromUsedLists(module, [&](llvm::Constant* c) {
    return std::any_of(functions.begin(), functions.end(), [&](const auto& f) { return f.first == c; });
  });
  for (auto [f, lanes] : functions) {
    f->removeDeadConstantUsers();  // the list removeFromUsedLists replaced
    for (llvm::User* user : llvm::make_early_inc_range(f->users())) {
      auto* call = llvm::cast<llvm::CallInst>(user);
      llvm::IRBuilder<> b(call);
      llvm::Value* value = lower(b, *call, lanes);
      if (value != nullptr) call->replaceAllUsesWith(value);
      call->eraseFromParent();
    }
    f->eraseFromParent();
  }
}

// Prefetches in loops that LLVM vectorizes. The row kernels prefetch the next row in a
// loop that computes (jit/cpu_schedule.cc), but LLVM 19's loop vectorizer leaves a loop with
// an llvm.prefetch in it scalar. Before optimization, each prefetch (of a read into all
// caches) of element i of an array of S-byte elements becomes a call
// `graphjit_prefetch_<S>(array, i)` with vector variants (the array uniform, i linear):
// a variant gets lane 0's i, a scalar. After optimization each call is llvm.prefetch
// again, a variant's once per 64-byte line of its lanes' bytes.
constexpr llvm::StringLiteral kPrefetch = "graphjit_prefetch_";
constexpr uint64_t kLineBytes = 64;

std::vector<uint64_t> MakePrefetchesVectorizable(llvm::Module& module) {
  std::vector<uint64_t> sizes;
  llvm::Function* prefetch = module.getFunction("llvm.prefetch.p0");
  if (prefetch == nullptr) return sizes;
  llvm::LLVMContext& ctx = module.getContext();
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                       {llvm::PointerType::getUnqual(ctx), llvm::Type::getInt64Ty(ctx)}, false);
  for (llvm::User* user : llvm::make_early_inc_range(prefetch->users())) {
    auto* call = llvm::dyn_cast<llvm::CallInst>(user);
    auto* gep = call ? llvm::dyn_cast<llvm::GetElementPtrInst>(call->getArgOperand(0)) : nullptr;
    if (gep == nullptr || gep->getNumIndices() != 1 || !gep->getOperand(1)->getType()->isIntegerTy(64)) continue;
    auto constant = [&](int i) { return llvm::cast<llvm::ConstantInt>(call->getArgOperand(i))->getZExtValue(); };
    if (constant(1) != 0 || constant(2) != 3 || constant(3) != 1) continue;
    const uint64_t bytes = module.getDataLayout().getTypeAllocSize(gep->getResultElementType());
    if (bytes == 0) continue;
    const std::string name = kPrefetch.str() + std::to_string(bytes);
    llvm::Function* f = module.getFunction(name);
    if (f == nullptr) {
      f = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, module);
      f->setDoesNotThrow();
      f->setWillReturn();
      f->setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
      sizes.push_back(bytes);
    }
    llvm::CallInst::Create(f, {gep->getPointerOperand(), gep->getOperand(1)}, "", call->getIterator());
    call->eraseFromParent();
    if (gep->use_empty()) gep->eraseFromParent();
  }
  for (uint64_t bytes : sizes)
    DeclareVectorVariants(*module.getFunction(kPrefetch.str() + std::to_string(bytes)), "ul", {2, 4, 8, 16, 32, 64});
  return sizes;
}

void RestorePrefetches(llvm::Module& module, const std::vector<uint64_t>& sizes) {
  for (uint64_t bytes : sizes) {
    llvm::Type* element = llvm::ArrayType::get(llvm::Type::getInt8Ty(module.getContext()), bytes);
    ReplaceCalls(module, kPrefetch.str() + std::to_string(bytes), [&](llvm::IRBuilder<>& b, llvm::CallInst& call, int lanes) {
      llvm::Value* at = b.CreateGEP(element, call.getArgOperand(0), call.getArgOperand(1));
      for (uint64_t offset = 0; offset < bytes * lanes; offset += kLineBytes)
        b.CreateIntrinsic(llvm::Intrinsic::prefetch, {b.getPtrTy()},
                          {b.CreateConstGEP1_64(b.getInt8Ty(), at, offset), b.getInt32(0), b.getInt32(3), b.getInt32(1)});
      return nullptr;
    });
  }
}

// kScalef (the fast exp's p 2^k on AVX-512): vectorized in 4, 8 and 16 lanes, then
// VSCALEFPS of the variant's width (VSCALEFSS for a scalar call).
void MakeScalefVectorizable(llvm::Module& module) {
  llvm::Function* f = module.getFunction(kScalef);
  if (f == nullptr) return;
  f->setDoesNotThrow();
  f->setWillReturn();
  f->setDoesNotAccessMemory();
  DeclareVectorVariants(*f, "vv", {4, 8, 16});
}

void RestoreScalef(llvm::Module& module) {
  ReplaceCalls(module, kScalef, [](llvm::IRBuilder<>& b, llvm::CallInst& call, int lanes) -> llvm::Value* {
    llvm::Value* p = call.getArgOperand(0);
    llvm::Value* k = call.getArgOperand(1);
    const unsigned width = lanes == 1 ? 4 : lanes;
    llvm::Value* zero = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b.getFloatTy(), width));
    if (lanes == 1) {
      llvm::Value* v = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ss, {},
                                         {b.CreateInsertElement(zero, p, uint64_t{0}),
                                          b.CreateInsertElement(zero, k, uint64_t{0}), zero, b.getInt8(0xff), b.getInt32(4)});
      return b.CreateExtractElement(v, uint64_t{0});
    }
    if (lanes == 16)
      return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                               {p, k, zero, b.getInt16(0xffff), b.getInt32(4)});
    return b.CreateIntrinsic(
        lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256 : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128, {},
        {p, k, zero, b.getInt8(0xff)});
  });
}

// Ahead-of-time code (CompileOptions::ahead_of_time): the packed entry points renamed
// `<prefix><function>`, everything else local, and the data as constant symbols.
void ExportForLinker(llvm::Module& module, const CompileOptions& options) {
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    if (f.getName().starts_with(kPacked))
      f.setName(options.symbol_prefix + f.getName().drop_front(kPacked.size()).str());
    else
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  llvm::LLVMContext& ctx = module.getContext();
  for (const auto& [name, bytes] : options.data) {
    llvm::Constant* init = llvm::ConstantDataArray::getRaw(bytes, bytes.size(), llvm::Type::getInt8Ty(ctx));
    auto* global = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                            init, options.symbol_prefix + name);
    global->setAlignment(llvm::Align(64));
  }
}

// The module's code as an object file or assembly text (the module is left as it was).
std::string Emit(llvm::Module& module, llvm::TargetMachine& tm, llvm::CodeGenFileType type) {
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return type == llvm::CodeGenFileType::AssemblyFile ? "(no assembly printer)" : "";
  pm.run(*copy);
  return std::string(text.str());
}

// For each function f the module defines, `_mlir_f(void** args)`: calls f with *args[i] as
// its argument i (and stores a result through args[n]), so that a caller needs no C
// signature per kernel.
void AddPackedEntryPoints(llvm::Module& module) {
  std::vector<llvm::Function*> functions;
  for (llvm::Function& f : module)
    if (!f.isDeclaration() && f.hasExternalLinkage()) functions.push_back(&f);
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  for (llvm::Function* f : functions) {
    auto* packed = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false),
                                          llvm::GlobalValue::ExternalLinkage, kPacked + f->getName(), module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
    llvm::Value* args = packed->getArg(0);
    auto slot = [&](unsigned i) { return b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, i)); };
    std::vector<llvm::Value*> values;
    for (llvm::Argument& a : f->args()) values.push_back(b.CreateLoad(a.getType(), slot(a.getArgNo())));
    llvm::CallInst* call = b.CreateCall(f, values);
    if (!f->getReturnType()->isVoidTy()) b.CreateStore(call, slot(f->arg_size()));
    b.CreateRetVoid();
  }
}

}  // namespace

// Maps the pages of a module's code and data as LLVM's default does, counting them.
class CountingMapper final : public llvm::SectionMemoryManager::MemoryMapper {
 public:
  llvm::sys::MemoryBlock allocateMappedMemory(llvm::SectionMemoryManager::AllocationPurpose, size_t bytes,
                                              const llvm::sys::MemoryBlock* near, unsigned flags,
                                              std::error_code& error) override {
    llvm::sys::MemoryBlock block = llvm::sys::Memory::allocateMappedMemory(bytes, near, flags, error);
    mapped_ += block.allocatedSize();
    return block;
  }
  std::error_code protectMappedMemory(const llvm::sys::MemoryBlock& block, unsigned flags) override {
    return llvm::sys::Memory::protectMappedMemory(block, flags);
  }
  std::error_code releaseMappedMemory(llvm::sys::MemoryBlock& block) override {
    mapped_ -= block.allocatedSize();
    return llvm::sys::Memory::releaseMappedMemory(block);
  }
  size_t mapped() const { return mapped_; }

 private:
  std::atomic<size_t> mapped_{0};
};

struct Executable::Engine {
  CountingMapper mapper;  // outlives the JIT, which releases its pages through it
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

Executable::Executable(std::unique_ptr<Engine> engine, CompileReport report, std::string not_runnable)
    : engine_(std::move(engine)), report_(std::move(report)), not_runnable_(std::move(not_runnable)) {}

Executable::~Executable() = default;

size_t Executable::bytes() const {
  size_t report = report_.llvm_ir.size() + report_.assembly.size();
  for (const auto& [stage, text] : report_.mlir_stages) report += stage.size() + text.size();
  return engine_->mapper.mapped() + kEngineHeapBytes + report;
}

StatusOr<Executable::PackedFunction> Executable::Function(const std::string& name) const {
  if (!not_runnable_.empty()) return FailedPrecondition(not_runnable_);
  auto fn = engine_->jit->lookup(kPacked.str() + name);
  if (!fn) return NotFound("no function '" + name + "' in the compiled module: " + llvm::toString(fn.takeError()));
  return fn->toPtr<PackedFunction>();
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

namespace {

// math.sin and math.cos as LLVM's intrinsics, before MLIR's polynomials take them: those
// reduce the argument by pi/2 in f32, which loses every digit of a large one (rotary
// position embeddings reach thousands). LLVM calls libm's, or libmvec's in vector loops
// (UseVectorMathLibrary): correctly reduced on every float.
template <typename MathOp, typename IntrinsicOp>
struct ToLlvmIntrinsic : mlir::OpRewritePattern<MathOp> {
  explicit ToLlvmIntrinsic(mlir::MLIRContext* context) : mlir::OpRewritePattern<MathOp>(context, /*benefit=*/2) {}
  mlir::LogicalResult matchAndRewrite(MathOp op, mlir::PatternRewriter& rewriter) const override {
    rewriter.replaceOpWithNewOp<IntrinsicOp>(op, op.getType(), op.getOperand());
    return mlir::success();
  }
};

// The other libm functions the kernels use (tan, the inverse and hyperbolic functions,
// atan2, expm1) as calls of libm's float functions by name, before MLIR's polynomials take
// those it has (atan, atan2, expm1: less accurate than libm, which the reference kernels
// call); in vector loops, libmvec's (UseVectorMathLibrary).
template <typename MathOp>
struct ToLibmCall : mlir::OpRewritePattern<MathOp> {
  ToLibmCall(mlir::MLIRContext* context, const char* name)
      : mlir::OpRewritePattern<MathOp>(context, /*benefit=*/2), name_(name) {}
  mlir::LogicalResult matchAndRewrite(MathOp op, mlir::PatternRewriter& rewriter) const override {
    if (!op.getType().isF32()) return mlir::failure();
    auto module = op->template getParentOfType<mlir::ModuleOp>();
    if (!module.template lookupSymbol<mlir::func::FuncOp>(name_)) {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto type = rewriter.getFunctionType(llvm::SmallVector<mlir::Type>(op->getNumOperands(), op.getType()), {op.getType()});
      rewriter.create<mlir::func::FuncOp>(op.getLoc(), name_, type).setPrivate();
    }
    rewriter.replaceOpWithNewOp<mlir::func::CallOp>(op, name_, mlir::TypeRange{op.getType()}, op->getOperands());
    return mlir::success();
  }
  const char* name_;
};

void KeepLibmAccuracy(mlir::RewritePatternSet& patterns) {
  mlir::MLIRContext* context = patterns.getContext();
  context->getOrLoadDialect<mlir::LLVM::LLVMDialect>();
  patterns.add<ToLlvmIntrinsic<mlir::math::SinOp, mlir::LLVM::SinOp>, ToLlvmIntrinsic<mlir::math::CosOp, mlir::LLVM::CosOp>>(
      context);
  patterns.add<ToLibmCall<mlir::math::TanOp>>(context, "tanf");
  patterns.add<ToLibmCall<mlir::math::AsinOp>>(context, "asinf");
  patterns.add<ToLibmCall<mlir::math::AcosOp>>(context, "acosf");
  patterns.add<ToLibmCall<mlir::math::AtanOp>>(context, "atanf");
  patterns.add<ToLibmCall<mlir::math::Atan2Op>>(context, "atan2f");
  patterns.add<ToLibmCall<mlir::math::SinhOp>>(context, "sinhf");
  patterns.add<ToLibmCall<mlir::math::CoshOp>>(context, "coshf");
  patterns.add<ToLibmCall<mlir::math::AsinhOp>>(context, "asinhf");
  patterns.add<ToLibmCall<mlir::math::AcoshOp>>(context, "acoshf");
  patterns.add<ToLibmCall<mlir::math::AtanhOp>>(context, "atanhf");
  patterns.add<ToLibmCall<mlir::math::ExpM1Op>>(context, "expm1f");
}

// CompileToObject's work, which may end in an LLVM fatal error.
StatusOr<std::string> CompileModule(const std::string& mlir, const CompileOptions& options, CompileReport* report) {
  auto start = Clock::now();
  mlir::MLIRContext context(Registry(), mlir::MLIRContext::Threading::DISABLED);
  MlirDiagnostics diagnostics(&context);

  // 1. Parse and verify.
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(mlir, &context);
  if (!module) return InvalidArgument("the MLIR module does not parse: " + diagnostics.text());

  // 2. MLIR's clean-up (canonicalization, CSE, loop-invariant code motion), exp, tanh,
  // erf, ... as polynomials (vectorizable, no libm calls), then lowering.
  GJ_ASSIGN_OR_RETURN(Machine target, MakeTargetMachine(options.target, options.ahead_of_time));
  auto keep = [&](const char* stage) {
    if (!options.keep_stages) return;
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    report->mlir_stages.emplace_back(stage, std::move(text));
  };
  if (mlir::failed(kernel_cleanup::Run(*module))) return Internal("the kernels' clean-up failed: " + diagnostics.text());
  keep("cleaned_up");
  mlir::RewritePatternSet approximations(&context);
  KeepLibmAccuracy(approximations);
  AddFastExpPattern(approximations, *module, target.scalef);
  mlir::populateMathPolynomialApproximationPatterns(approximations);
  // bf16 <-> f32 as integer operations (round to nearest even, NaN kept): without
  // AVX512-BF16, LLVM would call compiler-rt's __truncsfbf2, which the JIT otherwise cannot resolve.
  mlir::arith::populateExpandBFloat16Patterns(approximations);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(*module, std::move(approximations))))
    return Internal("math approximation did not converge: " + diagnostics.text());
  keep("math_approximated");
  for (const auto& [pipeline, stage] : {std::pair{kToControlFlow, "control_flow"}, std::pair{kToLlvm, "llvm_dialect"}}) {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::parsePassPipeline(pipeline, pm))) return Internal("bad lowering pipeline: " + diagnostics.text());
    if (mlir::failed(pm.run(*module))) return Internal(std::string("lowering to ") + stage + " failed: " + diagnostics.text());
    keep(stage);
  }
  report->mlir_ms = Millis(start);

  // 3. LLVM: optimize for the target, then generate an object file.
  start = Clock::now();
  llvm::TargetMachine& machine = *target.tm;
  llvm::LLVMContext llvm_context;
  std::unique_ptr<llvm::Module> ir = mlir::translateModuleToLLVMIR(*module, llvm_context);
  if (!ir) return Internal("translation to LLVM IR failed: " + diagnostics.text());
  ir->setDataLayout(machine.createDataLayout());
  ir->setTargetTriple(machine.getTargetTriple().str());
  AddPackedEntryPoints(*ir);
  for (llvm::Function& f : *ir) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", machine.getTargetCPU());
    f.addFnAttr("target-features", machine.getTargetFeatureString());
    f.addFnAttr("prefer-vector-width", std::to_string(target.vector_width));
  }
  CompileKernelsOnce(*ir);
  KeepLongLoopsRolled(*ir);
  const std::vector<uint64_t> prefetched = MakePrefetchesVectorizable(*ir);
  MakeScalefVectorizable(*ir);
  if (!options.ahead_of_time && LoadVectorMathLibrary()) UseVectorMathLibrary(*ir, machine);
  if (llvm::Error e = mlir::makeOptimizingTransformer(options.llvm_opt_level, 0, &machine)(ir.get()))
    return Internal("LLVM optimization failed: " + llvm::toString(std::move(e)));
  RestorePrefetches(*ir, prefetched);
  RestoreScalef(*ir);
  DropUncalledVectorMath(*ir);
  StreamLargeStores(*ir, options.streaming_store_bytes);
  if (options.keep_stages) {
    llvm::raw_string_ostream os(report->llvm_ir);
    ir->print(os, nullptr);
    report->assembly = Emit(*ir, machine, llvm::CodeGenFileType::AssemblyFile);
  }
  if (options.ahead_of_time) ExportForLinker(*ir, options);
  std::string object = Emit(*ir, machine, llvm::CodeGenFileType::ObjectFile);
  if (object.empty()) return Internal("the target machine cannot emit object files");
  report->llvm_ms = Millis(start);
  return object;
}

// A JIT that only links object files: it never compiles IR.
class NoIrCompiler : public llvm::orc::IRCompileLayer::IRCompiler {
 public:
  NoIrCompiler() : IRCompiler({}) {}
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module&) override {
    return llvm::make_error<llvm::StringError>("graphjit's JIT links object files only", llvm::inconvertibleErrorCode());
  }
};

// Load's work, which may end in an LLVM fatal error: the object linked into `engine`.
Status LoadObject(const std::string& object, Executable::Engine* engine) {
  // The host as LLJIT needs it, made once (each is a target machine's worth of work).
  static const auto* host = [] {
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!builder) return static_cast<std::pair<llvm::orc::JITTargetMachineBuilder, llvm::DataLayout>*>(nullptr);
    auto layout = builder->getDefaultDataLayoutForTarget();
    if (!layout) return static_cast<std::pair<llvm::orc::JITTargetMachineBuilder, llvm::DataLayout>*>(nullptr);
    return new std::pair<llvm::orc::JITTargetMachineBuilder, llvm::DataLayout>(*builder, *layout);
  }();
  if (host == nullptr) return Internal("cannot describe the host CPU to the JIT");
  CountingMapper* mapper = &engine->mapper;
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(host->first)
          .setDataLayout(host->second)
          .setCompileFunctionCreator(
              [](llvm::orc::JITTargetMachineBuilder) -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                return std::make_unique<NoIrCompiler>();
              })
          .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
          .setLinkProcessSymbolsByDefault(false)
          .setObjectLinkingLayerCreator([mapper](llvm::orc::ExecutionSession& session, const llvm::Triple&) {
            return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                session, [mapper]() { return std::make_unique<llvm::SectionMemoryManager>(mapper); });
          })
          .create();
  if (!jit) return Internal("cannot create a JIT: " + llvm::toString(jit.takeError()));
  llvm::orc::JITDylib& lib = (*jit)->getMainJITDylib();
  // The C library (memcpy, memset, ...), and __truncsfbf2.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!process) return Internal("cannot resolve the process's symbols: " + llvm::toString(process.takeError()));
  lib.addGenerator(std::move(*process));
  llvm::orc::SymbolMap symbols;
  symbols[(*jit)->mangleAndIntern("__truncsfbf2")] = {llvm::orc::ExecutorAddr::fromPtr(&TruncSfBf2),
                                                      llvm::JITSymbolFlags::Exported};
  if (llvm::Error e = lib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return Internal("cannot define the runtime's symbols: " + llvm::toString(std::move(e)));
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "kernels.o"));
  if (!file) return InvalidArgument("not an object file: " + llvm::toString(file.takeError()));
  if (llvm::Error e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, "kernels.o")))
    return InvalidArgument("not an object file for this JIT: " + llvm::toString(std::move(e)));
  // The object is linked at its first lookup: done here, so that a broken object fails Load.
  for (const llvm::object::SymbolRef& symbol : (*file)->symbols()) {
    auto name = symbol.getName();
    auto flags = symbol.getFlags();
    if (!name || !flags || !(*flags & llvm::object::SymbolRef::SF_Global) || (*flags & llvm::object::SymbolRef::SF_Undefined) ||
        !name->starts_with(kPacked))
      continue;
    auto found = (*jit)->lookup(*name);
    if (!found) return InvalidArgument("the object does not link: " + llvm::toString(found.takeError()));
    break;
  }
  engine->jit = std::move(*jit);
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> CompileToObject(const std::string& mlir, const CompileOptions& options, CompileReport* report) {
  InitializeOnce();
  StatusOr<std::string> result = Internal("not compiled");
  GJ_RETURN_IF_ERROR(RunRecoverably([&] { result = CompileModule(mlir, options, report); }));
  return result;
}

// The features code for `target` needs that the host lacks (MakeTargetMachine's `missing`),
// worked out once per target.
static StatusOr<std::string> MissingFeatures(const Target& target) {
  static std::mutex mu;
  static auto* known = new std::map<std::string, std::string>();
  const std::string key = target.cpu + "|" + target.features + "|" + std::to_string(target.prefer_vector_width);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known->find(key);
    if (it != known->end()) return it->second;
  }
  GJ_ASSIGN_OR_RETURN(Machine machine, MakeTargetMachine(target));
  std::lock_guard<std::mutex> lock(mu);
  return known->emplace(key, machine.missing).first->second;
}

StatusOr<std::unique_ptr<Executable>> Load(const std::string& object, const Target& target, CompileReport report) {
  InitializeOnce();
  GJ_ASSIGN_OR_RETURN(const std::string missing, MissingFeatures(target));
  auto engine = std::make_unique<Executable::Engine>();
  Status loaded = Internal("not loaded");
  Status recovered = RunRecoverably([&] { loaded = LoadObject(object, engine.get()); });
  if (!recovered.ok()) {
    (void)engine.release();  // abandoned: destroying a half-built JIT would abort
    return recovered;
  }
  GJ_RETURN_IF_ERROR(loaded);
  std::string not_runnable;
  if (!missing.empty()) not_runnable = "the code is for a CPU with " + missing + ", which this CPU lacks";
  return std::unique_ptr<Executable>(new Executable(std::move(engine), std::move(report), std::move(not_runnable)));
}

StatusOr<std::unique_ptr<Executable>> Compile(const std::string& mlir, const CompileOptions& options) {
  CompileReport report;
  GJ_ASSIGN_OR_RETURN(std::string object, CompileToObject(mlir, options, &report));
  return Load(object, options.target, std::move(report));
}

StatusOr<std::string> DescribeTarget(const Target& target, int* vector_width) {
  InitializeOnce();
  GJ_ASSIGN_OR_RETURN(Machine machine, MakeTargetMachine(target));
  if (vector_width) *vector_width = machine.vector_width;
  std::string text;
  if (target.cpu.empty()) {
    std::vector<std::string> on;
    for (const auto& f : HostFeatures())
      if (f.getValue()) on.push_back("+" + f.getKey().str());
    std::sort(on.begin(), on.end());
    text = llvm::sys::getHostCPUName().str() + " ";
    for (const std::string& f : on) text += f + ",";
  } else {
    text = target.cpu + " ";
  }
  return text + target.features + " vw=" + std::to_string(machine.vector_width);
}

std::string HostCpu() { return DescribeTarget().value(); }

StatusOr<std::string> SummarizeTarget(const Target& target) {
  int bits = 0;
  GJ_RETURN_IF_ERROR(DescribeTarget(target, &bits).status());
  const std::string cpu = target.cpu.empty() ? llvm::sys::getHostCPUName().str() : target.cpu;
  return cpu + (target.features.empty() ? "" : " " + target.features) + ", " + std::to_string(bits) + "-bit vectors";
}

std::string LlvmVersion() { return LLVM_VERSION_STRING; }

}  // namespace graphjit::cpu
