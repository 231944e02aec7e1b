// backends/cpu: compiles an MLIR module (func, linalg, arith, math, memref, scf on
// statically shaped memrefs) to native code for the host CPU and calls its functions.
// No MLIR or LLVM header is visible here.
//
//   auto exe = cpu::Compile(mlir_text);
//   exe->Call("kernel", {input.raw(), output.raw()});
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace graphjit::cpu {

struct CompileOptions {
  int llvm_opt_level = 3;
  bool keep_stages = false;  // keep the lowered MLIR, the LLVM IR and the assembly
};

// What each stage produced (filled with CompileOptions::keep_stages), and its cost.
struct CompileReport {
  // The module after each MLIR stage, in order: "math_approximated" (math functions as
  // polynomials), "control_flow" (loops as blocks and branches), "llvm_dialect".
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
  StatusOr<PackedFunction> Function(const std::string& name) const;
  // Calls `function` with one pointer per memref argument, in order (the bare-pointer
  // calling convention: shapes are part of the compiled code). Fails if there is no
  // such function; the caller guarantees the buffers' sizes.
  Status Call(const std::string& function, const std::vector<void*>& buffers) const;
  const CompileReport& report() const { return report_; }

 private:
  friend StatusOr<std::unique_ptr<Executable>> Compile(const std::string&, const CompileOptions&);
  struct Engine;
  Executable(std::unique_ptr<Engine> engine, CompileReport report);
  std::unique_ptr<Engine> engine_;
  CompileReport report_;
};

// InvalidArgument if the text does not parse or verify; Internal if lowering or code
// generation fails (with MLIR's diagnostics in the message).
StatusOr<std::unique_ptr<Executable>> Compile(const std::string& mlir, const CompileOptions& options = {});

// The host CPU as code generation targets it ("skylake-avx512 +avx512f,+avx2,..."),
// detected at run time: part of every kernel cache key.
std::string HostCpu();

}  // namespace graphjit::cpu
