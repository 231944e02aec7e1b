// jit/: the library calls of a GPU executable: GEMMs through cuBLASLt and convolutions
// through cuDNN (backends/nvptx), what a node's call is at a signature, its plan, the
// libraries' handles per device and the timing of their algorithms.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/nvptx/cublaslt.h"
#include "backends/nvptx/cudnn.h"
#include "jit/backend.h"
#include "runtime/cuda_device.h"

namespace graphjit {

// The most device memory a GEMM's algorithm may use as workspace (cuBLAS's advice for
// Hopper); each call has its own, allocated as its temporaries are.
constexpr size_t kGemmWorkspaceBytes = 32 << 20;
// The most device memory a convolution's algorithm may use as workspace (besides its
// reordered filter).
constexpr size_t kConvWorkspaceBytes = 64 << 20;
// The most algorithms a library call's autotuning times (the library's heuristic's best first).
constexpr int kLibraryAlgorithms = 8;
// What the kernels assume of every buffer's address: parameters are declared 16-byte
// aligned (llvm.align) and loop fusions load 16 bytes at a time, as cuDNN's kernels do.
// Memory graphjit allocates is 256-byte aligned; a feed of the caller's that is less
// aligned (a slice) is copied first.
constexpr uint64_t kBufferAlignment = 16;

// The largest power of two (up to 256) that divides `bytes` (256 for 0).
int AlignmentOf(uint64_t bytes);

// cuBLASLt's epilogue for a GEMM node: none for MatMul and BatchMatMulV2; bias, or bias
// and ReLU, for a _FusedMatMul; Unimplemented for what cuBLASLt does not fuse.
StatusOr<nvptx::Gemm::Epilogue> EpilogueOf(const Node& node);

// cuBLASLt's type of a GEMM of these operand and result types: all float32, float16 or
// bfloat16, else Unimplemented.
StatusOr<nvptx::Gemm::Type> GemmType(const std::vector<DType>& dtypes);

// A library call's GEMMs (MatMul, BatchMatMulV2, _FusedMatMul with [BiasAdd] or [BiasAdd,
// Relu]) of float32, float16 or bfloat16; `inputs` are its operands' shapes. One
// strided-batch GEMM when each operand is one matrix per output matrix or one for all, else
// one GEMM per output matrix at the offsets TensorFlow's batch broadcasting gives
// (`offsets`: a, b and d, in elements).
struct GemmCall {
  nvptx::GemmPlan plan;  // its gemm, then (at load) cuBLASLt's descriptors and algorithm
  std::vector<std::array<int64_t, 3>> offsets = {{0, 0, 0}};
};

// A library call's GEMMs, Unimplemented for another op, type or epilogue. `aligned`: what
// each of the call's buffers (a, b, the bias if any, d) is aligned to at least; the plan's
// alignments are those with every batch matrix's offset.
StatusOr<GemmCall> GemmOf(const LibraryCall& call, const std::vector<Shape>& inputs, bool tf32,
                          const std::vector<int>& aligned = {});

// A convolution's cuDNN call: its plan and, by position among its kernel's buffers, its
// operands: x (dy for Conv2DBackpropInput), the filter (TensorFlow's layout, reordered by
// the call), the bias and the residual (-1: none).
struct ConvCall {
  nvptx::ConvPlan plan;
  int x = 0, filter = 1, bias = -1, residual = -1;
  bool empty = false;  // its output has no elements: nothing to plan or run
};

// A library call's convolution: Conv2D, DepthwiseConv2dNative (groups of one channel),
// their _Fused forms with cuDNN's epilogues (bias, residual, ReLU: UnfuseConvs leaves no
// other), and Conv2DBackpropInput, in NHWC or NCHW, of float32, float16 or bfloat16, with the
// symmetric padding LowerCnnOps leaves; `inputs` are its operands' shapes.
StatusOr<ConvCall> ConvOf(const LibraryCall& call, const std::vector<Shape>& inputs, bool tf32);

// Whether a library call is a convolution (else a GEMM).
bool IsConv(const LibraryCall& call);

// A kernel's library call: a GEMM (cuBLASLt) or a convolution (cuDNN).
struct LibraryPlan {
  bool conv = false;
  GemmCall gemm;
  ConvCall convolution;
  size_t workspace_bytes(bool filter_reordered) const {
    return conv ? convolution.plan.workspace_bytes(filter_reordered) : gemm.plan.workspace_bytes();
  }
};

// cuDNN for a device (gpu: NVIDIA's; gpu-emu: the emulator's stand-in), with a handle for
// `cuda`; FailedPrecondition with the reason if it cannot be opened.
StatusOr<std::shared_ptr<const nvptx::Cudnn>> OpenCudnn(DeviceKind device, const CudaDevice& cuda);

// cuBLASLt for a device, with a handle for `cuda`, as OpenCudnn.
StatusOr<std::shared_ptr<const nvptx::CublasLt>> OpenCublasLt(DeviceKind device, const CudaDevice& cuda);

// What a buffer's address is aligned to at least: graphjit's own memory (a program's
// constant or temporary) to 256 bytes, an argument to kBufferAlignment (a less aligned
// one is copied first).
int BaseAlignment(const ClusterProgram& program, int b);

// What a filter reordered for a convolution is, as a buffer keeps it among its device
// copies: cuDNN's layout, the type and the dims.
std::string FilterForm(const nvptx::Conv& v);

// Times each of the GEMM plan's algorithms over operands of its shape and returns the
// fastest's index.
StatusOr<int> FastestAlgorithm(CudaDevice& cuda, const nvptx::CublasLt& blas, const nvptx::GemmPlan& plan);

// The same for a convolution's plan.
StatusOr<int> FastestAlgorithm(CudaDevice& cuda, const nvptx::Cudnn& dnn, const nvptx::ConvPlan& plan);

}  // namespace graphjit
