// A stand-in for cuDNN (libcudnn.so.9) on the CUDA emulator: the legacy convolution API
// (cudnn_cnn.h; deprecated in cuDNN 9, complete there) that a framework's Conv2D,
// DepthwiseConv2dNative and Conv2DBackpropInput need:
//  - 4-D tensors (NCHW or NHWC, or any strides) and filters (KCRS or KRSC) of float, half
//    or bfloat16; 2-D convolution descriptors (symmetric padding, strides, dilations, groups,
//    cross-correlation or convolution, float compute, a math type);
//  - cudnnTransformTensor (a tensor copied into another layout of its shape, e.g. a filter
//    from TensorFlow's HWIO into KRSC);
//  - cudnnConvolutionForward, cudnnConvolutionBiasActivationForward (y = act(alpha1 conv +
//    alpha2 z + bias), ReLU or identity, identity only with IMPLICIT_PRECOMP_GEMM, as
//    cuDNN documents) and cudnnConvolutionBackwardData (the transposed convolution);
//  - the v7 heuristics and workspace sizes: forward IMPLICIT_PRECOMP_GEMM (a table of the
//    filter's offsets), IMPLICIT_GEMM (none) and GEMM (one image's im2col), backward data
//    ALGO_1 and ALGO_0 (none). The workspace an algorithm names is used: the precomputed
//    offsets and the im2col are written to it and read back, so a call must pass at least
//    that many bytes of device memory (else CUDNN_STATUS_BAD_PARAM), and it must stay the
//    call's own until the convolution has run.
// Computed on the CPU in double from the operands as stored and rounded once to the output's
// type. Float operands are rounded to TF32 (10-bit mantissas, as the tensor cores take them)
// unless the math type is CUDNN_FMA_MATH: CUDNN_DEFAULT_MATH permits TF32 on Ampere and
// later, and the stand-in always takes what is permitted. Alpha and beta are host floats.
// The work is queued on the stream as the emulator's kernels are (cuemuLaunchHostTask), so
// it runs in stream order, and a captured convolution is a kernel node of the graph.
// Anything else (other types, layouts or modes, 5-D tensors) is CUDNN_STATUS_NOT_SUPPORTED;
// a descriptor used before it is set, shapes that do not agree (the output's must be what
// cudnnGetConvolution2dForwardOutputDim gives) or device memory that is not allocated is
// CUDNN_STATUS_BAD_PARAM.
// As strict as cuDNN where a program may get away with less on one GPU:
//  - The data pointers of a convolution (x, w, y, z, bias and the workspace; dx, dy and w
//    backward) must be 16-byte aligned, as cuDNN documents: else
//    CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER (in the BAD_PARAM category), reported.
//  - CUEMU_REJECT_ALGOS=i,j,...: the algorithms at those positions of the v7 heuristic's
//    list, which does not depend on the problem (forward: 0 IMPLICIT_PRECOMP_GEMM,
//    1 IMPLICIT_GEMM, 2 GEMM; backward data: 0 ALGO_1, 1 ALGO_0), are still offered, and
//    the convolutions refuse them with CUDNN_STATUS_NOT_SUPPORTED, reported once per call.
//  - CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE=1: the first call of a plan on a handle (the plan:
//    the kind of call (forward, fused forward, backward data, transform), its algorithm, the
//    data type and the math type) loads its kernel, which a capture cannot record: made while
//    the handle's stream captures, it invalidates the capture (as an unsafe driver call does)
//    and returns CUDNN_STATUS_NOT_SUPPORTED. Once the plan ran outside a capture on that
//    handle, captured calls of it succeed.
//  - A handle is bound to the device current at cudnnCreate (device 0 without a context):
//    a call while another device is current is CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH (the
//    stream would be that device's), one with another device's memory CUDNN_STATUS_BAD_PARAM
//    (as memory not allocated; a queued convolution whose memory is out of reach when it runs
//    is the kernel's illegal address).
// Reports go to the emulator's channel (cuemuReport: stderr unless CUEMU_QUIET, and
// cuemuGetLastErrorMessage).
#include <cuda.h>
#include <cudnn.h>

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

#define CUDNN_EMU_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint64_t kMagic = 0x6375646e6e656d75ull;  // "cudnnemu"

// What makes a call's kernel: the kind of call, its algorithm, the data type and the
// math type (see FirstCallUncapturable).
using Plan = std::array<int64_t, 4>;

struct Handle {
  uint64_t magic = kMagic;
  CUdevice device = 0;  // the device current at cudnnCreate
  cudaStream_t stream = nullptr;
  std::mutex mu;
  std::set<Plan> warm;  // the plans this handle has run outside a capture
};

struct Tensor {
  uint64_t magic = kMagic;
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;  // strides, in elements
};

struct Filter {
  uint64_t magic = kMagic;
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int64_t k = 0, c = 0, r = 0, s = 0;      // c: input channels per group
  int64_t sk = 0, sc = 0, sr = 0, ss = 0;  // strides, from the format
};

