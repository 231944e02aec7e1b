// The cuDNN stand-in (build/lib/cuda_emulator/libcudnn.so.9, cuda_emulator/cudnn.cc), opened
// by path with dlopen as graphjit opens cuDNN. Its convolutions are compared with references
// written here from the definitions (a scatter, where the stand-in gathers): forward with
// padding, strides, dilations and groups (depthwise too) in NCHW and NHWC with every
// algorithm the heuristic offers; the fused bias, residual and ReLU; the backward data
// convolution; TF32 under the default math type; half precision; and its strictness: a
// descriptor not set, shapes that disagree, too small a workspace, what it does not
// support. Without the library (no cudnn.h when configured) the tests are skipped, or fail
// when CI=true.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda_emulator/fp.h"
#include "tests/cuda_emulator/cuemu_test_util.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define CUEMU_TEST_HAVE_CUDNN_H 1
#else
#define CUEMU_TEST_HAVE_CUDNN_H 0
#endif

#ifndef CUEMU_TEST_CUDNN
#define CUEMU_TEST_CUDNN ""
#endif

#if CUEMU_TEST_HAVE_CUDNN_H

namespace cuemu_test {
namespace {

struct Dnn {
  void* library = nullptr;
  std::string error;
  // clang-format off
#define CUEMU_DNN_FUNCTIONS(X)                                                                                      \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)             \
  X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor)                        \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)                   \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount)           \
  X(cudnnSetConvolutionMathType) X(cudnnGetConvolution2dForwardOutputDim) X(cudnnCreateActivationDescriptor)          \
  X(cudnnDestroyActivationDescriptor) X(cudnnSetActivationDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)       \
  X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) X(cudnnConvolutionBiasActivationForward)      \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize)                      \
  X(cudnnConvolutionBackwardData) X(cudnnSetTensor4dDescriptorEx) X(cudnnTransformTensor)
// clang-format on
#define CUEMU_DNN_MEMBER(name) decltype(&::name) name = nullptr;
  CUEMU_DNN_FUNCTIONS(CUEMU_DNN_MEMBER)
#undef CUEMU_DNN_MEMBER
};

const Dnn& Library() {
  static Dnn* dnn = [] {
    auto* d = new Dnn;
    const std::string path = CUEMU_TEST_CUDNN;
    if (path.empty()) {
      d->error = "the cuDNN stand-in was not configured (no cudnn.h found)";
      return d;
    }
    d->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!d->library) {
      d->error = "dlopen(" + path + "): " + dlerror();
      return d;
    }
#define CUEMU_DNN_LOAD(name)                                               \
  d->name = reinterpret_cast<decltype(&::name)>(dlsym(d->library, #name)); \
  if (!d->name && d->error.empty()) d->error = path + " has no " #name;
    CUEMU_DNN_FUNCTIONS(CUEMU_DNN_LOAD)
#undef CUEMU_DNN_LOAD
    return d;
  }();
  return *dnn;
}

#define DNN_ASSERT_OK(call)                                                                                      \
  do {                                                                                                           \
    cudnnStatus_t dnn_status_ = (call);                                                                          \
    ASSERT_EQ(dnn_status_, CUDNN_STATUS_SUCCESS) << #call << ": " << Library().cudnnGetErrorString(dnn_status_); \
  } while (0)

// A convolution's geometry: x [n, c, h, w], a filter [k, c / groups, r, s].
struct Geometry {
  int n = 2, c = 4, h = 7, w = 6, k = 6, r = 3, s = 3;
  int pad_h = 1, pad_w = 1, u = 1, v = 1, dil_h = 1, dil_w = 1, groups = 1;
  int oh() const { return (h + 2 * pad_h - (r - 1) * dil_h - 1) / u + 1; }
  int ow() const { return (w + 2 * pad_w - (s - 1) * dil_w - 1) / v + 1; }
  int cg() const { return c / groups; }
  std::string Name() const {
    return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) + " * " +
           std::to_string(k) + "x" + std::to_string(cg()) + "x" + std::to_string(r) + "x" + std::to_string(s) + " pad " +
           std::to_string(pad_h) + "," + std::to_string(pad_w) + " stride " + std::to_string(u) + "," + std::to_string(v) +
           " dilation " + std::to_string(dil_h) + "," + std::to_string(dil_w) + " groups " + std::to_string(groups);
  }
};

// Logical arrays in NCHW (KCRS for filters) order, stored in either layout.
int64_t Offset(bool nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}
std::vector<float> Layout(const std::vector<double>& logical, bool nhwc, int N, int C, int H, int W) {
  std::vector<float> out(logical.size());
  for (int n = 0, i = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w, ++i) out[Offset(nhwc, C, H, W, n, c, h, w)] = static_cast<float>(logical[i]);
  return out;
}
std::vector<double> Logical(const std::vector<float>& stored, bool nhwc, int N, int C, int H, int W) {
  std::vector<double> out(stored.size());
  for (int n = 0, i = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w, ++i) out[i] = stored[Offset(nhwc, C, H, W, n, c, h, w)];
  return out;
}
std::vector<double> Random(size_t n, unsigned seed) {
  std::vector<float> f = RandomFloats(n, -1.0f, 1.0f, seed);
  return std::vector<double>(f.begin(), f.end());
}

