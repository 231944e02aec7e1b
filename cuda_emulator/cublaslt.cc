// A stand-in for cuBLASLt (libcublasLt.so.13) on the CUDA emulator: the float GEMM of
// cublasLtMatmul with cuBLASLt's documented semantics (column-major, op(A) m x k,
// op(B) k x n, C and D m x n, strided batches, the bias/ReLU/GELU epilogues), computed on
// the CPU in double and rounded once to float. The work is queued on the stream as the
// emulator's kernels are (cuemuLaunchHostTask), so it runs in stream order when the stream
// is synchronized, and a captured GEMM is a kernel node of the graph. Only FP32 (CUBLAS_COMPUTE_32F, or
// CUBLAS_COMPUTE_32F_FAST_TF32 with the operands rounded to TF32 as the tensor cores take them; float scale,
// column order, host alpha/beta) on matrices of one type, CUDA_R_32F, CUDA_R_16F or CUDA_R_16BF (summed in
// float as the hardware does, D rounded to its type to nearest even), is supported; anything else is
// CUBLAS_STATUS_NOT_SUPPORTED.
// The heuristic offers up to three algorithms: k whole, or split in 2 or 4 where the
// preference allows the workspace (the split in 4 first for a long k and a small output):
// a split's partial sums go through that workspace, which a call must pass (at least the
// algorithm's workspaceSize bytes of device memory, else CUBLAS_STATUS_INVALID_VALUE) and
// which must stay its own until the GEMM has run.
// As strict as cuBLASLt where a program may get away with less on one GPU:
//  - An algorithm from the heuristic assumes the preference's
//    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES (powers of two; 256 unless set, as in
//    cublasLt.h) and the alignment of the descriptor's bias pointer when the heuristic ran
//    (its largest power-of-two divisor up to 256; 16 bytes if it had none): cublasLtMatmul
//    with a less aligned A, B, C (read when beta != 0), D or bias is
//    CUBLAS_STATUS_NOT_SUPPORTED, reported. A null algorithm is picked from the actual
//    pointers and needs no more than the elements' alignment.
//  - CUEMU_REJECT_ALGOS=i,j,...: the algorithms at those positions of the heuristic's list
//    (0: its first choice; a null algorithm is position 0) are still offered, and
//    cublasLtMatmul refuses them with CUBLAS_STATUS_NOT_SUPPORTED, reported once per call,
//    as a library may refuse at run time an algorithm its heuristic offered.
//  - CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE=1: the first cublasLtMatmul of a plan on a handle
//    (the plan: the descriptor's compute type, transposes, epilogue and bias type, the
//    matrices' type and the algorithm's split of k) loads its kernel, which a capture cannot
//    record: made while its stream captures, it invalidates the capture (as an unsafe driver
//    call does) and returns CUBLAS_STATUS_NOT_SUPPORTED. Once the plan ran outside a capture
//    on that handle, captured calls of it succeed.
//  - A handle is bound to the device current at cublasLtCreate (device 0 without a context):
//    a GEMM while another device is current, or with another device's memory, is
//    CUBLAS_STATUS_INVALID_VALUE, reported (a queued GEMM whose memory is out of reach when
//    it runs is the kernel's illegal address).
// Reports go to the emulator's channel (cuemuReport: stderr unless CUEMU_QUIET, and
// cuemuGetLastErrorMessage).
#include <cublasLt.h>
#include <cuda.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "cuda_emulator/fp.h"

#define CUBLASLT_EMU_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint64_t kHandleMagic = 0x6375626c61734c74ull;  // "cublasLt"

// What makes a GEMM's kernel: the descriptor's settings, the matrices' type and the
// algorithm's split of k (see FirstCallUncapturable).
using Plan = std::array<int64_t, 7>;

struct Handle {
  uint64_t magic = kHandleMagic;
  CUdevice device = 0;  // the device current at cublasLtCreate
  std::mutex mu;
  std::set<Plan> warm;  // the plans this handle has run outside a capture
};

struct MatmulDesc {
  bool tf32 = false;  // CUBLAS_COMPUTE_32F_FAST_TF32
  cublasOperation_t trans_a = CUBLAS_OP_N;
  cublasOperation_t trans_b = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int bias_type = -1;  // -1: D's
};

struct Layout {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;  // elements between batches; 0: the same matrix for every batch
};

struct Preference {
  uint64_t max_workspace = 0;
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D: cublasLt.h's default
};

