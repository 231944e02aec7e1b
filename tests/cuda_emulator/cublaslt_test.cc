// The cuBLASLt stand-in (build/lib/cuda_emulator/libcublasLt.so.13, cuda_emulator/cublaslt.cc)
// and the driver calls it relies on (cuLaunchHostFunc, cuemuDeviceMemory). The library is
// opened by path with dlopen, as graphjit opens cuBLASLt; the GEMMs are compared with a
// reference computed here from cuBLASLt's definitions (column-major storage,
// D = epilogue(alpha op(A) op(B) + beta C + bias)). Without the library (no cublasLt.h
// when configured) the cuBLASLt tests are skipped, or fail when CI=true.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "cuda_emulator/fp.h"
#include "tests/cuda_emulator/cuemu_test_util.h"

#if __has_include(<cublasLt.h>)
#include <cublasLt.h>
#define CUEMU_TEST_HAVE_CUBLASLT_H 1
#else
#define CUEMU_TEST_HAVE_CUBLASLT_H 0
#endif

#ifndef CUEMU_TEST_CUBLASLT
#define CUEMU_TEST_CUBLASLT ""
#endif

namespace cuemu_test {
namespace {

// --- cuLaunchHostFunc and cuemuDeviceMemory (the driver alone) -----------------------

void MakePrimaryCurrent() { Check(cuCtxSetCurrent(PrimaryContext()), "cuCtxSetCurrent"); }

struct Calls {
  std::vector<int> order;
  std::vector<float> seen;  // what the first callback read from device memory
  const float* host = nullptr;
  size_t count = 0;
};

void RecordOne(void* user) { static_cast<Calls*>(user)->order.push_back(1); }
void RecordTwo(void* user) { static_cast<Calls*>(user)->order.push_back(2); }
void ReadDevice(void* user) {
  auto* calls = static_cast<Calls*>(user);
  calls->order.push_back(0);
  calls->seen.assign(calls->host, calls->host + calls->count);
}

// Host functions run in stream order, only when the stream is synchronized, and see the
// results of the work queued before them (here a memset).
TEST(CudaEmulatorHostFunc, RunsInStreamOrderAtSynchronize) {
  MakePrimaryCurrent();
  DeviceMemory memory;
  const size_t n = 64;
  CUdeviceptr buffer = memory.Upload(std::vector<float>(n, 2.0f));
  Calls calls;
  void* host = nullptr;
  CU_ASSERT_OK(cuemuDeviceMemory(buffer, n * sizeof(float), &host));
  calls.host = static_cast<const float*>(host);
  calls.count = n;
  CUstream stream = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CU_ASSERT_OK(cuLaunchHostFunc(stream, RecordOne, &calls));
  CU_ASSERT_OK(cuMemsetD32Async(buffer, FloatBits(-3.0f), n, stream));
  CU_ASSERT_OK(cuLaunchHostFunc(stream, ReadDevice, &calls));
  CU_ASSERT_OK(cuLaunchHostFunc(stream, RecordTwo, &calls));
  EXPECT_TRUE(calls.order.empty()) << "a host function ran before the stream was synchronized";
  // A synchronous copy does not wait for a non-blocking stream: the memset has not run.
  EXPECT_EQ(Download<float>(buffer, n), std::vector<float>(n, 2.0f));
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(calls.order, (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(calls.seen, std::vector<float>(n, -3.0f));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchHostFunc(stream, nullptr, nullptr));
  CU_ASSERT_OK(cuStreamDestroy(stream));
  // On the NULL stream too; a synchronous call runs it first.
  calls.order.clear();
  CU_ASSERT_OK(cuLaunchHostFunc(nullptr, RecordOne, &calls));
  EXPECT_TRUE(calls.order.empty());
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(calls.order, (std::vector<int>{1}));
}

TEST(CudaEmulatorHostFunc, DeviceMemoryChecksTheRange) {
  MakePrimaryCurrent();
  DeviceMemory memory;
  CUdeviceptr buffer = memory.Alloc(256);
  void* host = nullptr;
  CU_ASSERT_OK(cuemuDeviceMemory(buffer, 256, &host));
  ASSERT_NE(host, nullptr);
  void* inner = nullptr;
  CU_ASSERT_OK(cuemuDeviceMemory(buffer + 16, 240, &inner));
  EXPECT_EQ(static_cast<char*>(inner), static_cast<char*>(host) + 16);
  // Writes through the host address are device memory.
  std::memset(host, 0x5a, 4);
  EXPECT_EQ(Download<uint8_t>(buffer, 4), std::vector<uint8_t>(4, 0x5a));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuemuDeviceMemory(buffer + 16, 241, &inner));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuemuDeviceMemory(buffer, ~size_t{0}, &inner));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuemuDeviceMemory(0, 4, &inner));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuemuDeviceMemory(buffer, 4, nullptr));
  // Both are entry points of cuGetProcAddress.
  for (const char* name : {"cuLaunchHostFunc", "cuemuDeviceMemory"}) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    CU_EXPECT_OK(cuGetProcAddress(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    EXPECT_NE(fn, nullptr) << name;
  }
}

#if CUEMU_TEST_HAVE_CUBLASLT_H

// --- The cuBLASLt stand-in -------------------------------------------------------------

// The functions of the library, found with dlsym.
struct Lt {
  void* library = nullptr;
  std::string error;
  // clang-format off
#define CUEMU_LT_FUNCTIONS(X)                                                                                  \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusName) X(cublasLtGetStatusString)                    \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)                  \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)            \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
// clang-format on
#define CUEMU_LT_MEMBER(name) decltype(&::name) name = nullptr;
  CUEMU_LT_FUNCTIONS(CUEMU_LT_MEMBER)
#undef CUEMU_LT_MEMBER
};

const Lt& Library() {
  static Lt* lt = [] {
    auto* l = new Lt;
    const std::string path = CUEMU_TEST_CUBLASLT;
    if (path.empty()) {
      l->error = "the cuBLASLt stand-in was not configured (no cublasLt.h found)";
      return l;
    }
    l->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l->library) {
      l->error = "dlopen(" + path + "): " + dlerror();
      return l;
    }
#define CUEMU_LT_LOAD(name)                                                \
  l->name = reinterpret_cast<decltype(&::name)>(dlsym(l->library, #name)); \
  if (!l->name && l->error.empty()) l->error = path + " has no " #name;
    CUEMU_LT_FUNCTIONS(CUEMU_LT_LOAD)
#undef CUEMU_LT_LOAD
    return l;
  }();
  return *lt;
}

std::string StatusName(cublasStatus_t s) {
  const Lt& lt = Library();
  return lt.cublasLtGetStatusName ? lt.cublasLtGetStatusName(s) : std::to_string(static_cast<int>(s));
}

#define LT_ASSERT_OK(call)                                                                   \
  do {                                                                                       \
    cublasStatus_t lt_status_ = (call);                                                      \
    ASSERT_EQ(lt_status_, CUBLAS_STATUS_SUCCESS) << #call << ": " << StatusName(lt_status_); \
  } while (0)
#define LT_EXPECT_STATUS(expected, call)                                          \
  do {                                                                            \
    cublasStatus_t lt_status_ = (call);                                           \
    EXPECT_EQ(lt_status_, (expected)) << #call << ": " << StatusName(lt_status_); \
  } while (0)

// A logical matrix (row r, column c), as the definitions use it.
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Matrix(int r, int c) : rows(r), cols(c), v(static_cast<size_t>(r) * c, 0.0) {}
  double& at(int r, int c) { return v[static_cast<size_t>(r) * cols + c]; }
  double at(int r, int c) const { return v[static_cast<size_t>(r) * cols + c]; }
};