struct Convolution {
  uint64_t magic = kMagic;
  bool set = false;
  int64_t pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1, groups = 1;
  bool flip = false;  // CUDNN_CONVOLUTION
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

struct Activation {
  uint64_t magic = kMagic;
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
};

template <typename T, typename P>
T* Valid(P p) {
  T* t = reinterpret_cast<T*>(p);
  return t && t->magic == kMagic ? t : nullptr;
}
template <typename T, typename P>
T* ValidSet(P p) {
  T* t = Valid<T>(p);
  return t && t->set ? t : nullptr;
}

template <typename T, typename P>
cudnnStatus_t Create(P* out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  *out = reinterpret_cast<P>(new T());
  return CUDNN_STATUS_SUCCESS;
}
template <typename T, typename P>
cudnnStatus_t Destroy(P p) {
  T* t = Valid<T>(p);
  if (!t) return CUDNN_STATUS_BAD_PARAM;
  t->magic = 0;
  delete t;
  return CUDNN_STATUS_SUCCESS;
}

bool SupportedType(cudnnDataType_t t) { return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16; }
int64_t ElementSize(cudnnDataType_t t) { return t == CUDNN_DATA_FLOAT ? 4 : 2; }

// The elements a tensor spans: one past its largest offset.
int64_t Span(const Tensor& t) {
  if (t.n == 0 || t.c == 0 || t.h == 0 || t.w == 0) return 0;
  return (t.n - 1) * t.sn + (t.c - 1) * t.sc + (t.h - 1) * t.sh + (t.w - 1) * t.sw + 1;
}

// The host address of `bytes` of device memory, or nullptr if they are not allocated.
char* ResolveBytes(const void* ptr, int64_t bytes) {
  if (bytes == 0) return static_cast<char*>(const_cast<void*>(ptr));
  void* host = nullptr;
  if (!ptr || cuemuDeviceMemory(reinterpret_cast<CUdeviceptr>(ptr), static_cast<size_t>(bytes), &host) != CUDA_SUCCESS)
    return nullptr;
  return static_cast<char*>(host);
}
char* Resolve(const void* ptr, int64_t elements, cudnnDataType_t type) { return ResolveBytes(ptr, elements * ElementSize(type)); }

double Load(const char* base, int64_t i, cudnnDataType_t type, bool tf32) {
  if (type == CUDNN_DATA_FLOAT) {
    float v;
    std::memcpy(&v, base + i * 4, 4);
    return tf32 ? cuemu::RoundToTf32(v) : v;
  }
  uint16_t h;
  std::memcpy(&h, base + i * 2, 2);
  return type == CUDNN_DATA_HALF ? cuemu::HalfToFloat(h) : cuemu::Bf16ToFloat(h);
}

void Store(char* base, int64_t i, cudnnDataType_t type, double v) {
  if (type == CUDNN_DATA_FLOAT) {
    const float f = static_cast<float>(v);
    std::memcpy(base + i * 4, &f, 4);
    return;
  }
  const uint16_t h = type == CUDNN_DATA_HALF ? cuemu::DoubleToHalf(v) : cuemu::DoubleToBf16(v);
  std::memcpy(base + i * 2, &h, 2);
}

// The output dims of a forward convolution, or false if the operands do not agree.
bool OutputDims(const Convolution& cv, const Tensor& x, const Filter& f, int64_t dims[4]) {
  if (x.c != f.c * cv.groups || f.k % cv.groups != 0) return false;
  const int64_t eh = (f.r - 1) * cv.dil_h + 1, ew = (f.s - 1) * cv.dil_w + 1;
  const int64_t ph = x.h + 2 * cv.pad_h, pw = x.w + 2 * cv.pad_w;
  if (ph < eh || pw < ew) return false;
  dims[0] = x.n;
  dims[1] = f.k;
  dims[2] = (ph - eh) / cv.u + 1;
  dims[3] = (pw - ew) / cv.v + 1;
  return true;
}

bool Agrees(const Convolution& cv, const Tensor& x, const Filter& f, const Tensor& y) {
  int64_t d[4];
  return OutputDims(cv, x, f, d) && y.n == d[0] && y.c == d[1] && y.h == d[2] && y.w == d[3] && x.type == f.type &&
         x.type == y.type;
}

// The forward algorithms, cuDNN's usual first choice first, and their workspaces: the
// precomputed filter offsets (one int32 per tap), or one image's im2col (per output
// pixel, every tap of a group: elements of the data type).
constexpr cudnnConvolutionFwdAlgo_t kForwardAlgos[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
int64_t ForwardWorkspace(cudnnConvolutionFwdAlgo_t algo, const Filter& f, const Tensor& y) {
  const int64_t taps = f.c * f.r * f.s;
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return taps * 4;
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return taps * y.h * y.w * ElementSize(y.type);
    default: return 0;
  }
}
bool KnownForward(cudnnConvolutionFwdAlgo_t algo) {
  return std::find(std::begin(kForwardAlgos), std::end(kForwardAlgos), algo) != std::end(kForwardAlgos);
}

enum class Kind { kForward, kFused, kBackwardData, kTransform };

void Report(const std::string& message) { cuemuReport(("cuDNN: " + message).c_str()); }

// Whether CUEMU_REJECT_ALGOS (positions in the heuristic's list, comma-separated) names `index`.
bool Rejected(int index) {
  const char* env = std::getenv("CUEMU_REJECT_ALGOS");
  if (!env) return false;
  for (const char* p = env; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end != p && v == index) return true;
    p = end != p ? end : p + 1;
    while (*p == ',' || *p == ' ') ++p;
  }
  return false;
}

