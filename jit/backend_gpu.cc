// The GPU backend: the emitted gpu.module compiled by backends/nvptx to PTX for the
// device's compute capability, loaded through the CUDA driver (the driver, or the CUDA
// emulator, compiles the PTX for the device), and launched on the session's stream. A call
// takes its inputs where they are: on the device (another cluster's outputs), or on the
// host, copied to the device at their first reader and kept with their buffer for the next
// (a session constant for the session, a feed or a CPU op's output for the run); it runs
// the kernels in order and leaves its outputs on the device, for the executor to copy to the
// host only where something there reads them. The body's own constants are copied once, at
// compile time.
#include <algorithm>
#include <array>
#include <functional>
#include <cstdio>
#include <list>
#include <map>
#include <mutex>
#include <sstream>

#include "backends/nvptx/cublaslt.h"
#include "backends/nvptx/cudnn.h"
#include "backends/nvptx/nvptx_compiler.h"
#include "ir/attr.h"
#include "jit/backend.h"
#include "jit/cnn_lowering.h"
#include "jit/specialize.h"
#include "runtime/cuda_device.h"
#include "runtime/kernels/window.h"
#include "runtime/op_traits.h"
#include "runtime/session_options.h"
#include "runtime/trace.h"

namespace graphjit {

namespace {

using Clock = std::chrono::steady_clock;

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
int AlignmentOf(uint64_t bytes) { return bytes == 0 ? 256 : static_cast<int>(std::min<uint64_t>(bytes & -bytes, 256)); }

// cuBLASLt's epilogue for a GEMM node: none for MatMul and BatchMatMulV2; bias, or bias
// and ReLU, for a _FusedMatMul; Unimplemented for what cuBLASLt does not fuse.
StatusOr<nvptx::Gemm::Epilogue> EpilogueOf(const Node& node) {
  const tensorflow::AttrValue* fused = node.FindAttr("fused_ops");
  if (fused == nullptr) return nvptx::Gemm::Epilogue::kNone;
  const auto& ops = fused->list().s();
  const bool bias = ops.size() >= 1 && ops[0] == "BiasAdd";
  if (bias && ops.size() == 1) return nvptx::Gemm::Epilogue::kBias;
  if (bias && ops.size() == 2 && ops[1] == "Relu") return nvptx::Gemm::Epilogue::kReluBias;
  return Unimplemented("cuBLASLt's epilogues on the GPU are BiasAdd and BiasAdd + Relu");
}

// cuBLASLt's type of a GEMM of these operand and result types: all float32, float16 or
// bfloat16, else Unimplemented.
StatusOr<nvptx::Gemm::Type> GemmType(const std::vector<DType>& dtypes) {
  const DType t = dtypes.empty() ? DType::kFloat : dtypes[0];
  for (DType other : dtypes)
    if (other != t || (t != DType::kFloat && t != DType::kHalf && t != DType::kBFloat16))
      return Unimplemented("GEMMs on the GPU (cuBLASLt) are of float32, float16 or bfloat16 matrices of one type");
  return t == DType::kHalf ? nvptx::Gemm::Type::kF16 : t == DType::kBFloat16 ? nvptx::Gemm::Type::kBF16 : nvptx::Gemm::Type::kF32;
}

// A library call's GEMMs (MatMul, BatchMatMulV2, _FusedMatMul with [BiasAdd] or [BiasAdd,
// Relu]) of float32, float16 or bfloat16; `inputs` are its operands' shapes. One
// strided-batch GEMM when each operand is one matrix per output matrix or one for all, else
// one GEMM per output matrix at the offsets TensorFlow's batch broadcasting gives
// (`offsets`: a, b and d, in elements). Unimplemented for anything else.
struct GemmCall {
  nvptx::GemmPlan plan;  // its gemm, then (at load) cuBLASLt's descriptors and algorithm
  std::vector<std::array<int64_t, 3>> offsets = {{0, 0, 0}};
};
// `aligned`: what each of the call's buffers (a, b, the bias if any, d) is aligned to at
// least; the plan's alignments are those with every batch matrix's offset.
StatusOr<GemmCall> GemmOf(const LibraryCall& call, const std::vector<Shape>& inputs, bool tf32,
                          const std::vector<int>& aligned = {}) {
  const Node& node = *call.node;
  GemmCall c;
  nvptx::Gemm& g = c.plan.gemm;
  GJ_ASSIGN_OR_RETURN(g.type, GemmType(call.dtypes));
  g.tf32 = tf32 && g.type == nvptx::Gemm::Type::kF32;
  const bool batched = node.op == "BatchMatMulV2";
  GJ_ASSIGN_OR_RETURN(g.transpose_a, GetBoolAttrOr(node, batched ? "adj_x" : "transpose_a", false));
  GJ_ASSIGN_OR_RETURN(g.transpose_b, GetBoolAttrOr(node, batched ? "adj_y" : "transpose_b", false));
  const Shape& a = inputs[0];
  const Shape& b = inputs[1];
  const Shape& out = call.shapes[0];
  if (a.rank() < 2 || b.rank() < 2 || out.rank() < 2) return Unimplemented(NodeLabel(node) + ": a GEMM of vectors");
  g.m = out.dim(out.rank() - 2);
  g.n = out.dim(out.rank() - 1);
  g.k = a.dim(a.rank() - (g.transpose_a ? 2 : 1));
  int64_t batch = 1;
  for (int i = 0; i + 2 < out.rank(); ++i) batch *= out.dim(i);
  // Per operand: its matrices, and for output matrix i (row-major over the batch dims) the
  // one it reads, broadcasting size-1 (and missing, leading) batch dims.
  auto matrices = [](const Shape& s) {
    int64_t count = 1;
    for (int i = 0; i + 2 < s.rank(); ++i) count *= s.dim(i);
    return count;
  };
  auto matrix_of = [&](const Shape& s, int64_t i) {
    int64_t index = 0, stride = 1;
    for (int d = out.rank() - 3, e = s.rank() - 3; d >= 0; --d, --e) {
      const int64_t position = i % out.dim(d);
      i /= out.dim(d);
      if (e < 0) continue;
      if (s.dim(e) != 1) index += position * stride;
      stride *= s.dim(e);
    }
    return index;
  };
  const int64_t a_size = g.m * g.k, b_size = g.k * g.n;
  const int64_t a_count = matrices(a), b_count = matrices(b);
  if ((a_count == batch || a_count == 1) && (b_count == batch || b_count == 1) &&
      (a_count == 1 || a.rank() == out.rank()) && (b_count == 1 || b.rank() == out.rank())) {
    g.batch = batch;
    g.batch_stride_a = a_count == 1 ? 0 : a_size;
    g.batch_stride_b = b_count == 1 ? 0 : b_size;
  } else {
    c.offsets.clear();
    for (int64_t i = 0; i < batch; ++i)
      c.offsets.push_back({matrix_of(a, i) * a_size, matrix_of(b, i) * b_size, i * g.m * g.n});
  }
  auto epilogue = EpilogueOf(node);
  if (!epilogue.ok()) return Unimplemented(NodeLabel(node) + ": " + epilogue.status().message());
  g.epilogue = *epilogue;
  if (!aligned.empty()) {
    const uint64_t element = g.type == nvptx::Gemm::Type::kF32 ? 4 : 2;
    g.align_a = aligned[0], g.align_b = aligned[1], g.align_d = aligned.back();
    if (g.epilogue != nvptx::Gemm::Epilogue::kNone) g.align_bias = aligned[2];
    for (const auto& [a, b, d] : c.offsets) {
      g.align_a = std::min(g.align_a, AlignmentOf(static_cast<uint64_t>(a) * element));
      g.align_b = std::min(g.align_b, AlignmentOf(static_cast<uint64_t>(b) * element));
      g.align_d = std::min(g.align_d, AlignmentOf(static_cast<uint64_t>(d) * element));
    }
  }
  return c;
}

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
StatusOr<ConvCall> ConvOf(const LibraryCall& call, const std::vector<Shape>& inputs, bool tf32) {
  const Node& node = *call.node;
  ConvCall c;
  nvptx::Conv& v = c.plan.conv;
  GJ_ASSIGN_OR_RETURN(const nvptx::Gemm::Type type, GemmType(call.dtypes));
  using T = nvptx::Conv::Type;
  v.type = type == nvptx::Gemm::Type::kF16 ? T::kF16 : type == nvptx::Gemm::Type::kBF16 ? T::kBF16 : T::kF32;
  v.tf32 = tf32 && v.type == T::kF32;
  const bool backprop = node.op == "Conv2DBackpropInput";
  const bool depthwise = node.op == "DepthwiseConv2dNative" || node.op == "_FusedDepthwiseConv2dNative";
  if (backprop) c.x = 2;
  const Shape& x = backprop ? call.shapes[0] : inputs[c.x];
  const Shape& f = inputs[c.filter];
  GJ_ASSIGN_OR_RETURN(const Window w, ResolveWindow(node, x, &f));
  if (w.pt != w.pb || w.pl != w.pr) return Internal(NodeLabel(node) + ": padded more on one side (cuDNN pads both alike)");
  v.kind = backprop ? nvptx::Conv::Kind::kBackwardData : nvptx::Conv::Kind::kForward;
  v.nhwc = !w.nchw;
  const int h = w.nchw ? 2 : 1;
  v.batch = x.dim(0), v.height = x.dim(h), v.width = x.dim(h + 1), v.channels = x.dim(w.nchw ? 1 : 3);
  v.filter_h = f.dim(0), v.filter_w = f.dim(1);
  v.groups = depthwise ? v.channels : 1;
  v.filters = depthwise ? f.dim(2) * f.dim(3) : f.dim(3);
  v.pad_h = w.pt, v.pad_w = w.pl, v.stride_h = w.sh, v.stride_w = w.sw, v.dilation_h = w.dh, v.dilation_w = w.dw;
  v.filter_hwio = true;
  if (call.shapes[0].num_elements() == 0) {
    c.empty = true;
    return c;
  }
  if (x.num_elements() == 0 || f.num_elements() == 0)
    return Unimplemented(NodeLabel(node) + ": a convolution of an empty tensor into a non-empty one");
  if (const tensorflow::AttrValue* fused = node.FindAttr("fused_ops")) {
    const std::vector<std::string> ops(fused->list().s().begin(), fused->list().s().end());
    v.residual = ops.size() >= 2 && ops[1] == "Add";
    const size_t activation = v.residual ? 2 : 1;
    if (ops.empty() || ops[0] != "BiasAdd" || ops.size() > activation + 1 || (ops.size() > activation && ops[activation] != "Relu"))
      return Unimplemented(NodeLabel(node) + ": cuDNN's epilogues are a bias, a residual and a ReLU");
    v.epilogue = ops.size() > activation ? nvptx::Conv::Epilogue::kBiasRelu : nvptx::Conv::Epilogue::kBias;
    c.bias = 2;
    if (v.residual) c.residual = 3;
  }
  return c;
}

// Whether a library call is a convolution (else a GEMM).
bool IsConv(const LibraryCall& call) { return TraitsOf(call.node->op).pattern == OpPattern::kConv; }

// cuDNN for a device (gpu: NVIDIA's; gpu-emu: the emulator's stand-in), with a handle for
// `cuda`; FailedPrecondition with the reason if it cannot be opened.
StatusOr<std::shared_ptr<const nvptx::Cudnn>> OpenCudnn(DeviceKind device, const CudaDevice& cuda) {
  auto library = CudnnLibrary(device);
  GJ_RETURN_IF_ERROR(cuda.MakeCurrent());  // (the handle is the current device's)
  auto opened = library.ok() ? nvptx::Cudnn::Open(*library, cuda.ordinal()) : library.status();
  if (!opened.ok()) return FailedPrecondition("convolutions on the GPU need cuDNN: " + opened.status().message());
  return *opened;
}

// cuBLASLt for a device, with a handle for `cuda`, as OpenCudnn.
StatusOr<std::shared_ptr<const nvptx::CublasLt>> OpenCublasLt(DeviceKind device, const CudaDevice& cuda) {
  auto library = CublasLtLibrary(device);
  GJ_RETURN_IF_ERROR(cuda.MakeCurrent());
  auto opened = library.ok() ? nvptx::CublasLt::Open(*library, cuda.ordinal()) : library.status();
  if (!opened.ok()) return FailedPrecondition("GEMMs on the GPU need cuBLASLt: " + opened.status().message());
  return *opened;
}

// What a buffer's address is aligned to at least: graphjit's own memory (a program's
// constant or temporary) to 256 bytes, an argument to kBufferAlignment (a less aligned
// one is copied first).
int BaseAlignment(const ClusterProgram& program, int b) {
  while (program.buffers[b].kind == FusionPlan::Buffer::Kind::kView) b = program.buffers[b].source;
  return program.buffers[b].kind == FusionPlan::Buffer::Kind::kArgument ? static_cast<int>(kBufferAlignment) : 256;
}

// What a filter reordered for a convolution is, as a buffer keeps it among its device
// copies: cuDNN's layout, the type and the dims.
std::string FilterForm(const nvptx::Conv& v) {
  return std::string("cuDNN ") + (v.nhwc ? "KRSC " : "KCRS ") + std::to_string(static_cast<int>(v.type)) + " " +
         std::to_string(v.filters) + "x" + std::to_string(v.channels / v.groups) + "x" + std::to_string(v.filter_h) + "x" +
         std::to_string(v.filter_w);
}

// A kernel's library call: a GEMM (cuBLASLt) or a convolution (cuDNN).
struct LibraryPlan {
  bool conv = false;
  GemmCall gemm;
  ConvCall convolution;
  size_t workspace_bytes(bool filter_reordered) const {
    return conv ? convolution.plan.workspace_bytes(filter_reordered) : gemm.plan.workspace_bytes();
  }
};

// The index of the fastest of `count` ways to make one call on the device, run on
// `stream`: each once to warm up, then the best of three, timed by events. A way the
// library refuses (an algorithm its heuristic offered that fails on this device) is left
// out; an error if every way fails, or if the device broke (cuda.Fault()).
StatusOr<int> Fastest(CudaDevice& cuda, CudaDevice::Stream& stream, int count, const std::function<Status(int)>& run) {
  int fastest = -1;
  float fastest_ms = 0;
  Status first_failure = Status::Ok();
  for (int i = 0; i < count; ++i) {
    auto time = [&]() -> StatusOr<float> {
      GJ_RETURN_IF_ERROR(run(i));
      GJ_RETURN_IF_ERROR(stream.Synchronize());
      float best = 0;
      stream.ClearPoints();
      for (int round = 0; round < 3; ++round) {
        GJ_ASSIGN_OR_RETURN(int before, stream.Record());
        GJ_RETURN_IF_ERROR(run(i));
        GJ_ASSIGN_OR_RETURN(int after, stream.Record());
        GJ_ASSIGN_OR_RETURN(float ms, stream.ElapsedMillis(before, after));
        if (round == 0 || ms < best) best = ms;
      }
      return best;
    };
    auto ms = time();
    if (!ms.ok()) {
      GJ_RETURN_IF_ERROR(cuda.Fault());
      GJ_RETURN_IF_ERROR(stream.Synchronize());  // what was queued before the refusal
      if (first_failure.ok()) first_failure = ms.status();
      continue;
    }
    if (fastest < 0 || *ms < fastest_ms) fastest = i, fastest_ms = *ms;
  }
  if (fastest < 0) return Status(first_failure.code(), "every algorithm the library offered failed: " + first_failure.message());
  return fastest;
}

// Device memory of these sizes for timing a call on `stream`, the first `filled` of them
// holding small numbers of every type (0.0115, 1.06); freed with it, once the work queued
// on the stream is done.
class Operands {
 public:
  static StatusOr<std::unique_ptr<Operands>> Make(CudaDevice& cuda, CudaDevice::Stream& stream, const std::vector<size_t>& sizes,
                                                  size_t filled) {
    std::unique_ptr<Operands> o(new Operands(cuda, stream));
    for (size_t i = 0; i < sizes.size(); ++i) {
      GJ_ASSIGN_OR_RETURN(uint64_t address, cuda.Allocate(std::max<size_t>(sizes[i], 1)));
      o->memory_.push_back(address);
      if (i < filled) {
        const std::string values(sizes[i], '\x3c');
        GJ_RETURN_IF_ERROR(stream.CopyToDevice(address, values.data(), sizes[i]));
      }
    }
    GJ_RETURN_IF_ERROR(cuda.MakeCurrent());
    return o;
  }
  ~Operands() {
    (void)stream_.Synchronize();  // (after a failure, work queued before it may still read them)
    for (uint64_t address : memory_) cuda_.Free(address);
  }
  uint64_t operator[](size_t i) const { return memory_[i]; }

