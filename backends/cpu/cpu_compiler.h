// backends/cpu: compiles an MLIR module (func, linalg, arith, math, memref, scf on
// statically shaped memrefs) to native code for the host CPU and calls its functions.
// No MLIR or LLVM header is visible here.
//
//   auto exe = cpu::Compile(mlir_text);
//   exe->Call("kernel", {input.raw(), output.raw()});
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace graphjit::cpu {

// The CPU code is generated for. The default is the host, as detected at run time.
struct Target {
  std::string cpu;       // an LLVM CPU name ("sapphirerapids", "znver4", "x86-64-v3"); empty: the host
  std::string features;  // "+f,-g" on top of the CPU's own (with an empty cpu: on top of the host's)
  // The widest vectors loops are vectorized with, in bits (128, 256 or 512); 0: the
  // widest the CPU has (512 with AVX-512, else 256), whatever LLVM's tuning for that CPU
  // prefers (256 on Intel's AVX-512 parts, 512 on AMD's).
  int prefer_vector_width = 0;
};

struct CompileOptions {
  int llvm_opt_level = 3;
  bool keep_stages = false;  // keep the lowered MLIR, the LLVM IR and the assembly
  Target target;
  // Vector stores into a buffer argument of at least this many bytes (its
  // llvm.dereferenceable), at addresses known to be multiples of the vector's size (from
  // the argument's llvm.align and the loop's index), are non-temporal: a stream larger
  // than the caches only evicts what they hold, and a cached store first reads the line
  // it writes. 0: none.
  int64_t streaming_store_bytes = 0;
  // Ahead of time (graphjit aot): position-independent code for the system linker, whose
  // packed entry points are `<symbol_prefix><function>` (the module's own functions become
  // local), with `data` as read-only symbols `<symbol_prefix><name>` (64-byte aligned).
  // Not for Load.
  bool ahead_of_time = false;
  std::string symbol_prefix;
  std::vector<std::pair<std::string, std::string>> data;
};

// What each stage produced (filled with CompileOptions::keep_stages), and its cost.
struct CompileReport {
  // The module after each MLIR stage, in order: "cleaned_up" (backends/kernel_cleanup.h),
  // "math_approximated" (math functions as polynomials), "control_flow" (loops as blocks
  // and branches), "llvm_dialect".
  std::vector<std::pair<std::string, std::string>> mlir_stages;
  std::string llvm_ir;  // optimized, as code generation sees it
  std::string assembly;
  double mlir_ms = 0;  // parse + MLIR passes
  double llvm_ms = 0;  // translation, LLVM optimization and code generation
};

class Executable {
 public:
  // A compiled function's packed entry point: args[i] points at argument i.
  using PackedFunction = void (*)(void** args);

  ~Executable();
  // Looks a function up once, to call it many times (valid while this lives).
  // FailedPrecondition if the code was generated for a CPU this one cannot run (its
  // assembly can still be read from the report).
  StatusOr<PackedFunction> Function(const std::string& name) const;
  // Calls `function` with one pointer per memref argument, in order (the bare-pointer
  // calling convention: shapes are part of the compiled code). Fails if there is no
  // such function; the caller guarantees the buffers' sizes.
  Status Call(const std::string& function, const std::vector<void*>& buffers) const;
  const CompileReport& report() const { return report_; }
  // The memory this holds: the pages of its code and data, its JIT's heap
  // (kEngineHeapBytes) and the report.
  size_t bytes() const;
  // The heap the JIT a small module is linked in holds besides its code (its session,
  // symbol tables and memory manager): measured with LLVM 19 on x86-64, see
  // tests/unit/backends/cpu/cpu_backend_test.cc (CpuBackend.AnExecutableCountsWhatItHolds).
  static constexpr size_t kEngineHeapBytes = 28 << 10;

  struct Engine;  // the JIT the code is linked in (opaque)

 private:
  friend StatusOr<std::unique_ptr<Executable>> Load(const std::string&, const Target&, CompileReport);
  Executable(std::unique_ptr<Engine> engine, CompileReport report, std::string not_runnable);
  std::unique_ptr<Engine> engine_;
  CompileReport report_;
  std::string not_runnable_;  // why the host cannot run this code; empty if it can
};

// The module's code: a relocatable object file for options.target, which Load links into
// this process (and the kernel cache keeps on disk). InvalidArgument if the text does not
// parse or verify; Internal if lowering or code generation fails (with MLIR's diagnostics
// in the message), or if LLVM fails fatally (report_fatal_error, e.g. an instruction it
// cannot select: the process goes on). `report` gets what each stage made and its time.
StatusOr<std::string> CompileToObject(const std::string& mlir, const CompileOptions& options, CompileReport* report);

// The code of an object CompileToObject made for `target`, linked in process. InvalidArgument
// if it is not such an object or does not link.
StatusOr<std::unique_ptr<Executable>> Load(const std::string& object, const Target& target, CompileReport report = {});

// CompileToObject, then Load.
StatusOr<std::unique_ptr<Executable>> Compile(const std::string& mlir, const CompileOptions& options = {});

// The CPU as code generation targets it ("znver4 +avx2,+avx512f,... vw=512"), the host's
// detected at run time: part of every kernel cache key. InvalidArgument for a CPU name
// or feature LLVM does not know, or a vector width other than 0, 128, 256, 512.
// `*vector_width`, if given, gets the widest vectors the code uses, in bits.
StatusOr<std::string> DescribeTarget(const Target& target = {}, int* vector_width = nullptr);
std::string HostCpu();  // DescribeTarget of the host
// The CPU and the vector width in words, for people: "znver3, 256-bit vectors",
// "sapphirerapids -avx512f, 256-bit vectors" (the host's name where target.cpu is empty).
StatusOr<std::string> SummarizeTarget(const Target& target = {});
std::string LlvmVersion();  // of the LLVM that generates the code ("19.1.7")

}  // namespace graphjit::cpu