// An algorithm's position in the v7 heuristic's list (the list does not depend on the
// problem), refused when CUEMU_REJECT_ALGOS names it.
template <typename A, size_t N>
cudnnStatus_t RefuseRejected(const char* call, const A (&list)[N], A algo) {
  const int index = static_cast<int>(std::find(std::begin(list), std::end(list), algo) - std::begin(list));
  if (!Rejected(index)) return CUDNN_STATUS_SUCCESS;
  Report(std::string(call) + ": algorithm " + std::to_string(static_cast<int>(algo)) + " (position " + std::to_string(index) +
         " of the heuristic's list) is not supported here (CUEMU_REJECT_ALGOS)");
  return CUDNN_STATUS_NOT_SUPPORTED;
}

// A handle works on its device: not while another device is current (its streams and memory).
cudnnStatus_t RefuseOtherDevice(const Handle* h, const char* call) {
  CUdevice current = 0;
  if (cuCtxGetDevice(&current) != CUDA_SUCCESS || current == h->device) return CUDNN_STATUS_SUCCESS;
  Report(std::string(call) + ": the handle is device " + std::to_string(h->device) + "'s; device " + std::to_string(current) +
         " is current");
  return CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH;
}

// cuDNN's data pointers must be 16-byte aligned.
cudnnStatus_t RefuseMisaligned(const char* call, std::initializer_list<std::pair<const char*, const void*>> pointers) {
  for (const auto& [name, p] : pointers) {
    if (reinterpret_cast<uint64_t>(p) % 16 == 0) continue;
    Report(std::string(call) + ": " + name + " (" + std::to_string(reinterpret_cast<uint64_t>(p)) + ") is not 16-byte aligned");
    return CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
  }
  return CUDNN_STATUS_SUCCESS;
}

// CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE=1: the first call of a plan on a handle loads and
// configures its kernel, which a stream capture cannot record.
bool FirstCallUncapturable() {
  const char* env = std::getenv("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE");
  return env && *env && std::string(env) != "0";
}

// A convolution queued on a stream: its operands' device addresses, resolved each time it
// runs (a captured one runs once per graph launch).
struct Work {
  Kind kind = Kind::kForward;
  Tensor x, y, z, bias;  // backward data: x is dx (written), y is dy
  Filter f;
  Convolution cv;
  cudnnActivationMode_t act = CUDNN_ACTIVATION_IDENTITY;
  int algo = 0;
  int64_t workspace_bytes = 0;
  const void *X = nullptr, *W = nullptr, *Z = nullptr, *B = nullptr;
  void* Y = nullptr;  // backward data: dx
  const void* DY = nullptr;
  void* workspace = nullptr;
  double alpha = 1, beta = 0, alpha2 = 0;
};

int64_t At(const Tensor& t, int64_t n, int64_t c, int64_t h, int64_t w) { return n * t.sn + c * t.sc + h * t.sh + w * t.sw; }
int64_t At(const Filter& f, int64_t k, int64_t c, int64_t r, int64_t s) { return k * f.sk + c * f.sc + r * f.sr + s * f.ss; }