Matrix RandomMatrix(int rows, int cols, unsigned seed) {
  Matrix m(rows, cols);
  std::vector<float> values = RandomFloats(m.v.size(), -1.0f, 1.0f, seed);
  for (size_t i = 0; i < values.size(); ++i) m.v[i] = values[i];
  return m;
}

Matrix Transposed(const Matrix& m) {
  Matrix t(m.cols, m.rows);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) t.at(c, r) = m.at(r, c);
  return t;
}

// Column-major storage with leading dimension ld: element (r, c) at [r + c * ld]. The
// padding between columns is filled with NaN, which must never be read.
void Store(const Matrix& m, int ld, std::vector<float>* out, size_t offset) {
  const size_t need = offset + static_cast<size_t>(ld) * m.cols;
  if (out->size() < need) out->resize(need, std::numeric_limits<float>::quiet_NaN());
  for (int c = 0; c < m.cols; ++c)
    for (int r = 0; r < m.rows; ++r) (*out)[offset + r + static_cast<size_t>(c) * ld] = static_cast<float>(m.at(r, c));
}

Matrix Load(const std::vector<float>& in, int rows, int cols, int ld, size_t offset) {
  Matrix m(rows, cols);
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < rows; ++r) m.at(r, c) = in[offset + r + static_cast<size_t>(c) * ld];
  return m;
}

double Gelu(double x) {  // cuBLAS's tanh approximation
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (x + 0.044715 * x * x * x)));
}

// epilogue(alpha * opA opB + beta * C + bias) from the definitions, rounded to float.
Matrix Reference(const Matrix& op_a, const Matrix& op_b, const Matrix* c, double alpha, double beta,
                 const std::vector<float>* bias, cublasLtEpilogue_t epilogue) {
  Matrix d(op_a.rows, op_b.cols);
  for (int i = 0; i < d.rows; ++i) {
    for (int j = 0; j < d.cols; ++j) {
      double sum = 0;
      for (int p = 0; p < op_a.cols; ++p) sum += op_a.at(i, p) * op_b.at(p, j);
      double x = alpha * sum;
      if (c) x += beta * c->at(i, j);
      if (bias) x += (*bias)[i];
      if (epilogue == CUBLASLT_EPILOGUE_RELU || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) x = std::max(x, 0.0);
      if (epilogue == CUBLASLT_EPILOGUE_GELU || epilogue == CUBLASLT_EPILOGUE_GELU_BIAS) x = Gelu(x);
      d.at(i, j) = static_cast<float>(x);
    }
  }
  return d;
}

// Float results within a few units in the last place of the reference.
void ExpectNear(const Matrix& expected, const Matrix& actual, const std::string& what) {
  ASSERT_EQ(expected.rows, actual.rows);
  ASSERT_EQ(expected.cols, actual.cols);
  int bad = 0;
  for (int r = 0; r < expected.rows; ++r) {
    for (int c = 0; c < expected.cols; ++c) {
      const double e = expected.at(r, c), a = actual.at(r, c);
      const double tolerance = 4 * std::numeric_limits<float>::epsilon() * std::max(1.0, std::fabs(e));
      if (!(std::fabs(e - a) <= tolerance) && bad++ < 5)
        ADD_FAILURE() << what << ": D(" << r << "," << c << ") = " << a << ", expected " << e;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": elements that differ";
}

class CublasLtEmulator : public ::testing::Test {
 protected:
  void SetUp() override {
    const Lt& l = Library();
    if (!l.error.empty()) {
      if (InCi()) GTEST_FAIL() << l.error;
      GTEST_SKIP() << l.error;
    }
    MakePrimaryCurrent();
    ASSERT_EQ(lt().cublasLtCreate(&handle_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (!Library().error.empty()) return;
    for (cublasLtMatrixLayout_t l : layouts_) lt().cublasLtMatrixLayoutDestroy(l);
    for (cublasLtMatmulDesc_t d : descs_) lt().cublasLtMatmulDescDestroy(d);
    if (handle_) {
      EXPECT_EQ(lt().cublasLtDestroy(handle_), CUBLAS_STATUS_SUCCESS);
    }
    memory_.FreeAll();
  }
  const Lt& lt() { return Library(); }

  cublasLtMatmulDesc_t Desc(cublasOperation_t ta, cublasOperation_t tb, cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                            CUdeviceptr bias = 0, cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
    cublasLtMatmulDesc_t d = nullptr;
    Check(lt().cublasLtMatmulDescCreate(&d, compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN,
          "cublasLtMatmulDescCreate");
    descs_.push_back(d);
    int32_t a = ta, b = tb;
    uint32_t e = epilogue;
    EXPECT_EQ(lt().cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &a, sizeof(a)), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(lt().cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &b, sizeof(b)), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(lt().cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)), CUBLAS_STATUS_SUCCESS);
    if (bias) {
      void* p = reinterpret_cast<void*>(bias);
      int32_t type = CUDA_R_32F;
      EXPECT_EQ(lt().cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof(p)), CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(lt().cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)),
                CUBLAS_STATUS_SUCCESS);
    }
    return d;
  }

  cublasLtMatrixLayout_t Layout(int rows, int cols, int ld, int32_t batch = 1, int64_t stride = 0) {
    cublasLtMatrixLayout_t l = nullptr;
    EXPECT_EQ(lt().cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld), CUBLAS_STATUS_SUCCESS);
    layouts_.push_back(l);
    if (batch != 1) {
      EXPECT_EQ(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                CUBLAS_STATUS_SUCCESS);
    }
    return l;
  }

  void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

  // The heuristic's algorithms (up to `requested`) for D = op(A) op(B) of these layouts
  // within `max_workspace` bytes of workspace.
  std::vector<cublasLtMatmulHeuristicResult_t> Heuristic(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                                         cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d,
                                                         uint64_t max_workspace, int requested) {
    cublasLtMatmulPreference_t pref = nullptr;
    EXPECT_EQ(lt().cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                        sizeof max_workspace),
              CUBLAS_STATUS_SUCCESS);
    std::vector<cublasLtMatmulHeuristicResult_t> results(std::max(requested, 1));
    int count = -1;
    EXPECT_EQ(lt().cublasLtMatmulAlgoGetHeuristic(handle_, desc, a, b, d, d, pref, requested, results.data(), &count),
              CUBLAS_STATUS_SUCCESS);
    lt().cublasLtMatmulPreferenceDestroy(pref);
    results.resize(std::max(count, 0));
    return results;
  }

  cublasLtHandle_t handle_ = nullptr;
  std::vector<cublasLtMatrixLayout_t> layouts_;
  std::vector<cublasLtMatmulDesc_t> descs_;
  DeviceMemory memory_;
};