// Every (output pixel, tap) pair adds its product where it lands: y for the forward
// convolution, dx (the transposed one) for the backward data convolution.
template <typename F>
void ForEachProduct(const Geometry& g, F f) {
  for (int n = 0; n < g.n; ++n)
    for (int k = 0; k < g.k; ++k)
      for (int oh = 0; oh < g.oh(); ++oh)
        for (int ow = 0; ow < g.ow(); ++ow)
          for (int cc = 0; cc < g.cg(); ++cc)
            for (int r = 0; r < g.r; ++r)
              for (int s = 0; s < g.s; ++s) {
                const int ih = oh * g.u - g.pad_h + r * g.dil_h, iw = ow * g.v - g.pad_w + s * g.dil_w;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const int c = k / (g.k / g.groups) * g.cg() + cc;
                f(((static_cast<int64_t>(n) * g.k + k) * g.oh() + oh) * g.ow() + ow,
                  ((static_cast<int64_t>(n) * g.c + c) * g.h + ih) * g.w + iw,
                  ((static_cast<int64_t>(k) * g.cg() + cc) * g.r + r) * g.s + s);
              }
}

void ExpectNear(const std::vector<double>& want, const std::vector<double>& got, double tolerance, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(want[i] - got[i]) <= tolerance * std::max(1.0, std::fabs(want[i]))) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << ", expected " << want[i];
  EXPECT_EQ(bad, 0) << what;
}