MatmulDesc* Desc(cublasLtMatmulDesc_t d) { return reinterpret_cast<MatmulDesc*>(d); }
Layout* Lay(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l); }
Preference* Pref(cublasLtMatmulPreference_t p) { return reinterpret_cast<Preference*>(p); }

bool ValidHandle(cublasLtHandle_t h) { return h != nullptr && reinterpret_cast<Handle*>(h)->magic == kHandleMagic; }

// Reads an attribute value of exactly sizeof(T) bytes.
template <typename T>
bool Read(const void* buf, size_t size, T* out) {
  if (!buf || size != sizeof(T)) return false;
  std::memcpy(out, buf, sizeof(T));
  return true;
}

bool SupportedEpilogue(uint32_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_BIAS: return true;
    default: return false;
  }
}

bool HasBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS;
}

// The stand-in's algorithms, as cublasLtMatmulAlgo_t holds them: k in `splits` parts, whose
// partial sums need `workspace` bytes; `index`, its position in the heuristic's list (0:
// its first choice); the alignments (bytes) the heuristic was promised for A, B, C and D
// (the preference's CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES; 0: no requirement, for the
// algorithm cublasLtMatmul picks itself from the actual pointers), and that of the bias
// pointer the descriptor had then (0: none).
constexpr uint64_t kAlgoMagic = 0x616c676f456d7531ull;  // "algoEmu1"
struct Algo {
  uint64_t magic = kAlgoMagic;
  uint64_t splits = 1;
  uint64_t workspace = 0;
  uint32_t index = 0;
  uint32_t alignment[4] = {0, 0, 0, 0};
  uint32_t bias_alignment = 0;
};
static_assert(sizeof(Algo) <= sizeof(cublasLtMatmulAlgo_t), "an algorithm fits cuBLASLt's opaque struct");

// The problem, checked: m, n, k and the batch count.
struct Shape {
  uint64_t m = 0, n = 0, k = 0;
  int32_t batch = 1;
};