 private:
  Operands(CudaDevice& cuda, CudaDevice::Stream& stream) : cuda_(cuda), stream_(stream) {}
  CudaDevice& cuda_;
  CudaDevice::Stream& stream_;
  std::vector<uint64_t> memory_;
};

// Times each of the GEMM plan's algorithms over operands of its shape and returns the
// fastest's index.
StatusOr<int> FastestAlgorithm(CudaDevice& cuda, const nvptx::CublasLt& blas, const nvptx::GemmPlan& plan) {
  const nvptx::Gemm& g = plan.gemm;
  const size_t element = g.type == nvptx::Gemm::Type::kF32 ? 4 : 2;
  auto matrices = [&](int64_t stride, int64_t size) { return static_cast<size_t>(stride ? g.batch * stride : size) * element; };
  const size_t workspace = *std::max_element(plan.workspaces.begin(), plan.workspaces.end());
  GJ_ASSIGN_OR_RETURN(auto stream, cuda.NewStream());
  GJ_ASSIGN_OR_RETURN(auto memory, Operands::Make(cuda, *stream,  // a, b, bias, d, workspace
                                                  {matrices(g.batch_stride_a, g.m * g.k), matrices(g.batch_stride_b, g.k * g.n),
                                                   static_cast<size_t>(g.n) * element,
                                                   static_cast<size_t>(g.batch * g.m * g.n) * element, workspace},
                                                  2));
  return Fastest(cuda, *stream, static_cast<int>(plan.workspaces.size()), [&](int algorithm) {
    nvptx::GemmPlan candidate = plan;
    candidate.algorithm = algorithm;
    const Operands& m = *memory;
    return blas.Matmul(candidate, m[0], m[1], g.epilogue == nvptx::Gemm::Epilogue::kNone ? 0 : m[2], m[3],
                       candidate.workspace_bytes() ? m[4] : 0, stream->handle());
  });
}

// The same for a convolution's plan.
StatusOr<int> FastestAlgorithm(CudaDevice& cuda, const nvptx::Cudnn& dnn, const nvptx::ConvPlan& plan) {
  const nvptx::Conv& v = plan.conv;
  const size_t element = v.type == nvptx::Conv::Type::kF32 ? 4 : 2;
  const size_t x = static_cast<size_t>(v.batch * v.channels * v.height * v.width) * element;
  const size_t y = static_cast<size_t>(v.batch * v.filters * v.out_h() * v.out_w()) * element;
  const size_t filter = static_cast<size_t>(v.filters * (v.channels / v.groups) * v.filter_h * v.filter_w) * element;
  const bool forward = v.kind == nvptx::Conv::Kind::kForward;
  GJ_ASSIGN_OR_RETURN(auto stream, cuda.NewStream());
  GJ_ASSIGN_OR_RETURN(auto memory, Operands::Make(cuda, *stream,  // x (dy), filter, bias, z, y (dx), workspace
                                                  {forward ? x : y, filter, static_cast<size_t>(v.filters) * element, y,
                                                   forward ? y : x, *std::max_element(plan.workspaces.begin(), plan.workspaces.end())},
                                                  2));
  return Fastest(cuda, *stream, static_cast<int>(plan.workspaces.size()), [&](int algorithm) {
    nvptx::ConvPlan candidate = plan;
    candidate.algorithm = algorithm;
    const Operands& m = *memory;
    return dnn.Run(candidate, m[0], m[1], v.epilogue == nvptx::Conv::Epilogue::kNone ? 0 : m[2], v.residual ? m[3] : 0, m[4],
                   candidate.workspace_bytes() ? m[5] : 0, stream->handle());
  });
}

// The code of a GPU executable as the disk cache keeps it: a first line with the algorithm
// chosen for each kernel's library call (its index among those the library offers; -1 for a
// kernel of the module), then the module (PTX text, or a cubin).
constexpr char kAlgorithmsLine[] = "graphjit library algorithms:";
std::string GpuCode(const std::vector<int>& algorithms, const std::string& module) {
  std::string code = kAlgorithmsLine;
  for (int a : algorithms) code += " " + std::to_string(a);
  return code + "\n" + module;
}
StatusOr<std::pair<std::vector<int>, std::string>> ParseGpuCode(const std::string& code, size_t kernels) {
  const size_t end = code.find('\n');
  if (code.rfind(kAlgorithmsLine, 0) != 0 || end == std::string::npos)
    return InvalidArgument("the code has no line of library algorithms");
  std::vector<int> algorithms;
  std::istringstream line(code.substr(sizeof kAlgorithmsLine - 1, end - (sizeof kAlgorithmsLine - 1)));
  for (int a; line >> a;) algorithms.push_back(a);
  if (!line.eof() || algorithms.size() != kernels)
    return InvalidArgument("the code's library algorithms are not one per kernel (" + std::to_string(kernels) + ")");
  return std::make_pair(std::move(algorithms), code.substr(end + 1));
}

class GpuExecutable : public ClusterExecutable {
 public:
  // `module`: PTX, or a cubin for the device.
  GpuExecutable(ClusterProgram program, std::shared_ptr<CudaDevice> cuda, std::string module,
                std::shared_ptr<const nvptx::CublasLt> blas, std::shared_ptr<const nvptx::Cudnn> dnn,
                std::vector<LibraryPlan> calls, RunRecorder* recorder)
      : ClusterExecutable(std::move(program)), cuda_(std::move(cuda)), module_(std::move(module)), blas_(std::move(blas)),
        dnn_(std::move(dnn)), calls_(std::move(calls)), recorder_(recorder) {}