const char* OpName(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : "T"; }

// m, n, k = 37, 45, 29 with every TRANSA/TRANSB, padded leading dimensions, the algorithm
// from the heuristic; beta = 0 with C == D holding NaN: C is not read.
TEST_F(CublasLtEmulator, EveryTransposeCombination) {
  const int m = 37, n = 45, k = 29;
  const Matrix op_a = RandomMatrix(m, k, 1), op_b = RandomMatrix(k, n, 2);
  cublasLtMatmulPreference_t pref = nullptr;
  LT_ASSERT_OK(lt().cublasLtMatmulPreferenceCreate(&pref));
  uint64_t workspace = 1 << 20;
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, lt().cublasLtMatmulPreferenceSetAttribute(
                                              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T}) {
    for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T}) {
      const std::string what = std::string("op ") + OpName(ta) + OpName(tb);
      // Stored: A is m x k (N) or k x m (T), B is k x n (N) or n x k (T).
      const Matrix a = ta == CUBLAS_OP_N ? op_a : Transposed(op_a);
      const Matrix b = tb == CUBLAS_OP_N ? op_b : Transposed(op_b);
      const int lda = a.rows + 3, ldb = b.rows + 1, ldd = m + 2;
      std::vector<float> ha, hb, hd(static_cast<size_t>(ldd) * n, std::numeric_limits<float>::quiet_NaN());
      Store(a, lda, &ha, 0);
      Store(b, ldb, &hb, 0);
      CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dd = memory_.Upload(hd);
      cublasLtMatmulDesc_t desc = Desc(ta, tb);
      cublasLtMatrixLayout_t la = Layout(a.rows, a.cols, lda), lb = Layout(b.rows, b.cols, ldb), ld = Layout(m, n, ldd);
      cublasLtMatmulHeuristicResult_t result{};
      int count = -1;
      LT_ASSERT_OK(lt().cublasLtMatmulAlgoGetHeuristic(handle_, desc, la, lb, ld, ld, pref, 1, &result, &count));
      ASSERT_EQ(count, 1);
      EXPECT_EQ(result.state, CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(result.workspaceSize, 0u);
      const float alpha = 1.5f, beta = 0.0f;
      LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld,
                                       &result.algo, nullptr, 0, nullptr));
      CU_ASSERT_OK(cuCtxSynchronize());
      std::vector<float> out = Download<float>(dd, hd.size());
      ExpectNear(Reference(op_a, op_b, nullptr, alpha, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT), Load(out, m, n, ldd, 0), what);
      // The padding rows of D are untouched.
      for (int c = 0; c < n; ++c)
        for (int r = m; r < ldd; ++r) EXPECT_TRUE(std::isnan(out[r + static_cast<size_t>(c) * ldd])) << what;
    }
  }
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, lt().cublasLtMatmulPreferenceDestroy(pref));
}

// A strided batch of 3: A and C strided, B broadcast (stride 0), D strided.
TEST_F(CublasLtEmulator, StridedBatchWithBroadcastOperand) {
  const int m = 37, n = 45, k = 29, batch = 3;
  const int lda = m + 1, ldb = k, ldc = m + 4, ldd = m;
  const int64_t stride_a = static_cast<int64_t>(lda) * k + 7, stride_c = static_cast<int64_t>(ldc) * n + 3,
                stride_d = static_cast<int64_t>(ldd) * n + 11;
  const Matrix b = RandomMatrix(k, n, 10);
  std::vector<Matrix> as, cs;
  std::vector<float> ha, hb, hc;
  Store(b, ldb, &hb, 0);
  for (int i = 0; i < batch; ++i) {
    as.push_back(RandomMatrix(m, k, 20 + i));
    cs.push_back(RandomMatrix(m, n, 30 + i));
    Store(as[i], lda, &ha, i * stride_a);
    Store(cs[i], ldc, &hc, i * stride_c);
  }
  std::vector<float> hd(static_cast<size_t>(stride_d) * batch, 0.0f);
  CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dc = memory_.Upload(hc), dd = memory_.Upload(hd);
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, lda, batch, stride_a), lb = Layout(k, n, ldb, batch, 0),
                         lc = Layout(m, n, ldc, batch, stride_c), ld = Layout(m, n, ldd, batch, stride_d);
  const float alpha = 0.75f, beta = -0.5f;
  LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dc), lc, Ptr(dd), ld, nullptr,
                                   nullptr, 0, nullptr));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> out = Download<float>(dd, hd.size());
  for (int i = 0; i < batch; ++i)
    ExpectNear(Reference(as[i], b, &cs[i], alpha, beta, nullptr, CUBLASLT_EPILOGUE_DEFAULT), Load(out, m, n, ldd, i * stride_d),
               "batch " + std::to_string(i));
}

// BIAS, RELU_BIAS and GELU_BIAS: the bias (length m) is added per row of D, then the
// activation; with beta = 1 and C == D (in place).
TEST_F(CublasLtEmulator, BiasEpiloguesInPlace) {
  const int m = 37, n = 45, k = 29;
  const Matrix op_a = RandomMatrix(m, k, 40), op_b = RandomMatrix(k, n, 41), c = RandomMatrix(m, n, 42);
  std::vector<float> bias = RandomFloats(m, -2.0f, 2.0f, 43);
  const struct {
    cublasLtEpilogue_t epilogue;
    const char* name;
  } cases[] = {
      {CUBLASLT_EPILOGUE_BIAS, "BIAS"}, {CUBLASLT_EPILOGUE_RELU_BIAS, "RELU_BIAS"}, {CUBLASLT_EPILOGUE_GELU_BIAS, "GELU_BIAS"}};
  for (const auto& test : cases) {
    std::vector<float> ha, hb, hcd;
    Store(op_a, m, &ha, 0);
    Store(Transposed(op_b), n, &hb, 0);  // B stored n x k, used transposed
    Store(c, m, &hcd, 0);
    CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dcd = memory_.Upload(hcd), dbias = memory_.Upload(bias);
    cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_T, test.epilogue, dbias);
    cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(n, k, n), lcd = Layout(m, n, m);
    const float alpha = 1.0f, beta = 1.0f;
    LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dcd), lcd, Ptr(dcd), lcd,
                                     nullptr, nullptr, 0, nullptr));
    CU_ASSERT_OK(cuCtxSynchronize());
    const Matrix expected = Reference(op_a, op_b, &c, alpha, beta, &bias, test.epilogue);
    ExpectNear(expected, Load(Download<float>(dcd, hcd.size()), m, n, m, 0), test.name);
    // The activations did something: ReLU zeroes, GELU bends negative values.
    if (test.epilogue != CUBLASLT_EPILOGUE_BIAS) {
      int negative_inputs = 0;
      const Matrix linear = Reference(op_a, op_b, &c, alpha, beta, &bias, CUBLASLT_EPILOGUE_BIAS);
      for (double x : linear.v) negative_inputs += x < 0;
      EXPECT_GT(negative_inputs, 0);
    }
  }
}

