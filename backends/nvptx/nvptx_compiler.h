// backends/nvptx: compiles an MLIR module holding a gpu.module of kernels (gpu, scf,
// arith, math, memref on statically shaped memrefs) to PTX for an NVIDIA GPU through
// LLVM's NVPTX backend, with libdevice for math; and checks PTX with the toolkit's ptxas.
// No MLIR or LLVM header is visible here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace graphjit::nvptx {

struct CompileOptions {
  int sm = 90;  // the compute capability: 80 (A100) or 90 (H100)
  bool keep_stages = false;
};

struct CompileReport {
  // The module after each MLIR stage: "cleaned_up" (backends/kernel_cleanup.h), "nvvm"
  // (the kernels in the NVVM dialect).
  std::vector<std::pair<std::string, std::string>> mlir_stages;
  std::string llvm_ir;  // libdevice linked and optimized, as code generation sees it
  double mlir_ms = 0;   // parse and MLIR passes
  double llvm_ms = 0;   // translation, libdevice, LLVM optimization and PTX generation
};

struct CompiledModule {
  std::string ptx;  // PTX text, without a trailing NUL
  CompileReport report;
};

// InvalidArgument if the text does not parse or verify; Internal if lowering or code
// generation fails, with MLIR's diagnostics; NotFound without libdevice (the CUDA
// toolkit's nvvm/libdevice/libdevice.10.bc).
StatusOr<CompiledModule> Compile(const std::string& mlir, const CompileOptions& options);

// What `ptxas -v` says of each kernel.
struct KernelResources {
  std::string name;
  int registers = 0;
  int spill_stores = 0, spill_loads = 0;  // bytes
  int stack_bytes = 0;
  int shared_bytes = 0;
};
struct PtxasReport {
  std::string log;
  std::vector<KernelResources> kernels;
  std::string cubin;  // the ELF object, with `keep_cubin`
};
// Assembles `ptx` for sm_<sm> with ptxas (the toolkit's, next to nvcc): InvalidArgument
// with ptxas' message if it rejects the code or (with `spills_are_errors`) a kernel spills;
// NotFound if there is no ptxas.
StatusOr<PtxasReport> Assemble(const std::string& ptx, int sm, bool spills_are_errors, bool keep_cubin = false);

// The CUDA toolkit's root (CUDA_HOME, CUDA_PATH, the folder above nvcc on PATH, or
// /usr/local/cuda), or "" if none is found.
std::string CudaRoot();

}  // namespace graphjit::nvptx