CUresult RunForward(const Work& w) {
  const Tensor &x = w.x, &y = w.y;
  const Filter& f = w.f;
  const Convolution& cv = w.cv;
  const bool tf32 = x.type == CUDNN_DATA_FLOAT && cv.math != CUDNN_FMA_MATH;
  const char* hx = Resolve(w.X, Span(x), x.type);
  const char* hw = Resolve(w.W, f.k * f.c * f.r * f.s, f.type);
  char* hy = Resolve(w.Y, Span(y), y.type);
  const char* hz = w.kind == Kind::kFused && w.alpha2 != 0 ? Resolve(w.Z, Span(w.z), w.z.type) : nullptr;
  const char* hb = w.kind == Kind::kFused ? Resolve(w.B, w.bias.c, w.bias.type) : nullptr;
  char* ws = ResolveBytes(w.workspace, w.workspace_bytes);
  if (!hx || !hw || !hy || (w.kind == Kind::kFused && (!hb || (w.alpha2 != 0 && !hz))) || (w.workspace_bytes && !ws))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  const int64_t cg = f.c, kg = f.k / cv.groups, taps = f.c * f.r * f.s;
  // Each tap (c, r, s) of a group: its filter offset (kept in the workspace by
  // IMPLICIT_PRECOMP_GEMM, read back from there).
  std::vector<int32_t> offsets(taps);
  for (int64_t c = 0, t = 0; c < cg; ++c)
    for (int64_t r = 0; r < f.r; ++r)
      for (int64_t s = 0; s < f.s; ++s, ++t)
        offsets[t] = static_cast<int32_t>(At(f, 0, c, cv.flip ? f.r - 1 - r : r, cv.flip ? f.s - 1 - s : s));
  const bool precomp = w.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  const bool gemm = w.algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  if (precomp) {
    std::memcpy(ws, offsets.data(), taps * 4);
    std::memcpy(offsets.data(), ws, taps * 4);
  }
  auto input = [&](int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t r, int64_t s) -> double {
    const int64_t ih = oh * cv.u - cv.pad_h + r * cv.dil_h, iw = ow * cv.v - cv.pad_w + s * cv.dil_w;
    if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) return 0;
    return Load(hx, At(x, n, c, ih, iw), x.type, tf32);
  };
  for (int64_t n = 0; n < y.n; ++n) {
    for (int64_t g = 0; g < cv.groups; ++g) {
      if (gemm) {  // this image's and group's im2col: [tap][pixel], in the data type
        for (int64_t c = 0, t = 0; c < cg; ++c)
          for (int64_t r = 0; r < f.r; ++r)
            for (int64_t s = 0; s < f.s; ++s, ++t)
              for (int64_t oh = 0; oh < y.h; ++oh)
                for (int64_t ow = 0; ow < y.w; ++ow)
                  Store(ws, t * y.h * y.w + oh * y.w + ow, x.type, input(n, g * cg + c, oh, ow, r, s));
      }
      for (int64_t kk = 0; kk < kg; ++kk) {
        const int64_t k = g * kg + kk;
        for (int64_t oh = 0; oh < y.h; ++oh) {
          for (int64_t ow = 0; ow < y.w; ++ow) {
            double sum = 0;
            for (int64_t c = 0, t = 0; c < cg; ++c) {
              for (int64_t r = 0; r < f.r; ++r) {
                for (int64_t s = 0; s < f.s; ++s, ++t) {
                  const double in =
                      gemm ? Load(ws, t * y.h * y.w + oh * y.w + ow, x.type, tf32) : input(n, g * cg + c, oh, ow, r, s);
                  if (in != 0) sum += in * Load(hw, k * f.sk + offsets[t], f.type, tf32);
                }
              }
            }
            const int64_t at = At(y, n, k, oh, ow);
            double out = w.alpha * sum;
            if (w.kind == Kind::kFused) {
              if (w.alpha2 != 0) out += w.alpha2 * Load(hz, At(w.z, n, k, oh, ow), w.z.type, false);
              out += Load(hb, k, w.bias.type, false);
              if (w.act == CUDNN_ACTIVATION_RELU) out = std::max(out, 0.0);
            } else if (w.beta != 0) {
              out += w.beta * Load(hy, at, y.type, false);
            }
            Store(hy, at, y.type, out);
          }
        }
      }
    }
  }
  return CUDA_SUCCESS;
}

// dx = alpha * (the transposed convolution of dy) + beta * dx: each input pixel gathers
// the output pixels whose window covers it.
CUresult RunBackwardData(const Work& w) {
  const Tensor &dx = w.x, &dy = w.y;
  const Filter& f = w.f;
  const Convolution& cv = w.cv;
  const bool tf32 = dx.type == CUDNN_DATA_FLOAT && cv.math != CUDNN_FMA_MATH;
  char* hdx = Resolve(w.Y, Span(dx), dx.type);
  const char* hdy = Resolve(w.DY, Span(dy), dy.type);
  const char* hw = Resolve(w.W, f.k * f.c * f.r * f.s, f.type);
  if (!hdx || !hdy || !hw) return CUDA_ERROR_ILLEGAL_ADDRESS;
  const int64_t cg = f.c, kg = f.k / cv.groups;
  for (int64_t n = 0; n < dx.n; ++n) {
    for (int64_t c = 0; c < dx.c; ++c) {
      const int64_t g = c / cg, cc = c % cg;
      for (int64_t ih = 0; ih < dx.h; ++ih) {
        for (int64_t iw = 0; iw < dx.w; ++iw) {
          double sum = 0;
          for (int64_t kk = 0; kk < kg; ++kk) {
            const int64_t k = g * kg + kk;
            for (int64_t r = 0; r < f.r; ++r) {
              const int64_t th = ih + cv.pad_h - r * cv.dil_h;
              if (th < 0 || th % cv.u != 0 || th / cv.u >= dy.h) continue;
              for (int64_t s = 0; s < f.s; ++s) {
                const int64_t tw = iw + cv.pad_w - s * cv.dil_w;
                if (tw < 0 || tw % cv.v != 0 || tw / cv.v >= dy.w) continue;
                sum += Load(hdy, At(dy, n, k, th / cv.u, tw / cv.v), dy.type, tf32) *
                       Load(hw, At(f, k, cc, cv.flip ? f.r - 1 - r : r, cv.flip ? f.s - 1 - s : s), f.type, tf32);
              }
            }
          }
          const int64_t at = At(dx, n, c, ih, iw);
          double out = w.alpha * sum;
          if (w.beta != 0) out += w.beta * Load(hdx, at, dx.type, false);
          Store(hdx, at, dx.type, out);
        }
      }
    }
  }
  return CUDA_SUCCESS;
}

// y = alpha * x + beta * y, element by element between two layouts of one shape (x is
// `x` at X, y is `y` at Y).
CUresult RunTransform(const Work& w) {
  const Tensor &x = w.x, &y = w.y;
  const char* hx = Resolve(w.X, Span(x), x.type);
  char* hy = Resolve(w.Y, Span(y), y.type);
  if (!hx || !hy) return CUDA_ERROR_ILLEGAL_ADDRESS;
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t v = 0; v < x.w; ++v) {
          const int64_t at = At(y, n, c, h, v);
          double out = w.alpha * Load(hx, At(x, n, c, h, v), x.type, false);
          if (w.beta != 0) out += w.beta * Load(hy, at, y.type, false);
          Store(hy, at, y.type, out);
        }
  return CUDA_SUCCESS;
}