// Out-of-range device memory and mismatched shapes are rejected when the GEMM is issued;
// unsupported types and attributes are NOT_SUPPORTED.
TEST_F(CublasLtEmulator, RejectsBadArguments) {
  const int m = 8, n = 6, k = 5;
  CUdeviceptr da = memory_.Alloc<float>(m * k), db = memory_.Alloc<float>(k * n), dd = memory_.Alloc<float>(m * n),
              dbias = memory_.Alloc<float>(m - 1);
  const float alpha = 1, beta = 0;
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  // D one column too big for its allocation; A starting past its allocation.
  cublasLtMatrixLayout_t ld_big = Layout(m, n, m + 1), lb_big = Layout(k, n + 1, k), ld_wide = Layout(m, n + 1, m);
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE,
                   lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld_big, Ptr(dd), ld_big,
                                       nullptr, nullptr, 0, nullptr));
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da + 4), la, Ptr(db), lb, &beta,
                                                                    Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE,
                   lt().cublasLtMatmul(handle_, desc, &alpha, reinterpret_cast<void*>(uintptr_t{16}), la, Ptr(db), lb, &beta,
                                       Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  // A bias shorter than the rows of D.
  cublasLtMatmulDesc_t bias_desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_BIAS, dbias);
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, lt().cublasLtMatmul(handle_, bias_desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta,
                                                                    Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  // Shapes: op(B) has n + 1 columns while D has n; op(A)'s k (8) is not op(B)'s (5); lda < rows; unequal batch counts.
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb_big, &beta,
                                                                    Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  cublasLtMatmulDesc_t desc_t = Desc(CUBLAS_OP_T, CUBLAS_OP_N);  // op(A) is k x m: 5 x 8
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, lt().cublasLtMatmul(handle_, desc_t, &alpha, Ptr(da), la, Ptr(db), lb, &beta,
                                                                    Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  cublasLtMatrixLayout_t la_short_ld = Layout(m, k, m - 1);
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE,
                   lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la_short_ld, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld,
                                       nullptr, nullptr, 0, nullptr));
  cublasLtMatrixLayout_t la_batched = Layout(m, k, m, 2, 0);
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE,
                   lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la_batched, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld,
                                       nullptr, nullptr, 0, nullptr));
  // The heuristic finds nothing for a problem it does not support.
  cublasLtMatmulHeuristicResult_t result{};
  int count = -1;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED,
                   lt().cublasLtMatmulAlgoGetHeuristic(handle_, desc, la, lb, ld_wide, ld_wide, nullptr, 1, &result, &count));
  EXPECT_EQ(count, 0);
  // Nothing was queued: D is untouched.
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(Download<float>(dd, m * n), std::vector<float>(m * n, 0.0f));
  // Types and attributes.
  cublasLtMatmulDesc_t other = nullptr;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatmulDescCreate(&other, CUBLAS_COMPUTE_16F, CUDA_R_16F));
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatmulDescCreate(&other, CUBLAS_COMPUTE_32F, CUDA_R_64F));
  cublasLtMatrixLayout_t wide = nullptr;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatrixLayoutCreate(&wide, CUDA_R_64F, m, k, m));
  // Matrices of mixed types (a half A, float B and D), TF32 of halves.
  cublasLtMatrixLayout_t half = nullptr;
  LT_ASSERT_OK(lt().cublasLtMatrixLayoutCreate(&half, CUDA_R_16F, m, k, m));
  layouts_.push_back(half);
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), half, Ptr(db), lb, &beta,
                                                                    Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  int64_t wrong_size = CUBLAS_OP_T;
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE,
                   lt().cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &wrong_size, sizeof(wrong_size)));
  int32_t conjugate = CUBLAS_OP_C;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED,
                   lt().cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &conjugate, sizeof(conjugate)));
  uint32_t drelu = CUBLASLT_EPILOGUE_DRELU;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED,
                   lt().cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &drelu, sizeof(drelu)));
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_DEVICE;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                                                                    &pointer_mode, sizeof(pointer_mode)));
  int32_t row_order = CUBLASLT_ORDER_ROW;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED,
                   lt().cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ORDER, &row_order, sizeof(row_order)));
  int32_t col_order = CUBLASLT_ORDER_COL;
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS,
                   lt().cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ORDER, &col_order, sizeof(col_order)));
  int64_t batch64 = 2;
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE,
                   lt().cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch64, sizeof(batch64)));
  EXPECT_STREQ(lt().cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(lt().cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_NE(std::string(lt().cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS)), "");
}

// A GEMM and a host function queued after a memset on the same stream see its result,
// and only once the stream is synchronized.
TEST_F(CublasLtEmulator, RunsInStreamOrder) {
  const int m = 37, n = 45, k = 29;
  const Matrix b = RandomMatrix(k, n, 50);
  std::vector<float> ha = RandomFloats(static_cast<size_t>(m) * k, -1.0f, 1.0f, 51), hb;
  Store(b, k, &hb, 0);
  const std::vector<float> sentinel(static_cast<size_t>(m) * n, 7.0f);
  CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dd = memory_.Upload(sentinel);
  CUstream stream = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  // A := all ones, on the stream.
  CU_ASSERT_OK(cuMemsetD32Async(da, FloatBits(1.0f), static_cast<size_t>(m) * k, stream));
  Calls calls;
  void* host = nullptr;
  CU_ASSERT_OK(cuemuDeviceMemory(da, ha.size() * sizeof(float), &host));
  calls.host = static_cast<const float*>(host);
  calls.count = ha.size();
  CU_ASSERT_OK(cuLaunchHostFunc(stream, ReadDevice, &calls));
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  const float alpha = 1, beta = 0;
  LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, nullptr,
                                   nullptr, 0, stream));
  CU_ASSERT_OK(cuLaunchHostFunc(stream, RecordTwo, &calls));
  // Not yet: the synchronous copy does not wait for a non-blocking stream.
  EXPECT_TRUE(calls.order.empty());
  EXPECT_EQ(Download<float>(dd, sentinel.size()), sentinel);
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(calls.order, (std::vector<int>{0, 2}));
  EXPECT_EQ(calls.seen, std::vector<float>(ha.size(), 1.0f));
  Matrix ones(m, k);
  for (double& x : ones.v) x = 1.0;
  ExpectNear(Reference(ones, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT),
             Load(Download<float>(dd, sentinel.size()), m, n, m, 0), "after the memset");
  CU_ASSERT_OK(cuStreamDestroy(stream));
}