  ~GpuExecutable() override {
    for (uint64_t address : constants_) cuda_->Free(address);
    for (uint64_t address : reordered_constants_)
      if (address) cuda_->Free(address);
  }

  Status Init() {
    for (const EmittedKernel& k : program_.module.kernels) {
      CudaDevice::Kernel kernel;
      if (k.library_node < 0) {
        GJ_ASSIGN_OR_RETURN(kernel, cuda_->LoadKernel(module_, k.function, static_cast<int>(k.shared_bytes)));
      }
      kernels_.push_back(kernel);
    }
    GJ_ASSIGN_OR_RETURN(auto stream, cuda_->NewStream());
    for (const Tensor& c : program_.constants) {
      GJ_ASSIGN_OR_RETURN(uint64_t address, cuda_->Allocate(std::max<size_t>(c.bytes(), 1)));
      constants_.push_back(address);
      GJ_RETURN_IF_ERROR(stream->CopyToDevice(address, c.raw(), c.bytes()));
    }
    // A convolution's filter that is a constant of the program, in cuDNN's layout.
    reordered_constants_.assign(kernels_.size(), 0);
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const FusionPlan::Buffer* filter = ConvFilter(k);
      if (!filter || filter->kind != FusionPlan::Buffer::Kind::kConstant) continue;
      const nvptx::ConvPlan& plan = calls_[k].convolution.plan;
      GJ_ASSIGN_OR_RETURN(reordered_constants_[k], cuda_->Allocate(plan.filter_offset));
      GJ_RETURN_IF_ERROR(cuda_->MakeCurrent());
      GJ_RETURN_IF_ERROR(dnn_->ReorderFilter(plan, constants_[filter->source], reordered_constants_[k], stream->handle()));
    }
    return stream->Synchronize();
  }