class CudnnEmulator : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Library().error.empty()) {
      if (InCi()) GTEST_FAIL() << Library().error;
      GTEST_SKIP() << Library().error;
    }
    Check(cuCtxSetCurrent(PrimaryContext()), "cuCtxSetCurrent");
    ASSERT_EQ(dnn().cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (!Library().error.empty()) return;
    for (auto t : tensors_) dnn().cudnnDestroyTensorDescriptor(t);
    for (auto f : filters_) dnn().cudnnDestroyFilterDescriptor(f);
    for (auto c : convs_) dnn().cudnnDestroyConvolutionDescriptor(c);
    for (auto a : activations_) dnn().cudnnDestroyActivationDescriptor(a);
    if (handle_) {
      EXPECT_EQ(dnn().cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS);
    }
    memory_.FreeAll();
  }
  const Dnn& dnn() { return Library(); }

  cudnnTensorDescriptor_t Tensor(bool nhwc, int n, int c, int h, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    cudnnTensorDescriptor_t t = nullptr;
    EXPECT_EQ(dnn().cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
    tensors_.push_back(t);
    EXPECT_EQ(dnn().cudnnSetTensor4dDescriptor(t, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, type, n, c, h, w),
              CUDNN_STATUS_SUCCESS);
    return t;
  }
  cudnnFilterDescriptor_t Filter(bool nhwc, const Geometry& g, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    cudnnFilterDescriptor_t f = nullptr;
    EXPECT_EQ(dnn().cudnnCreateFilterDescriptor(&f), CUDNN_STATUS_SUCCESS);
    filters_.push_back(f);
    EXPECT_EQ(dnn().cudnnSetFilter4dDescriptor(f, type, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, g.k, g.cg(), g.r, g.s),
              CUDNN_STATUS_SUCCESS);
    return f;
  }
  cudnnConvolutionDescriptor_t Conv(const Geometry& g, cudnnMathType_t math = CUDNN_FMA_MATH) {
    cudnnConvolutionDescriptor_t c = nullptr;
    EXPECT_EQ(dnn().cudnnCreateConvolutionDescriptor(&c), CUDNN_STATUS_SUCCESS);
    convs_.push_back(c);
    EXPECT_EQ(dnn().cudnnSetConvolution2dDescriptor(c, g.pad_h, g.pad_w, g.u, g.v, g.dil_h, g.dil_w, CUDNN_CROSS_CORRELATION,
                                                    CUDNN_DATA_FLOAT),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(dnn().cudnnSetConvolutionGroupCount(c, g.groups), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(dnn().cudnnSetConvolutionMathType(c, math), CUDNN_STATUS_SUCCESS);
    return c;
  }
  cudnnActivationDescriptor_t Act(cudnnActivationMode_t mode) {
    cudnnActivationDescriptor_t a = nullptr;
    EXPECT_EQ(dnn().cudnnCreateActivationDescriptor(&a), CUDNN_STATUS_SUCCESS);
    activations_.push_back(a);
    EXPECT_EQ(dnn().cudnnSetActivationDescriptor(a, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0), CUDNN_STATUS_SUCCESS);
    return a;
  }
  void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
  void Sync() { Check(cuCtxSynchronize(), "cuCtxSynchronize"); }

  cudnnHandle_t handle_ = nullptr;
  std::vector<cudnnTensorDescriptor_t> tensors_;
  std::vector<cudnnFilterDescriptor_t> filters_;
  std::vector<cudnnConvolutionDescriptor_t> convs_;
  std::vector<cudnnActivationDescriptor_t> activations_;
  DeviceMemory memory_;
};

const float kOne = 1.0f, kZero = 0.0f;

// Forward convolutions of several geometries (padding, strides, dilations, a grouped and a
// depthwise one with two outputs per channel), NCHW and NHWC, each with every algorithm
// the heuristic offers and its workspace; beta = 0 over NaN (y is not read).
TEST_F(CudnnEmulator, ForwardMatchesTheDefinition) {
  std::vector<Geometry> geometries(5);
  geometries[1].u = geometries[1].v = 2, geometries[1].pad_w = 0;
  geometries[2].dil_h = geometries[2].dil_w = 2, geometries[2].pad_h = 2;
  geometries[3].groups = 2;
  geometries[4].groups = 4, geometries[4].k = 8, geometries[4].r = geometries[4].s = 5, geometries[4].pad_h = 2;
  for (const Geometry& g : geometries) {
    const std::vector<double> x = Random(size_t{1} * g.n * g.c * g.h * g.w, 1),
                              wt = Random(size_t{1} * g.k * g.cg() * g.r * g.s, 2);
    std::vector<double> want(size_t{1} * g.n * g.k * g.oh() * g.ow());
    ForEachProduct(g, [&](int64_t y, int64_t xi, int64_t wi) { want[y] += x[xi] * wt[wi]; });
    for (const bool nhwc : {false, true}) {
      SCOPED_TRACE(g.Name() + (nhwc ? " NHWC" : " NCHW"));
      auto xd = Tensor(nhwc, g.n, g.c, g.h, g.w);
      auto fd = Filter(nhwc, g);
      auto cd = Conv(g);
      int dims[4];
      DNN_ASSERT_OK(dnn().cudnnGetConvolution2dForwardOutputDim(cd, xd, fd, &dims[0], &dims[1], &dims[2], &dims[3]));
      EXPECT_EQ(dims[2], g.oh());
      EXPECT_EQ(dims[3], g.ow());
      auto yd = Tensor(nhwc, g.n, g.k, g.oh(), g.ow());
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      int count = 0;
      DNN_ASSERT_OK(dnn().cudnnGetConvolutionForwardAlgorithm_v7(handle_, xd, fd, cd, yd, 8, &count, perf));
      ASSERT_EQ(count, 3);
      const CUdeviceptr X = memory_.Upload(Layout(x, nhwc, g.n, g.c, g.h, g.w));
      const CUdeviceptr W = memory_.Upload(Layout(wt, nhwc, g.k, g.cg(), g.r, g.s));
      for (int a = 0; a < count; ++a) {
        size_t bytes = 0;
        DNN_ASSERT_OK(dnn().cudnnGetConvolutionForwardWorkspaceSize(handle_, xd, fd, cd, yd, perf[a].algo, &bytes));
        EXPECT_EQ(bytes, perf[a].memory);
        const CUdeviceptr ws = bytes ? memory_.Alloc(bytes) : 0;
        const CUdeviceptr Y = memory_.Upload(std::vector<float>(want.size(), std::numeric_limits<float>::quiet_NaN()));
        DNN_ASSERT_OK(dnn().cudnnConvolutionForward(handle_, &kOne, xd, Ptr(X), fd, Ptr(W), cd, perf[a].algo, Ptr(ws), bytes,
                                                    &kZero, yd, Ptr(Y)));
        Sync();
        ExpectNear(want, Logical(Download<float>(Y, want.size()), nhwc, g.n, g.k, g.oh(), g.ow()), 1e-6,
                   "algorithm " + std::to_string(perf[a].algo));
      }
    }
  }
}

// y = relu(alpha1 conv(x, w) + alpha2 z + bias) with z in y's place (the residual added in
// place); identity only with IMPLICIT_PRECOMP_GEMM; no other activation (ReLU6 is clipped
// ReLU: not supported, as cuDNN).
TEST_F(CudnnEmulator, FusedBiasResidualAndRelu) {
  const Geometry g;
  const std::vector<double> x = Random(size_t{1} * g.n * g.c * g.h * g.w, 3),
                            wt = Random(size_t{1} * g.k * g.cg() * g.r * g.s, 4);
  const std::vector<double> z = Random(size_t{1} * g.n * g.k * g.oh() * g.ow(), 5), bias = Random(g.k, 6);
  std::vector<double> conv(z.size());
  ForEachProduct(g, [&](int64_t y, int64_t xi, int64_t wi) { conv[y] += x[xi] * wt[wi]; });
  auto xd = Tensor(true, g.n, g.c, g.h, g.w);
  auto fd = Filter(true, g);
  auto cd = Conv(g);
  auto yd = Tensor(true, g.n, g.k, g.oh(), g.ow());
  auto bd = Tensor(false, 1, g.k, 1, 1);
  const CUdeviceptr X = memory_.Upload(Layout(x, true, g.n, g.c, g.h, g.w));
  const CUdeviceptr W = memory_.Upload(Layout(wt, true, g.k, g.cg(), g.r, g.s));
  const CUdeviceptr B = memory_.Upload(std::vector<float>(bias.begin(), bias.end()));
  const auto precomp = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t bytes = 0;
  DNN_ASSERT_OK(dnn().cudnnGetConvolutionForwardWorkspaceSize(handle_, xd, fd, cd, yd, precomp, &bytes));
  const CUdeviceptr ws = memory_.Alloc(bytes);
  const float alpha1 = 0.5f, alpha2 = 2.0f;
  for (const cudnnActivationMode_t mode : {CUDNN_ACTIVATION_RELU, CUDNN_ACTIVATION_IDENTITY}) {
    const CUdeviceptr Y = memory_.Upload(Layout(z, true, g.n, g.k, g.oh(), g.ow()));
    DNN_ASSERT_OK(dnn().cudnnConvolutionBiasActivationForward(handle_, &alpha1, xd, Ptr(X), fd, Ptr(W), cd, precomp, Ptr(ws),
                                                              bytes, &alpha2, yd, Ptr(Y), bd, Ptr(B), Act(mode), yd, Ptr(Y)));
    Sync();
    std::vector<double> want(z.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const int k = static_cast<int>(i / (g.oh() * g.ow()) % g.k);
      const double t = alpha1 * conv[i] + alpha2 * static_cast<float>(z[i]) + static_cast<float>(bias[k]);
      want[i] = mode == CUDNN_ACTIVATION_RELU ? std::max(t, 0.0) : t;
    }
    ExpectNear(want, Logical(Download<float>(Y, want.size()), true, g.n, g.k, g.oh(), g.ow()), 1e-6,
               mode == CUDNN_ACTIVATION_RELU ? "relu" : "identity");
  }
  const CUdeviceptr Y = memory_.Alloc<float>(z.size());
  EXPECT_EQ(dnn().cudnnConvolutionBiasActivationForward(handle_, &alpha1, xd, Ptr(X), fd, Ptr(W), cd,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &alpha2, yd, Ptr(Y),
                                                        bd, Ptr(B), Act(CUDNN_ACTIVATION_IDENTITY), yd, Ptr(Y)),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      dnn().cudnnConvolutionBiasActivationForward(handle_, &alpha1, xd, Ptr(X), fd, Ptr(W), cd, precomp, Ptr(ws), bytes, &alpha2,
                                                  yd, Ptr(Y), bd, Ptr(B), Act(CUDNN_ACTIVATION_CLIPPED_RELU), yd, Ptr(Y)),
      CUDNN_STATUS_NOT_SUPPORTED);
}

// dx = the transposed convolution of dy (Conv2DBackpropInput), strided and padded, grouped,
// with beta = 1 accumulating into dx.
TEST_F(CudnnEmulator, BackwardDataIsTheTransposedConvolution) {
  for (const int groups : {1, 2}) {
    Geometry g;
    g.u = g.v = 2, g.h = 8, g.groups = groups;
    SCOPED_TRACE(g.Name());
    const std::vector<double> dy = Random(size_t{1} * g.n * g.k * g.oh() * g.ow(), 7),
                              wt = Random(size_t{1} * g.k * g.cg() * g.r * g.s, 8);
    const std::vector<double> before = Random(size_t{1} * g.n * g.c * g.h * g.w, 9);
    std::vector<double> want(before.begin(), before.end());
    ForEachProduct(g, [&](int64_t y, int64_t xi, int64_t wi) { want[xi] += dy[y] * wt[wi]; });
    auto dxd = Tensor(false, g.n, g.c, g.h, g.w);
    auto fd = Filter(false, g);
    auto cd = Conv(g);
    auto dyd = Tensor(false, g.n, g.k, g.oh(), g.ow());
    cudnnConvolutionBwdDataAlgoPerf_t perf[4];
    int count = 0;
    DNN_ASSERT_OK(dnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, fd, dyd, cd, dxd, 4, &count, perf));
    ASSERT_GE(count, 1);
    EXPECT_EQ(perf[0].determinism, CUDNN_DETERMINISTIC);
    const CUdeviceptr DY = memory_.Upload(Layout(dy, false, g.n, g.k, g.oh(), g.ow()));
    const CUdeviceptr W = memory_.Upload(Layout(wt, false, g.k, g.cg(), g.r, g.s));
    const CUdeviceptr DX = memory_.Upload(Layout(before, false, g.n, g.c, g.h, g.w));
    DNN_ASSERT_OK(dnn().cudnnConvolutionBackwardData(handle_, &kOne, fd, Ptr(W), dyd, Ptr(DY), cd, perf[0].algo, nullptr, 0,
                                                     &kOne, dxd, Ptr(DX)));
    Sync();
    ExpectNear(want, Logical(Download<float>(DX, want.size()), false, g.n, g.c, g.h, g.w), 1e-6, "dx");
  }
}

// Float operands become TF32 (10-bit mantissas) unless the math type is CUDNN_FMA_MATH:
// 1 + 2^-12 is 1 in TF32. Half precision: the result rounded to half.
TEST_F(CudnnEmulator, Tf32UnlessFmaMathAndHalfPrecision) {
  Geometry g;
  g.n = g.c = g.k = 1, g.h = g.w = 1, g.r = g.s = 1, g.pad_h = g.pad_w = 0;
  const float x = 1.0f + std::ldexp(1.0f, -12);
  for (const cudnnMathType_t math : {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH}) {
    auto xd = Tensor(false, 1, 1, 1, 1);
    auto fd = Filter(false, g);
    auto cd = Conv(g, math);
    const CUdeviceptr X = memory_.Upload(std::vector<float>{x}), W = memory_.Upload(std::vector<float>{1.0f});
    const CUdeviceptr Y = memory_.Alloc<float>(1);
    DNN_ASSERT_OK(dnn().cudnnConvolutionForward(handle_, &kOne, xd, Ptr(X), fd, Ptr(W), cd,
                                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero, xd, Ptr(Y)));
    Sync();
    EXPECT_EQ(Download<float>(Y, 1)[0], math == CUDNN_FMA_MATH ? x : 1.0f) << math;
  }
  // Half: 0.25 * (1 + 2^-10) + 0.75 * 1 is 1 + 2^-12, which rounds to 1 (half's step
  // above 1 is 2^-10).
  g.c = 2, g.k = 1;
  auto xd = Tensor(false, 1, 2, 1, 1, CUDNN_DATA_HALF);
  auto yd = Tensor(false, 1, 1, 1, 1, CUDNN_DATA_HALF);
  auto fd = Filter(false, g, CUDNN_DATA_HALF);
  auto cd = Conv(g);
  const CUdeviceptr X =
      memory_.Upload(std::vector<uint16_t>{cuemu::FloatToHalf(1.0f + std::ldexp(1.0f, -10)), cuemu::FloatToHalf(0.75f)});
  const CUdeviceptr W = memory_.Upload(std::vector<uint16_t>{cuemu::FloatToHalf(0.25f), cuemu::FloatToHalf(1.0f)});
  const CUdeviceptr Y = memory_.Alloc<uint16_t>(1);
  DNN_ASSERT_OK(dnn().cudnnConvolutionForward(handle_, &kOne, xd, Ptr(X), fd, Ptr(W), cd,
                                              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero, yd, Ptr(Y)));
  Sync();
  EXPECT_EQ(cuemu::HalfToFloat(Download<uint16_t>(Y, 1)[0]), 1.0f);
}

// What cuDNN refuses is refused, with its status, and nothing runs: no handle, a descriptor
// not set, an output of the wrong shape, types that differ, too small a workspace, an
// algorithm or type it does not have, memory that is not allocated.
// cudnnTransformTensor copies a tensor into another layout of its shape (here NCHW into a
// layout given by strides: a TensorFlow filter [R, S, C, K] read as K x C x R x S), with
// alpha and beta as for the convolutions.
TEST_F(CudnnEmulator, TransformTensorReordersByStrides) {
  const int k = 3, c = 2, r = 2, s = 4;
  std::vector<float> hwio(k * c * r * s);
  for (size_t i = 0; i < hwio.size(); ++i) hwio[i] = static_cast<float>(i);
  cudnnTensorDescriptor_t from = nullptr;
  ASSERT_EQ(dnn().cudnnCreateTensorDescriptor(&from), CUDNN_STATUS_SUCCESS);
  tensors_.push_back(from);
  DNN_ASSERT_OK(dnn().cudnnSetTensor4dDescriptorEx(from, CUDNN_DATA_FLOAT, k, c, r, s, 1, k, s * c * k, c * k));
  const CUdeviceptr X = memory_.Upload(hwio);
  const CUdeviceptr Y = memory_.Upload(std::vector<float>(hwio.size(), 1.0f));
  const float two = 2, half = 0.5f;
  DNN_ASSERT_OK(dnn().cudnnTransformTensor(handle_, &two, from, Ptr(X), &half, Tensor(false, k, c, r, s), Ptr(Y)));
  Sync();
  const std::vector<float> kcrs = Download<float>(Y, hwio.size());
  for (int kk = 0; kk < k; ++kk)
    for (int cc = 0; cc < c; ++cc)
      for (int rr = 0; rr < r; ++rr)
        for (int ss = 0; ss < s; ++ss)
          ASSERT_EQ(kcrs[((kk * c + cc) * r + rr) * s + ss], 2 * hwio[((rr * s + ss) * c + cc) * k + kk] + 0.5f)
              << kk << " " << cc << " " << rr << " " << ss;
}

TEST_F(CudnnEmulator, RefusesWhatCudnnRefuses) {
  const Geometry g;
  auto xd = Tensor(true, g.n, g.c, g.h, g.w);
  auto fd = Filter(true, g);
  auto cd = Conv(g);
  auto yd = Tensor(true, g.n, g.k, g.oh(), g.ow());
  const CUdeviceptr X = memory_.Alloc<float>(size_t{1} * g.n * g.c * g.h * g.w);
  const CUdeviceptr W = memory_.Alloc<float>(size_t{1} * g.k * g.cg() * g.r * g.s);
  const CUdeviceptr Y = memory_.Upload(std::vector<float>(size_t{1} * g.n * g.k * g.oh() * g.ow(), 7.0f));
  const auto gemm = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  size_t bytes = 0;
  DNN_ASSERT_OK(dnn().cudnnGetConvolutionForwardWorkspaceSize(handle_, xd, fd, cd, yd, gemm, &bytes));
  ASSERT_GT(bytes, 0u);
  const CUdeviceptr ws = memory_.Alloc(bytes);
  auto forward = [&](cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t f, cudnnTensorDescriptor_t y,
                     cudnnConvolutionFwdAlgo_t algo, CUdeviceptr workspace, size_t workspace_bytes, CUdeviceptr out) {
    return dnn().cudnnConvolutionForward(h, &kOne, x, Ptr(X), f, Ptr(W), cd, algo, Ptr(workspace), workspace_bytes, &kZero, y,
                                         Ptr(out));
  };
  EXPECT_EQ(forward(nullptr, xd, fd, yd, gemm, ws, bytes, Y), CUDNN_STATUS_NOT_INITIALIZED);
  cudnnTensorDescriptor_t unset = nullptr;
  ASSERT_EQ(dnn().cudnnCreateTensorDescriptor(&unset), CUDNN_STATUS_SUCCESS);
  tensors_.push_back(unset);
  EXPECT_EQ(forward(handle_, unset, fd, yd, gemm, ws, bytes, Y), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(handle_, xd, fd, Tensor(true, g.n, g.k, g.oh() + 1, g.ow()), gemm, ws, bytes, Y), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(handle_, xd, fd, Tensor(true, g.n, g.k, g.oh(), g.ow(), CUDNN_DATA_HALF), gemm, ws, bytes, Y),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(handle_, xd, fd, yd, gemm, ws, bytes - 1, Y), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(handle_, xd, fd, yd, gemm, 0, bytes, Y), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(forward(handle_, xd, fd, yd, CUDNN_CONVOLUTION_FWD_ALGO_FFT, 0, 0, Y), CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(forward(handle_, xd, fd, yd, gemm, ws, bytes, Y + (1u << 30)), CUDNN_STATUS_BAD_PARAM);
  cudnnTensorDescriptor_t t = nullptr;
  ASSERT_EQ(dnn().cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
  tensors_.push_back(t);
  EXPECT_EQ(dnn().cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 1, 1, 1, 1), CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(dnn().cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 1, 1, 1), CUDNN_STATUS_BAD_PARAM);
  cudnnConvolutionDescriptor_t c = nullptr;
  ASSERT_EQ(dnn().cudnnCreateConvolutionDescriptor(&c), CUDNN_STATUS_SUCCESS);
  convs_.push_back(c);
  EXPECT_EQ(dnn().cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_HALF),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(dnn().cudnnSetConvolution2dDescriptor(c, 0, 0, 0, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  // A transform between tensors of other dims or types, or from memory not allocated.
  auto nhwc = Tensor(true, g.n, g.k, g.oh(), g.ow());
  auto nchw = Tensor(false, g.n, g.k, g.oh(), g.ow());
  EXPECT_EQ(dnn().cudnnTransformTensor(handle_, &kOne, nchw, Ptr(Y), &kZero, Tensor(true, g.n, g.k, g.oh(), g.ow() + 1), Ptr(Y)),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(dnn().cudnnTransformTensor(handle_, &kOne, nchw, Ptr(Y), &kZero,
                                       Tensor(true, g.n, g.k, g.oh(), g.ow(), CUDNN_DATA_HALF), Ptr(Y)),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(dnn().cudnnTransformTensor(handle_, &kOne, nchw, Ptr(Y + (1u << 30)), &kZero, nhwc, Ptr(Y)), CUDNN_STATUS_BAD_PARAM);
  // Nothing ran: y is as it was.
  Sync();
  for (float v : Download<float>(Y, size_t{1} * g.n * g.k * g.oh() * g.ow())) ASSERT_EQ(v, 7.0f);
}

// Buffers of a forward convolution of the default geometry, with room for offset pointers.
struct ForwardBuffers {
  CUdeviceptr x = 0, w = 0, y = 0, ws = 0;
  size_t ws_bytes = 0;
};

// CUEMU_REJECT_ALGOS names positions in the v7 heuristic's list (forward: 0 =
// IMPLICIT_PRECOMP_GEMM, 1 = IMPLICIT_GEMM, 2 = GEMM; backward data: 0 = ALGO_1, 1 =
// ALGO_0): still offered, refused by the convolution (NOT_SUPPORTED, reported).
TEST_F(CudnnEmulator, RejectedAlgorithmsAreOfferedButFail) {
  const Geometry g;
  auto xd = Tensor(false, g.n, g.c, g.h, g.w);
  auto fd = Filter(false, g);
  auto cd = Conv(g);
  auto yd = Tensor(false, g.n, g.k, g.oh(), g.ow());
  const CUdeviceptr X = memory_.Upload(std::vector<float>(size_t{1} * g.n * g.c * g.h * g.w, 1.0f));
  const CUdeviceptr W = memory_.Upload(std::vector<float>(size_t{1} * g.k * g.cg() * g.r * g.s, 1.0f));
  const CUdeviceptr Y = memory_.Alloc<float>(size_t{1} * g.n * g.k * g.oh() * g.ow());
  const CUdeviceptr ws = memory_.Alloc(1 << 20);
  ScopedEnv reject("CUEMU_REJECT_ALGOS", "0,2");
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int count = 0;
  DNN_ASSERT_OK(dnn().cudnnGetConvolutionForwardAlgorithm_v7(handle_, xd, fd, cd, yd, 8, &count, perf));
  ASSERT_EQ(count, 3) << "rejected algorithms are still offered";
  auto forward = [&](cudnnConvolutionFwdAlgo_t algo) {
    return dnn().cudnnConvolutionForward(handle_, &kOne, xd, Ptr(X), fd, Ptr(W), cd, algo, Ptr(ws), 1 << 20, &kZero, yd, Ptr(Y));
  };
  EXPECT_EQ(forward(perf[0].algo), CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_NE(LastMessage().find("CUEMU_REJECT_ALGOS"), std::string::npos) << LastMessage();
  EXPECT_NE(LastMessage().find("position 0"), std::string::npos) << LastMessage();
  EXPECT_EQ(forward(perf[2].algo), CUDNN_STATUS_NOT_SUPPORTED);
  DNN_ASSERT_OK(forward(perf[1].algo));
  // Backward data: position 0 (ALGO_1) refused, 1 (ALGO_0) runs.
  cudnnConvolutionBwdDataAlgoPerf_t bperf[4];
  DNN_ASSERT_OK(dnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, fd, yd, cd, xd, 4, &count, bperf));
  ASSERT_EQ(count, 2);
  auto backward = [&](cudnnConvolutionBwdDataAlgo_t algo) {
    return dnn().cudnnConvolutionBackwardData(handle_, &kOne, fd, Ptr(W), yd, Ptr(Y), cd, algo, nullptr, 0, &kZero, xd, Ptr(X));
  };
  EXPECT_EQ(backward(bperf[0].algo), CUDNN_STATUS_NOT_SUPPORTED);
  DNN_ASSERT_OK(backward(bperf[1].algo));
  unsetenv("CUEMU_REJECT_ALGOS");
  for (int i = 0; i < 3; ++i) DNN_ASSERT_OK(forward(perf[i].algo));
  DNN_ASSERT_OK(backward(bperf[0].algo));
  Sync();
}

// With CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE=1 the first call of a plan (kind of call,
// algorithm, types) on a handle fails under capture and invalidates it; once run outside
// a capture, the plan captures. A transform (a filter reorder) too; a new handle again.
TEST_F(CudnnEmulator, FirstCallOfAPlanIsNotCapturable) {
  const Geometry g;
  auto xd = Tensor(false, g.n, g.c, g.h, g.w);
  auto fd = Filter(false, g);
  auto cd = Conv(g);
  auto yd = Tensor(false, g.n, g.k, g.oh(), g.ow());
  auto y_nhwc = Tensor(true, g.n, g.k, g.oh(), g.ow());
  const size_t ny = size_t{1} * g.n * g.k * g.oh() * g.ow();
  const CUdeviceptr X = memory_.Upload(std::vector<float>(size_t{1} * g.n * g.c * g.h * g.w, 1.0f));
  const CUdeviceptr W = memory_.Upload(std::vector<float>(size_t{1} * g.k * g.cg() * g.r * g.s, 1.0f));
  const CUdeviceptr Y = memory_.Alloc<float>(ny), Y2 = memory_.Alloc<float>(ny);
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  CUstream stream = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  auto forward = [&](cudnnHandle_t h) {
    return dnn().cudnnConvolutionForward(h, &kOne, xd, Ptr(X), fd, Ptr(W), cd, algo, nullptr, 0, &kZero, yd, Ptr(Y));
  };
  auto transform = [&](cudnnHandle_t h) { return dnn().cudnnTransformTensor(h, &kOne, yd, Ptr(Y), &kZero, y_nhwc, Ptr(Y2)); };
  auto captured = [&](cudnnHandle_t h, auto call, cudnnStatus_t* status) {
    EXPECT_EQ(dnn().cudnnSetStream(h, reinterpret_cast<cudaStream_t>(stream)), CUDNN_STATUS_SUCCESS);
    return CapturedAlone(stream, [&] { return call(h); }, status);
  };
  ScopedEnv first("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE", "1");
  cudnnStatus_t status;
  EXPECT_EQ(captured(handle_, forward, &status), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(status, CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_NE(LastMessage().find("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE"), std::string::npos) << LastMessage();
  EXPECT_EQ(captured(handle_, transform, &status), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(status, CUDNN_STATUS_NOT_SUPPORTED);
  DNN_ASSERT_OK(forward(handle_));  // outside a capture
  DNN_ASSERT_OK(transform(handle_));
  CU_ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(captured(handle_, forward, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(captured(handle_, transform, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CUDNN_STATUS_SUCCESS);
  cudnnHandle_t other = nullptr;
  DNN_ASSERT_OK(dnn().cudnnCreate(&other));
  EXPECT_EQ(captured(other, forward, &status), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << "a new handle";
  unsetenv("CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE");
  EXPECT_EQ(captured(other, forward, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(dnn().cudnnDestroy(other), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(dnn().cudnnSetStream(handle_, nullptr), CUDNN_STATUS_SUCCESS);
  CU_ASSERT_OK(cuStreamDestroy(stream));
}

// cuDNN's data pointers (x, w, y, z, bias, the workspace; dx, dy) must be 16-byte aligned:
// BAD_PARAM_MISALIGNED_POINTER (of the BAD_PARAM category), reported.
TEST_F(CudnnEmulator, DataPointersMustBe16ByteAligned) {
  const Geometry g;
  auto xd = Tensor(false, g.n, g.c, g.h, g.w);
  auto fd = Filter(false, g);
  auto cd = Conv(g);
  auto yd = Tensor(false, g.n, g.k, g.oh(), g.ow());
  auto bd = Tensor(false, 1, g.k, 1, 1);
  const size_t pad = 16;
  const CUdeviceptr X = memory_.Alloc<float>(size_t{1} * g.n * g.c * g.h * g.w + pad);
  const CUdeviceptr W = memory_.Alloc<float>(size_t{1} * g.k * g.cg() * g.r * g.s + pad);
  const CUdeviceptr Y = memory_.Alloc<float>(size_t{1} * g.n * g.k * g.oh() * g.ow() + pad);
  const CUdeviceptr B = memory_.Alloc<float>(g.k + pad);
  const CUdeviceptr ws = memory_.Alloc(1 << 20);
  auto forward = [&](size_t x_off, size_t w_off, size_t y_off, cudnnConvolutionFwdAlgo_t algo, size_t ws_off) {
    return dnn().cudnnConvolutionForward(handle_, &kOne, xd, Ptr(X + x_off), fd, Ptr(W + w_off), cd, algo, Ptr(ws + ws_off),
                                         1 << 19, &kZero, yd, Ptr(Y + y_off));
  };
  const auto implicit = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, gemm = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  DNN_ASSERT_OK(forward(16, 32, 48, gemm, 16));
  EXPECT_EQ(forward(4, 0, 0, implicit, 0), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  EXPECT_NE(LastMessage().find("x ("), std::string::npos) << LastMessage();
  EXPECT_EQ(forward(0, 8, 0, implicit, 0), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  EXPECT_EQ(forward(0, 0, 4, implicit, 0), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  EXPECT_EQ(forward(0, 0, 0, gemm, 8), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  EXPECT_NE(LastMessage().find("workspace"), std::string::npos) << LastMessage();
  auto act = Act(CUDNN_ACTIVATION_RELU);
  auto fused = [&](size_t b_off) {
    return dnn().cudnnConvolutionBiasActivationForward(handle_, &kOne, xd, Ptr(X), fd, Ptr(W), cd, implicit, nullptr, 0, &kZero,
                                                       yd, Ptr(Y), bd, Ptr(B + b_off), act, yd, Ptr(Y));
  };
  DNN_ASSERT_OK(fused(16));
  EXPECT_EQ(fused(4), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  EXPECT_NE(LastMessage().find("bias"), std::string::npos) << LastMessage();
  auto backward = [&](size_t dx_off) {
    return dnn().cudnnConvolutionBackwardData(handle_, &kOne, fd, Ptr(W), yd, Ptr(Y), cd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                              nullptr, 0, &kZero, xd, Ptr(X + dx_off));
  };
  DNN_ASSERT_OK(backward(32));
  EXPECT_EQ(backward(2), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  Sync();
}

// With two devices (run by CudaEmulatorDevices.SeveralDevicesInAProcessOfTheirOwn): a
// handle is bound to the device current at cudnnCreate; a call while another device is
// current is CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH, one with another device's memory
// CUDNN_STATUS_BAD_PARAM.
TEST(CudnnTwoDevices, AHandleWorksOnItsDeviceOnly) {
  const char* devices = std::getenv("CUEMU_DEVICE_COUNT");
  if (!devices || std::string(devices) != "2") GTEST_SKIP() << "needs CUEMU_DEVICE_COUNT=2";
  const Dnn& dnn = Library();
  ASSERT_TRUE(dnn.error.empty()) << dnn.error;
  CU_ASSERT_OK(cuInit(0));
  CUcontext ctx[2];
  for (int d = 0; d < 2; ++d) CU_ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
  const size_t bytes = 4 * 4 * 4 * 4;  // 1x4x4x4 floats
  CUdeviceptr on0 = 0, x = 0, w = 0, y = 0;
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  CU_ASSERT_OK(cuMemAlloc(&on0, bytes));
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  for (CUdeviceptr* p : {&x, &w, &y}) CU_ASSERT_OK(cuMemAlloc(p, bytes));
  cudnnHandle_t handle = nullptr;
  DNN_ASSERT_OK(dnn.cudnnCreate(&handle));  // device 1's
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnFilterDescriptor_t fd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  DNN_ASSERT_OK(dnn.cudnnCreateTensorDescriptor(&xd));
  DNN_ASSERT_OK(dnn.cudnnCreateTensorDescriptor(&yd));
  DNN_ASSERT_OK(dnn.cudnnCreateFilterDescriptor(&fd));
  DNN_ASSERT_OK(dnn.cudnnCreateConvolutionDescriptor(&cd));
  DNN_ASSERT_OK(dnn.cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 4, 4, 4));
  DNN_ASSERT_OK(dnn.cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 4, 4, 4));
  DNN_ASSERT_OK(dnn.cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 4, 1, 1));
  DNN_ASSERT_OK(dnn.cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  auto forward = [&](CUdeviceptr X) {
    return dnn.cudnnConvolutionForward(handle, &kOne, xd, reinterpret_cast<void*>(X), fd, reinterpret_cast<void*>(w), cd,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &kZero, yd,
                                       reinterpret_cast<void*>(y));
  };
  EXPECT_EQ(forward(x), CUDNN_STATUS_SUCCESS);
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(forward(on0), CUDNN_STATUS_BAD_PARAM);  // device 0's x
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  EXPECT_EQ(forward(x), CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH);  // device 0 current
  EXPECT_NE(LastMessage().find("device 1's"), std::string::npos) << LastMessage();
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  dnn.cudnnDestroyTensorDescriptor(xd);
  dnn.cudnnDestroyTensorDescriptor(yd);
  dnn.cudnnDestroyFilterDescriptor(fd);
  dnn.cudnnDestroyConvolutionDescriptor(cd);
  EXPECT_EQ(dnn.cudnnDestroy(handle), CUDNN_STATUS_SUCCESS);
  for (CUdeviceptr p : {x, w, y}) CU_EXPECT_OK(cuMemFree(p));
  CU_ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  CU_EXPECT_OK(cuMemFree(on0));
  for (int dev = 0; dev < 2; ++dev) CU_EXPECT_OK(cuDevicePrimaryCtxRelease(dev));
}

}  // namespace
}  // namespace cuemu_test

#else

TEST(CudnnEmulator, Unavailable) {
  if (cuemu_test::InCi()) GTEST_FAIL() << "cudnn.h was not found: the cuDNN stand-in is not built";
  GTEST_SKIP() << "cudnn.h was not found";
}

#endif
