#include "backends/nvptx/cudnn.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>

#ifdef GRAPHJIT_HAVE_CUDNN_H
#include <cudnn.h>
#endif

namespace graphjit::nvptx {

#ifndef GRAPHJIT_HAVE_CUDNN_H

struct Cudnn::Api {};
StatusOr<std::shared_ptr<const Cudnn>> Cudnn::Open(const std::string&, int) {
  return Unimplemented("this build of graphjit has no cuDNN support (cuDNN's cudnn.h was not found)");
}
Cudnn::~Cudnn() = default;
struct ConvPlan::Descriptors {};
StatusOr<ConvPlan> Cudnn::Plan(const Conv&, size_t, int) const { return Unimplemented("no cuDNN support in this build"); }
Status Cudnn::Run(const ConvPlan&, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, void*, bool) const {
  return Unimplemented("no cuDNN support in this build");
}
Status Cudnn::ReorderFilter(const ConvPlan&, uint64_t, uint64_t, void*) const {
  return Unimplemented("no cuDNN support in this build");
}

#else

// The entry points used, with cudnn.h's types.
#define GRAPHJIT_CUDNN_FUNCTIONS(X)              \
  X(cudnnCreate)                                 \
  X(cudnnDestroy)                                \
  X(cudnnSetStream)                              \
  X(cudnnGetErrorString)                         \
  X(cudnnCreateTensorDescriptor)                 \
  X(cudnnDestroyTensorDescriptor)                \
  X(cudnnSetTensor4dDescriptor)                  \
  X(cudnnSetTensor4dDescriptorEx)                \
  X(cudnnTransformTensor)                        \
  X(cudnnCreateFilterDescriptor)                 \
  X(cudnnDestroyFilterDescriptor)                \
  X(cudnnSetFilter4dDescriptor)                  \
  X(cudnnCreateConvolutionDescriptor)            \
  X(cudnnDestroyConvolutionDescriptor)           \
  X(cudnnSetConvolution2dDescriptor)             \
  X(cudnnSetConvolutionGroupCount)               \
  X(cudnnSetConvolutionMathType)                 \
  X(cudnnCreateActivationDescriptor)             \
  X(cudnnDestroyActivationDescriptor)            \
  X(cudnnSetActivationDescriptor)                \
  X(cudnnGetConvolutionForwardAlgorithm_v7)      \
  X(cudnnConvolutionForward)                     \
  X(cudnnConvolutionBiasActivationForward)       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) \
  X(cudnnConvolutionBackwardData)

struct Cudnn::Api {
#define GRAPHJIT_CUDNN_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GRAPHJIT_CUDNN_FUNCTIONS(GRAPHJIT_CUDNN_MEMBER)
#undef GRAPHJIT_CUDNN_MEMBER
};

StatusOr<std::shared_ptr<const Cudnn>> Cudnn::Open(const std::string& library, int device) {
  static std::mutex mu;
  static auto* opened = new std::map<std::pair<std::string, int>, std::shared_ptr<const Cudnn>>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = opened->find({library, device}); it != opened->end()) return it->second;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return NotFound("cannot open cuDNN (" + library + "): " + dlerror());
  std::shared_ptr<Cudnn> dnn(new Cudnn());
  dnn->library_handle_ = handle;
  dnn->library_ = library;
  dnn->api_ = std::make_unique<Api>();
#define GRAPHJIT_CUDNN_LOAD(fn)                                          \
  dnn->api_->fn = reinterpret_cast<decltype(&::fn)>(dlsym(handle, #fn)); \
  if (!dnn->api_->fn) return NotFound(library + " is not cuDNN: it has no " #fn);
  GRAPHJIT_CUDNN_FUNCTIONS(GRAPHJIT_CUDNN_LOAD)
#undef GRAPHJIT_CUDNN_LOAD
  cudnnHandle_t context = nullptr;
  if (cudnnStatus_t s = dnn->api_->cudnnCreate(&context); s != CUDNN_STATUS_SUCCESS)
    return Internal(library + ": cudnnCreate failed: " + dnn->api_->cudnnGetErrorString(s));
  dnn->context_ = context;
  opened->emplace(std::make_pair(library, device), dnn);
  return std::shared_ptr<const Cudnn>(dnn);
}

Cudnn::~Cudnn() {
  if (context_) api_->cudnnDestroy(static_cast<cudnnHandle_t>(context_));
  // The library stays loaded: queued work may still call into it.
}

// Where the algorithm's workspace starts after a reordered filter.
constexpr size_t kWorkspaceAlignment = 256;

struct ConvPlan::Descriptors {
  decltype(&::cudnnDestroyTensorDescriptor) destroy_tensor = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) destroy_filter = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) destroy_conv = nullptr;
  decltype(&::cudnnDestroyActivationDescriptor) destroy_activation = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnTensorDescriptor_t hwio = nullptr, reordered = nullptr;  // the filter as TensorFlow and as cuDNN lay it out
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t activation = nullptr;
  ~Descriptors() {
    for (cudnnTensorDescriptor_t t : {x, y, bias, hwio, reordered})
      if (t) destroy_tensor(t);
    if (w) destroy_filter(w);
    if (conv) destroy_conv(conv);
    if (activation) destroy_activation(activation);
  }
};

