// backends/nvptx: convolutions through NVIDIA's cuDNN (its legacy convolution API: complete
// in cuDNN 9, where it is deprecated), opened with dlopen as the CUDA driver and cuBLASLt are
// (so graphjit runs without it), on device memory and a stream handed in by the caller, whose
// CUDA context must be current. The CUDA emulator has a stand-in for the calls used
// (cuda_emulator/cudnn.cc). No CUDA header is visible here.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/status.h"

namespace graphjit::nvptx {

// A 2-D convolution of `batch` images. Forward: y = act(conv(x, w) + bias + z), x of
// `channels` x `height` x `width`, w of `filters` x (channels / groups) x filter_h x
// filter_w, y of filters x out_h() x out_w(). Backward data (Conv2DBackpropInput): dx, of
// x's shape, is the transposed convolution of dy (of y's shape) with w. The data is NHWC or
// NCHW, the filter KRSC or KCRS alike, or TensorFlow's [R, S, C/groups, K] (`filter_hwio`:
// reordered in the workspace by each call, cuDNN's transform kernel); every operand
// is of `type`, products summed in float32 and each result rounded once. `tf32` (float32
// only): operands rounded to TF32 (the tensor cores' fast path), else float32 products.
// Padding is symmetric (cuDNN's); a convolution TensorFlow pads more at the end needs its
// input padded first.
struct Conv {
  enum class Type { kF32, kF16, kBF16 } type = Type::kF32;
  enum class Kind { kForward, kBackwardData } kind = Kind::kForward;
  bool nhwc = true;
  int64_t batch = 1, channels = 0, height = 0, width = 0;
  int64_t filters = 0, filter_h = 1, filter_w = 1, groups = 1;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  // Forward only: a bias per filter (then ReLU), and z (y's shape: a residual) added
  // before the ReLU; a residual only with a bias (cuDNN's fused call takes both).
  enum class Epilogue { kNone, kBias, kBiasRelu } epilogue = Epilogue::kNone;
  bool residual = false;
  bool tf32 = false;
  bool filter_hwio = false;
  int64_t out_h() const { return (height + 2 * pad_h - (filter_h - 1) * dilation_h - 1) / stride_h + 1; }
  int64_t out_w() const { return (width + 2 * pad_w - (filter_w - 1) * dilation_w - 1) / stride_w + 1; }
};

// A convolution as cuDNN runs it: its descriptors, made once for every call, and the
// algorithms cuDNN's heuristic offers for it (asked once), its best first, with the device
// workspace each needs. Calls run `algorithm`, an index among them.
struct ConvPlan {
  Conv conv;
  std::vector<int> algorithms;     // cuDNN's algorithm numbers
  std::vector<size_t> workspaces;  // per algorithm (with the reordered filter's bytes)
  size_t filter_offset = 0;        // where the algorithm's part of the workspace starts (the
                                   // reordered filter's bytes, rounded up)
  int algorithm = 0;
  // A call's workspace; one given the filter in cuDNN's layout needs no room to reorder it.
  size_t workspace_bytes(bool filter_reordered = false) const {
    return workspaces.empty() ? 0 : workspaces[algorithm] - (filter_reordered ? filter_offset : 0);
  }
  struct Descriptors;  // cuDNN's, in cudnn.cc
  std::shared_ptr<Descriptors> descriptors;
};

class Cudnn {
 public:
  // The library (a path or a name the dynamic loader finds) with a handle for GPU `device`
  // (the driver's number), made once per process and device: the caller makes that
  // device's context current first (cuDNN binds a handle to the current device). NotFound
  // with the reason if it cannot be opened.
  static StatusOr<std::shared_ptr<const Cudnn>> Open(const std::string& library, int device = 0);
  ~Cudnn();

  // The plan of `conv`, with up to `max_algorithms` algorithms that need at most
  // `max_workspace` bytes of workspace each, the heuristic's first chosen. InvalidArgument
  // for a geometry that does not make an output; Unimplemented if cuDNN has no algorithm.
  StatusOr<ConvPlan> Plan(const Conv& conv, size_t max_workspace, int max_algorithms = 1) const;
  // Queues the planned convolution on `stream` (a CUstream) over device memory at these
  // addresses: forward x, w (bias, z: 0 when the epilogue has none), y; backward data
  // dy as `x`, w, dx as `y`. `workspace`: at least plan.workspace_bytes(filter_reordered),
  // 0 if none. With `filter_reordered`, w is a filter_hwio plan's filter already in cuDNN's
  // layout (ReorderFilter's), which the call does not reorder. Safe to call from several
  // threads.
  Status Run(const ConvPlan& plan, uint64_t x, uint64_t w, uint64_t bias, uint64_t z, uint64_t y, uint64_t workspace,
             void* stream, bool filter_reordered = false) const;
  // Queues the reordering of a filter_hwio plan's filter at `hwio` into cuDNN's layout at
  // `reordered` (plan.filter_offset bytes), for calls that take it as it is (a filter that
  // stays the same from call to call is reordered once).
  Status ReorderFilter(const ConvPlan& plan, uint64_t hwio, uint64_t reordered, void* stream) const;

 private:
  struct Api;
  Cudnn() = default;
  std::unique_ptr<Api> api_;
  void* library_handle_ = nullptr;  // dlopen's
  void* context_ = nullptr;         // cudnnHandle_t
  mutable std::mutex mu_;           // the handle's stream is set per call
  std::string library_;
};

}  // namespace graphjit::nvptx
