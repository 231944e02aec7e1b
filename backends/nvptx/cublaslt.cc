#include "backends/nvptx/cublaslt.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#ifdef GRAPHJIT_HAVE_CUBLASLT_H
#include <cublasLt.h>
#endif

namespace graphjit::nvptx {

#ifndef GRAPHJIT_HAVE_CUBLASLT_H

struct CublasLt::Api {};
StatusOr<std::shared_ptr<const CublasLt>> CublasLt::Open(const std::string&, int) {
  return Unimplemented("this build of graphjit has no cuBLASLt support (the CUDA toolkit's cublasLt.h was not found)");
}
CublasLt::~CublasLt() = default;
struct GemmPlan::Descriptors {};
StatusOr<GemmPlan> CublasLt::Plan(const Gemm&, size_t, int) const { return Unimplemented("no cuBLASLt support in this build"); }
Status CublasLt::Matmul(const GemmPlan&, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, void*) const {
  return Unimplemented("no cuBLASLt support in this build");
}

#else

// The entry points used, with cublasLt.h's types.
#define GRAPHJIT_CUBLASLT_FUNCTIONS(X)    \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtGetStatusName)                \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)     \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
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

StatusOr<std::shared_ptr<const CublasLt>> CublasLt::Open(const std::string& library, int device) {
  static std::mutex mu;
  static auto* opened = new std::map<std::pair<std::string, int>, std::shared_ptr<const CublasLt>>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = opened->find({library, device}); it != opened->end()) return it->second;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return NotFound("cannot open cuBLASLt (" + library + "): " + dlerror());
  std::shared_ptr<CublasLt> lt(new CublasLt());
  lt->handle_ = handle;
  lt->library_ = library;
  lt->api_ = std::make_unique<Api>();
#define GRAPHJIT_CUBLASLT_LOAD(fn)                                      \
  lt->api_->fn = reinterpret_cast<decltype(&::fn)>(dlsym(handle, #fn)); \
  if (!lt->api_->fn) return NotFound(library + " is not cuBLASLt: it has no " #fn);
  GRAPHJIT_CUBLASLT_FUNCTIONS(GRAPHJIT_CUBLASLT_LOAD)
#undef GRAPHJIT_CUBLASLT_LOAD
  cublasLtHandle_t context = nullptr;
  if (cublasStatus_t s = lt->api_->cublasLtCreate(&context); s != CUBLAS_STATUS_SUCCESS)
    return Internal(library + ": cublasLtCreate failed: " + lt->api_->cublasLtGetStatusName(s));
  lt->context_ = context;
  opened->emplace(std::make_pair(library, device), lt);
  return std::shared_ptr<const CublasLt>(lt);
}

CublasLt::~CublasLt() {
  if (context_) api_->cublasLtDestroy(static_cast<cublasLtHandle_t>(context_));
  // The library stays loaded: queued work may still call into it.
}

struct GemmPlan::Descriptors {
  decltype(&::cublasLtMatmulDescDestroy) destroy_desc = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) destroy_layout = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, out = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos;  // GemmPlan::workspaces' algorithms
  std::mutex mu;                            // the bias pointer is an attribute of `desc`, set at each call
  ~Descriptors() {
    if (desc) destroy_desc(desc);
    for (cublasLtMatrixLayout_t l : {x, y, out})
      if (l) destroy_layout(l);
  }
};

StatusOr<GemmPlan> CublasLt::Plan(const Gemm& g, size_t max_workspace, int max_algorithms) const {
  const Api& api = *api_;
  auto check = [&](cublasStatus_t s, const char* call) -> Status {
    if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
    return Internal(std::string(call) + " failed: " + api.cublasLtGetStatusName(s));
  };
  GemmPlan plan;
  plan.gemm = g;
  plan.descriptors = std::make_shared<GemmPlan::Descriptors>();
  GemmPlan::Descriptors& d = *plan.descriptors;
  d.destroy_desc = api.cublasLtMatmulDescDestroy;
  d.destroy_layout = api.cublasLtMatrixLayoutDestroy;
  // cuBLASLt is column-major: a row-major r x c matrix is its c x r transpose there, so
  // D^T = op(B)^T op(A)^T: cuBLASLt's A is our B, its B our A, its D (n x m) our D.
  const int64_t x_rows = g.transpose_b ? g.k : g.n, x_cols = g.transpose_b ? g.n : g.k;
  const int64_t y_rows = g.transpose_a ? g.m : g.k, y_cols = g.transpose_a ? g.k : g.m;
  const cublasComputeType_t compute = g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = g.type == Gemm::Type::kF16 ? CUDA_R_16F : g.type == Gemm::Type::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescCreate(&d.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  const cublasOperation_t op_x = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_y = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof op_x),
                           "cublasLtMatmulDescSetAttribute(TRANSA)"));
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof op_y),
                           "cublasLtMatmulDescSetAttribute(TRANSB)"));
  if (g.epilogue != Gemm::Epilogue::kNone) {
    const cublasLtEpilogue_t epilogue =
        g.epilogue == Gemm::Epilogue::kBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
    GJ_RETURN_IF_ERROR(
        check(api.cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
              "cublasLtMatmulDescSetAttribute(EPILOGUE)"));
    const int32_t bias_type = type;
    GJ_RETURN_IF_ERROR(
        check(api.cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
              "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)"));
    // The heuristic's choice depends on the bias pointer's value (cublasLt.h): it is asked
    // with an address of the alignment every call's bias has (the least such address;
    // nothing reads it), and each call sets the real one.
    const void* bias_pointer = reinterpret_cast<const void*>(static_cast<uintptr_t>(g.align_bias));
    GJ_RETURN_IF_ERROR(
        check(api.cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer),
              "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  }
  auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t stride) -> Status {
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatrixLayoutCreate(l, type, rows, cols, rows), "cublasLtMatrixLayoutCreate"));
    if (g.batch == 1) return Status::Ok();
    const int32_t count = static_cast<int32_t>(g.batch);
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                             "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
    return check(api.cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  };
  GJ_RETURN_IF_ERROR(layout(&d.x, x_rows, x_cols, g.batch_stride_b));
  GJ_RETURN_IF_ERROR(layout(&d.y, y_rows, y_cols, g.batch_stride_a));
  GJ_RETURN_IF_ERROR(layout(&d.out, g.n, g.m, g.m * g.n));
  Owned<cublasLtMatmulPreference_t, decltype(api.cublasLtMatmulPreferenceDestroy)> preference{
      nullptr, api.cublasLtMatmulPreferenceDestroy};
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulPreferenceCreate(&preference.value), "cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace = max_workspace;
  GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulPreferenceSetAttribute(preference.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                    &workspace, sizeof workspace),
                           "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)"));
  // The pointers' alignments (cuBLASLt's A is our B, its B our A; C and D are our D).
  for (auto [attribute, bytes] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.align_b},
                                  std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.align_a},
                                  std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g.align_d},
                                  std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.align_d}}) {
    const uint32_t value = static_cast<uint32_t>(bytes);
    GJ_RETURN_IF_ERROR(check(api.cublasLtMatmulPreferenceSetAttribute(preference.value, attribute, &value, sizeof value),
                             "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)"));
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(std::max(max_algorithms, 1));
  int found = 0;
  GJ_RETURN_IF_ERROR(
      check(api.cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(context_), d.desc, d.x, d.y, d.out, d.out,
                                               preference.value, static_cast<int>(results.size()), results.data(), &found),
            "cublasLtMatmulAlgoGetHeuristic"));
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    d.algos.push_back(results[i].algo);
    plan.workspaces.push_back(results[i].workspaceSize);
  }
  if (d.algos.empty()) return Unimplemented("cuBLASLt has no algorithm for this GEMM");
  return plan;
}