CUresult RunWork(void* user) {
  const Work& w = *static_cast<const Work*>(user);
  switch (w.kind) {
    case Kind::kBackwardData: return RunBackwardData(w);
    case Kind::kTransform: return RunTransform(w);
    default: return RunForward(w);
  }
}
void ReleaseWork(void* user) { delete static_cast<Work*>(user); }

cudnnStatus_t Queue(Handle* h, std::unique_ptr<Work> w) {
  if (w->workspace_bytes && !ResolveBytes(w->workspace, w->workspace_bytes)) return CUDNN_STATUS_BAD_PARAM;
  const CUstream stream = reinterpret_cast<CUstream>(h->stream);
  const Plan plan = {static_cast<int64_t>(w->kind), w->kind == Kind::kTransform ? -1 : w->algo, w->x.type,
                     w->kind == Kind::kTransform ? -1 : w->cv.math};
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
  const bool captured = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  if (captured && FirstCallUncapturable()) {
    std::lock_guard lock(h->mu);
    if (!h->warm.count(plan)) {
      cuemuStreamCaptureUnsupported(stream,
                                    "cuDNN: the first call of this plan on this handle (it loads its kernel; "
                                    "CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE)");
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  const CUresult r = cuemuLaunchHostTask(stream, RunWork, w.release(), ReleaseWork);
  if (r != CUDA_SUCCESS)
    return r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_VALUE ? CUDNN_STATUS_BAD_PARAM
                                                                           : CUDNN_STATUS_EXECUTION_FAILED;
  if (!captured) {
    std::lock_guard lock(h->mu);
    h->warm.insert(plan);
  }
  return CUDNN_STATUS_SUCCESS;
}

// The operands of a forward convolution, checked: descriptors set, shapes agreeing,
// device memory allocated; the algorithm known and its workspace passed.
cudnnStatus_t PrepareForward(cudnnHandle_t handle, const void* alpha, cudnnTensorDescriptor_t x_desc, const void* x,
                             cudnnFilterDescriptor_t w_desc, const void* wt, cudnnConvolutionDescriptor_t conv_desc,
                             cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t workspace_bytes,
                             cudnnTensorDescriptor_t y_desc, void* y, Work* w) {
  if (!Valid<Handle>(handle)) return CUDNN_STATUS_NOT_INITIALIZED;
  if (cudnnStatus_t s = RefuseOtherDevice(Valid<Handle>(handle), "forward convolution")) return s;
  const Tensor* xd = ValidSet<Tensor>(x_desc);
  const Filter* fd = ValidSet<Filter>(w_desc);
  const Convolution* cd = ValidSet<Convolution>(conv_desc);
  const Tensor* yd = ValidSet<Tensor>(y_desc);
  if (!alpha || !xd || !fd || !cd || !yd || !Agrees(*cd, *xd, *fd, *yd)) return CUDNN_STATUS_BAD_PARAM;
  if (!KnownForward(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (cudnnStatus_t s = RefuseRejected("forward convolution", kForwardAlgos, algo)) return s;
  w->x = *xd, w->f = *fd, w->cv = *cd, w->y = *yd;
  w->algo = algo;
  w->workspace_bytes = ForwardWorkspace(algo, *fd, *yd);
  if (static_cast<int64_t>(workspace_bytes) < w->workspace_bytes) return CUDNN_STATUS_BAD_PARAM;
  w->workspace = workspace;
  w->alpha = *static_cast<const float*>(alpha);
  w->X = x, w->W = wt, w->Y = y;
  if (!Resolve(x, Span(*xd), xd->type) || !Resolve(wt, fd->k * fd->c * fd->r * fd->s, fd->type) ||
      !Resolve(y, Span(*yd), yd->type))
    return CUDNN_STATUS_BAD_PARAM;
  if (cudnnStatus_t s = RefuseMisaligned("forward convolution", {{"x", x}, {"w", wt}, {"y", y}})) return s;
  if (w->workspace_bytes)
    if (cudnnStatus_t s = RefuseMisaligned("forward convolution", {{"the workspace", workspace}})) return s;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

// --- Handles, errors ---------------------------------------------------------------

CUDNN_EMU_API size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

CUDNN_EMU_API const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_INTERNAL_ERROR";
  }
}

CUDNN_EMU_API cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (cudnnStatus_t s = Create<Handle>(handle)) return s;
  Handle* h = Valid<Handle>(*handle);
  if (cuCtxGetDevice(&h->device) != CUDA_SUCCESS) h->device = 0;  // no context: device 0's, as the runtime's
  return CUDNN_STATUS_SUCCESS;
}
CUDNN_EMU_API cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) { return Destroy<Handle>(handle); }
CUDNN_EMU_API cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  Handle* h = Valid<Handle>(handle);
  if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
  h->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}
CUDNN_EMU_API cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  Handle* h = Valid<Handle>(handle);
  if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!stream) return CUDNN_STATUS_BAD_PARAM;
  *stream = h->stream;
  return CUDNN_STATUS_SUCCESS;
}

// --- Descriptors -------------------------------------------------------------------

CUDNN_EMU_API cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) { return Create<Tensor>(d); }
CUDNN_EMU_API cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return Destroy<Tensor>(d); }