  size_t bytes() const override {
    size_t bytes = module_.size();
    for (const Tensor& c : program_.constants) bytes += c.bytes();
    return bytes;
  }

  Status Run(KernelContext& ctx, const std::string& name, Clock::duration* in_kernels) const override {
    if (!ctx.gpu) return ctx.Error("a GPU kernel without a GPU in the session");
    std::lock_guard<std::mutex> lock(ctx.gpu->mu);
    CudaDevice::Stream& stream = *ctx.gpu->stream;
    const auto start = Clock::now();
    std::vector<uint64_t> owned;  // device memory this call allocated, freed at the end
    Status s = Launch(ctx, name, stream, &owned);
    // After a failure, work already queued may still use the memory: let it finish first.
    if (!s.ok()) (void)stream.Synchronize();
    for (uint64_t address : owned) cuda_->Free(address);
    *in_kernels += Clock::now() - start;
    return s;
  }

 private:
  Status Launch(KernelContext& ctx, const std::string& name, CudaDevice::Stream& stream, std::vector<uint64_t>* owned) const {
    Tracer* tracer = ctx.tracer;
    const int64_t host_start = tracer ? tracer->NowMicros() : 0;
    // Points recorded on the stream around each copy and kernel, for the trace.
    struct Span {
      std::string name, op;
      int from, to;
      int64_t bytes;
      std::string host_memory;
    };
    std::vector<Span> spans;
    int origin = -1;
    if (tracer) {
      stream.ClearPoints();
      GJ_ASSIGN_OR_RETURN(origin, stream.Record());
    }
    auto traced = [&](const std::string& event, const std::string& op, int64_t bytes, const std::function<Status()>& work,
                      std::string host_memory = "") -> Status {
      if (!tracer) return work();
      GJ_ASSIGN_OR_RETURN(int from, stream.Record());
      GJ_RETURN_IF_ERROR(work());
      GJ_ASSIGN_OR_RETURN(int to, stream.Record());
      spans.push_back({event, op, from, to, bytes, std::move(host_memory)});
      return Status::Ok();
    };
    // 1. The buffers: inputs copied in, constants, views, temporaries.
    std::vector<uint64_t> address(program_.buffers.size(), 0);
    std::vector<bool> resolved(program_.buffers.size(), false);
    std::function<StatusOr<uint64_t>(int)> resolve = [&](int b) -> StatusOr<uint64_t> {
      if (resolved[b]) return address[b];
      const FusionPlan::Buffer& buffer = program_.buffers[b];
      switch (buffer.kind) {
        case FusionPlan::Buffer::Kind::kConstant: address[b] = constants_[buffer.source]; break;
        case FusionPlan::Buffer::Kind::kView: {
          GJ_ASSIGN_OR_RETURN(address[b], resolve(buffer.source));
          break;
        }
        case FusionPlan::Buffer::Kind::kArgument: {
          const Tensor& input = ctx.inputs[buffer.source];
          if (input.bytes() == 0) {
            GJ_ASSIGN_OR_RETURN(address[b], cuda_->Allocate(1));
            owned->push_back(address[b]);
            break;
          }
          std::shared_ptr<DeviceMemory> memory = input.buffer()->DeviceCopy(cuda_.get());
          if (memory && memory->address() % kBufferAlignment != 0) {
            GJ_ASSIGN_OR_RETURN(memory, AlignedCopy(ctx, name, input, std::move(memory), stream, traced));
          }
          if (!memory) {
            if (OnDeviceOnly(input)) return Internal("an input on another device than the cluster's");
            // On the host: copied once and kept with its buffer, for every later reader on
            // this device (a session constant's for the session, a feed's or a CPU op's
            // output's for the run; buffers never change once written).
            const size_t bytes = input.buffer()->size();
            GJ_ASSIGN_OR_RETURN(memory, DeviceMemory::Allocate(cuda_, bytes));
            GJ_RETURN_IF_ERROR(traced(name + "/copy_in_" + std::to_string(buffer.source), "HtoD", bytes,
                                      [&] { return stream.CopyToDevice(memory->address(), input.raw(), bytes); },
                                      cuda_->HostMemoryKind(input.raw(), bytes)));
            input.buffer()->AddDeviceCopy(memory);
          }
          address[b] = memory->address();
          break;
        }
        case FusionPlan::Buffer::Kind::kTemp: {
          GJ_ASSIGN_OR_RETURN(const int64_t checked,
                              CheckedBytes(buffer.shape.dims(), static_cast<int64_t>(DTypeSize(buffer.dtype))));
          GJ_ASSIGN_OR_RETURN(address[b], cuda_->Allocate(std::max<size_t>(static_cast<size_t>(checked), 1)));
          owned->push_back(address[b]);
          break;
        }
      }
      resolved[b] = true;
      return address[b];
    };
    // 2. The kernels' arguments: every buffer resolved and every scratch area allocated
    // before the first launch (a launch graph's capture may not allocate).
    std::vector<uint64_t> scratch(program_.module.scratch.size(), 0);
    std::vector<std::vector<uint64_t>> pointers(kernels_.size());
    std::vector<char> reordered(kernels_.size(), 0);  // per kernel: its filter is in cuDNN's layout
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const EmittedKernel& emitted = program_.module.kernels[k];
      for (int b : emitted.buffers) {
        GJ_ASSIGN_OR_RETURN(uint64_t a, resolve(b));
        pointers[k].push_back(a);
      }
      for (int area : emitted.scratch) {
        if (!scratch[area]) {
          GJ_ASSIGN_OR_RETURN(scratch[area], cuda_->Allocate(program_.module.scratch[area]));
          owned->push_back(scratch[area]);
        }
        pointers[k].push_back(scratch[area]);
      }
      // A filter that stays the same from run to run, in cuDNN's layout: a program constant's
      // (reordered at load), or a session constant's (reordered at its first run here, and
      // kept with its buffer); other filters are reordered by each call.
      if (const FusionPlan::Buffer* filter = ConvFilter(k)) {
        const nvptx::ConvPlan& plan = calls_[k].convolution.plan;
        uint64_t& address = pointers[k][calls_[k].convolution.filter];
        uint64_t kept = reordered_constants_[k];
        const Tensor* input = filter->kind == FusionPlan::Buffer::Kind::kArgument ? &ctx.inputs[filter->source] : nullptr;
        if (input && ctx.IsConstantInput(filter->source) && !OnDeviceOnly(*input) && input->bytes() > 0) {
          const std::string form = FilterForm(plan.conv);
          std::shared_ptr<DeviceMemory> memory = input->buffer()->DeviceCopy(cuda_.get(), form);
          if (!memory) {
            GJ_ASSIGN_OR_RETURN(memory, DeviceMemory::Allocate(cuda_, plan.filter_offset));
            GJ_RETURN_IF_ERROR(cuda_->MakeCurrent());
            GJ_RETURN_IF_ERROR(traced(name + "/reorder_filter_" + std::to_string(k), "cuDNN", 0, [&] {
              return dnn_->ReorderFilter(plan, address, memory->address(), stream.handle());
            }));
            input->buffer()->AddDeviceCopy(memory, form);
          }
          kept = memory->address();
        }
        if (kept) address = kept, reordered[k] = 1;
      }
      if (emitted.library_node >= 0 && calls_[k].workspace_bytes(reordered[k])) {  // the library's workspace, this call's
        GJ_ASSIGN_OR_RETURN(uint64_t workspace, cuda_->Allocate(calls_[k].workspace_bytes(reordered[k])));
        owned->push_back(workspace);
        pointers[k].push_back(workspace);
      }
    }
    // 3. The kernels, in order: replayed as one launch graph, or launched one by one. The
    // first call launches them one by one (the libraries' first calls of a plan may set
    // things up that a capture cannot take); a capture that fails is said once, and the
    // executable's kernels are launched one by one from then on.
    const bool profile = ctx.options && ctx.options->gpu_profile;
    const bool graphs = (!ctx.options || ctx.options->gpu_graphs) && !profile && cuda_->has_graphs() && ran_once_.load() &&
                        !capture_failed_.load() &&
                        std::any_of(program_.module.kernels.begin(), program_.module.kernels.end(), Launches);
    bool launched = false;
    if (graphs) {
      StatusOr<bool> graph = false;
      GJ_RETURN_IF_ERROR(traced(name + "/graph", "graph launch", 0, [&] {
        graph = LaunchGraph(ctx, name, stream, pointers, reordered);
        return graph.status();
      }));
      launched = *graph;
      if (launched) recorder_->CountGraphLaunches(1);
    }
    if (!launched) {
      for (size_t k = 0; k < kernels_.size(); ++k) {
        const EmittedKernel& emitted = program_.module.kernels[k];
        if (!Launches(emitted)) continue;
        int before = -1, after = -1;
        if (profile) {
          GJ_ASSIGN_OR_RETURN(before, stream.Record());
        }
        const char* op = emitted.library_node < 0 ? "gpu kernel" : calls_[k].conv ? "cuDNN" : "cuBLASLt";
        GJ_RETURN_IF_ERROR(traced(name + "/" + emitted.function, op, 0,
                                  [&] { return LaunchKernel(k, pointers[k], reordered[k], stream); }));
        recorder_->CountGpuLaunches(1);
        if (profile) {
          GJ_ASSIGN_OR_RETURN(after, stream.Record());
          GJ_RETURN_IF_ERROR(Profile(name, k, stream, before, after));
        }
      }
      ran_once_ = true;
    }
    // 4. The outputs, left on the device (an input or a constant passed through is the
    // caller's tensor).
    std::map<uint64_t, std::shared_ptr<DeviceMemory>> kept;  // temporaries handed out, by address
    for (size_t i = 0; i < program_.outputs.size(); ++i) {
      const int b = program_.outputs[i];
      const FusionPlan::Buffer* buffer = &program_.buffers[b];
      while (buffer->kind == FusionPlan::Buffer::Kind::kView && program_.buffers[buffer->source].kind != FusionPlan::Buffer::Kind::kTemp)
        buffer = &program_.buffers[buffer->source];
      if (buffer->kind == FusionPlan::Buffer::Kind::kArgument || buffer->kind == FusionPlan::Buffer::Kind::kConstant) {
        const Tensor& host = buffer->kind == FusionPlan::Buffer::Kind::kArgument ? ctx.inputs[buffer->source]
                                                                                  : program_.constants[buffer->source];
        ctx.ForwardOutput(static_cast<int>(i), host.Reshaped(program_.buffers[b].shape));
        continue;
      }
      const DType dtype = program_.buffers[b].dtype;
      const Shape& shape = program_.buffers[b].shape;
      if (shape.num_elements() == 0) {
        GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, shape, ctx.allocator));
        ctx.ForwardOutput(static_cast<int>(i), std::move(out));
        continue;
      }
      GJ_ASSIGN_OR_RETURN(uint64_t a, resolve(b));
      std::shared_ptr<DeviceMemory>& memory = kept[a];
      if (!memory) {  // this call's temporary, from now on the output's
        owned->erase(std::find(owned->begin(), owned->end(), a));
        memory = std::make_shared<DeviceMemory>(cuda_, a);
      }
      const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
      ctx.ForwardOutput(static_cast<int>(i),
                        Tensor(dtype, shape, Buffer::OnDevice(memory, bytes, cuda_->host_allocator())));
    }
    GJ_RETURN_IF_ERROR(stream.Synchronize());
    for (const Span& span : spans) {
      GJ_ASSIGN_OR_RETURN(float begin, stream.ElapsedMillis(origin, span.from));
      GJ_ASSIGN_OR_RETURN(float end, stream.ElapsedMillis(origin, span.to));
      tracer->Add({span.name, span.op, host_start + static_cast<int64_t>(begin * 1000),
                   static_cast<int64_t>((end - begin) * 1000), kGpuStreamRow, span.bytes, span.host_memory});
    }
    if (tracer || profile) stream.ClearPoints();
    return Status::Ok();
  }

  // Kernel k's convolution filter, if k is a convolution whose filter is a program constant
  // or an argument (what may stay the same from run to run); else null.
  const FusionPlan::Buffer* ConvFilter(size_t k) const {
    if (program_.module.kernels[k].library_node < 0 || !calls_[k].conv || calls_[k].convolution.empty) return nullptr;
    const FusionPlan::Buffer& b = program_.buffers[program_.module.kernels[k].buffers[calls_[k].convolution.filter]];
    return b.kind == FusionPlan::Buffer::Kind::kConstant || b.kind == FusionPlan::Buffer::Kind::kArgument ? &b : nullptr;
  }

  // Whether a kernel is launched: one with no grid (roots it stores that nothing reads) only
  // has its buffers allocated.
  static bool Launches(const EmittedKernel& k) { return k.library_node >= 0 || k.grid > 0; }

  // Kernel k (a library call: cuBLASLt's or cuDNN's), with its buffers and scratch areas at
  // `pointers` (a library call's workspace after them); a convolution's filter there is in
  // cuDNN's layout if `filter_reordered`.
  Status LaunchKernel(size_t k, std::vector<uint64_t> pointers, bool filter_reordered, CudaDevice::Stream& stream) const {
    const EmittedKernel& emitted = program_.module.kernels[k];
    if (emitted.library_node < 0) {
      std::vector<void*> args;
      for (uint64_t& p : pointers) args.push_back(&p);
      const unsigned grid[3] = {static_cast<unsigned>(emitted.grid), 1, 1};
      const unsigned block[3] = {static_cast<unsigned>(emitted.block), 1, 1};
      return stream.Launch(kernels_[k], grid, block, static_cast<unsigned>(emitted.shared_bytes), args,
                           static_cast<unsigned>(emitted.cluster));
    }
    GJ_RETURN_IF_ERROR(cuda_->MakeCurrent());
    const uint64_t workspace = calls_[k].workspace_bytes(filter_reordered) ? pointers.back() : 0;  // after the output
    if (workspace) pointers.pop_back();
    if (calls_[k].conv) {  // its operands by position, then its output
      const ConvCall& c = calls_[k].convolution;
      if (c.empty) return Status::Ok();
      auto operand = [&](int i) { return i < 0 ? 0 : pointers[i]; };
      return dnn_->Run(c.plan, operand(c.x), operand(c.filter), operand(c.bias), operand(c.residual), pointers.back(), workspace,
                       stream.handle(), filter_reordered);
    }
    // A GEMM: operands a, b (and the bias), then its output.
    const GemmCall& call = calls_[k].gemm;
    const uint64_t bias = call.plan.gemm.epilogue == nvptx::Gemm::Epilogue::kNone ? 0 : pointers[2];
    const uint64_t element = call.plan.gemm.type == nvptx::Gemm::Type::kF32 ? 4 : 2;
    for (const auto& [a, b, d] : call.offsets)
      GJ_RETURN_IF_ERROR(blas_->Matmul(call.plan, pointers[0] + element * a, pointers[1] + element * b, bias,
                                       pointers.back() + element * d, workspace, stream.handle()));
    return Status::Ok();
  }

  // All the kernels as one launch graph: captured for these arguments the first time, then
  // replayed. The last few sets of arguments keep their graphs (a caller that holds one
  // run's outputs while the next runs alternates between buffers); beyond that, the least
  // recently used graph is updated to the new arguments. False where the capture failed
  // (nothing was launched; said once with --jit_verbose): the caller launches the kernels
  // one by one, as every later call of this executable does.
  StatusOr<bool> LaunchGraph(KernelContext& ctx, const std::string& name, CudaDevice::Stream& stream,
                             const std::vector<std::vector<uint64_t>>& pointers, const std::vector<char>& reordered) const {
    std::lock_guard<std::mutex> lock(graphs_mu_);
    auto it = std::find_if(graphs_.begin(), graphs_.end(),
                           [&](const Captured& c) { return c.pointers == pointers && c.reordered == reordered; });
    if (it == graphs_.end()) {
      std::shared_ptr<CudaDevice::Graph> reuse;
      if (graphs_.size() >= kGraphsPerExecutable) {
        reuse = std::move(graphs_.back().graph);
        graphs_.pop_back();
      }
      Status captured = stream.BeginCapture();
      if (captured.ok()) {
        for (size_t k = 0; k < kernels_.size() && captured.ok(); ++k)
          if (Launches(program_.module.kernels[k])) captured = LaunchKernel(k, pointers[k], reordered[k], stream);
        auto graph = stream.EndCapture(std::move(reuse));  // (ends the capture in any case)
        if (captured.ok()) captured = graph.status();
        if (captured.ok()) graphs_.push_front({pointers, reordered, std::move(*graph)});
      }
      if (!captured.ok()) {
        GJ_RETURN_IF_ERROR(cuda_->Fault());  // a broken device is no capture's fault
        capture_failed_ = true;
        graphs_.clear();
        recorder_->CountFailedCaptures(1);
        if (ctx.options && ctx.options->jit_verbose)
          std::fprintf(stderr, "graphjit: %s: its kernels could not be captured into a CUDA graph (%s); they are launched one by one from now on\n",
                       name.c_str(), captured.message().c_str());
        return false;
      }
      it = graphs_.begin();
    } else if (it != graphs_.begin()) {
      graphs_.splice(graphs_.begin(), graphs_, it);
      it = graphs_.begin();
    }
    GJ_RETURN_IF_ERROR(stream.Launch(*it->graph));
    return true;
  }

  // A copy of `input` (whose device memory `memory` is not kBufferAlignment-aligned: the
  // caller's, a slice) in aligned memory on the session's stream, kept with its buffer for
  // the run's later readers; counted, and said once with --jit_verbose.
  template <class Traced>
  StatusOr<std::shared_ptr<DeviceMemory>> AlignedCopy(KernelContext& ctx, const std::string& name, const Tensor& input,
                                                      std::shared_ptr<DeviceMemory> memory, CudaDevice::Stream& stream,
                                                      Traced& traced) const {
    constexpr char kAligned[] = "aligned";
    if (std::shared_ptr<DeviceMemory> kept = input.buffer()->DeviceCopy(cuda_.get(), kAligned)) return kept;
    const size_t bytes = input.buffer()->size();
    GJ_ASSIGN_OR_RETURN(std::shared_ptr<DeviceMemory> aligned, DeviceMemory::Allocate(cuda_, bytes));
    GJ_RETURN_IF_ERROR(traced(name + "/align_input", "DtoD", static_cast<int64_t>(bytes),
                              [&] { return stream.CopyOnDevice(aligned->address(), memory->address(), bytes); }, ""));
    input.buffer()->AddDeviceCopy(aligned, kAligned);
    recorder_->CountAlignedCopies(1);
    static std::once_flag said;
    if (ctx.options && ctx.options->jit_verbose)
      std::call_once(said, [&] {
        std::fprintf(stderr, "graphjit: %s: a device tensor at 0x%llx is not %d-byte aligned (a slice?): the kernels "
                             "read 16 bytes at a time, so it is copied to aligned memory first (counted as aligned_copies; "
                             "said once)\n",
                     name.c_str(), static_cast<unsigned long long>(memory->address()), static_cast<int>(kBufferAlignment));
      });
    return aligned;
  }

  // Kernel k, launched last on the stream between points `before` and `after`: what it did.
  Status Profile(const std::string& name, size_t k, CudaDevice::Stream& stream, int before, int after) const {
    const EmittedKernel& emitted = program_.module.kernels[k];
    GpuKernelProfile p;
    p.name = name + "/" + emitted.function;
    p.grid = emitted.grid;
    p.block = emitted.block;
    p.cluster = emitted.cluster;
    for (int b : emitted.buffers)
      p.io_bytes += CheckedBytes(program_.buffers[b].shape.dims(), static_cast<int64_t>(DTypeSize(program_.buffers[b].dtype)))
                        .value_or(0);
    for (int area : emitted.scratch) p.io_bytes += program_.module.scratch[area];
    GJ_ASSIGN_OR_RETURN(float ms, stream.ElapsedMillis(before, after));  // synchronizes
    p.measured_us = ms * 1000.0;
    if (emitted.library_node >= 0) {  // a library call: its operands once, 2 flops per multiply-add
      p.library = true;
      p.counted = true;
      p.moved_bytes = p.requested_bytes = p.io_bytes;
      p.request_sectors = (p.io_bytes + 31) / 32;
      if (calls_[k].conv) {
        const nvptx::Conv& v = calls_[k].convolution.plan.conv;
        p.float_ops = 2 * v.batch * v.filters * v.out_h() * v.out_w() * (v.channels / v.groups) * v.filter_h * v.filter_w;
      } else {
        const nvptx::Gemm& g = calls_[k].gemm.plan.gemm;
        p.float_ops = 2 * g.m * g.n * g.k * g.batch * static_cast<int64_t>(calls_[k].gemm.offsets.size());
      }
      recorder_->RecordGpuProfile(std::move(p));
      return Status::Ok();
    }
    auto counters = cuda_->LastLaunchCounters();
    if (counters.ok()) {
      p.counted = true;
      p.moved_bytes = static_cast<int64_t>(counters->footprint_sectors) * 32;
      p.requested_bytes = static_cast<int64_t>(counters->load_bytes + counters->store_bytes);
      p.request_sectors = static_cast<int64_t>(counters->request_sectors);
      p.float_ops = static_cast<int64_t>(counters->float_ops);
      p.registers = counters->registers;
      p.spill_bytes = counters->spill_bytes;
      p.shared_bytes = counters->shared_bytes;
      const KernelWork work = WorkOf(*counters, emitted.grid, emitted.block);
      p.loads_in_flight = work.loads_in_flight;
      p.bytes_per_load = work.bytes_per_load;
    }
    recorder_->RecordGpuProfile(std::move(p));
    return Status::Ok();
  }

  const std::shared_ptr<CudaDevice> cuda_;
  const std::string module_;
  const std::shared_ptr<const nvptx::CublasLt> blas_;  // for GEMMs
  const std::shared_ptr<const nvptx::Cudnn> dnn_;      // for convolutions
  const std::vector<LibraryPlan> calls_;               // per kernel (library calls only)
  RunRecorder* const recorder_;
  std::vector<CudaDevice::Kernel> kernels_;
  std::vector<uint64_t> constants_;  // device memory, per program constant
  std::vector<uint64_t> reordered_constants_;  // per kernel: its convolution's constant filter in cuDNN's layout, or 0
  // Launch graphs by the kernels' arguments they were captured with, most recently used first.
  static constexpr size_t kGraphsPerExecutable = 4;
  struct Captured {
    std::vector<std::vector<uint64_t>> pointers;
    std::vector<char> reordered;
    std::shared_ptr<CudaDevice::Graph> graph;
  };
  mutable std::mutex graphs_mu_;
  mutable std::list<Captured> graphs_;
  mutable std::atomic<bool> ran_once_{false};        // the kernels were launched one by one once
  mutable std::atomic<bool> capture_failed_{false};  // a capture failed: no more graphs
};

