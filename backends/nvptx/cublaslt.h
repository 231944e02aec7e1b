// backends/nvptx: GEMMs through NVIDIA's cuBLASLt, opened with dlopen as the CUDA driver is
// (so graphjit runs without it), on device memory and a stream handed in by jit/. The CUDA
// emulator has a stand-in for the calls used (cuda_emulator/cublaslt.cc).
// No CUDA header is visible here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"

namespace graphjit::nvptx {

// A GEMM on row-major matrices, as TensorFlow's: for each of `batch` matrices,
// D = epilogue(op(A) op(B)), op(A) m x k, op(B) k x n, D m x n; `bias` has n elements.
// Every matrix and the bias are of `type`; products are summed in float32 (and D rounded to
// its type). `tf32` (float32 only): the products are of operands rounded to TF32 (10-bit
// mantissas; the tensor cores' fast path, which TensorFlow allows by default on Ampere and
// later), else float32 ones.
struct Gemm {
  enum class Type { kF32, kF16, kBF16 } type = Type::kF32;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  bool transpose_a = false, transpose_b = false;
  int64_t batch_stride_a = 0, batch_stride_b = 0;  // elements between matrices; 0: one for all
  enum class Epilogue { kNone, kBias, kReluBias } epilogue = Epilogue::kNone;
  bool tf32 = false;
  // The alignment (bytes, a power of two up to 256) every call's A, B, D and bias pointers
  // have at least: cuBLASLt's algorithms may assume it (MIN_ALIGNMENT_*_BYTES; its default,
  // 256, is what cuMemAlloc gives, not what a slice or a batch's matrix has).
  int align_a = 256, align_b = 256, align_d = 256, align_bias = 256;
};

// A GEMM as cuBLASLt runs it: its descriptors and layouts, made once for every call, and
// the algorithms cuBLASLt's heuristic offers for it (asked once), its best first, with the
// device workspace each needs. Calls run `algorithm`, an index among them.
struct GemmPlan {
  Gemm gemm;
  std::vector<size_t> workspaces;  // per algorithm
  int algorithm = 0;
  size_t workspace_bytes() const { return workspaces.empty() ? 0 : workspaces[algorithm]; }
  struct Descriptors;  // cuBLASLt's, in cublaslt.cc
  std::shared_ptr<Descriptors> descriptors;
};

class CublasLt {
 public:
  // The library (a path or a name the dynamic loader finds) with a handle for GPU `device`
  // (the driver's number), made once per process and device: the caller makes that
  // device's context current first (cuBLASLt binds a handle to the current device).
  // NotFound with the reason if it cannot be opened.
  static StatusOr<std::shared_ptr<const CublasLt>> Open(const std::string& library, int device = 0);
  ~CublasLt();

  // The plan of `gemm`, with up to `max_algorithms` algorithms that need at most
  // `max_workspace` bytes of workspace each, the heuristic's first chosen. Unimplemented if
  // cuBLASLt has none.
  StatusOr<GemmPlan> Plan(const Gemm& gemm, size_t max_workspace, int max_algorithms = 1) const;
  // Queues the planned GEMM, with its chosen algorithm, on `stream` (a CUstream) over device
  // memory at these addresses (`bias` 0 without a bias epilogue; `workspace` at least
  // plan.workspace_bytes(), 0 if it needs none). Safe to call from several threads with one
  // plan.
  Status Matmul(const GemmPlan& plan, uint64_t a, uint64_t b, uint64_t bias, uint64_t d, uint64_t workspace, void* stream) const;

 private:
  struct Api;
  CublasLt() = default;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;   // dlopen's
  void* context_ = nullptr;  // cublasLtHandle_t
  std::string library_;
};

}  // namespace graphjit::nvptx