CUDNN_EMU_API cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int n, int c, int h,
                                                         int w, int sn, int sc, int sh, int sw) {
  Tensor* t = Valid<Tensor>(desc);
  if (!t || n <= 0 || c <= 0 || h <= 0 || w <= 0 || sn <= 0 || sc <= 0 || sh <= 0 || sw <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (!SupportedType(type)) return CUDNN_STATUS_NOT_SUPPORTED;
  *t = Tensor{};
  t->set = true;
  t->type = type;
  t->n = n, t->c = c, t->h = h, t->w = w;
  t->sn = sn, t->sc = sc, t->sh = sh, t->sw = sw;
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                                       cudnnDataType_t type, int n, int c, int h, int w) {
  if (format == CUDNN_TENSOR_NCHW) return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, c * h * w, h * w, w, 1);
  if (format == CUDNN_TENSOR_NHWC) return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, h * w * c, 1, w * c, c);
  return Valid<Tensor>(desc) ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
}

CUDNN_EMU_API cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) { return Create<Filter>(d); }
CUDNN_EMU_API cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return Destroy<Filter>(d); }

CUDNN_EMU_API cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                                       cudnnTensorFormat_t format, int k, int c, int h, int w) {
  Filter* f = Valid<Filter>(desc);
  if (!f || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (!SupportedType(type) || (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)) return CUDNN_STATUS_NOT_SUPPORTED;
  *f = Filter{};
  f->set = true;
  f->type = type;
  f->k = k, f->c = c, f->r = h, f->s = w;
  if (format == CUDNN_TENSOR_NCHW) {  // KCRS
    f->sk = int64_t{c} * h * w, f->sc = int64_t{h} * w, f->sr = w, f->ss = 1;
  } else {  // KRSC
    f->sk = int64_t{h} * w * c, f->sr = int64_t{w} * c, f->ss = c, f->sc = 1;
  }
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) { return Create<Convolution>(d); }
CUDNN_EMU_API cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { return Destroy<Convolution>(d); }

CUDNN_EMU_API cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h, int pad_w, int u, int v,
                                                            int dil_h, int dil_w, cudnnConvolutionMode_t mode,
                                                            cudnnDataType_t compute) {
  Convolution* cv = Valid<Convolution>(desc);
  if (!cv || pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dil_h <= 0 || dil_w <= 0 ||
      (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION))
    return CUDNN_STATUS_BAD_PARAM;
  if (compute != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  cv->set = true;
  cv->pad_h = pad_h, cv->pad_w = pad_w, cv->u = u, cv->v = v, cv->dil_h = dil_h, cv->dil_w = dil_w;
  cv->flip = mode == CUDNN_CONVOLUTION;
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  Convolution* cv = Valid<Convolution>(desc);
  if (!cv || groups <= 0) return CUDNN_STATUS_BAD_PARAM;
  cv->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  Convolution* cv = Valid<Convolution>(desc);
  if (!cv || (math != CUDNN_DEFAULT_MATH && math != CUDNN_TENSOR_OP_MATH && math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
              math != CUDNN_FMA_MATH))
    return CUDNN_STATUS_BAD_PARAM;
  cv->math = math;
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv_desc,
                                                                  const cudnnTensorDescriptor_t x_desc,
                                                                  const cudnnFilterDescriptor_t w_desc, int* n, int* c, int* h,
                                                                  int* w) {
  const Convolution* cv = ValidSet<Convolution>(conv_desc);
  const Tensor* x = ValidSet<Tensor>(x_desc);
  const Filter* f = ValidSet<Filter>(w_desc);
  int64_t d[4];
  if (!cv || !x || !f || !n || !c || !h || !w || !OutputDims(*cv, *x, *f, d)) return CUDNN_STATUS_BAD_PARAM;
  *n = static_cast<int>(d[0]), *c = static_cast<int>(d[1]), *h = static_cast<int>(d[2]), *w = static_cast<int>(d[3]);
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) { return Create<Activation>(d); }
CUDNN_EMU_API cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) { return Destroy<Activation>(d); }

CUDNN_EMU_API cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t desc, cudnnActivationMode_t mode,
                                                         cudnnNanPropagation_t, double) {
  Activation* a = Valid<Activation>(desc);
  if (!a || mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH) return CUDNN_STATUS_BAD_PARAM;
  a->set = true;
  a->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}

// --- Forward ----------------------------------------------------------------------