Status CublasLt::Matmul(const GemmPlan& plan, uint64_t a, uint64_t b, uint64_t bias, uint64_t d, uint64_t workspace,
                        void* stream) const {
  const Api& api = *api_;
  GemmPlan::Descriptors& p = *plan.descriptors;
  std::lock_guard<std::mutex> lock(p.mu);
  if (plan.gemm.epilogue != Gemm::Epilogue::kNone) {
    const void* bias_pointer = reinterpret_cast<const void*>(bias);
    if (cublasStatus_t s =
            api.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer);
        s != CUBLAS_STATUS_SUCCESS)
      return Internal(std::string("cublasLtMatmulDescSetAttribute(BIAS_POINTER) failed: ") + api.cublasLtGetStatusName(s));
  }
  const float one = 1, zero = 0;
  const void* dp = reinterpret_cast<const void*>(d);
  cublasStatus_t s = api.cublasLtMatmul(static_cast<cublasLtHandle_t>(context_), p.desc, &one, reinterpret_cast<const void*>(b),
                                        p.x, reinterpret_cast<const void*>(a), p.y, &zero, dp, p.out, reinterpret_cast<void*>(d),
                                        p.out, &p.algos.at(plan.algorithm), reinterpret_cast<void*>(workspace),
                                        plan.workspace_bytes(), static_cast<cudaStream_t>(stream));
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string("cublasLtMatmul failed: ") + api.cublasLtGetStatusName(s));
}

#endif  // GRAPHJIT_HAVE_CUBLASLT_H

}  // namespace graphjit::nvptx