// TF32 (10 mantissa bits) as the definition says: the nearest, ties away from zero.
double RoundedToTf32(double x) {
  int exponent = 0;
  const double mantissa = std::frexp(x, &exponent);  // in [0.5, 1): 11 significant bits kept
  return std::ldexp(std::round(std::ldexp(mantissa, 11)), exponent - 11);
}

// Under CUBLAS_COMPUTE_32F_FAST_TF32 the products are of operands rounded to TF32.
TEST_F(CublasLtEmulator, FastTf32RoundsTheOperands) {
  const int m = 16, n = 12, k = 64;
  Matrix a = RandomMatrix(m, k, 60), b = RandomMatrix(k, n, 61);
  std::vector<float> ha, hb, hd(static_cast<size_t>(m) * n, 0.0f);
  Store(a, m, &ha, 0);
  Store(b, k, &hb, 0);
  CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dd = memory_.Upload(hd);
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, 0, CUBLAS_COMPUTE_32F_FAST_TF32);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  const float alpha = 1, beta = 0;
  LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, nullptr,
                                   nullptr, 0, nullptr));
  CU_ASSERT_OK(cuCtxSynchronize());
  const Matrix got = Load(Download<float>(dd, hd.size()), m, n, m, 0);
  const Matrix full = Reference(a, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT);
  for (Matrix* x : {&a, &b})
    for (double& v : x->v) v = RoundedToTf32(v);
  ExpectNear(Reference(a, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT), got, "TF32");
  double apart = 0;
  for (size_t i = 0; i < got.v.size(); ++i) apart = std::max(apart, std::fabs(got.v[i] - full.v[i]));
  EXPECT_GT(apart, 1e-4) << "TF32 products look like float32 ones";
  cublasLtMatmulDesc_t bad = nullptr;
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatmulDescCreate(&bad, CUBLAS_COMPUTE_16F, CUDA_R_32F));
}

// Half and bfloat16 matrices: products summed in float, D (and C, and the bias) of the
// same type, D rounded to nearest even.
TEST_F(CublasLtEmulator, HalfAndBfloat16Gemms) {
  const int m = 9, n = 7, k = 33;
  for (const cudaDataType_t type : {CUDA_R_16F, CUDA_R_16BF}) {
    const bool bf = type == CUDA_R_16BF;
    SCOPED_TRACE(bf ? "bf16" : "f16");
    auto to_bits = [&](double v) {
      return bf ? cuemu::FloatToBf16(static_cast<float>(v)) : cuemu::FloatToHalf(static_cast<float>(v));
    };
    auto from_bits = [&](uint16_t h) { return static_cast<double>(bf ? cuemu::Bf16ToFloat(h) : cuemu::HalfToFloat(h)); };
    // Operands exactly representable in the type.
    Matrix a = RandomMatrix(m, k, 80), b = RandomMatrix(k, n, 81);
    std::vector<uint16_t> ha(static_cast<size_t>(m) * k), hb(static_cast<size_t>(k) * n), hbias(m);
    for (int c = 0; c < k; ++c)
      for (int r = 0; r < m; ++r) a.at(r, c) = from_bits(ha[r + static_cast<size_t>(c) * m] = to_bits(a.at(r, c)));
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < k; ++r) b.at(r, c) = from_bits(hb[r + static_cast<size_t>(c) * k] = to_bits(b.at(r, c)));
    std::vector<float> bias(m);
    for (int i = 0; i < m; ++i) bias[i] = static_cast<float>(from_bits(hbias[i] = to_bits(0.25 * i - 1)));
    CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dbias = memory_.Upload(hbias),
                dd = memory_.Upload(std::vector<uint16_t>(static_cast<size_t>(m) * n, 0));
    cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_RELU_BIAS);
    void* bias_pointer = Ptr(dbias);
    LT_ASSERT_OK(
        lt().cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer));
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    LT_ASSERT_OK(lt().cublasLtMatrixLayoutCreate(&la, type, m, k, m));
    LT_ASSERT_OK(lt().cublasLtMatrixLayoutCreate(&lb, type, k, n, k));
    LT_ASSERT_OK(lt().cublasLtMatrixLayoutCreate(&ld, type, m, n, m));
    for (auto l : {la, lb, ld}) layouts_.push_back(l);
    const float alpha = 1, beta = 0;
    LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, nullptr,
                                     nullptr, 0, nullptr));
    CU_ASSERT_OK(cuCtxSynchronize());
    const std::vector<uint16_t> got = Download<uint16_t>(dd, static_cast<size_t>(m) * n);
    const Matrix want = Reference(a, b, nullptr, 1, 0, &bias, CUBLASLT_EPILOGUE_RELU_BIAS);  // rounded to float
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r) EXPECT_EQ(got[r + static_cast<size_t>(c) * m], to_bits(want.at(r, c))) << r << "," << c;
    // A float bias with half matrices is another type: not supported.
    int32_t float_bias = CUDA_R_32F;
    LT_ASSERT_OK(lt().cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &float_bias, sizeof float_bias));
    LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta,
                                                                      Ptr(dd), ld, Ptr(dd), ld, nullptr, nullptr, 0, nullptr));
  }
}