CUDNN_EMU_API cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
                                                                   const cudnnFilterDescriptor_t w_desc,
                                                                   const cudnnConvolutionDescriptor_t conv_desc,
                                                                   const cudnnTensorDescriptor_t y_desc, const int requested,
                                                                   int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
  if (!Valid<Handle>(handle)) return CUDNN_STATUS_NOT_INITIALIZED;
  const Tensor* x = ValidSet<Tensor>(x_desc);
  const Filter* f = ValidSet<Filter>(w_desc);
  const Convolution* cv = ValidSet<Convolution>(conv_desc);
  const Tensor* y = ValidSet<Tensor>(y_desc);
  if (!x || !f || !cv || !y || !returned || !results || requested < 1 || !Agrees(*cv, *x, *f, *y)) return CUDNN_STATUS_BAD_PARAM;
  *returned = std::min<int>(requested, static_cast<int>(std::size(kForwardAlgos)));
  for (int i = 0; i < *returned; ++i) {
    results[i] = {};
    results[i].algo = kForwardAlgos[i];
    results[i].status = CUDNN_STATUS_SUCCESS;
    results[i].time = -1;  // a heuristic's: not timed
    results[i].memory = static_cast<size_t>(ForwardWorkspace(kForwardAlgos[i], *f, *y));
    results[i].determinism = CUDNN_DETERMINISTIC;
    results[i].mathType = cv->math;
  }
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
                                                                    const cudnnFilterDescriptor_t w_desc,
                                                                    const cudnnConvolutionDescriptor_t conv_desc,
                                                                    const cudnnTensorDescriptor_t y_desc,
                                                                    cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
  if (!Valid<Handle>(handle)) return CUDNN_STATUS_NOT_INITIALIZED;
  const Tensor* x = ValidSet<Tensor>(x_desc);
  const Filter* f = ValidSet<Filter>(w_desc);
  const Convolution* cv = ValidSet<Convolution>(conv_desc);
  const Tensor* y = ValidSet<Tensor>(y_desc);
  if (!x || !f || !cv || !y || !bytes || !Agrees(*cv, *x, *f, *y)) return CUDNN_STATUS_BAD_PARAM;
  if (!KnownForward(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = static_cast<size_t>(ForwardWorkspace(algo, *f, *y));
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                                    const void* x, const cudnnFilterDescriptor_t w_desc, const void* w,
                                                    const cudnnConvolutionDescriptor_t conv_desc, cudnnConvolutionFwdAlgo_t algo,
                                                    void* workspace, size_t workspace_bytes, const void* beta,
                                                    const cudnnTensorDescriptor_t y_desc, void* y) {
  auto work = std::make_unique<Work>();
  if (cudnnStatus_t s =
          PrepareForward(handle, alpha, x_desc, x, w_desc, w, conv_desc, algo, workspace, workspace_bytes, y_desc, y, work.get()))
    return s;
  if (!beta) return CUDNN_STATUS_BAD_PARAM;
  work->beta = *static_cast<const float*>(beta);
  return Queue(Valid<Handle>(handle), std::move(work));
}

CUDNN_EMU_API cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnFilterDescriptor_t w_desc, const void* w, const cudnnConvolutionDescriptor_t conv_desc,
    cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t workspace_bytes, const void* alpha2,
    const cudnnTensorDescriptor_t z_desc, const void* z, const cudnnTensorDescriptor_t bias_desc, const void* bias,
    const cudnnActivationDescriptor_t activation_desc, const cudnnTensorDescriptor_t y_desc, void* y) {
  auto work = std::make_unique<Work>();
  if (cudnnStatus_t s = PrepareForward(handle, alpha1, x_desc, x, w_desc, w, conv_desc, algo, workspace, workspace_bytes, y_desc,
                                       y, work.get()))
    return s;
  work->kind = Kind::kFused;
  const Tensor* zd = ValidSet<Tensor>(z_desc);
  const Tensor* bd = ValidSet<Tensor>(bias_desc);
  const Activation* a = ValidSet<Activation>(activation_desc);
  const Tensor& yd = work->y;
  // z: y's shape and type; the bias: 1 x K x 1 x 1, y's type.
  if (!alpha2 || !zd || !bd || !a || zd->n != yd.n || zd->c != yd.c || zd->h != yd.h || zd->w != yd.w || zd->type != yd.type ||
      bd->n != 1 || bd->c != yd.c || bd->h != 1 || bd->w != 1 || bd->type != yd.type)
    return CUDNN_STATUS_BAD_PARAM;
  if (a->mode != CUDNN_ACTIVATION_RELU && a->mode != CUDNN_ACTIVATION_IDENTITY) return CUDNN_STATUS_NOT_SUPPORTED;
  if (a->mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  work->z = *zd, work->bias = *bd, work->act = a->mode;
  work->alpha2 = *static_cast<const float*>(alpha2);
  work->Z = z, work->B = bias;
  if (!Resolve(bias, bd->c, bd->type) || (work->alpha2 != 0 && !Resolve(z, Span(*zd), zd->type))) return CUDNN_STATUS_BAD_PARAM;
  if (cudnnStatus_t s = RefuseMisaligned("cudnnConvolutionBiasActivationForward", {{"bias", bias}})) return s;
  if (work->alpha2 != 0)
    if (cudnnStatus_t s = RefuseMisaligned("cudnnConvolutionBiasActivationForward", {{"z", z}})) return s;
  return Queue(Valid<Handle>(handle), std::move(work));
}

// --- Backward data ------------------------------------------------------------------

namespace {
constexpr cudnnConvolutionBwdDataAlgo_t kBackwardDataAlgos[] = {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                                                CUDNN_CONVOLUTION_BWD_DATA_ALGO_0};
bool KnownBackwardData(cudnnConvolutionBwdDataAlgo_t algo) {
  return std::find(std::begin(kBackwardDataAlgos), std::end(kBackwardDataAlgos), algo) != std::end(kBackwardDataAlgos);
}
// dx, w, dy as a forward convolution of dx would have them.
bool BackwardAgrees(const Filter* f, const Tensor* dy, const Convolution* cv, const Tensor* dx) {
  return f && dy && cv && dx && Agrees(*cv, *dx, *f, *dy);
}
}  // namespace

CUDNN_EMU_API cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w_desc, const cudnnTensorDescriptor_t dy_desc,
    const cudnnConvolutionDescriptor_t conv_desc, const cudnnTensorDescriptor_t dx_desc, const int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* results) {
  if (!Valid<Handle>(handle)) return CUDNN_STATUS_NOT_INITIALIZED;
  const Convolution* cv = ValidSet<Convolution>(conv_desc);
  if (!returned || !results || requested < 1 ||
      !BackwardAgrees(ValidSet<Filter>(w_desc), ValidSet<Tensor>(dy_desc), cv, ValidSet<Tensor>(dx_desc)))
    return CUDNN_STATUS_BAD_PARAM;
  *returned = std::min<int>(requested, static_cast<int>(std::size(kBackwardDataAlgos)));
  for (int i = 0; i < *returned; ++i) {
    results[i] = {};
    results[i].algo = kBackwardDataAlgos[i];
    results[i].status = CUDNN_STATUS_SUCCESS;
    results[i].time = -1;
    results[i].memory = 0;
    results[i].determinism =
        kBackwardDataAlgos[i] == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
    results[i].mathType = cv->math;
  }
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle,
                                                                         const cudnnFilterDescriptor_t w_desc,
                                                                         const cudnnTensorDescriptor_t dy_desc,
                                                                         const cudnnConvolutionDescriptor_t conv_desc,
                                                                         const cudnnTensorDescriptor_t dx_desc,
                                                                         cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
  if (!Valid<Handle>(handle)) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!bytes || !BackwardAgrees(ValidSet<Filter>(w_desc), ValidSet<Tensor>(dy_desc), ValidSet<Convolution>(conv_desc),
                                ValidSet<Tensor>(dx_desc)))
    return CUDNN_STATUS_BAD_PARAM;
  if (!KnownBackwardData(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_EMU_API cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                                         const cudnnFilterDescriptor_t w_desc, const void* w,
                                                         const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                                         const cudnnConvolutionDescriptor_t conv_desc,
                                                         cudnnConvolutionBwdDataAlgo_t algo, void*, size_t, const void* beta,
                                                         const cudnnTensorDescriptor_t dx_desc, void* dx) {
  Handle* h = Valid<Handle>(handle);
  if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
  if (cudnnStatus_t s = RefuseOtherDevice(h, "cudnnConvolutionBackwardData")) return s;
  const Filter* f = ValidSet<Filter>(w_desc);
  const Tensor* dyd = ValidSet<Tensor>(dy_desc);
  const Convolution* cv = ValidSet<Convolution>(conv_desc);
  const Tensor* dxd = ValidSet<Tensor>(dx_desc);
  if (!alpha || !beta || !BackwardAgrees(f, dyd, cv, dxd)) return CUDNN_STATUS_BAD_PARAM;
  if (!KnownBackwardData(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (cudnnStatus_t s = RefuseRejected("cudnnConvolutionBackwardData", kBackwardDataAlgos, algo)) return s;
  auto work = std::make_unique<Work>();
  work->kind = Kind::kBackwardData;
  work->x = *dxd, work->y = *dyd, work->f = *f, work->cv = *cv;
  work->algo = algo;
  work->alpha = *static_cast<const float*>(alpha);
  work->beta = *static_cast<const float*>(beta);
  work->W = w, work->DY = dy, work->Y = dx;
  if (!Resolve(w, f->k * f->c * f->r * f->s, f->type) || !Resolve(dy, Span(*dyd), dyd->type) ||
      !Resolve(dx, Span(*dxd), dxd->type))
    return CUDNN_STATUS_BAD_PARAM;
  if (cudnnStatus_t s = RefuseMisaligned("cudnnConvolutionBackwardData", {{"w", w}, {"dy", dy}, {"dx", dx}})) return s;
  return Queue(h, std::move(work));
}

// --- Layouts -------------------------------------------------------------------------

CUDNN_EMU_API cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                                 const void* x, const void* beta, const cudnnTensorDescriptor_t y_desc, void* y) {
  Handle* h = Valid<Handle>(handle);
  if (!h) return CUDNN_STATUS_NOT_INITIALIZED;
  if (cudnnStatus_t s = RefuseOtherDevice(h, "cudnnTransformTensor")) return s;
  const Tensor* xd = ValidSet<Tensor>(x_desc);
  const Tensor* yd = ValidSet<Tensor>(y_desc);
  if (!alpha || !beta || !xd || !yd || xd->n != yd->n || xd->c != yd->c || xd->h != yd->h || xd->w != yd->w)
    return CUDNN_STATUS_BAD_PARAM;
  if (xd->type != yd->type) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!Resolve(x, Span(*xd), xd->type) || !Resolve(y, Span(*yd), yd->type)) return CUDNN_STATUS_BAD_PARAM;
  auto work = std::make_unique<Work>();
  work->kind = Kind::kTransform;
  work->x = *xd, work->y = *yd;
  work->alpha = *static_cast<const float*>(alpha);
  work->beta = *static_cast<const float*>(beta);
  work->X = x, work->Y = y;
  return Queue(h, std::move(work));
}