cublasStatus_t CheckShape(const MatmulDesc* d, const Layout* a, const Layout* b, const Layout* c, const Layout* dd,
                          Shape* shape) {
  if (!d || !a || !b || !c || !dd) return CUBLAS_STATUS_INVALID_VALUE;
  const uint64_t m = d->trans_a == CUBLAS_OP_N ? a->rows : a->cols;
  const uint64_t k = d->trans_a == CUBLAS_OP_N ? a->cols : a->rows;
  const uint64_t kb = d->trans_b == CUBLAS_OP_N ? b->rows : b->cols;
  const uint64_t n = d->trans_b == CUBLAS_OP_N ? b->cols : b->rows;
  if (k != kb || dd->rows != m || dd->cols != n || c->rows != m || c->cols != n) return CUBLAS_STATUS_INVALID_VALUE;
  if (a->type != dd->type || b->type != dd->type || c->type != dd->type) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (d->tf32 && dd->type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  const int bias = d->bias_type == -1 ? dd->type : d->bias_type;
  if (HasBias(d->epilogue) && bias != dd->type) return CUBLAS_STATUS_NOT_SUPPORTED;
  for (const Layout* l : {a, b, c, dd}) {
    if (l->ld < static_cast<int64_t>(std::max<uint64_t>(l->rows, 1))) return CUBLAS_STATUS_INVALID_VALUE;
    if (l->batch != dd->batch) return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (dd->batch > 1 && dd->stride == 0) return CUBLAS_STATUS_INVALID_VALUE;  // every batch would write the same D
  *shape = Shape{m, n, k, dd->batch};
  return CUBLAS_STATUS_SUCCESS;
}

// The elements [lo, hi) of all batches of a matrix, relative to its pointer.
void Extent(const Layout* l, int64_t* lo, int64_t* hi) {
  *lo = 0;
  *hi = 0;
  if (l->rows == 0 || l->cols == 0) return;
  const int64_t one = static_cast<int64_t>((l->cols - 1) * l->ld + l->rows);
  const int64_t last = static_cast<int64_t>(l->batch - 1) * l->stride;
  *lo = std::min<int64_t>(0, last);
  *hi = std::max<int64_t>(0, last) + one;
}

size_t ElementSize(cudaDataType_t type) { return type == CUDA_R_32F ? 4 : 2; }

// Element i of a matrix of `type` at `base`, as a float.
float Load(const char* base, int64_t i, cudaDataType_t type) {
  if (type == CUDA_R_32F) {
    float v;
    std::memcpy(&v, base + i * 4, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, base + i * 2, 2);
  return type == CUDA_R_16F ? cuemu::HalfToFloat(h) : cuemu::Bf16ToFloat(h);
}

// Stores v as element i, rounded to `type` (to nearest even, from the float the sums are).
void Store(char* base, int64_t i, cudaDataType_t type, float v) {
  if (type == CUDA_R_32F) {
    std::memcpy(base + i * 4, &v, 4);
    return;
  }
  const uint16_t h = type == CUDA_R_16F ? cuemu::FloatToHalf(v) : cuemu::FloatToBf16(v);
  std::memcpy(base + i * 2, &h, 2);
}

// The host address of a matrix (all batches) in emulated device memory, or nullptr.
char* Resolve(const void* ptr, const Layout* l) {
  int64_t lo, hi;
  Extent(l, &lo, &hi);
  if (hi == lo) return static_cast<char*>(const_cast<void*>(ptr));
  if (!ptr) return nullptr;
  const int64_t size = static_cast<int64_t>(ElementSize(l->type));
  const CUdeviceptr base = reinterpret_cast<CUdeviceptr>(ptr) + lo * size;
  void* host = nullptr;
  if (cuemuDeviceMemory(base, static_cast<size_t>((hi - lo) * size), &host) != CUDA_SUCCESS) return nullptr;
  return static_cast<char*>(host) - lo * size;
}

// The algorithms for `shape` within `max_workspace` bytes, the heuristic's best first: k
// whole, or split in 2 (k of 128 or more) or in 4 (k of 256 or more) when the partial sums
// fit; the split in 4 comes first when k is long (at least 1024 and 8 times the longer of m
// and n), as cuBLASLt's split-k does for a small output.
std::vector<Algo> Algos(const Shape& shape, uint64_t max_workspace) {
  std::vector<Algo> algos(1);
  for (uint64_t splits : {2, 4}) {
    const uint64_t partials = splits * shape.m * shape.n * static_cast<uint64_t>(shape.batch) * sizeof(float);
    if (partials > 0 && shape.k >= 64 * splits && partials <= max_workspace) {
      Algo algo;
      algo.splits = splits;
      algo.workspace = partials;
      algos.push_back(algo);
    }
  }
  if (algos.back().splits == 4 && shape.k >= 1024 && shape.k >= 8 * std::max(shape.m, shape.n))
    std::rotate(algos.begin(), algos.end() - 1, algos.end());
  for (size_t i = 0; i < algos.size(); ++i) algos[i].index = static_cast<uint32_t>(i);
  return algos;
}

// The largest power of two (at most 256) that divides a device address.
uint32_t AlignmentOf(const void* ptr) {
  const uint64_t p = reinterpret_cast<uint64_t>(ptr);
  return p == 0 ? 256 : static_cast<uint32_t>(std::min<uint64_t>(p & -p, 256));
}

// Whether CUEMU_REJECT_ALGOS (indices in the heuristic's list, comma-separated) names `index`.
bool Rejected(uint32_t index) {
  const char* env = std::getenv("CUEMU_REJECT_ALGOS");
  if (!env) return false;
  for (const char* p = env; *p;) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(p, &end, 10);
    if (end != p && v == index) return true;
    p = end != p ? end : p + 1;
    while (*p == ',' || *p == ' ') ++p;
  }
  return false;
}

// CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE=1: the first GEMM of a plan on a handle loads and
// configures its kernel, which a stream capture cannot record.
bool FirstCallUncapturable() {
  const char* env = std::getenv("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE");
  return env && *env && std::string(env) != "0";
}

void Report(const std::string& message) { cuemuReport(("cuBLASLt: " + message).c_str()); }

// A GEMM queued on a stream: its operands' device addresses, resolved each time it runs
// (a captured GEMM runs once per graph launch).
struct Work {
  Shape shape;
  MatmulDesc desc;
  Algo algo;
  Layout a, b, c, d;
  const void *A = nullptr, *B = nullptr, *C = nullptr;
  void* D = nullptr;
  void* workspace = nullptr;
  double alpha = 1, beta = 0;
};

double Gelu(double x) {
  const double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

// Device memory freed since the GEMM was queued is the kernel's illegal address.
CUresult RunWork(void* user) {
  const Work* w = static_cast<const Work*>(user);
  const Shape& s = w->shape;
  const cudaDataType_t type = w->d.type;  // every matrix's, and the bias's
  const char *ha = nullptr, *hb = nullptr, *hc = nullptr, *hbias = nullptr;
  char* hd = Resolve(w->D, &w->d);
  bool ok = hd != nullptr;
  if (s.k > 0) ok = ok && (ha = Resolve(w->A, &w->a)) && (hb = Resolve(w->B, &w->b));
  if (w->beta != 0) ok = ok && (hc = Resolve(w->C, &w->c));
  if (HasBias(w->desc.epilogue)) {
    void* host = nullptr;
    ok = ok && cuemuDeviceMemory(reinterpret_cast<CUdeviceptr>(w->desc.bias), s.m * ElementSize(type), &host) == CUDA_SUCCESS;
    hbias = static_cast<const char*>(host);
  }
  float* partials = nullptr;  // the workspace: [batch][split][n][m]
  if (w->algo.workspace) {
    void* host = nullptr;
    ok = ok && cuemuDeviceMemory(reinterpret_cast<CUdeviceptr>(w->workspace), w->algo.workspace, &host) == CUDA_SUCCESS;
    partials = static_cast<float*>(host);
  }
  if (!ok) return CUDA_ERROR_ILLEGAL_ADDRESS;
  const bool ta = w->desc.trans_a != CUBLAS_OP_N, tb = w->desc.trans_b != CUBLAS_OP_N;
  const cublasLtEpilogue_t e = w->desc.epilogue;
  const int64_t size = static_cast<int64_t>(ElementSize(type));
  auto operand = [&](const char* base, int64_t i) {
    const float v = Load(base, i, type);
    return static_cast<double>(w->desc.tf32 ? cuemu::RoundToTf32(v) : v);
  };
  const uint64_t splits = w->algo.splits, per_split = (s.k + splits - 1) / splits;
  std::vector<double> sums(s.m * s.n);
  std::vector<float> out(s.m * s.n);
  for (int32_t batch = 0; batch < s.batch; ++batch) {
    const char* A = ha + batch * w->a.stride * size;
    const char* B = hb + batch * w->b.stride * size;
    const char* C = w->beta != 0 ? hc + batch * w->c.stride * size : nullptr;
    char* D = hd + batch * w->d.stride * size;
    // One sum over k per element, or (k split) each split's partial sums stored in float
    // in the workspace, then added.
    float* part = partials ? partials + batch * splits * s.m * s.n : nullptr;
    for (uint64_t split = 0; split < splits; ++split)
      for (uint64_t j = 0; j < s.n; ++j)
        for (uint64_t i = 0; i < s.m; ++i) {
          double sum = 0;
          for (uint64_t p = split * per_split; p < std::min(s.k, (split + 1) * per_split); ++p) {
            const double x = operand(A, ta ? i * w->a.ld + p : p * w->a.ld + i);
            const double y = operand(B, tb ? p * w->b.ld + j : j * w->b.ld + p);
            sum += x * y;
          }
          if (part)
            part[(split * s.n + j) * s.m + i] = static_cast<float>(sum);
          else
            sums[j * s.m + i] = sum;
        }
    if (part)
      for (uint64_t j = 0; j < s.n; ++j)
        for (uint64_t i = 0; i < s.m; ++i) {
          double sum = 0;
          for (uint64_t split = 0; split < splits; ++split) sum += part[(split * s.n + j) * s.m + i];
          sums[j * s.m + i] = sum;
        }
    for (uint64_t j = 0; j < s.n; ++j) {
      for (uint64_t i = 0; i < s.m; ++i) {
        double v = w->alpha * sums[j * s.m + i];
        if (C) v += w->beta * static_cast<double>(Load(C, static_cast<int64_t>(j * w->c.ld + i), type));
        if (HasBias(e)) v += Load(hbias, static_cast<int64_t>(i), type);
        if (e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS) v = v > 0 ? v : 0;
        if (e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS) v = Gelu(v);
        out[j * s.m + i] = static_cast<float>(v);
      }
    }
    // Stored after the whole batch is computed: D may overlap A, B or C.
    for (uint64_t j = 0; j < s.n; ++j)
      for (uint64_t i = 0; i < s.m; ++i) Store(D, static_cast<int64_t>(j * w->d.ld + i), type, out[j * s.m + i]);
  }
  return CUDA_SUCCESS;
}

void ReleaseWork(void* user) { delete static_cast<Work*>(user); }

}  // namespace

// ---------------------------------------------------------------------------------------
// The handle and status names

CUBLASLT_EMU_API cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  auto* h = new Handle;
  if (cuCtxGetDevice(&h->device) != CUDA_SUCCESS) h->device = 0;  // no context: device 0's, as the runtime's
  *handle = reinterpret_cast<cublasLtHandle_t>(h);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!ValidHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  Handle* h = reinterpret_cast<Handle*>(handle);
  h->magic = 0;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {
struct StatusText {
  cublasStatus_t status;
  const char* name;
  const char* text;
};
const StatusText kStatuses[] = {
    {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS", "success"},
    {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"},
    {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
    {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE", "an invalid numeric value was used as an argument"},
    {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH", "an absent device architectural feature is required"},
    {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
    {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
    {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
    {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"},
    {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR", "an error was detected when checking the current licensing"},
};
}  // namespace

CUBLASLT_EMU_API const char* cublasLtGetStatusName(cublasStatus_t status) {
  for (const StatusText& s : kStatuses)
    if (s.status == status) return s.name;
  return "CUBLAS_STATUS_UNKNOWN";
}

CUBLASLT_EMU_API const char* cublasLtGetStatusString(cublasStatus_t status) {
  for (const StatusText& s : kStatuses)
    if (s.status == status) return s.text;
  return "unknown error";
}

// ---------------------------------------------------------------------------------------
// Descriptors

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                                         cudaDataType_t scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  if ((compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32) || scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  auto* d = new MatmulDesc;
  d->tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete Desc(desc);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                               const void* buf, size_t size) {
  MatmulDesc* d = Desc(desc);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      int32_t op;
      if (!Read(buf, size, &op)) return CUBLAS_STATUS_INVALID_VALUE;
      if (op != CUBLAS_OP_N && op != CUBLAS_OP_T) return CUBLAS_STATUS_NOT_SUPPORTED;
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d->trans_a : d->trans_b) = static_cast<cublasOperation_t>(op);
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
      uint32_t e;
      if (!Read(buf, size, &e)) return CUBLAS_STATUS_INVALID_VALUE;
      if (!SupportedEpilogue(e)) return CUBLAS_STATUS_NOT_SUPPORTED;
      d->epilogue = static_cast<cublasLtEpilogue_t>(e);
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: {
      const void* p;
      if (!Read(buf, size, &p)) return CUBLAS_STATUS_INVALID_VALUE;
      d->bias = p;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
      int32_t t;
      if (!Read(buf, size, &t)) return CUBLAS_STATUS_INVALID_VALUE;
      if (t != CUDA_R_32F && t != CUDA_R_16F && t != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
      d->bias_type = t;
      return CUBLAS_STATUS_SUCCESS;
    }
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                                           uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  if (type != CUDA_R_32F && type != CUDA_R_16F && type != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (rows > INT32_MAX || cols > INT32_MAX || ld < 0) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new Layout;
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete Lay(layout);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                                 cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                                 size_t size) {
  Layout* l = Lay(layout);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: {
      int32_t n;
      if (!Read(buf, size, &n) || n < 1) return CUBLAS_STATUS_INVALID_VALUE;
      l->batch = n;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: {
      int64_t stride;
      if (!Read(buf, size, &stride)) return CUBLAS_STATUS_INVALID_VALUE;
      l->stride = stride;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATRIX_LAYOUT_ORDER: {
      int32_t order;
      if (!Read(buf, size, &order)) return CUBLAS_STATUS_INVALID_VALUE;
      return order == CUBLASLT_ORDER_COL ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    }
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete Pref(pref);
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                     cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                                     size_t size) {
  Preference* p = Pref(pref);
  if (!p) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: {
      uint64_t bytes;
      if (!Read(buf, size, &bytes)) return CUBLAS_STATUS_INVALID_VALUE;
      p->max_workspace = bytes;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
      // A power of two; an algorithm never needs more than 256 (cudaMalloc's alignment).
      uint32_t bytes;
      if (!Read(buf, size, &bytes) || bytes == 0 || (bytes & (bytes - 1)) != 0) return CUBLAS_STATUS_INVALID_VALUE;
      p->min_alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = std::min<uint32_t>(bytes, 256);
      return CUBLAS_STATUS_SUCCESS;
    }
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

// ---------------------------------------------------------------------------------------
// The GEMM

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                               cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                               cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                               cublasLtMatmulPreference_t pref, int requested,
                                                               cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (!ValidHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  Shape shape;
  if (CheckShape(Desc(desc), Lay(a), Lay(b), Lay(c), Lay(d), &shape) != CUBLAS_STATUS_SUCCESS) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!Pref(pref)) return CUBLAS_STATUS_INVALID_VALUE;
  std::vector<Algo> algos = Algos(shape, Pref(pref)->max_workspace);
  *returned = std::min(requested, static_cast<int>(algos.size()));
  for (int i = 0; i < *returned; ++i) {
    // What the algorithm may assume of the pointers: the preference's alignments, and the
    // bias pointer's (the heuristic's result depends on it, as cublasLt.h says).
    std::copy(std::begin(Pref(pref)->min_alignment), std::end(Pref(pref)->min_alignment), algos[i].alignment);
    const MatmulDesc* dd = Desc(desc);
    algos[i].bias_alignment = HasBias(dd->epilogue) && dd->bias ? AlignmentOf(dd->bias) : 0;
    std::memset(&results[i], 0, sizeof(results[i]));
    std::memcpy(&results[i].algo, &algos[i], sizeof algos[i]);
    results[i].workspaceSize = algos[i].workspace;
    results[i].state = CUBLAS_STATUS_SUCCESS;
    results[i].wavesCount = 1.0f;
  }
  return CUBLAS_STATUS_SUCCESS;
}

CUBLASLT_EMU_API cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                               const void* A, cublasLtMatrixLayout_t a_desc, const void* B,
                                               cublasLtMatrixLayout_t b_desc, const void* beta, const void* C,
                                               cublasLtMatrixLayout_t c_desc, void* D, cublasLtMatrixLayout_t d_desc,
                                               const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                                               cudaStream_t stream) {
  if (!ValidHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  Handle* h = reinterpret_cast<Handle*>(handle);
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  // A handle works on its device: with another device current (its streams and memory).
  CUdevice current = 0;
  if (cuCtxGetDevice(&current) == CUDA_SUCCESS && current != h->device) {
    Report("cublasLtMatmul: the handle is device " + std::to_string(h->device) + "'s; device " + std::to_string(current) +
           " is current");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  auto w = std::make_unique<Work>();
  if (cublasStatus_t s = CheckShape(Desc(desc), Lay(a_desc), Lay(b_desc), Lay(c_desc), Lay(d_desc), &w->shape)) return s;
  w->desc = *Desc(desc);
  w->a = *Lay(a_desc);
  w->b = *Lay(b_desc);
  w->c = *Lay(c_desc);
  w->d = *Lay(d_desc);
  // Host pointers (CUBLASLT_POINTER_MODE_HOST): read now.
  w->alpha = *static_cast<const float*>(alpha);
  w->beta = *static_cast<const float*>(beta);
  // The algorithm (the heuristic's for this workspace when none is given), and its workspace.
  if (algo) {
    std::memcpy(static_cast<void*>(&w->algo), algo, sizeof w->algo);
    // An algorithm of another problem (its split partial sums would not fit) is refused.
    const uint64_t partials = w->algo.splits * w->shape.m * w->shape.n * static_cast<uint64_t>(w->shape.batch) * sizeof(float);
    if (w->algo.magic != kAlgoMagic || w->algo.splits < 1 || (w->algo.splits > 1 && w->algo.workspace < partials))
      return CUBLAS_STATUS_INVALID_VALUE;
  } else {
    w->algo = Algos(w->shape, workspace_bytes)[0];
  }
  // An algorithm the heuristic offers may still fail at run time (CUEMU_REJECT_ALGOS).
  if (Rejected(w->algo.index)) {
    Report("cublasLtMatmul: algorithm " + std::to_string(w->algo.index) + " of the heuristic (k in " +
           std::to_string(w->algo.splits) + " parts) is not supported here (CUEMU_REJECT_ALGOS)");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (w->algo.workspace) {
    void* host = nullptr;
    if (workspace_bytes < w->algo.workspace ||
        cuemuDeviceMemory(reinterpret_cast<CUdeviceptr>(workspace), w->algo.workspace, &host) != CUDA_SUCCESS)
      return CUBLAS_STATUS_INVALID_VALUE;
    w->workspace = workspace;
  }
  // In place (C == D) needs C's layout to be D's.
  if (C == D && (w->c.ld != w->d.ld || w->c.stride != w->d.stride)) return CUBLAS_STATUS_INVALID_VALUE;
  // Device memory, checked now (and again when the GEMM runs).
  w->A = A, w->B = B, w->C = C, w->D = D;
  const bool empty = w->shape.m == 0 || w->shape.n == 0;
  if (empty) return CUBLAS_STATUS_SUCCESS;
  // (Another device's memory is out of reach too: say so.)
  auto out_of_reach = [&](const char* name, const void* p) {
    int device = -1;
    if (cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS &&
        device != h->device)
      Report(std::string("cublasLtMatmul: ") + name + " is device " + std::to_string(device) +
             "'s memory; the handle is device " + std::to_string(h->device) + "'s");
    return CUBLAS_STATUS_INVALID_VALUE;
  };
  if (!Resolve(D, &w->d)) return out_of_reach("D", D);
  if (w->shape.k > 0 && !Resolve(A, &w->a)) return out_of_reach("A", A);
  if (w->shape.k > 0 && !Resolve(B, &w->b)) return out_of_reach("B", B);
  if (w->beta != 0 && !Resolve(C, &w->c)) return out_of_reach("C", C);
  void* host = nullptr;
  if (HasBias(w->desc.epilogue) &&
      (!w->desc.bias || cuemuDeviceMemory(reinterpret_cast<CUdeviceptr>(w->desc.bias), w->shape.m * ElementSize(w->d.type),
                                          &host) != CUDA_SUCCESS))
    return CUBLAS_STATUS_INVALID_VALUE;
  // The pointers as aligned as the heuristic was told (an algorithm cublasLtMatmul picks
  // itself sees the actual pointers), the bias at least as aligned as when the heuristic
  // ran (16 bytes if it saw no bias pointer).
  if (algo) {
    const void* pointers[4] = {A, B, C, D};
    const char* names = "ABCD";
    for (int i = 0; i < 4; ++i) {
      if (i == 2 && w->beta == 0) continue;  // C is not read
      if (AlignmentOf(pointers[i]) < w->algo.alignment[i]) {
        Report("cublasLtMatmul: " + std::string(1, names[i]) + " (" + std::to_string(reinterpret_cast<uint64_t>(pointers[i])) +
               ") is not aligned to the " + std::to_string(w->algo.alignment[i]) +
               " bytes of the heuristic's preference (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_" + names[i] + "_BYTES)");
        return CUBLAS_STATUS_NOT_SUPPORTED;
      }
    }
    const uint32_t bias_needs = w->algo.bias_alignment ? w->algo.bias_alignment : 16;
    if (HasBias(w->desc.epilogue) && AlignmentOf(w->desc.bias) < bias_needs) {
      Report("cublasLtMatmul: the bias pointer is aligned to " + std::to_string(AlignmentOf(w->desc.bias)) +
             " bytes; the algorithm needs " + std::to_string(bias_needs) +
             (w->algo.bias_alignment ? " (the bias pointer's alignment when the heuristic ran)"
                                     : " (the heuristic saw no bias pointer)"));
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  // The first GEMM of a plan on a handle cannot be captured (CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE).
  const Plan plan = {w->desc.tf32,
                     w->desc.trans_a,
                     w->desc.trans_b,
                     w->desc.epilogue,
                     w->desc.bias_type,
                     w->d.type,
                     static_cast<int64_t>(w->algo.splits)};
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &capture) != CUDA_SUCCESS) return CUBLAS_STATUS_INVALID_VALUE;
  const bool captured = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  if (captured && FirstCallUncapturable()) {
    std::lock_guard lock(h->mu);
    if (!h->warm.count(plan)) {
      cuemuStreamCaptureUnsupported(reinterpret_cast<CUstream>(stream),
                                    "cuBLASLt: the first cublasLtMatmul of this plan on this handle (it loads its kernel; "
                                    "CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE)");
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  CUresult r = cuemuLaunchHostTask(reinterpret_cast<CUstream>(stream), RunWork, w.release(), ReleaseWork);
  if (r != CUDA_SUCCESS)
    return r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_VALUE ? CUBLAS_STATUS_INVALID_VALUE
                                                                           : CUBLAS_STATUS_EXECUTION_FAILED;
  if (!captured) {
    std::lock_guard lock(h->mu);
    h->warm.insert(plan);
  }
  return CUBLAS_STATUS_SUCCESS;
}
