// backends/nvptx's cuDNN (nvptx::Cudnn) on the test GPU (the CUDA emulator's stand-in in CI):
// plans and convolutions against references computed here: a forward NHWC convolution with
// its bias, residual and ReLU fused, a grouped NCHW one, the backward data convolution; and
// what a plan refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/nvptx/cudnn.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using nvptx::Conv;

class CudnnConv : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_TEST_GPU();
    auto device = CudaDevice::Get(CudaDriverLibrary(testing::TestGpu(), "").value());
    ASSERT_TRUE(device.ok()) << device.status().message();
    device_ = *device;
    auto library = CudnnLibrary(testing::TestGpu());
    ASSERT_TRUE(library.ok()) << library.status().message();
    auto dnn = nvptx::Cudnn::Open(*library);
    ASSERT_TRUE(dnn.ok()) << dnn.status().message();
    dnn_ = *dnn;
    ASSERT_TRUE(device_->MakeCurrent().ok());
  }
  void TearDown() override {
    for (uint64_t a : allocated_) device_->Free(a);
  }

  uint64_t Upload(const std::vector<float>& host) {
    const uint64_t a = device_->Allocate(std::max<size_t>(host.size() * 4, 1)).value();
    allocated_.push_back(a);
    EXPECT_TRUE(stream().CopyToDevice(a, host.data(), host.size() * 4).ok());
    return a;
  }
  std::vector<float> Download(uint64_t a, size_t n) {
    std::vector<float> host(n);
    EXPECT_TRUE(stream().CopyToHost(host.data(), a, n * 4).ok());
    return host;
  }
  CudaDevice::Stream& stream() {
    if (!stream_) stream_ = device_->NewStream().value();
    return *stream_;
  }
  // Runs `conv` (the heuristic's first algorithm, its workspace allocated).
  void Run(const Conv& conv, uint64_t x, uint64_t w, uint64_t bias, uint64_t z, uint64_t y) {
    auto plan = dnn_->Plan(conv, 1 << 20);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    const uint64_t workspace = plan->workspace_bytes() ? Upload(std::vector<float>((plan->workspace_bytes() + 3) / 4)) : 0;
    ASSERT_TRUE(dnn_->Run(*plan, x, w, bias, z, y, workspace, stream().handle()).ok());
    ASSERT_TRUE(stream().Synchronize().ok());
  }

  std::shared_ptr<CudaDevice> device_;
  std::shared_ptr<const nvptx::Cudnn> dnn_;
  std::unique_ptr<CudaDevice::Stream> stream_;
  std::vector<uint64_t> allocated_;
};

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Element (n, c, h, w) of a tensor of dims [N, C, H, W] stored NHWC or NCHW (a filter KRSC
// or KCRS).
int64_t At(bool nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// The convolution's products, each added where it lands (y's element, x's, w's): the
// forward convolution sums them into y, the backward data one into x.
template <typename F>
void ForEachProduct(const Conv& c, F f) {
  const int64_t cg = c.channels / c.groups, kg = c.filters / c.groups;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t k = 0; k < c.filters; ++k)
      for (int64_t oh = 0; oh < c.out_h(); ++oh)
        for (int64_t ow = 0; ow < c.out_w(); ++ow)
          for (int64_t cc = 0; cc < cg; ++cc)
            for (int64_t r = 0; r < c.filter_h; ++r)
              for (int64_t s = 0; s < c.filter_w; ++s) {
                const int64_t ih = oh * c.stride_h - c.pad_h + r * c.dilation_h,
                              iw = ow * c.stride_w - c.pad_w + s * c.dilation_w;
                if (ih < 0 || ih >= c.height || iw < 0 || iw >= c.width) continue;
                f(At(c.nhwc, c.filters, c.out_h(), c.out_w(), n, k, oh, ow),
                  At(c.nhwc, c.channels, c.height, c.width, n, k / kg * cg + cc, ih, iw),
                  At(c.nhwc, cg, c.filter_h, c.filter_w, k, cc, r, s));
              }
}

void ExpectNear(const std::vector<double>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(want[i] - got[i]) <= 1e-6 * std::max(1.0, std::fabs(want[i]))) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << ", expected " << want[i];
}