// The shapes of a library call's arguments (all its buffers but the last, its result).
std::vector<Shape> ArgumentShapes(const ClusterProgram& program, const EmittedKernel& kernel) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i + 1 < kernel.buffers.size(); ++i) shapes.push_back(program.buffers[kernel.buffers[i]].shape);
  return shapes;
}

class GpuTarget : public Backend {
 public:
  GpuTarget(std::shared_ptr<CudaDevice> cuda, DeviceKind device, int sm, bool ptxas_check, bool tf32, bool autotune,
            RunRecorder* recorder)
      : cuda_(std::move(cuda)), device_(device), sm_(sm), ptxas_check_(ptxas_check), tf32_(tf32), autotune_(autotune),
        recorder_(recorder), description_(DescriptionOf(cuda_ ? cuda_->info() : NominalCudaDevice(sm), sm)),
        target_(Describe(cuda_.get(), sm, description_) + (tf32 ? ", GEMMs in TF32" : "") +
                (autotune ? "" : ", GEMMs untuned")) {}
  const TargetDescription& description() const override { return description_; }
  const std::string& target() const override { return target_; }

  // The device's limits, for code of sm_`sm`: the code may use what that target has (its
  // compute capability, not the device's: sm_80 code has no thread-block clusters on an
  // sm_90 device).
  static TargetDescription DescriptionOf(const CudaDeviceInfo& info, int sm) {
    TargetDescription d;
    d.schedule = Schedule::kGpu;
    d.gpu.compute_capability = std::min(info.compute_capability_major * 10 + info.compute_capability_minor, sm);
    d.gpu.multiprocessors = info.multiprocessors;
    d.gpu.warp_size = info.warp_size;
    d.gpu.max_threads_per_block = info.max_threads_per_block;
    d.gpu.max_blocks_per_multiprocessor = info.max_blocks_per_multiprocessor;
    d.gpu.max_threads_per_multiprocessor = info.max_threads_per_multiprocessor;
    d.gpu.shared_memory_per_block = info.shared_memory_per_block;
    d.gpu.shared_memory_per_block_optin = info.shared_memory_per_block_optin;
    d.gpu.registers_per_block = info.registers_per_block;
    d.gpu.l2_bytes = info.l2_cache_bytes;
    d.gpu.dram_bytes_per_s = info.PeakDramBytesPerSecond();
    return d;
  }