// A long k and a small output: the heuristic splits k when the preference allows the
// workspace its partial sums need; a call with that algorithm must pass at least that much
// device memory.
TEST_F(CublasLtEmulator, SplitKNeedsItsWorkspace) {
  const int m = 8, n = 6, k = 4096;
  const Matrix a = RandomMatrix(m, k, 70), b = RandomMatrix(k, n, 71);
  std::vector<float> ha, hb, hd(static_cast<size_t>(m) * n, 0.0f);
  Store(a, m, &ha, 0);
  Store(b, k, &hb, 0);
  CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dd = memory_.Upload(hd);
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  auto heuristic = [&](uint64_t max_workspace) {
    const auto offered = Heuristic(desc, la, lb, ld, max_workspace, 1);
    EXPECT_EQ(offered.size(), 1u);
    return offered.empty() ? cublasLtMatmulHeuristicResult_t{} : offered[0];
  };
  EXPECT_EQ(heuristic(0).workspaceSize, 0u);
  const cublasLtMatmulHeuristicResult_t split = heuristic(1 << 20);
  const size_t need = split.workspaceSize;
  ASSERT_GT(need, 0u);
  const float alpha = 1, beta = 0;
  auto matmul = [&](void* workspace, size_t bytes) {
    return lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, &split.algo,
                               workspace, bytes, nullptr);
  };
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, matmul(nullptr, 0));
  const CUdeviceptr small = memory_.Upload(std::vector<float>(need / sizeof(float) / 2, 0.0f));
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, matmul(Ptr(small), need));  // says more than it has
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, matmul(Ptr(small), need / 2));
  const CUdeviceptr workspace = memory_.Upload(std::vector<float>(need / sizeof(float), 0.0f));
  LT_ASSERT_OK(matmul(Ptr(workspace), need));
  CU_ASSERT_OK(cuCtxSynchronize());
  // The partial sums went through the workspace; the result is the GEMM's to float32's
  // accuracy for a sum of k products.
  const Matrix got = Load(Download<float>(dd, hd.size()), m, n, m, 0);
  const Matrix want = Reference(a, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double magnitude = 0;
      for (int p = 0; p < k; ++p) magnitude += std::fabs(a.at(i, p) * b.at(p, j));
      EXPECT_NEAR(got.at(i, j), want.at(i, j), 8 * std::numeric_limits<float>::epsilon() * magnitude) << i << "," << j;
    }
  EXPECT_NE(Download<float>(workspace, need / sizeof(float)), std::vector<float>(need / sizeof(float), 0.0f));
}

// The heuristic offers up to three algorithms, the best first, as many as asked for and
// the workspace allows: k whole, split in 2 (k >= 128) and in 4 (k >= 256); each computes
// the GEMM (the splits through their workspace).
TEST_F(CublasLtEmulator, TheHeuristicOffersAlgorithmsWithinTheWorkspace) {
  const int m = 9, n = 7, k = 300;
  const Matrix a = RandomMatrix(m, k, 80), b = RandomMatrix(k, n, 81);
  std::vector<float> ha, hb, hd(static_cast<size_t>(m) * n, 0.0f);
  Store(a, m, &ha, 0);
  Store(b, k, &hb, 0);
  CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb);
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  const size_t partials = sizeof(float) * m * n;
  EXPECT_EQ(Heuristic(desc, la, lb, ld, 0, 8).size(), 1u) << "a split needs workspace";
  EXPECT_EQ(Heuristic(desc, la, lb, ld, 2 * partials, 8).size(), 2u);
  EXPECT_EQ(Heuristic(desc, la, lb, ld, 1 << 20, 1).size(), 1u) << "no more than asked for";
  const auto offered = Heuristic(desc, la, lb, ld, 1 << 20, 8);
  ASSERT_EQ(offered.size(), 3u);
  EXPECT_EQ(offered[0].workspaceSize, 0u);
  EXPECT_EQ(offered[1].workspaceSize, 2 * partials);
  EXPECT_EQ(offered[2].workspaceSize, 4 * partials);
  const Matrix want = Reference(a, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT);
  const CUdeviceptr workspace = memory_.Upload(std::vector<float>(4 * m * n, 0.0f));
  const float alpha = 1, beta = 0;
  for (size_t i = 0; i < offered.size(); ++i) {
    const CUdeviceptr dd = memory_.Upload(hd);
    LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld,
                                     &offered[i].algo, offered[i].workspaceSize ? Ptr(workspace) : nullptr,
                                     offered[i].workspaceSize, nullptr));
    CU_ASSERT_OK(cuCtxSynchronize());
    const Matrix got = Load(Download<float>(dd, hd.size()), m, n, m, 0);
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < n; ++c) {
        double magnitude = 0;
        for (int p = 0; p < k; ++p) magnitude += std::fabs(a.at(r, p) * b.at(p, c));
        EXPECT_NEAR(got.at(r, c), want.at(r, c), 8 * std::numeric_limits<float>::epsilon() * magnitude)
            << "algorithm " << i << ": " << r << "," << c;
      }
  }
}

// A GEMM captured into a graph is one kernel node: each launch of the graph computes it
// from the operands' contents then; once an operand is freed, a launch is the kernel's
// illegal address, as on a GPU.
TEST_F(CublasLtEmulator, CapturedGemmRunsAtEachGraphLaunch) {
  const int m = 19, n = 23, k = 17;
  const Matrix a1 = RandomMatrix(m, k, 60), a2 = RandomMatrix(m, k, 61), b = RandomMatrix(k, n, 62);
  std::vector<float> ha1, ha2, hb;
  Store(a1, m, &ha1, 0);
  Store(a2, m, &ha2, 0);
  Store(b, k, &hb, 0);
  CUdeviceptr da = memory_.Upload(ha1), db = memory_.Upload(hb);
  CUdeviceptr dd = memory_.Upload(std::vector<float>(static_cast<size_t>(m) * n, 0.0f));
  CUstream stream = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  const float alpha = 1, beta = 0;
  CU_ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, nullptr,
                                   nullptr, 0, stream));
  CUgraph graph = nullptr;
  CU_ASSERT_OK(cuStreamEndCapture(stream, &graph));
  size_t nodes = 0;
  CU_ASSERT_OK(cuGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, 1u);
  CUgraphExec exec = nullptr;
  CU_ASSERT_OK(cuGraphInstantiate(&exec, graph, 0));
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(Download<float>(dd, static_cast<size_t>(m) * n), std::vector<float>(static_cast<size_t>(m) * n, 0.0f))
      << "captured, not run";
  for (const auto* a : {&a1, &a2}) {
    CU_ASSERT_OK(cuMemcpyHtoD(da, a == &a1 ? ha1.data() : ha2.data(), ha1.size() * sizeof(float)));
    CU_ASSERT_OK(cuGraphLaunch(exec, stream));
    CU_ASSERT_OK(cuStreamSynchronize(stream));
    ExpectNear(Reference(*a, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT),
               Load(Download<float>(dd, static_cast<size_t>(m) * n), m, n, m, 0), a == &a1 ? "launch 1" : "launch 2");
  }
  // B freed: the next launch faults (and breaks the context, reset by the fixture's end).
  CUdeviceptr scratch = 0;
  CU_ASSERT_OK(cuMemAlloc(&scratch, hb.size() * sizeof(float)));
  CU_ASSERT_OK(cuMemcpyDtoD(scratch, db, hb.size() * sizeof(float)));
  CU_ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  LT_ASSERT_OK(lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(scratch), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, nullptr,
                                   nullptr, 0, stream));
  CUgraph freed = nullptr;
  CU_ASSERT_OK(cuStreamEndCapture(stream, &freed));
  CUgraphExecUpdateResultInfo info;
  CU_ASSERT_OK(cuGraphExecUpdate(exec, freed, &info));
  CU_ASSERT_OK(cuMemFree(scratch));
  CU_ASSERT_OK(cuGraphLaunch(exec, stream));
  CU_EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(stream));
  MakePrimaryCurrent();
  cuDevicePrimaryCtxReset(Device());
  ReacquirePrimaryContext();
  memory_.Forget();
}