// An NHWC convolution (stride 2, padding 1, dilation 1) with its bias, a residual and ReLU
// fused, and a grouped NCHW one with a dilation and no epilogue: as the definitions say.
TEST_F(CudnnConv, ForwardWithAndWithoutItsEpilogue) {
  Conv fused;
  fused.batch = 2, fused.channels = 3, fused.height = 7, fused.width = 6;
  fused.filters = 4, fused.filter_h = fused.filter_w = 3, fused.pad_h = fused.pad_w = 1, fused.stride_h = fused.stride_w = 2;
  fused.epilogue = Conv::Epilogue::kBiasRelu, fused.residual = true;
  Conv grouped = fused;
  grouped.nhwc = false, grouped.channels = 4, grouped.groups = 2, grouped.stride_h = grouped.stride_w = 1;
  grouped.dilation_h = 2, grouped.pad_h = 2, grouped.epilogue = Conv::Epilogue::kNone, grouped.residual = false;
  for (const Conv& c : {fused, grouped}) {
    SCOPED_TRACE(c.nhwc ? "fused NHWC" : "grouped NCHW");
    const size_t ny = c.batch * c.filters * c.out_h() * c.out_w();
    const std::vector<float> x = Random(c.batch * c.channels * c.height * c.width, 1),
                             w = Random(c.filters * (c.channels / c.groups) * c.filter_h * c.filter_w, 2),
                             bias = Random(c.filters, 3), z = Random(ny, 4);
    std::vector<double> want(ny);
    ForEachProduct(c, [&](int64_t y, int64_t xi, int64_t wi) { want[y] += static_cast<double>(x[xi]) * w[wi]; });
    if (c.residual) {
      for (int64_t n = 0, i = 0; n < c.batch; ++n)
        for (int64_t h = 0; h < c.out_h(); ++h)
          for (int64_t ww = 0; ww < c.out_w(); ++ww)
            for (int64_t k = 0; k < c.filters; ++k, ++i) want[i] = std::max(want[i] + bias[k] + z[i], 0.0);  // NHWC
    }
    const uint64_t y = Upload(std::vector<float>(ny, NAN));
    Run(c, Upload(x), Upload(w), c.residual ? Upload(bias) : 0, c.residual ? Upload(z) : 0, y);
    ExpectNear(want, Download(y, ny), "y");
  }
}

// TensorFlow's filter [R, S, C/groups, K] (filter_hwio), reordered by the call in its
// workspace, gives what the filter in cuDNN's layout gives: for a convolution, a depthwise
// one (groups of one channel, two filters each) and the backward data one; the plan's
// workspaces hold the reordered filter, and a call given less fails (the library's error).
TEST_F(CudnnConv, TensorFlowsFilterIsReorderedByTheCall) {
  Conv plain;
  plain.batch = 2, plain.channels = 3, plain.height = 6, plain.width = 5, plain.filters = 4, plain.filter_h = 3,
  plain.filter_w = 2, plain.pad_h = 1, plain.stride_w = 2;
  Conv depthwise = plain;
  depthwise.channels = 3, depthwise.groups = 3, depthwise.filters = 6;
  Conv backward = plain;
  backward.kind = Conv::Kind::kBackwardData;
  for (const Conv& c : {plain, depthwise, backward}) {
    SCOPED_TRACE(c.groups > 1 ? "depthwise" : c.kind == Conv::Kind::kBackwardData ? "backward" : "plain");
    const int64_t cg = c.channels / c.groups, taps = c.filter_h * c.filter_w;
    const std::vector<float> krsc = Random(c.filters * cg * taps, 7);
    std::vector<float> hwio(krsc.size());
    for (int64_t k = 0; k < c.filters; ++k)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t cc = 0; cc < cg; ++cc) hwio[(t * cg + cc) * c.filters + k] = krsc[(k * taps + t) * cg + cc];
    const bool forward = c.kind == Conv::Kind::kForward;
    const size_t nx = c.batch * c.channels * c.height * c.width, ny = c.batch * c.filters * c.out_h() * c.out_w();
    const uint64_t in = Upload(Random(forward ? nx : ny, 8));
    const size_t n_out = forward ? ny : nx;
    const uint64_t want = Upload(std::vector<float>(n_out, NAN)), got = Upload(std::vector<float>(n_out, NAN));
    Run(c, in, Upload(krsc), 0, 0, want);
    Conv tf = c;
    tf.filter_hwio = true;
    Run(tf, in, Upload(hwio), 0, 0, got);
    EXPECT_EQ(Download(want, n_out), Download(got, n_out));
    auto plan = dnn_->Plan(tf, 1 << 20);
    auto bare = dnn_->Plan(c, 1 << 20);
    ASSERT_TRUE(plan.ok() && bare.ok());
    EXPECT_GE(plan->workspace_bytes(), bare->workspace_bytes() + hwio.size() * 4);
    const uint64_t short_workspace = Upload(std::vector<float>(hwio.size() / 2));
    const Status s = dnn_->Run(*plan, in, Upload(hwio), 0, 0, got, short_workspace, stream().handle());
    EXPECT_FALSE(s.ok() && stream().Synchronize().ok()) << "a workspace too small for the reordered filter";
    (void)stream().Synchronize();
  }
}