  // The code's target and what decides its form: the driver (the emulator takes PTX), the
  // device's compute capability (a GPU of sm_XX's major version gets a cubin, others PTX)
  // and the limits the grids are sized by.
  static std::string Describe(const CudaDevice* cuda, int sm, const TargetDescription& d) {
    std::string text = "nvptx sm_" + std::to_string(sm);
    if (!cuda) return text + " (compile only), " + d.CodeDecidingFacts();
    const CudaDeviceInfo& info = cuda->info();
    return text + " " + info.library + " gpu:" + std::to_string(info.ordinal) + " cc " + std::to_string(info.compute_capability_major) + "." +
           std::to_string(info.compute_capability_minor) + (info.emulated ? " emulated" : "") + ", " +
           d.CodeDecidingFacts();
  }

  StatusOr<std::unique_ptr<ClusterExecutable>> Compile(ClusterProgram program, bool keep_stages, CompileStages* stages,
                                                       std::string* code) const override {
    for (size_t k = 0; k < program.module.kernels.size(); ++k) {  // a library call it cannot make is Unimplemented
      const EmittedKernel& kernel = program.module.kernels[k];
      if (kernel.library_node < 0) continue;
      const std::vector<Shape> shapes = ArgumentShapes(program, kernel);
      GJ_RETURN_IF_ERROR(IsConv(program.calls[k]) ? ConvOf(program.calls[k], shapes, tf32_).status()
                                                  : GemmOf(program.calls[k], shapes, tf32_).status());
    }
    std::string ptx;
    if (!program.module.mlir.empty()) {
      nvptx::CompileOptions options;
      options.sm = sm_;
      options.keep_stages = keep_stages;
      GJ_ASSIGN_OR_RETURN(nvptx::CompiledModule compiled, nvptx::Compile(program.module.mlir, options));
      ptx = std::move(compiled.ptx);
      stages->mlir_ms = compiled.report.mlir_ms;
      stages->codegen_ms = compiled.report.llvm_ms;
      if (keep_stages) {
        for (const auto& [stage, text] : compiled.report.mlir_stages) stages->files.emplace_back(stage + ".mlir", text);
        stages->files.emplace_back("llvm_ir.ll", compiled.report.llvm_ir);
        stages->files.emplace_back("fusions.ptx", ptx);
        std::string launches;
        for (const EmittedKernel& k : program.module.kernels)
          launches += k.function + ": grid " + std::to_string(k.grid) + ", block " + std::to_string(k.block) +
                      (k.cluster > 1 ? ", clusters of " + std::to_string(k.cluster) + " blocks" : "") +
                      (k.shared_bytes ? ", dynamic shared memory " + std::to_string(k.shared_bytes) + " bytes" : "") + "\n";
        stages->files.emplace_back("launch.txt", launches);
      }
      if (ptxas_check_ || keep_stages) {
        // ptxas on the code for both targets (only sm_90 where a kernel runs in thread-block
        // clusters); spills are errors under the check.
        std::string reports;
        const bool clusters = std::any_of(program.module.kernels.begin(), program.module.kernels.end(),
                                          [](const EmittedKernel& k) { return k.cluster > 1; });
        for (int sm : {80, 90}) {
          if (clusters && sm < 90) {
            reports += "# sm_" + std::to_string(sm) + ": not assembled (the kernels run in thread-block clusters)\n";
            continue;
          }
          std::string code = ptx;
          if (sm != sm_) {
            nvptx::CompileOptions other;
            other.sm = sm;
            GJ_ASSIGN_OR_RETURN(nvptx::CompiledModule compiled, nvptx::Compile(program.module.mlir, other));
            code = std::move(compiled.ptx);
          }
          auto report = nvptx::Assemble(code, sm, /*spills_are_errors=*/ptxas_check_);
          if (!report.ok() && ptxas_check_) return Internal("ptxas sm_" + std::to_string(sm) + ": " + report.status().message());
          reports += "# ptxas -arch=sm_" + std::to_string(sm) + " -v\n" + (report.ok() ? report->log : report.status().message() + "\n");
        }
        if (keep_stages) stages->files.emplace_back("ptxas.txt", reports);
      }
    }
    if (!cuda_) return FailedPrecondition("compiled for sm_" + std::to_string(sm_) + " but not run: no GPU driver");
    // A GPU gets a cubin when ptxas is there and the GPU runs sm_XX code as is (same major
    // version, else the driver compiles the PTX for it); the CUDA emulator always gets PTX.
    std::string module = std::move(ptx);
    const CudaDeviceInfo& info = cuda_->info();
    const bool runs_cubin = info.compute_capability_major == sm_ / 10 && info.compute_capability_minor >= sm_ % 10;
    if (!info.emulated && runs_cubin && !module.empty()) {
      auto assembled = nvptx::Assemble(module, sm_, /*spills_are_errors=*/false, /*keep_cubin=*/true);
      if (assembled.ok() && !assembled->cubin.empty()) module = std::move(assembled->cubin);
    }
    std::vector<int> algorithms;
    auto executable = Make(std::move(program), module, &algorithms);
    if (executable.ok()) *code = GpuCode(algorithms, module);
    return executable;
  }

