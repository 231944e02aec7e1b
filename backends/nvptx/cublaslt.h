// backends/nvptx: GEMMs through NVIDIA's cuBLASLt, opened with dlopen as the CUDA driver is
// (so graphjit runs without it), on device memory and a stream handed in by jit/. The CUDA
// emulator has a stand-in for the calls used (cuda_emulator/cublaslt.cc).
// No CUDA header is visible here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/status.h"

namespace graphjit::nvptx {

// A float32 GEMM on row-major matrices, as TensorFlow's: for each of `batch` matrices,
// D = epilogue(op(A) op(B)), op(A) m x k, op(B) k x n, D m x n; `bias` has n elements.
struct Gemm {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  bool transpose_a = false, transpose_b = false;
  int64_t batch_stride_a = 0, batch_stride_b = 0;  // elements between matrices; 0: one for all
  enum class Epilogue { kNone, kBias, kReluBias } epilogue = Epilogue::kNone;
};

class CublasLt {
 public:
  // The library (a path or a name the dynamic loader finds), opened once per process;
  // NotFound with the reason if it cannot be.
  static StatusOr<std::shared_ptr<const CublasLt>> Open(const std::string& library);
  ~CublasLt();

  // Queues the GEMM on `stream` (a CUstream) over device memory at these addresses
  // (`bias` 0 without a bias epilogue). TF32 is not used: products are float32 ones.
  Status Matmul(const Gemm& gemm, uint64_t a, uint64_t b, uint64_t bias, uint64_t d, void* stream) const;

 private:
  struct Api;
  CublasLt() = default;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;   // dlopen's
  void* context_ = nullptr;  // cublasLtHandle_t
  std::string library_;
};

}  // namespace graphjit::nvptx