// dx, the transposed convolution of dy (Conv2DBackpropInput's), strided and padded.
TEST_F(CudnnConv, BackwardDataIsTheTransposedConvolution) {
  Conv c;
  c.kind = Conv::Kind::kBackwardData;
  c.batch = 2, c.channels = 3, c.height = 8, c.width = 7, c.filters = 5, c.filter_h = 3, c.filter_w = 2;
  c.pad_h = 1, c.stride_h = c.stride_w = 2;
  const std::vector<float> dy = Random(c.batch * c.filters * c.out_h() * c.out_w(), 5),
                           w = Random(c.filters * c.channels * c.filter_h * c.filter_w, 6);
  std::vector<double> want(c.batch * c.channels * c.height * c.width);
  ForEachProduct(c, [&](int64_t y, int64_t xi, int64_t wi) { want[xi] += static_cast<double>(dy[y]) * w[wi]; });
  const uint64_t dx = Upload(std::vector<float>(want.size(), NAN));
  Run(c, Upload(dy), Upload(w), 0, 0, dx);
  ExpectNear(want, Download(dx, want.size()), "dx");
}

// A plan refuses what cuDNN cannot run: no output, a residual without a bias, an epilogue on
// a backward convolution, a bias without ReLU (IMPLICIT_PRECOMP_GEMM only) with no workspace.
TEST_F(CudnnConv, PlansRefuseWhatCannotRun) {
  Conv c;
  c.channels = 4, c.height = c.width = 5, c.filters = 2, c.filter_h = c.filter_w = 3;
  Conv small = c;
  small.height = 2;
  EXPECT_EQ(dnn_->Plan(small, 0).status().code(), Code::kInvalidArgument);
  Conv residual = c;
  residual.residual = true;
  EXPECT_EQ(dnn_->Plan(residual, 0).status().code(), Code::kInvalidArgument);
  Conv backward = c;
  backward.kind = Conv::Kind::kBackwardData, backward.epilogue = Conv::Epilogue::kBiasRelu;
  EXPECT_EQ(dnn_->Plan(backward, 0).status().code(), Code::kInvalidArgument);
  Conv bias = c;
  bias.epilogue = Conv::Epilogue::kBias;
  EXPECT_EQ(dnn_->Plan(bias, 0).status().code(), Code::kUnimplemented);
  auto plan = dnn_->Plan(bias, 1 << 20, 8);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->algorithms.size(), 1u);  // IMPLICIT_PRECOMP_GEMM alone
  EXPECT_GT(plan->workspace_bytes(), 0u);
  auto all = dnn_->Plan(c, 1 << 20, 8);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_GT(all->algorithms.size(), 1u);
}

}  // namespace
}  // namespace graphjit
