#include "jit/gpu_library.h"

#include <algorithm>
#include <functional>

#include "ir/attr.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernels/window.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

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

}  // namespace

int AlignmentOf(uint64_t bytes) { return bytes == 0 ? 256 : static_cast<int>(std::min<uint64_t>(bytes & -bytes, 256)); }

StatusOr<nvptx::Gemm::Epilogue> EpilogueOf(const Node& node) {
  const tensorflow::AttrValue* fused = node.FindAttr("fused_ops");
  if (fused == nullptr) return nvptx::Gemm::Epilogue::kNone;
  const auto& ops = fused->list().s();
  const bool bias = ops.size() >= 1 && ops[0] == "BiasAdd";
  if (bias && ops.size() == 1) return nvptx::Gemm::Epilogue::kBias;
  if (bias && ops.size() == 2 && ops[1] == "Relu") return nvptx::Gemm::Epilogue::kReluBias;
  return Unimplemented("cuBLASLt's epilogues on the GPU are BiasAdd and BiasAdd + Relu");
}

StatusOr<nvptx::Gemm::Type> GemmType(const std::vector<DType>& dtypes) {
  const DType t = dtypes.empty() ? DType::kFloat : dtypes[0];
  for (DType other : dtypes)
    if (other != t || (t != DType::kFloat && t != DType::kHalf && t != DType::kBFloat16))
      return Unimplemented("GEMMs on the GPU (cuBLASLt) are of float32, float16 or bfloat16 matrices of one type");
  return t == DType::kHalf ? nvptx::Gemm::Type::kF16 : t == DType::kBFloat16 ? nvptx::Gemm::Type::kBF16 : nvptx::Gemm::Type::kF32;
}

StatusOr<GemmCall> GemmOf(const LibraryCall& call, const std::vector<Shape>& inputs, bool tf32, const std::vector<int>& aligned) {
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
  if ((a_count == batch || a_count == 1) && (b_count == batch || b_count == 1) && (a_count == 1 || a.rank() == out.rank()) &&
      (b_count == 1 || b.rank() == out.rank())) {
    g.batch = batch;
    g.batch_stride_a = a_count == 1 ? 0 : a_size;
    g.batch_stride_b = b_count == 1 ? 0 : b_size;
  } else {
    c.offsets.clear();
    for (int64_t i = 0; i < batch; ++i) c.offsets.push_back({matrix_of(a, i) * a_size, matrix_of(b, i) * b_size, i * g.m * g.n});
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
  v.groups = depthwise ? v.channels : v.channels / f.dim(2);  // a grouped convolution's filter has C / groups
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
    if (ops.empty() || ops[0] != "BiasAdd" || ops.size() > activation + 1 ||
        (ops.size() > activation && ops[activation] != "Relu"))
      return Unimplemented(NodeLabel(node) + ": cuDNN's epilogues are a bias, a residual and a ReLU");
    v.epilogue = ops.size() > activation ? nvptx::Conv::Epilogue::kBiasRelu : nvptx::Conv::Epilogue::kBias;
    c.bias = 2;
    if (v.residual) c.residual = 3;
  }
  return c;
}

bool IsConv(const LibraryCall& call) { return TraitsOf(call.node->op).pattern == OpPattern::kConv; }

StatusOr<std::shared_ptr<const nvptx::Cudnn>> OpenCudnn(DeviceKind device, const CudaDevice& cuda) {
  auto library = CudnnLibrary(device);
  GJ_RETURN_IF_ERROR(cuda.MakeCurrent());  // (the handle is the current device's)
  auto opened = library.ok() ? nvptx::Cudnn::Open(*library, cuda.ordinal()) : library.status();
  if (!opened.ok()) return FailedPrecondition("convolutions on the GPU need cuDNN: " + opened.status().message());
  return *opened;
}

StatusOr<std::shared_ptr<const nvptx::CublasLt>> OpenCublasLt(DeviceKind device, const CudaDevice& cuda) {
  auto library = CublasLtLibrary(device);
  GJ_RETURN_IF_ERROR(cuda.MakeCurrent());
  auto opened = library.ok() ? nvptx::CublasLt::Open(*library, cuda.ordinal()) : library.status();
  if (!opened.ok()) return FailedPrecondition("GEMMs on the GPU need cuBLASLt: " + opened.status().message());
  return *opened;
}

int BaseAlignment(const ClusterProgram& program, int b) {
  while (program.buffers[b].kind == FusionPlan::Buffer::Kind::kView) b = program.buffers[b].source;
  return program.buffers[b].kind == FusionPlan::Buffer::Kind::kArgument ? static_cast<int>(kBufferAlignment) : 256;
}

std::string FilterForm(const nvptx::Conv& v) {
  return std::string("cuDNN ") + (v.nhwc ? "KRSC " : "KCRS ") + std::to_string(static_cast<int>(v.type)) + " " +
         std::to_string(v.filters) + "x" + std::to_string(v.channels / v.groups) + "x" + std::to_string(v.filter_h) + "x" +
         std::to_string(v.filter_w);
}

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

StatusOr<int> FastestAlgorithm(CudaDevice& cuda, const nvptx::Cudnn& dnn, const nvptx::ConvPlan& plan) {
  const nvptx::Conv& v = plan.conv;
  const size_t element = v.type == nvptx::Conv::Type::kF32 ? 4 : 2;
  const size_t x = static_cast<size_t>(v.batch * v.channels * v.height * v.width) * element;
  const size_t y = static_cast<size_t>(v.batch * v.filters * v.out_h() * v.out_w()) * element;
  const size_t filter = static_cast<size_t>(v.filters * (v.channels / v.groups) * v.filter_h * v.filter_w) * element;
  const bool forward = v.kind == nvptx::Conv::Kind::kForward;
  GJ_ASSIGN_OR_RETURN(auto stream, cuda.NewStream());
  GJ_ASSIGN_OR_RETURN(auto memory,
                      Operands::Make(cuda, *stream,  // x (dy), filter, bias, z, y (dx), workspace
                                     {forward ? x : y, filter, static_cast<size_t>(v.filters) * element, y, forward ? y : x,
                                      *std::max_element(plan.workspaces.begin(), plan.workspaces.end())},
                                     2));
  return Fastest(cuda, *stream, static_cast<int>(plan.workspaces.size()), [&](int algorithm) {
    nvptx::ConvPlan candidate = plan;
    candidate.algorithm = algorithm;
    const Operands& m = *memory;
    return dnn.Run(candidate, m[0], m[1], v.epilogue == nvptx::Conv::Epilogue::kNone ? 0 : m[2], v.residual ? m[3] : 0, m[4],
                   candidate.workspace_bytes() ? m[5] : 0, stream->handle());
  });
}

}  // namespace graphjit
