#include "backends/nvptx/cublaslt.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#ifdef GRAPHJIT_HAVE_CUBLASLT_H
#include <cublasLt.h>
#endif

namespace graphjit::nvptx {

#ifndef GRAPHJIT_HAVE_CUBLASLT_H

struct CublasLt::Api {};
StatusOr<std::shared_ptr<const CublasLt>> CublasLt::Open(const std::string&) {
  return Unimplemented("this build of graphjit has no cuBLASLt support (the CUDA toolkit's cublasLt.h was not found)");
}
CublasLt::~CublasLt() = default;
Status CublasLt::Matmul(const Gemm&, uint64_t, uint64_t, uint64_t, uint64_t, void*) const {
  return Unimplemented("no cuBLASLt support in this build");
}

#else

// The entry points used, with cublasLt.h's types.
#define GRAPHJIT_CUBLASLT_FUNCTIONS(X) \
  X(cublasLtCreate)                    \
  X(cublasLtDestroy)                   \
  X(cublasLtGetStatusName)             \
  X(cublasLtMatmulDescCreate)          \
  X(cublasLtMatmulDescDestroy)         \
  X(cublasLtMatmulDescSetAttribute)    \
  X(cublasLtMatrixLayoutCreate)        \
  X(cublasLtMatrixLayoutDestroy)       \
  X(cublasLtMatrixLayoutSetAttribute)  \
  X(cublasLtMatmulPreferenceCreate)    \
  X(cublasLtMatmulPreferenceDestroy)   \
  X(cublasLtMatmulAlgoGetHeuristic)    \
  X(cublasLtMatmul)

struct CublasLt::Api {
#define GRAPHJIT_CUBLASLT_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GRAPHJIT_CUBLASLT_FUNCTIONS(GRAPHJIT_CUBLASLT_MEMBER)
#undef GRAPHJIT_CUBLASLT_MEMBER
};

namespace {

// Descriptors destroyed at scope exit.
template <class T, class D>
struct Owned {
  T value = nullptr;
  D destroy;
  ~Owned() {
    if (value) destroy(value);
  }
};

}  // namespace

StatusOr<std::shared_ptr<const CublasLt>> CublasLt::Open(const std::string& library) {
  static std::mutex mu;
  static auto* opened = new std::map<std::string, std::shared_ptr<const CublasLt>>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = opened->find(library); it != opened->end()) return it->second;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return NotFound("cannot open cuBLASLt (" + library + "): " + dlerror());
  std::shared_ptr<CublasLt> lt(new CublasLt());
  lt->handle_ = handle;
  lt->library_ = library;
  lt->api_ = std::make_unique<Api>();
#define GRAPHJIT_CUBLASLT_LOAD(fn)                                                          \
  lt->api_->fn = reinterpret_cast<decltype(&::fn)>(dlsym(handle, #fn));                    \
  if (!lt->api_->fn) return NotFound(library + " is not cuBLASLt: it has no " #fn);
  GRAPHJIT_CUBLASLT_FUNCTIONS(GRAPHJIT_CUBLASLT_LOAD)
#undef GRAPHJIT_CUBLASLT_LOAD
  cublasLtHandle_t context = nullptr;
  if (cublasStatus_t s = lt->api_->cublasLtCreate(&context); s != CUBLAS_STATUS_SUCCESS)
    return Internal(library + ": cublasLtCreate failed: " + lt->api_->cublasLtGetStatusName(s));
  lt->context_ = context;
  opened->emplace(library, lt);
  return std::shared_ptr<const CublasLt>(lt);
}

CublasLt::~CublasLt() {
  if (context_) api_->cublasLtDestroy(static_cast<cublasLtHandle_t>(context_));
  // The library stays loaded: queued work may still call into it.
}

Status CublasLt::Matmul(const Gemm& g, uint64_t a, uint64_t b, uint64_t bias, uint64_t d, void* stream) const {
  const Api& api = *api_;
  auto check = [&](cublasStatus_t s, const char* call) -> Status {
    if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
    return Internal(std::string(call) + " failed: " + api.cublasLtGetStatusName(s));
  };
  // cuBLASLt is column-major: a row-major r x c matrix is its c x r transpose there, so
  // D^T = op(B)^T op(A)^T: cuBLASLt's A is our B, its B our A, its D (n x m) our D.
  const int64_t x_rows = g.transpose_b ? g.k : g.n, x_cols = g.transpose_b ? g.n : g.k;
  const int64_t y_rows = g.transpose_a ? g.m : g.k, y_cols = g.transpose_a ? g.k : g.m;
  Owned<cublasLtMatmulDesc_t, decltype(api.cublasLtMatmulDescDestroy)> desc{nullptr, api.cublasLtMatmulDescDestroy};
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescCreate(&desc.value, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  const cublasOperation_t op_x = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_y = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof op_x),
                           "cublasLtMatmulDescSetAttribute(TRANSA)"));
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof op_y),
                           "cublasLtMatmulDescSetAttribute(TRANSB)"));
  if (g.epilogue != Gemm::Epilogue::kNone) {
    const cublasLtEpilogue_t epilogue = g.epilogue == Gemm::Epilogue::kBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
    const void* bias_pointer = reinterpret_cast<const void*>(bias);
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                             "cublasLtMatmulDescSetAttribute(EPILOGUE)"));
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                                                sizeof bias_pointer),
                             "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  }
  using Layout = Owned<cublasLtMatrixLayout_t, decltype(api.cublasLtMatrixLayoutDestroy)>;
  Layout x{nullptr, api.cublasLtMatrixLayoutDestroy}, y{nullptr, api.cublasLtMatrixLayoutDestroy},
      out{nullptr, api.cublasLtMatrixLayoutDestroy};
  auto layout = [&](Layout* l, int64_t rows, int64_t cols, int64_t stride) -> Status {
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatrixLayoutCreate(&l->value, CUDA_R_32F, rows, cols, rows), "cublasLtMatrixLayoutCreate"));
    if (g.batch == 1) return Status::Ok();
    const int32_t count = static_cast<int32_t>(g.batch);
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatrixLayoutSetAttribute(l->value, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                             "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
    return check(api.cublasLtMatrixLayoutSetAttribute(l->value, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  };
  GJ_RETURN_IF_ERROR(layout(&x, x_rows, x_cols, g.batch_stride_b));
  GJ_RETURN_IF_ERROR(layout(&y, y_rows, y_cols, g.batch_stride_a));
  GJ_RETURN_IF_ERROR(layout(&out, g.n, g.m, g.m * g.n));
  Owned<cublasLtMatmulPreference_t, decltype(api.cublasLtMatmulPreferenceDestroy)> preference{
      nullptr, api.cublasLtMatmulPreferenceDestroy};
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulPreferenceCreate(&preference.value), "cublasLtMatmulPreferenceCreate"));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const auto context = static_cast<cublasLtHandle_t>(context_);
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulAlgoGetHeuristic(context, desc.value, x.value, y.value, out.value, out.value,
                                                              preference.value, 1, &result, &found),
                           "cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0) return Unimplemented("cuBLASLt has no algorithm for this GEMM");
  const float one = 1, zero = 0;
  const void* dp = reinterpret_cast<const void*>(d);
  return check(api.cublasLtMatmul(context, desc.value, &one, reinterpret_cast<const void*>(b), x.value,
                                  reinterpret_cast<const void*>(a), y.value, &zero, dp, out.value,
                                  reinterpret_cast<void*>(d), out.value, &result.algo, nullptr, 0,
                                  static_cast<cudaStream_t>(stream)),
               "cublasLtMatmul");
}

#endif  // GRAPHJIT_HAVE_CUBLASLT_H

}  // namespace graphjit::nvptx
