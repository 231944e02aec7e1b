// backends/cpu: MLIR text in, native code out, called on real buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_compiler.h"

namespace graphjit {
namespace {

// bias + ReLU + tanh over [37, 19] (neither a multiple of the vector width).
constexpr const char* kBiasReluTanh = R"mlir(
#rows = affine_map<(i, j) -> (i, j)>
#cols = affine_map<(i, j) -> (j)>
func.func @bias_relu_tanh(%x: memref<37x19xf32>, %b: memref<19xf32>, %out: memref<37x19xf32>) {
  linalg.generic {indexing_maps = [#rows, #cols, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<37x19xf32>, memref<19xf32>) outs(%out : memref<37x19xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.addf %a, %c fastmath<contract,afn,reassoc> : f32
    %r = arith.maximumf %s, %zero : f32
    %t = math.tanh %r fastmath<afn> : f32
    linalg.yield %t : f32
  }
  return
}
)mlir";

TEST(CpuBackend, CompilesAndRunsAFusedElementwiseKernel) {
  cpu::CompileOptions options;
  options.keep_stages = true;
  auto exe = cpu::Compile(kBiasReluTanh, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<float> x(37 * 19), b(19), out(37 * 19, -7.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 23) - 11) * 0.37f;
  for (size_t j = 0; j < b.size(); ++j) b[j] = 0.1f * static_cast<float>(j) - 0.9f;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  x[0] = inf;
  x[1] = -inf;
  x[2] = nan;
  x[3] = 1e30f;
  ASSERT_TRUE((*exe)->Call("bias_relu_tanh", {x.data(), b.data(), out.data()}).ok());
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 19; ++j) {
      const float s = x[i * 19 + j] + b[j];
      const float want = std::isnan(s) ? s : std::tanh(std::max(s, 0.0f));
      const float got = out[i * 19 + j];
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << i << "," << j;
      else
        EXPECT_NEAR(got, want, 2e-6f) << i << "," << j << " from " << s;
    }
  const cpu::CompileReport& r = (*exe)->report();
  ASSERT_EQ(r.mlir_stages.size(), 3u);
  EXPECT_EQ(r.mlir_stages[0].first, "math_approximated");
  EXPECT_EQ(r.mlir_stages[0].second.find("math.tanh"), std::string::npos) << "tanh is a polynomial";
  EXPECT_EQ(r.mlir_stages[1].first, "control_flow");
  EXPECT_EQ(r.mlir_stages[1].second.find("scf.for"), std::string::npos) << "loops are branches";
  EXPECT_EQ(r.mlir_stages[2].first, "llvm_dialect");
  EXPECT_NE(r.mlir_stages[2].second.find("llvm.func @bias_relu_tanh"), std::string::npos);
  EXPECT_NE(r.llvm_ir.find("define void @bias_relu_tanh"), std::string::npos);
  EXPECT_EQ(r.llvm_ir.find("@tanhf"), std::string::npos) << "tanh should be a polynomial, not a libm call";
  // Vector code for the host's widest registers.
  const std::string host = cpu::HostCpu();
  if (host.find("+avx512f") != std::string::npos) {
    EXPECT_NE(r.assembly.find("zmm"), std::string::npos) << host;
  } else if (host.find("+avx2") != std::string::npos) {
    EXPECT_NE(r.assembly.find("ymm"), std::string::npos) << host;
  }
  EXPECT_GT(r.mlir_ms + r.llvm_ms, 0);
}

TEST(CpuBackend, ReportsBadInput) {
  auto bad = cpu::Compile("func.func @f( {");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("does not parse"), std::string::npos) << bad.status().message();

  auto exe = cpu::Compile(kBiasReluTanh);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  Status missing = (*exe)->Call("nope", {});
  EXPECT_EQ(missing.code(), Code::kNotFound);
}

}  // namespace
}  // namespace graphjit