// CUEMU_REJECT_ALGOS names positions in the heuristic's list: the heuristic still offers
// those algorithms, and cublasLtMatmul refuses them (NOT_SUPPORTED, reported), as a real
// library may refuse at run time an algorithm it offered. A null algorithm is the
// heuristic's first choice, position 0.
TEST_F(CublasLtEmulator, RejectedAlgorithmsAreOfferedButFail) {
  const int m = 9, n = 7, k = 300;
  const Matrix a = RandomMatrix(m, k, 90), b = RandomMatrix(k, n, 91);
  std::vector<float> ha, hb, hd(static_cast<size_t>(m) * n, 0.0f);
  Store(a, m, &ha, 0);
  Store(b, k, &hb, 0);
  CUdeviceptr da = memory_.Upload(ha), db = memory_.Upload(hb), dd = memory_.Upload(hd);
  const CUdeviceptr workspace = memory_.Upload(std::vector<float>(4 * m * n, 0.0f));
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t la = Layout(m, k, m), lb = Layout(k, n, k), ld = Layout(m, n, m);
  const float alpha = 1, beta = 0;
  auto matmul = [&](const cublasLtMatmulAlgo_t* algo, size_t bytes) {
    return lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da), la, Ptr(db), lb, &beta, Ptr(dd), ld, Ptr(dd), ld, algo,
                               bytes ? Ptr(workspace) : nullptr, bytes, nullptr);
  };
  ScopedEnv reject("CUEMU_REJECT_ALGOS", "0,2");
  const auto offered = Heuristic(desc, la, lb, ld, 1 << 20, 8);
  ASSERT_EQ(offered.size(), 3u) << "rejected algorithms are still offered";
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(&offered[0].algo, offered[0].workspaceSize));
  EXPECT_NE(LastMessage().find("algorithm 0"), std::string::npos) << LastMessage();
  EXPECT_NE(LastMessage().find("CUEMU_REJECT_ALGOS"), std::string::npos) << LastMessage();
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(&offered[2].algo, offered[2].workspaceSize));
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(nullptr, 0));
  LT_ASSERT_OK(matmul(&offered[1].algo, offered[1].workspaceSize));
  CU_ASSERT_OK(cuCtxSynchronize());
  const Matrix want = Reference(a, b, nullptr, 1, 0, nullptr, CUBLASLT_EPILOGUE_DEFAULT);
  const Matrix got = Load(Download<float>(dd, hd.size()), m, n, m, 0);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) EXPECT_NEAR(got.at(r, c), want.at(r, c), 1e-4) << r << "," << c;
  // Without the variable, every algorithm runs.
  unsetenv("CUEMU_REJECT_ALGOS");
  for (const auto& o : offered) LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(&o.algo, o.workspaceSize));
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(nullptr, 0));
  CU_ASSERT_OK(cuCtxSynchronize());
}

// With CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE=1, the first GEMM of a plan (descriptor
// settings, type, algorithm) on a handle cannot be captured: it fails and invalidates the
// capture. Once it ran outside a capture, the plan captures; another plan, or another
// handle, fails again.
TEST_F(CublasLtEmulator, FirstCallOfAPlanIsNotCapturable) {
  const int m = 8, n = 8, k = 8;
  CUdeviceptr da = memory_.Upload(std::vector<float>(m * k, 1.0f)), db = memory_.Upload(std::vector<float>(k * n, 1.0f)),
              dd = memory_.Upload(std::vector<float>(m * n, 0.0f));
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N), desc_t = Desc(CUBLAS_OP_T, CUBLAS_OP_N);
  cublasLtMatrixLayout_t l = Layout(8, 8, 8);
  const float alpha = 1, beta = 0;
  CUstream stream = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  auto matmul = [&](cublasLtHandle_t h, cublasLtMatmulDesc_t d) {
    return lt().cublasLtMatmul(h, d, &alpha, Ptr(da), l, Ptr(db), l, &beta, Ptr(dd), l, Ptr(dd), l, nullptr, nullptr, 0, stream);
  };
  // One captured call: its status, and what cuStreamEndCapture says.
  auto captured = [&](cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasStatus_t* status) {
    return CapturedAlone(stream, [&] { return matmul(h, d); }, status);
  };
  ScopedEnv first("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE", "1");
  cublasStatus_t status;
  EXPECT_EQ(captured(handle_, desc, &status), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(status, CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_NE(LastMessage().find("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE"), std::string::npos) << LastMessage();
  LT_ASSERT_OK(matmul(handle_, desc));  // outside a capture
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(captured(handle_, desc, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(captured(handle_, desc_t, &status), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << "another plan";
  EXPECT_EQ(status, CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtHandle_t other = nullptr;
  LT_ASSERT_OK(lt().cublasLtCreate(&other));
  EXPECT_EQ(captured(other, desc, &status), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << "a new handle";
  EXPECT_EQ(status, CUBLAS_STATUS_NOT_SUPPORTED);
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, lt().cublasLtDestroy(other));
  // Without the variable the first call captures.
  unsetenv("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE");
  EXPECT_EQ(captured(handle_, desc_t, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CUBLAS_STATUS_SUCCESS);
  CU_ASSERT_OK(cuStreamDestroy(stream));
}

// An algorithm from the heuristic assumes the preference's minimum alignments of A, B, C
// and D (256 bytes unless set) and the alignment of the bias pointer the descriptor had
// (16 bytes when it had none): less aligned pointers are NOT_SUPPORTED, reported. An
// algorithm cublasLtMatmul picks itself (null) sees the actual pointers.
TEST_F(CublasLtEmulator, PointersAsAlignedAsTheHeuristicWasTold) {
  const int m = 8, n = 8, k = 8;
  const size_t pad = 64;  // floats after each matrix, for offset pointers
  CUdeviceptr da = memory_.Upload(std::vector<float>(m * k + pad, 1.0f)),
              db = memory_.Upload(std::vector<float>(k * n + pad, 1.0f)),
              dd = memory_.Upload(std::vector<float>(m * n + pad, 0.0f)), dbias = memory_.Alloc<float>(m + pad);
  cublasLtMatrixLayout_t l = Layout(8, 8, 8);
  const float alpha = 1, beta = 0;
  auto heuristic = [&](cublasLtMatmulDesc_t desc, uint32_t align_a) {
    cublasLtMatmulPreference_t pref = nullptr;
    EXPECT_EQ(lt().cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
    if (align_a) {
      EXPECT_EQ(
          lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof align_a),
          CUBLAS_STATUS_SUCCESS);
    }
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    EXPECT_EQ(lt().cublasLtMatmulAlgoGetHeuristic(handle_, desc, l, l, l, l, pref, 1, &result, &count), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(count, 1);
    lt().cublasLtMatmulPreferenceDestroy(pref);
    return result.algo;
  };
  auto matmul = [&](cublasLtMatmulDesc_t desc, const cublasLtMatmulAlgo_t* algo, size_t a_off, size_t d_off) {
    return lt().cublasLtMatmul(handle_, desc, &alpha, Ptr(da + a_off), l, Ptr(db), l, &beta, Ptr(dd + d_off), l, Ptr(dd + d_off),
                               l, algo, nullptr, 0, nullptr);
  };
  cublasLtMatmulDesc_t desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  const cublasLtMatmulAlgo_t strict = heuristic(desc, 0), loose = heuristic(desc, 16);
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(desc, &strict, 0, 0));
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(desc, &strict, 16, 0));
  EXPECT_NE(LastMessage().find("A ("), std::string::npos) << LastMessage();
  EXPECT_NE(LastMessage().find("256"), std::string::npos) << LastMessage();
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(desc, &strict, 0, 128));
  EXPECT_NE(LastMessage().find("D ("), std::string::npos) << LastMessage();
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(desc, &loose, 16, 0));
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(desc, &loose, 8, 0));
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(desc, nullptr, 4, 4));
  // Alignments are powers of two.
  cublasLtMatmulPreference_t pref = nullptr;
  LT_ASSERT_OK(lt().cublasLtMatmulPreferenceCreate(&pref));
  const uint32_t three = 3;
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, lt().cublasLtMatmulPreferenceSetAttribute(
                                                    pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &three, sizeof three));
  lt().cublasLtMatmulPreferenceDestroy(pref);
  // The bias pointer: as aligned as when the heuristic ran.
  cublasLtMatmulDesc_t bias_desc = Desc(CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_BIAS, dbias);
  auto set_bias = [&](CUdeviceptr p) {
    void* v = Ptr(p);
    EXPECT_EQ(lt().cublasLtMatmulDescSetAttribute(bias_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &v, sizeof v),
              CUBLAS_STATUS_SUCCESS);
  };
  const cublasLtMatmulAlgo_t aligned_bias = heuristic(bias_desc, 0);
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(bias_desc, &aligned_bias, 0, 0));
  set_bias(dbias + 16);
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(bias_desc, &aligned_bias, 0, 0));
  EXPECT_NE(LastMessage().find("bias"), std::string::npos) << LastMessage();
  const cublasLtMatmulAlgo_t bias16 = heuristic(bias_desc, 0);
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(bias_desc, &bias16, 0, 0));
  set_bias(dbias + 4);
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(bias_desc, &bias16, 0, 0));
  // No bias pointer when the heuristic ran: 16 bytes.
  set_bias(0);
  const cublasLtMatmulAlgo_t unset = heuristic(bias_desc, 0);
  set_bias(dbias + 8);
  LT_EXPECT_STATUS(CUBLAS_STATUS_NOT_SUPPORTED, matmul(bias_desc, &unset, 0, 0));
  set_bias(dbias + 16);
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(bias_desc, &unset, 0, 0));
  CU_ASSERT_OK(cuCtxSynchronize());
}