StatusOr<ConvPlan> Cudnn::Plan(const Conv& c, size_t max_workspace, int max_algorithms) const {
  const Api& api = *api_;
  auto check = [&](cudnnStatus_t s, const char* call) -> Status {
    if (s == CUDNN_STATUS_SUCCESS) return Status::Ok();
    return Internal(std::string(call) + " failed: " + api.cudnnGetErrorString(s));
  };
  if (c.channels <= 0 || c.filters <= 0 || c.groups <= 0 || c.channels % c.groups || c.filters % c.groups || c.out_h() <= 0 ||
      c.out_w() <= 0)
    return InvalidArgument("the convolution's geometry makes no output");
  if (c.kind == Conv::Kind::kBackwardData && (c.epilogue != Conv::Epilogue::kNone || c.residual))
    return InvalidArgument("a backward data convolution has no epilogue");
  if (c.residual && c.epilogue == Conv::Epilogue::kNone)
    return InvalidArgument("a residual is added with a bias (cuDNN's fused convolution takes both)");
  ConvPlan plan;
  plan.conv = c;
  plan.descriptors = std::make_shared<ConvPlan::Descriptors>();
  ConvPlan::Descriptors& d = *plan.descriptors;
  d.destroy_tensor = api.cudnnDestroyTensorDescriptor;
  d.destroy_filter = api.cudnnDestroyFilterDescriptor;
  d.destroy_conv = api.cudnnDestroyConvolutionDescriptor;
  d.destroy_activation = api.cudnnDestroyActivationDescriptor;
  const cudnnDataType_t type = c.type == Conv::Type::kF16    ? CUDNN_DATA_HALF
                               : c.type == Conv::Type::kBF16 ? CUDNN_DATA_BFLOAT16
                                                             : CUDNN_DATA_FLOAT;
  const cudnnTensorFormat_t format = c.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  auto tensor = [&](cudnnTensorDescriptor_t* t, cudnnTensorFormat_t f, int64_t n, int64_t ch, int64_t h, int64_t w) {
    GJ_RETURN_IF_ERROR(check(api.cudnnCreateTensorDescriptor(t), "cudnnCreateTensorDescriptor"));
    return check(api.cudnnSetTensor4dDescriptor(*t, f, type, static_cast<int>(n), static_cast<int>(ch), static_cast<int>(h),
                                                static_cast<int>(w)),
                 "cudnnSetTensor4dDescriptor");
  };
  GJ_RETURN_IF_ERROR(tensor(&d.x, format, c.batch, c.channels, c.height, c.width));
  GJ_RETURN_IF_ERROR(tensor(&d.y, format, c.batch, c.filters, c.out_h(), c.out_w()));
  GJ_RETURN_IF_ERROR(check(api.cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor"));
  GJ_RETURN_IF_ERROR(check(
      api.cudnnSetFilter4dDescriptor(d.w, type, format, static_cast<int>(c.filters), static_cast<int>(c.channels / c.groups),
                                     static_cast<int>(c.filter_h), static_cast<int>(c.filter_w)),
      "cudnnSetFilter4dDescriptor"));
  GJ_RETURN_IF_ERROR(check(api.cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor"));
  GJ_RETURN_IF_ERROR(check(api.cudnnSetConvolution2dDescriptor(d.conv, static_cast<int>(c.pad_h), static_cast<int>(c.pad_w),
                                                               static_cast<int>(c.stride_h), static_cast<int>(c.stride_w),
                                                               static_cast<int>(c.dilation_h), static_cast<int>(c.dilation_w),
                                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                           "cudnnSetConvolution2dDescriptor"));
  GJ_RETURN_IF_ERROR(
      check(api.cudnnSetConvolutionGroupCount(d.conv, static_cast<int>(c.groups)), "cudnnSetConvolutionGroupCount"));
  // TF32 is the default math's to take on Ampere and later; FMA math keeps float32 products.
  const cudnnMathType_t math = c.type != Conv::Type::kF32 ? CUDNN_TENSOR_OP_MATH : c.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  GJ_RETURN_IF_ERROR(check(api.cudnnSetConvolutionMathType(d.conv, math), "cudnnSetConvolutionMathType"));
  // TensorFlow's filter [R, S, C/groups, K] is reordered into KRSC (or KCRS) in the
  // workspace, ahead of the algorithm's part, by cudnnTransformTensor with strides.
  size_t reordered_bytes = 0;
  if (c.filter_hwio) {
    const int64_t k = c.filters, cg = c.channels / c.groups, r = c.filter_h, s = c.filter_w;
    auto strided = [&](cudnnTensorDescriptor_t* t, int64_t sk, int64_t sc, int64_t sr, int64_t ss) {
      GJ_RETURN_IF_ERROR(check(api.cudnnCreateTensorDescriptor(t), "cudnnCreateTensorDescriptor"));
      return check(api.cudnnSetTensor4dDescriptorEx(*t, type, static_cast<int>(k), static_cast<int>(cg), static_cast<int>(r),
                                                    static_cast<int>(s), static_cast<int>(sk), static_cast<int>(sc),
                                                    static_cast<int>(sr), static_cast<int>(ss)),
                   "cudnnSetTensor4dDescriptorEx");
    };
    GJ_RETURN_IF_ERROR(strided(&d.hwio, 1, k, s * cg * k, cg * k));
    GJ_RETURN_IF_ERROR(c.nhwc ? strided(&d.reordered, r * s * cg, 1, s * cg, cg)
                              : strided(&d.reordered, cg * r * s, r * s, s, 1));
    const size_t element = c.type == Conv::Type::kF32 ? 4 : 2;
    const size_t bytes = static_cast<size_t>(k * cg * r * s) * element;
    reordered_bytes = (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  }
  const int requested = std::max(max_algorithms, 1);
  if (c.kind == Conv::Kind::kForward) {
    const bool fused = c.epilogue != Conv::Epilogue::kNone || c.residual;
    if (fused) {
      GJ_RETURN_IF_ERROR(tensor(&d.bias, CUDNN_TENSOR_NCHW, 1, c.filters, 1, 1));
      GJ_RETURN_IF_ERROR(check(api.cudnnCreateActivationDescriptor(&d.activation), "cudnnCreateActivationDescriptor"));
      const cudnnActivationMode_t mode =
          c.epilogue == Conv::Epilogue::kBiasRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
      GJ_RETURN_IF_ERROR(check(api.cudnnSetActivationDescriptor(d.activation, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0),
                               "cudnnSetActivationDescriptor"));
    }
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    int found = 0;
    GJ_RETURN_IF_ERROR(check(api.cudnnGetConvolutionForwardAlgorithm_v7(static_cast<cudnnHandle_t>(context_), d.x, d.w, d.conv,
                                                                        d.y, static_cast<int>(perf.size()), &found, perf.data()),
                             "cudnnGetConvolutionForwardAlgorithm_v7"));
    for (int i = 0; i < found && static_cast<int>(plan.algorithms.size()) < requested; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_workspace) continue;
      // The fused call without an activation runs only IMPLICIT_PRECOMP_GEMM (cuDNN's rule).
      if (fused && c.epilogue != Conv::Epilogue::kBiasRelu && perf[i].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        continue;
      plan.algorithms.push_back(perf[i].algo);
      plan.workspaces.push_back(perf[i].memory);
    }
  } else {
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    int found = 0;
    GJ_RETURN_IF_ERROR(
        check(api.cudnnGetConvolutionBackwardDataAlgorithm_v7(static_cast<cudnnHandle_t>(context_), d.w, d.y, d.conv, d.x,
                                                              static_cast<int>(perf.size()), &found, perf.data()),
              "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    for (int i = 0; i < found && static_cast<int>(plan.algorithms.size()) < requested; ++i) {
      // Deterministic ones only: the same gradient from run to run.
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_workspace || perf[i].determinism != CUDNN_DETERMINISTIC)
        continue;
      plan.algorithms.push_back(perf[i].algo);
      plan.workspaces.push_back(perf[i].memory);
    }
  }
  if (plan.algorithms.empty()) return Unimplemented("cuDNN has no algorithm for this convolution within the workspace");
  plan.filter_offset = reordered_bytes;
  for (size_t& bytes : plan.workspaces) bytes += reordered_bytes;
  return plan;
}

Status Cudnn::ReorderFilter(const ConvPlan& plan, uint64_t hwio, uint64_t reordered, void* stream) const {
  if (!plan.conv.filter_hwio) return InvalidArgument("the plan's filter is in cuDNN's layout already");
  const Api& api = *api_;
  const float one = 1, zero = 0;
  std::lock_guard<std::mutex> lock(mu_);
  const auto handle = static_cast<cudnnHandle_t>(context_);
  cudnnStatus_t s = api.cudnnSetStream(handle, static_cast<cudaStream_t>(stream));
  if (s == CUDNN_STATUS_SUCCESS)
    s = api.cudnnTransformTensor(handle, &one, plan.descriptors->hwio, reinterpret_cast<void*>(hwio), &zero,
                                 plan.descriptors->reordered, reinterpret_cast<void*>(reordered));
  if (s == CUDNN_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string("cudnnTransformTensor failed: ") + api.cudnnGetErrorString(s));
}

Status Cudnn::Run(const ConvPlan& plan, uint64_t x, uint64_t w, uint64_t bias, uint64_t z, uint64_t y, uint64_t workspace,
                  void* stream, bool filter_reordered) const {
  const Api& api = *api_;
  const ConvPlan::Descriptors& d = *plan.descriptors;
  const Conv& c = plan.conv;
  auto ptr = [](uint64_t a) { return reinterpret_cast<void*>(a); };
  const float one = 1, zero = 0, z_scale = c.residual ? 1.0f : 0.0f;
  const int algo = plan.algorithms.at(plan.algorithm);
  const size_t workspace_bytes = plan.workspace_bytes() - plan.filter_offset;  // the algorithm's
  std::lock_guard<std::mutex> lock(mu_);  // the handle's stream, then the calls that queue on it
  const auto handle = static_cast<cudnnHandle_t>(context_);
  cudnnStatus_t s = api.cudnnSetStream(handle, static_cast<cudaStream_t>(stream));
  const char* call = "cudnnSetStream";
  if (s == CUDNN_STATUS_SUCCESS && c.filter_hwio && !filter_reordered) {  // the filter first, then the algorithm's part
    call = "cudnnTransformTensor";
    s = api.cudnnTransformTensor(handle, &one, d.hwio, ptr(w), &zero, d.reordered, ptr(workspace));
    w = workspace;
    workspace = workspace_bytes ? workspace + plan.filter_offset : 0;
  }
  if (s == CUDNN_STATUS_SUCCESS) {
    if (c.kind == Conv::Kind::kBackwardData) {
      call = "cudnnConvolutionBackwardData";
      s = api.cudnnConvolutionBackwardData(handle, &one, d.w, ptr(w), d.y, ptr(x), d.conv,
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ptr(workspace), workspace_bytes,
                                           &zero, d.x, ptr(y));
    } else if (d.activation) {
      // Without a residual z is y itself, scaled by 0 (cuDNN reads it all the same).
      call = "cudnnConvolutionBiasActivationForward";
      s = api.cudnnConvolutionBiasActivationForward(
          handle, &one, d.x, ptr(x), d.w, ptr(w), d.conv, static_cast<cudnnConvolutionFwdAlgo_t>(algo), ptr(workspace),
          workspace_bytes, &z_scale, d.y, ptr(c.residual ? z : y), d.bias, ptr(bias), d.activation, d.y, ptr(y));
    } else {
      call = "cudnnConvolutionForward";
      s = api.cudnnConvolutionForward(handle, &one, d.x, ptr(x), d.w, ptr(w), d.conv,
                                      static_cast<cudnnConvolutionFwdAlgo_t>(algo), ptr(workspace), workspace_bytes, &zero, d.y,
                                      ptr(y));
    }
  }
  if (s == CUDNN_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string(call) + " failed: " + api.cudnnGetErrorString(s));
}

#endif  // GRAPHJIT_HAVE_CUDNN_H

}  // namespace graphjit::nvptx