  StatusOr<std::unique_ptr<ClusterExecutable>> Load(ClusterProgram program, const std::string& code) const override {
    GJ_ASSIGN_OR_RETURN(auto parsed, ParseGpuCode(code, program.module.kernels.size()));
    return Make(std::move(program), parsed.second, &parsed.first);
  }

 private:
  // The executable of `module` (PTX, or a cubin). Each library call is planned once (a GEMM
  // by cuBLASLt, a convolution by cuDNN), with the algorithm `*algorithms` names for its
  // kernel, or, if it is empty, the fastest of those the library offers (timed, under
  // --gpu_autotune) or its heuristic's first, which are then written there (-1 for the
  // module's kernels).
  StatusOr<std::unique_ptr<ClusterExecutable>> Make(ClusterProgram program, const std::string& module,
                                                    std::vector<int>* algorithms) const {
    if (!cuda_) return FailedPrecondition("no GPU driver to load sm_" + std::to_string(sm_) + " code");
    const bool chosen = !algorithms->empty();
    if (!chosen) algorithms->assign(program.module.kernels.size(), -1);
    std::vector<LibraryPlan> calls(program.module.kernels.size());
    std::shared_ptr<const nvptx::CublasLt> blas;
    std::shared_ptr<const nvptx::Cudnn> dnn;
    for (size_t k = 0; k < calls.size(); ++k) {
      const EmittedKernel& kernel = program.module.kernels[k];
      int& algorithm = (*algorithms)[k];
      if (kernel.library_node < 0) {
        if (algorithm != -1) return InvalidArgument("kernel " + std::to_string(k) + " is not a library call but has an algorithm");
        continue;
      }
      LibraryPlan& call = calls[k];
      call.conv = IsConv(program.calls[k]);
      int offered = 0;
      if (call.conv) {
        GJ_ASSIGN_OR_RETURN(call.convolution, ConvOf(program.calls[k], ArgumentShapes(program, kernel), tf32_));
        if (call.convolution.empty) {  // no call: the algorithm is 0
          if (chosen && algorithm != 0) return InvalidArgument("an empty convolution was kept with an algorithm");
          algorithm = 0;
          continue;
        }
        if (!dnn) {
          GJ_ASSIGN_OR_RETURN(dnn, OpenCudnn(device_, *cuda_));
        }
        nvptx::ConvPlan& plan = call.convolution.plan;
        GJ_ASSIGN_OR_RETURN(plan, dnn->Plan(plan.conv, kConvWorkspaceBytes, kLibraryAlgorithms));
        offered = static_cast<int>(plan.workspaces.size());
      } else {
        std::vector<int> aligned;
        for (int b : kernel.buffers) aligned.push_back(BaseAlignment(program, b));
        GJ_ASSIGN_OR_RETURN(call.gemm, GemmOf(program.calls[k], ArgumentShapes(program, kernel), tf32_, aligned));
        if (!blas) {
          GJ_ASSIGN_OR_RETURN(blas, OpenCublasLt(device_, *cuda_));
        }
        nvptx::GemmPlan& plan = call.gemm.plan;
        GJ_ASSIGN_OR_RETURN(plan, blas->Plan(plan.gemm, kGemmWorkspaceBytes, kLibraryAlgorithms));
        offered = static_cast<int>(plan.workspaces.size());
      }
      const char* library = call.conv ? "cuDNN" : "cuBLASLt";
      if (chosen && (algorithm < 0 || algorithm >= offered))
        return InvalidArgument(std::string("the library call of kernel ") + std::to_string(k) + " was kept with algorithm " +
                               std::to_string(algorithm) + ", and " + library + " offers " + std::to_string(offered));
      if (!chosen && autotune_ && offered > 1) {
        if (call.conv) {
          GJ_ASSIGN_OR_RETURN(algorithm, FastestAlgorithm(*cuda_, *dnn, call.convolution.plan));
          recorder_->CountConvsAutotuned(1);
        } else {
          GJ_ASSIGN_OR_RETURN(algorithm, FastestAlgorithm(*cuda_, *blas, call.gemm.plan));
          recorder_->CountGemmsAutotuned(1);
        }
      } else if (!chosen) {
        algorithm = 0;
      }
      (call.conv ? call.convolution.plan.algorithm : call.gemm.plan.algorithm) = algorithm;
    }
    auto executable = std::make_unique<GpuExecutable>(std::move(program), cuda_, module, std::move(blas), std::move(dnn),
                                                      std::move(calls), recorder_);
    GJ_RETURN_IF_ERROR(executable->Init());
    return std::unique_ptr<ClusterExecutable>(std::move(executable));
  }