// With two devices (run by CudaEmulatorDevices.SeveralDevicesInAProcessOfTheirOwn): a
// handle is bound to the device current at cublasLtCreate; a GEMM while another device is
// current, or with another device's memory, is CUBLAS_STATUS_INVALID_VALUE.
TEST(CublasLtTwoDevices, AHandleWorksOnItsDeviceOnly) {
  const char* devices = std::getenv("CUEMU_DEVICE_COUNT");
  if (!devices || std::string(devices) != "2") GTEST_SKIP() << "needs CUEMU_DEVICE_COUNT=2";
  const Lt& lt = Library();
  ASSERT_TRUE(lt.error.empty()) << lt.error;
  CU_ASSERT_OK(cuInit(0));
  CUcontext ctx[2];
  for (int d = 0; d < 2; ++d) CU_ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
  const int m = 8;
  const size_t bytes = m * m * sizeof(float);
  CUdeviceptr on0 = 0, a = 0, d = 0;
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  CU_ASSERT_OK(cuMemAlloc(&on0, bytes));
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  CU_ASSERT_OK(cuMemAlloc(&a, bytes));
  CU_ASSERT_OK(cuMemAlloc(&d, bytes));
  CU_ASSERT_OK(cuMemsetD32(a, 0x3f800000, m * m));  // 1.0f
  cublasLtHandle_t handle = nullptr;
  LT_ASSERT_OK(lt.cublasLtCreate(&handle));  // device 1's
  cublasLtMatmulDesc_t desc = nullptr;
  LT_ASSERT_OK(lt.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t l = nullptr;
  LT_ASSERT_OK(lt.cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, m, m, m));
  const float alpha = 1, beta = 0;
  auto matmul = [&](CUdeviceptr A) {
    return lt.cublasLtMatmul(handle, desc, &alpha, reinterpret_cast<void*>(A), l, reinterpret_cast<void*>(a), l, &beta,
                             reinterpret_cast<void*>(d), l, reinterpret_cast<void*>(d), l, nullptr, nullptr, 0, nullptr);
  };
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, matmul(a));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(Download<float>(d, m * m), std::vector<float>(m * m, 8.0f));
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, matmul(on0));  // device 0's A
  EXPECT_NE(LastMessage().find("A is device 0's memory"), std::string::npos) << LastMessage();
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  LT_EXPECT_STATUS(CUBLAS_STATUS_INVALID_VALUE, matmul(a));  // device 0 current
  EXPECT_NE(LastMessage().find("device 1's"), std::string::npos) << LastMessage();
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  lt.cublasLtMatrixLayoutDestroy(l);
  lt.cublasLtMatmulDescDestroy(desc);
  LT_EXPECT_STATUS(CUBLAS_STATUS_SUCCESS, lt.cublasLtDestroy(handle));
  CU_EXPECT_OK(cuMemFree(a));
  CU_EXPECT_OK(cuMemFree(d));
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  CU_EXPECT_OK(cuMemFree(on0));
  for (int dev = 0; dev < 2; ++dev) CU_EXPECT_OK(cuDevicePrimaryCtxRelease(dev));
}

#else  // !CUEMU_TEST_HAVE_CUBLASLT_H

TEST(CublasLtEmulator, Unavailable) {
  if (InCi()) GTEST_FAIL() << "cublasLt.h was not found: the cuBLASLt stand-in is not tested";
  GTEST_SKIP() << "cublasLt.h was not found: the cuBLASLt stand-in is not tested";
}

#endif  // CUEMU_TEST_HAVE_CUBLASLT_H

}  // namespace
}  // namespace cuemu_test