  const std::shared_ptr<CudaDevice> cuda_;
  const DeviceKind device_;  // kGpu or kGpuEmu
  const int sm_;
  const bool ptxas_check_;
  const bool tf32_;      // GEMMs' products of operands rounded to TF32 (--gpu_tf32)
  const bool autotune_;  // GEMMs' algorithms timed (--gpu_autotune)
  RunRecorder* const recorder_;
  const TargetDescription description_;
  const std::string target_;
};

}  // namespace

std::string WhyNotCompilableOnGpu(const Node& node, const std::vector<DType>& input_types) {
  if (node.op == "MaxPool" || node.op == "AvgPool") {
    auto ksize = GetIntListAttr(node, "ksize");
    if (!ksize.ok() || ksize->size() != 4 || (*ksize)[1] * (*ksize)[2] > kMaxPoolWindowElements)
      return "a pool's window of more than " + std::to_string(kMaxPoolWindowElements) + " elements is not written out";
    return "";
  }
  if (!IsLibraryOp(node.op)) return "";
  const bool conv = TraitsOf(node.op).pattern == OpPattern::kConv;
  // A convolution's data inputs (Conv2DBackpropInput's first is a shape) are of its type.
  std::vector<DType> data;
  for (size_t i = 0; i < input_types.size(); ++i)
    if (IsDataInput(node, static_cast<int>(i))) data.push_back(input_types[i]);
  if (auto type = GemmType(data); !type.ok())
    return conv ? "convolutions on the GPU (cuDNN) are of float32, float16 or bfloat16 tensors of one type"
                : type.status().message();
  const tensorflow::AttrValue* fused = node.FindAttr("fused_ops");
  if (conv) {
    if (!fused || UnfusesConv({fused->list().s().begin(), fused->list().s().end()})) return "";
    return "a fused convolution's epilogue on the GPU is BiasAdd, then Add, then Relu, Relu6, Elu, Tanh or Sigmoid";
  }
  // An activation cuBLASLt does not fuse is fused into the next kernel (see BuildProgram).
  const DType dtype = input_types.empty() ? DType::kInvalid : input_types[0];
  if (fused && UnfusesMatMul({fused->list().s().begin(), fused->list().s().end()}, dtype)) return "";
  auto epilogue = EpilogueOf(node);
  return epilogue.ok() ? "" : epilogue.status().message();
}

StatusOr<std::shared_ptr<const Backend>> GpuBackend(const GpuContext& gpu, const SessionOptions* options,
                                                    const SessionOptions& process, RunRecorder* recorder) {
  const std::string arch = options && !options->gpu_arch.empty() ? options->gpu_arch : process.gpu_arch;
  const bool check = (options && options->gpu_ptxas_check) || process.gpu_ptxas_check;
  const bool tf32 = options ? options->gpu_tf32 : process.gpu_tf32;
  const bool autotune = options ? options->gpu_autotune : process.gpu_autotune;
  if (!gpu.cuda)
    return std::shared_ptr<const Backend>(
        std::make_shared<GpuTarget>(nullptr, gpu.device, arch == "sm_80" ? 80 : 90, check, tf32, autotune, recorder));
  const CudaDeviceInfo& info = gpu.cuda->info();
  int sm = info.compute_capability_major >= 9 ? 90 : 80;
  if (!arch.empty()) sm = arch == "sm_80" ? 80 : 90;
  if (info.compute_capability_major * 10 + info.compute_capability_minor < sm)
    return FailedPrecondition("the GPU (" + info.name + ", compute capability " + std::to_string(info.compute_capability_major) +
                              "." + std::to_string(info.compute_capability_minor) + ") cannot run sm_" + std::to_string(sm) +
                              " code; graphjit generates code for sm_80 and sm_90");
  return std::shared_ptr<const Backend>(std::make_shared<GpuTarget>(gpu.cuda, gpu.device, sm, check, tf32, autotune, recorder));
}

}  // namespace graphjit
