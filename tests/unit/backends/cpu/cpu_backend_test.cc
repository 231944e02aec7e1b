// backends/cpu: MLIR text in, native code out, called on real buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_compiler.h"

#include <malloc.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define GRAPHJIT_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(GRAPHJIT_LSAN)
#define GRAPHJIT_SANITIZED_MALLOC 1  // mallinfo2 does not see the sanitizer's allocator
#endif

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

bool HostHas(const std::string& feature) { return cpu::HostCpu().find("+" + feature + ",") != std::string::npos; }

// What the emitters write in place, the clean-up moves: out of the loop go the pure ops
// and the load of %in (only loaded) at an invariant index, and the two copies of the
// product become one; the load of %acc (also stored) and what is in the branch stay.
constexpr const char* kInvariants = R"mlir(
func.func @invariants(%in: memref<4xf32>, %acc: memref<4xf32>, %flag: memref<1xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %in[%c1] : memref<4xf32>
    %y = arith.mulf %x, %x : f32
    %y2 = arith.mulf %x, %x : f32
    %a = memref.load %acc[%c0] : memref<4xf32>
    %s = arith.addf %a, %y : f32
    %t = arith.addf %s, %y2 : f32
    memref.store %t, %acc[%c0] : memref<4xf32>
    %f = memref.load %flag[%c0] : memref<1xi8>
    %zero = arith.constant 0 : i8
    %set = arith.cmpi ne, %f, %zero : i8
    scf.if %set {
      %g = memref.load %in[%c0] : memref<4xf32>
      memref.store %g, %acc[%i] : memref<4xf32>
    }
  }
  return
}
)mlir";

TEST(CpuBackend, CleanUpMovesWhatALoopDoesNotChange) {
  cpu::CompileOptions options;
  options.keep_stages = true;
  auto exe = cpu::Compile(kInvariants, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  ASSERT_FALSE((*exe)->report().mlir_stages.empty());
  const std::string& text = (*exe)->report().mlir_stages[0].second;
  const size_t loop = text.find("scf.for");
  ASSERT_NE(loop, std::string::npos) << text;
  auto before_loop = [&](const std::string& op) {
    const size_t at = text.find(op);
    return at != std::string::npos && at < loop;
  };
  EXPECT_TRUE(before_loop("memref.load %arg0[%c1]")) << text;
  EXPECT_TRUE(before_loop("arith.mulf")) << text;
  EXPECT_EQ(text.find("arith.mulf", text.find("arith.mulf") + 1), std::string::npos) << "one product: " << text;
  EXPECT_FALSE(before_loop("memref.load %arg1")) << "a buffer the loop stores stays read in it: " << text;
  EXPECT_FALSE(before_loop("memref.load %arg0[%c0]")) << "a branch's load stays in it: " << text;
  EXPECT_TRUE(before_loop("memref.load %arg2")) << text;
  std::vector<float> in = {1, 3, 5, 7}, acc = {0, 0, 0, 0};
  int8_t flag = 0;
  ASSERT_TRUE((*exe)->Call("invariants", {in.data(), acc.data(), &flag}).ok());
  EXPECT_EQ(acc[0], 4 * 2 * 9.0f);
  flag = 1;
  acc = {0, 0, 0, 0};
  ASSERT_TRUE((*exe)->Call("invariants", {in.data(), acc.data(), &flag}).ok());
  EXPECT_EQ(acc, (std::vector<float>{55, 1, 1, 1}));  // acc[0] = 1 + 18 after each of the first three
}

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
  ASSERT_EQ(r.mlir_stages.size(), 4u);
  EXPECT_EQ(r.mlir_stages[0].first, "cleaned_up");
  EXPECT_EQ(r.mlir_stages[1].first, "math_approximated");
  EXPECT_EQ(r.mlir_stages[1].second.find("math.tanh"), std::string::npos) << "tanh is a polynomial";
  EXPECT_EQ(r.mlir_stages[2].first, "control_flow");
  EXPECT_EQ(r.mlir_stages[2].second.find("scf.for"), std::string::npos) << "loops are branches";
  EXPECT_EQ(r.mlir_stages[3].first, "llvm_dialect");
  EXPECT_NE(r.mlir_stages[3].second.find("llvm.func @bias_relu_tanh"), std::string::npos);
  EXPECT_NE(r.llvm_ir.find("define void @bias_relu_tanh"), std::string::npos);
  EXPECT_EQ(r.llvm_ir.find("@tanhf"), std::string::npos) << "tanh should be a polynomial, not a libm call";
  // Vector code for the host's widest registers.
  if (HostHas("avx512f")) {
    EXPECT_NE(r.assembly.find("zmm"), std::string::npos) << cpu::HostCpu();
  } else if (HostHas("avx2")) {
    EXPECT_NE(r.assembly.find("ymm"), std::string::npos) << cpu::HostCpu();
  }
  EXPECT_GT(r.mlir_ms + r.llvm_ms, 0);
}

// A row of bias + ReLU over [64, 256]: long enough rows that the loop vectorizer uses the
// widest vectors it is allowed.
constexpr const char* kBiasRelu = R"mlir(
#rows = affine_map<(i, j) -> (i, j)>
#cols = affine_map<(i, j) -> (j)>
func.func @bias_relu(%x: memref<64x256xf32>, %b: memref<256xf32>, %out: memref<64x256xf32>) {
  linalg.generic {indexing_maps = [#rows, #cols, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<64x256xf32>, memref<256xf32>) outs(%out : memref<64x256xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}
)mlir";

std::string AssemblyFor(const cpu::Target& target) {
  cpu::CompileOptions options;
  options.keep_stages = true;
  options.target = target;
  auto exe = cpu::Compile(kBiasRelu, options);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  return exe.ok() ? (*exe)->report().assembly : "";
}

// y = x + 1 over [rows, 1024], row by row as the JIT's kernels are, with the facts the JIT
// states about its buffers: their bytes, and the output's alignment (`align` bytes).
std::string AddOne(int rows, int align) {
  const std::string type = "memref<" + std::to_string(rows) + "x1024xf32>";
  const std::string bytes = std::to_string(rows * 4096);
  const std::string aligned = align ? ", llvm.align = " + std::to_string(align) + " : i64" : "";
  return "func.func @add_one(%x: " + type + " {llvm.noalias, llvm.dereferenceable = " + bytes + " : i64}, %y: " + type +
         " {llvm.noalias, llvm.dereferenceable = " + bytes + " : i64" + aligned + R"mlir(}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cols = arith.constant 1024 : index
  %rows = memref.dim %x, %c0 : )mlir" +
         type + R"mlir(
  %one = arith.constant 1.0 : f32
  scf.for %r = %c0 to %rows step %c1 {
    scf.for %c = %c0 to %cols step %c1 {
      %v = memref.load %x[%r, %c] : )mlir" +
         type + R"mlir(
      %s = arith.addf %v, %one : f32
      memref.store %s, %y[%r, %c] : )mlir" +
         type + R"mlir(
    }
  }
  return
}
)mlir";
}

// Stores into an output of at least streaming_store_bytes whose vectors are aligned go
// around the caches (MOVNTPS, then one SFENCE before the return); smaller outputs, and
// outputs not known to be aligned, are stored as usual. The results are the same.
TEST(CpuBackend, StoresIntoLargeAlignedOutputsAreNonTemporal) {
  if (!HostHas("avx2")) GTEST_SKIP() << "the host has no AVX2: " << cpu::HostCpu();
  struct Case {
    int rows, align;
    bool streams;
  } cases[] = {{64, 64, true}, {16, 64, false}, {64, 0, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + ", align " + std::to_string(c.align));
    cpu::CompileOptions options;
    options.keep_stages = true;
    options.streaming_store_bytes = 256 << 10;  // 64 rows of 1024 floats
    auto exe = cpu::Compile(AddOne(c.rows, c.align), options);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    const std::string& assembly = (*exe)->report().assembly;
    EXPECT_EQ(assembly.find("vmovntps") != std::string::npos, c.streams) << assembly;
    EXPECT_EQ(assembly.find("sfence") != std::string::npos, c.streams);
    std::vector<float> x(c.rows * 1024);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
    // The output 64-byte aligned, as the runtime allocates it.
    std::unique_ptr<float, void (*)(void*)> y(static_cast<float*>(std::aligned_alloc(64, x.size() * 4)), std::free);
    ASSERT_TRUE((*exe)->Call("add_one", {x.data(), y.get()}).ok());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y.get()[i], x[i] + 1) << i;
  }
}

// A loop with a prefetch in it is vectorized all the same (LLVM 19 alone leaves it scalar):
// here each row's sum of squares prefetches the next row, one PREFETCHT0 per vector load
// (per 64-byte line of it), and nothing of the prefetch calls the backend passes through
// LLVM is left in the code. In the code for a CPU with AVX-512 (16-float vectors: a line
// each) and for one with AVX2 only (8-float vectors: half a line each, so each line is
// prefetched twice; prefetching every other one measured no faster), whatever the host;
// each runs where the host can run it.
TEST(CpuBackend, LoopsWithPrefetchesAreVectorized) {
  const char* kRowSums = R"mlir(
func.func @row_sums(%x: memref<8x1024xf32> {llvm.noalias}, %y: memref<8xf32> {llvm.noalias}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %rows = arith.constant 8 : index
  %cols = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  scf.for %r = %c0 to %rows step %c1 {
    %r1 = arith.addi %r, %c1 : index
    %next = arith.minui %r1, %c7 : index
    %sum = scf.for %c = %c0 to %cols step %c1 iter_args(%acc = %zero) -> (f32) {
      memref.prefetch %x[%next, %c], read, locality<3>, data : memref<8x1024xf32>
      %v = memref.load %x[%r, %c] : memref<8x1024xf32>
      %square = arith.mulf %v, %v : f32
      %acc1 = arith.addf %acc, %square fastmath<reassoc> : f32
      scf.yield %acc1 : f32
    }
    memref.store %sum, %y[%r] : memref<8xf32>
  }
  return
}
)mlir";
  struct Case {
    const char* cpu;
    const char* reg;
  };
  for (const Case& c : {Case{"x86-64-v4", "zmm"}, Case{"x86-64-v3", "ymm"}}) {
    SCOPED_TRACE(c.cpu);
    cpu::CompileOptions options;
    options.keep_stages = true;
    options.target = {c.cpu, "", 0};
    auto exe = cpu::Compile(kRowSums, options);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    const std::string& assembly = (*exe)->report().assembly;
    EXPECT_EQ(assembly.find("graphjit_prefetch"), std::string::npos) << assembly;
    EXPECT_EQ((*exe)->report().llvm_ir.find("graphjit_prefetch"), std::string::npos);
    // The vector loop: between its label and its backward branch, prefetches, loads and products.
    const size_t product = assembly.find(std::string("vmulps\t%") + c.reg);
    ASSERT_NE(product, std::string::npos) << assembly;
    const size_t start = assembly.rfind(":\n", product), end = assembly.find("\tjne\t", product);
    ASSERT_NE(start, std::string::npos);
    ASSERT_NE(end, std::string::npos);
    const std::string loop = assembly.substr(start, end - start);
    int prefetches = 0, loads = 0;
    std::istringstream lines(loop);
    for (std::string line; std::getline(lines, line);) {
      prefetches += line.find("prefetcht0") != std::string::npos;
      loads += line.find(c.reg) != std::string::npos && line.find("(%") != std::string::npos;
    }
    EXPECT_GT(prefetches, 0) << loop;
    EXPECT_EQ(loads, prefetches) << "one prefetch per vector load:\n" << loop;
    if (!(*exe)->Function("row_sums").ok()) continue;  // code this host cannot run
    std::vector<float> x(8 * 1024), y(8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3;
    ASSERT_TRUE((*exe)->Call("row_sums", {x.data(), y.data()}).ok());
    for (int r = 0; r < 8; ++r) {
      double want = 0;
      for (int col = 0; col < 1024; ++col) want += static_cast<double>(x[r * 1024 + col]) * x[r * 1024 + col];
      EXPECT_EQ(y[r], want) << r;
    }
  }
}

// The vector width is graphjit's choice, not LLVM's per-CPU tuning (which prefers 256-bit
// vectors on Sapphire Rapids and 512 on Zen 4): code is generated for any x86 CPU on any
// host, so this runs the same everywhere.
TEST(CpuBackend, TheVectorWidthIsAnOption) {
  for (const char* cpu : {"sapphirerapids", "znver4", "skylake-avx512"}) {
    const std::string wide = AssemblyFor({cpu, "", 0});
    EXPECT_NE(wide.find("zmm"), std::string::npos) << cpu << ": AVX-512 CPUs get 512-bit vectors by default";
    const std::string narrow = AssemblyFor({cpu, "", 256});
    EXPECT_EQ(narrow.find("zmm"), std::string::npos) << cpu << " with 256-bit vectors";
    EXPECT_NE(narrow.find("ymm"), std::string::npos) << cpu << " with 256-bit vectors";
  }
  // A CPU without AVX-512, and AVX-512 switched off by a feature.
  for (const cpu::Target& target : {cpu::Target{"x86-64-v3", "", 0}, cpu::Target{"sapphirerapids", "-avx512f", 0}}) {
    const std::string code = AssemblyFor(target);
    EXPECT_EQ(code.find("zmm"), std::string::npos) << target.cpu << target.features;
    EXPECT_NE(code.find("ymm"), std::string::npos) << target.cpu << target.features;
  }
  EXPECT_EQ(AssemblyFor({"x86-64-v3", "", 128}).find("ymm"), std::string::npos);
  // A preference for wider vectors than the CPU has is the widest it has.
  EXPECT_NE(cpu::DescribeTarget({"x86-64-v3", "", 512}).value().find("vw=256"), std::string::npos);
  EXPECT_NE(cpu::DescribeTarget({"x86-64-v3", "", 0}).value().find("vw=256"), std::string::npos);
  EXPECT_NE(cpu::DescribeTarget({"znver4", "", 0}).value().find("vw=512"), std::string::npos);
  EXPECT_NE(cpu::DescribeTarget({"znver4", "", 256}).value().find("vw=256"), std::string::npos);
}

// The floats of either sign whose bits (the sign's aside) are from, from + step, ... up to
// `last`, appended to `xs`, which is then padded with zeros to whole chunks of kExpChunk.
constexpr int kExpChunk = 4099;
void AppendEitherSign(uint32_t from, uint32_t last, uint32_t step, std::vector<float>* xs) {
  for (uint32_t bits = from; bits <= last; bits += step)
    for (uint32_t sign : {0u, 0x80000000u}) {
      float x;
      const uint32_t b = bits | sign;
      std::memcpy(&x, &b, sizeof x);
      xs->push_back(x);
    }
  xs->resize((xs->size() + kExpChunk - 1) / kExpChunk * kExpChunk, 0.0f);
}

// exp over a chunk of 4099 elements, as the CPU backend rewrites it (backends/cpu/fast_exp.cc):
// vector loops and a scalar remainder.
constexpr const char* kExp = R"mlir(
func.func @exp(%x: memref<4099xf32>, %out: memref<4099xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<4099xf32>) outs(%out : memref<4099xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a fastmath<afn> : f32
    linalg.yield %e : f32
  }
  return
}
)mlir";

// Within 2 ulp of exp wherever the result is a normal float, over every 61st float from
// -89 to 89 and the edges: overflow to Inf exactly above ln(FLT_MAX), 0 (or a subnormal)
// below 2^-126, exp(0) = 1 and powers of two exact, NaN kept. Both forms: 2^k by VSCALEFPS
// (a CPU with AVX-512, x86-64-v4, in vectors of 512, 256 and 128 bits and the scalar
// remainder's VSCALEFSS) and by k's bits (x86-64-v3). The code is checked on any host; its
// values where the host can run it.
class ExpForms : public testing::TestWithParam<std::pair<const char*, int>> {};

TEST_P(ExpForms, ExpIsWithinTwoUlpsOfTheTrueValue) {
  const bool scalef = std::string(GetParam().first) == "x86-64-v4";
  cpu::CompileOptions options;
  options.keep_stages = true;
  options.target = {GetParam().first, "", GetParam().second};
  auto exe = cpu::Compile(kExp, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ((*exe)->report().llvm_ir.find("select"), std::string::npos) << "exp has no selects";
  const std::string& assembly = (*exe)->report().assembly;
  const char* widest = GetParam().second == 128 ? "xmm" : GetParam().second == 256 ? "ymm" : "zmm";
  EXPECT_EQ(assembly.find(std::string("vscalefps\t%") + widest) != std::string::npos, scalef) << assembly;
  EXPECT_EQ(assembly.find("vscalefss") != std::string::npos, scalef);
  EXPECT_EQ(assembly.find("graphjit_scalef"), std::string::npos);
  if (!(*exe)->Function("exp").ok())
    GTEST_SKIP() << "the host cannot run code for " << GetParam().first << ": " << cpu::HostCpu();
  const float inf = std::numeric_limits<float>::infinity(), max = std::numeric_limits<float>::max();
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           inf,
                           -inf,
                           std::numeric_limits<float>::quiet_NaN(),
                           1e38f,
                           -1e38f,
                           88.72283172607422f,
                           88.72283935546875f,
                           88.7228f,
                           89.0f,
                           -87.33654022216797f,
                           -87.33655548095703f,
                           -88.0f,
                           -88.5f,
                           -103.0f,
                           -1000.0f};
  for (int k = -126; k <= 127; ++k) xs.push_back(static_cast<float>(k * 0.6931471805599453));
  const float top = 89.0f;
  uint32_t top_bits;
  std::memcpy(&top_bits, &top, sizeof top_bits);
  AppendEitherSign(0, top_bits, 61, &xs);
  std::vector<float> out(xs.size());
  for (size_t i = 0; i < xs.size(); i += kExpChunk) ASSERT_TRUE((*exe)->Call("exp", {&xs[i], &out[i]}).ok());
  int64_t failures = 0;
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = std::exp(static_cast<double>(xs[i]));
    const float got = out[i];
    bool ok;
    if (std::isnan(xs[i])) {
      ok = std::isnan(got);
    } else if (want >= static_cast<double>(max) * (1 + std::ldexp(1.0, -25))) {
      ok = got == inf;  // rounds to Inf
    } else if (want < std::numeric_limits<float>::min()) {
      ok = got >= 0 && got < std::numeric_limits<float>::min();
    } else {
      const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
      worst = std::max(worst, std::abs(got - want) / ulp);
      ok = std::abs(got - want) <= 2 * ulp;
    }
    if (!ok && ++failures <= 10) ADD_FAILURE() << "exp(" << xs[i] << ") = " << got << ", not " << want;
  }
  EXPECT_EQ(failures, 0);
  EXPECT_LE(worst, 2.0);
  RecordProperty("worst_ulp", std::to_string(worst));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, ExpForms,
                         testing::Values(std::pair{"x86-64-v4", 0}, std::pair{"x86-64-v4", 256}, std::pair{"x86-64-v4", 128},
                                         std::pair{"x86-64-v3", 0}));

// sin and cos over a chunk of 4099 elements, as the CPU backend compiles them: LLVM's
// intrinsics, called in vector loops as glibc's libmvec functions of the loop's width
// (_ZGVbN4v_ with SSE, _ZGVdN8v_ with AVX2, _ZGVeN16v_ with AVX-512), in the remainder as
// libm's sinf and cosf.
constexpr const char* kSinCos = R"mlir(
func.func @sincos(%x: memref<4099xf32>, %s: memref<4099xf32>, %c: memref<4099xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<4099xf32>) outs(%s, %c : memref<4099xf32>, memref<4099xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %sin = math.sin %a : f32
    %cos = math.cos %a : f32
    linalg.yield %sin, %cos : f32, f32
  }
  return
}
)mlir";

// Within 4 ulp of sin and cos (glibc's bound for libmvec) on every 4093rd float of either
// sign, whatever its size (1e30 is reduced by pi/2 as exactly as 1), and on the edges:
// sin(+-0) = +-0, cos(0) = 1, NaN for +-Inf and NaN. An ulp is that of the true value (of
// the smallest normal below it).
struct SinCosForm {
  const char* cpu;
  int vector_width;
  const char* variant;  // the widest libmvec function the vector loop calls
};
class SinCosForms : public testing::TestWithParam<SinCosForm> {};

TEST_P(SinCosForms, SinAndCosAreWithinFourUlpsEverywhere) {
  cpu::CompileOptions options;
  options.keep_stages = true;
  options.target = {GetParam().cpu, "", GetParam().vector_width};
  auto exe = cpu::Compile(kSinCos, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::string& ir = (*exe)->report().llvm_ir;
  for (const char* f : {"sinf", "cosf"})
    EXPECT_NE(ir.find(std::string("call <") + GetParam().variant + f), std::string::npos) << f << " in\n" << ir;
  if (!(*exe)->Function("sincos").ok())
    GTEST_SKIP() << "the host cannot run code for " << GetParam().cpu << ": " << cpu::HostCpu();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f,   -0.0f,   inf,        -inf,       std::numeric_limits<float>::quiet_NaN(), 1e30f,
                           -3e38f, 2048.0f, 1.5707964f, 3.1415927f, std::numeric_limits<float>::denorm_min()};
  AppendEitherSign(0, 0x7F800000u - 1, 4093, &xs);
  std::vector<float> sin(xs.size()), cos(xs.size());
  for (size_t i = 0; i < xs.size(); i += kExpChunk) ASSERT_TRUE((*exe)->Call("sincos", {&xs[i], &sin[i], &cos[i]}).ok());
  double worst = 0;
  int64_t failures = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    for (auto [got, want, name] : {std::tuple{sin[i], std::sin(static_cast<double>(xs[i])), "sin"},
                                   std::tuple{cos[i], std::cos(static_cast<double>(xs[i])), "cos"}}) {
      bool ok;
      if (!std::isfinite(xs[i])) {
        ok = std::isnan(got);
      } else {
        const double ulp = std::ldexp(1.0, std::max(std::ilogb(want), -126) - 23);
        worst = std::max(worst, std::abs(got - want) / ulp);
        ok = std::abs(got - want) <= 4 * ulp;
      }
      if (!ok && ++failures <= 10) ADD_FAILURE() << name << "(" << xs[i] << ") = " << got << ", not " << want;
    }
  EXPECT_EQ(failures, 0);
  RecordProperty("worst_ulp", std::to_string(worst));
  EXPECT_TRUE(sin[0] == 0.0f && !std::signbit(sin[0]));
  EXPECT_TRUE(sin[1] == 0.0f && std::signbit(sin[1]));
  EXPECT_EQ(cos[0], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, SinCosForms,
                         testing::Values(SinCosForm{"x86-64-v4", 0, "16 x float> @_ZGVeN16v_"},
                                         SinCosForm{"x86-64-v4", 256, "8 x float> @_ZGVdN8v_"},
                                         SinCosForm{"x86-64-v4", 128, "4 x float> @_ZGVbN4v_"},
                                         SinCosForm{"x86-64-v3", 0, "8 x float> @_ZGVdN8v_"},
                                         SinCosForm{"x86-64", 0, "4 x float> @_ZGVbN4v_"}));

// The other libm functions the JIT calls (tan, the inverse and hyperbolic functions, expm1,
// atan2) over a chunk, as the CPU backend compiles them: calls of libm's float functions by
// name, which vector loops call as libmvec's of their width.
constexpr const char* kLibm = R"mlir(
func.func @libm(%x: memref<4099xf32>, %y: memref<4099xf32>, %o0: memref<4099xf32>, %o1: memref<4099xf32>,
                %o2: memref<4099xf32>, %o3: memref<4099xf32>, %o4: memref<4099xf32>, %o5: memref<4099xf32>,
                %o6: memref<4099xf32>, %o7: memref<4099xf32>, %o8: memref<4099xf32>, %o9: memref<4099xf32>,
                %o10: memref<4099xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x, %y : memref<4099xf32>, memref<4099xf32>)
      outs(%o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7, %o8, %o9, %o10 : memref<4099xf32>, memref<4099xf32>,
           memref<4099xf32>, memref<4099xf32>, memref<4099xf32>, memref<4099xf32>, memref<4099xf32>,
           memref<4099xf32>, memref<4099xf32>, memref<4099xf32>, memref<4099xf32>) {
  ^bb0(%a: f32, %b: f32, %p0: f32, %p1: f32, %p2: f32, %p3: f32, %p4: f32, %p5: f32, %p6: f32, %p7: f32, %p8: f32,
       %p9: f32, %p10: f32):
    %r0 = math.tan %a : f32
    %r1 = math.asin %a : f32
    %r2 = math.acos %a : f32
    %r3 = math.atan %a : f32
    %r4 = math.sinh %a : f32
    %r5 = math.cosh %a : f32
    %r6 = math.asinh %a : f32
    %r7 = math.acosh %a : f32
    %r8 = math.atanh %a : f32
    %r9 = math.expm1 %a : f32
    %r10 = math.atan2 %a, %b : f32
    linalg.yield %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
  }
  return
}
)mlir";

// Within 4 ulp (glibc's bound for libmvec) of each function in double, on every 4093rd float
// of either sign (atan2's second argument the floats in reverse), in and out of each domain:
// NaN where the true value is, infinities where it overflows. An ulp is that of the true value
// (of the smallest normal below it).
class LibmForms : public testing::TestWithParam<SinCosForm> {};

TEST_P(LibmForms, LibmFunctionsAreWithinFourUlpsEverywhere) {
  cpu::CompileOptions options;
  options.keep_stages = true;
  options.target = {GetParam().cpu, "", GetParam().vector_width};
  auto exe = cpu::Compile(kLibm, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::string& ir = (*exe)->report().llvm_ir;
  const std::string variant = GetParam().variant;
  for (const char* f : {"v_tanf", "v_asinf", "v_expm1f"})
    EXPECT_NE(ir.find("call <" + variant.substr(0, variant.size() - 2) + f), std::string::npos) << f << " in\n" << ir;
  EXPECT_NE(ir.find("vv_atan2f"), std::string::npos) << ir;
  if (!(*exe)->Function("libm").ok()) GTEST_SKIP() << "the host cannot run code for " << GetParam().cpu << ": " << cpu::HostCpu();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1.0f, -1.0f, 89.0f, 90.0f};
  AppendEitherSign(0, 0x7F800000u - 1, 4093, &xs);
  const std::vector<float> ys(xs.rbegin(), xs.rend());
  constexpr int kFunctions = 11;
  std::vector<std::vector<float>> out(kFunctions, std::vector<float>(xs.size()));
  for (size_t i = 0; i < xs.size(); i += kExpChunk) {
    std::vector<void*> buffers = {const_cast<float*>(&xs[i]), const_cast<float*>(&ys[i])};
    for (auto& o : out) buffers.push_back(&o[i]);
    ASSERT_TRUE((*exe)->Call("libm", buffers).ok());
  }
  using F = double (*)(double);
  const std::pair<const char*, F> unary[] = {
      {"tan", [](double v) { return std::tan(v); }},     {"asin", [](double v) { return std::asin(v); }},
      {"acos", [](double v) { return std::acos(v); }},   {"atan", [](double v) { return std::atan(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},   {"cosh", [](double v) { return std::cosh(v); }},
      {"asinh", [](double v) { return std::asinh(v); }}, {"acosh", [](double v) { return std::acosh(v); }},
      {"atanh", [](double v) { return std::atanh(v); }}, {"expm1", [](double v) { return std::expm1(v); }}};
  double worst = 0;
  int64_t failures = 0;
  auto check = [&](const char* name, float x, float got, double want) {
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(got);
    } else if (std::isinf(static_cast<float>(want))) {
      ok = got == static_cast<float>(want) || std::abs(got) == std::numeric_limits<float>::max();
    } else {
      const double ulp = std::ldexp(1.0, std::max(std::ilogb(want), -126) - 23);
      worst = std::max(worst, std::abs(got - want) / ulp);
      ok = std::abs(got - want) <= 4 * ulp;
    }
    if (!ok && ++failures <= 10) ADD_FAILURE() << name << "(" << x << ") = " << got << ", not " << want;
  };
  for (size_t i = 0; i < xs.size(); ++i) {
    for (int f = 0; f < kFunctions - 1; ++f) check(unary[f].first, xs[i], out[f][i], unary[f].second(xs[i]));
    check("atan2", xs[i], out[kFunctions - 1][i], std::atan2(static_cast<double>(xs[i]), static_cast<double>(ys[i])));
  }
  EXPECT_EQ(failures, 0);
  RecordProperty("worst_ulp", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, LibmForms,
                         testing::Values(SinCosForm{"x86-64-v4", 0, "16 x float> @_ZGVeN16v_"},
                                         SinCosForm{"x86-64-v4", 256, "8 x float> @_ZGVdN8v_"},
                                         SinCosForm{"x86-64-v3", 0, "8 x float> @_ZGVdN8v_"},
                                         SinCosForm{"x86-64", 0, "4 x float> @_ZGVbN4v_"}));

// Code for a CPU without AVX-512 runs on every x86-64 host of this project.
TEST(CpuBackend, RunsCodeForACpuWithoutAvx512) {
  if (!HostHas("avx2")) GTEST_SKIP() << "the host has no AVX2: " << cpu::HostCpu();
  cpu::CompileOptions options;
  options.target = {"x86-64-v3", "", 0};
  auto exe = cpu::Compile(kBiasRelu, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<float> x(64 * 256), b(256), out(64 * 256, -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 29) - 14) * 0.25f;
  for (size_t j = 0; j < b.size(); ++j) b[j] = 0.01f * static_cast<float>(j) - 1.0f;
  ASSERT_TRUE((*exe)->Call("bias_relu", {x.data(), b.data(), out.data()}).ok());
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 256; ++j) ASSERT_EQ(out[i * 256 + j], std::max(x[i * 256 + j] + b[j], 0.0f)) << i << "," << j;
}

// Code the host cannot run is compiled (its assembly can be read) but never called.
TEST(CpuBackend, RefusesToCallCodeTheHostCannotRun) {
  const char* feature = HostHas("avx512f") ? "amx-fp16" : "avx512f";
  if (HostHas(feature)) GTEST_SKIP() << "the host has " << feature;
  cpu::CompileOptions options;
  options.target = {"sapphirerapids", std::string("+") + feature, 0};
  auto exe = cpu::Compile(kBiasRelu, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto fn = (*exe)->Function("bias_relu");
  ASSERT_FALSE(fn.ok());
  EXPECT_EQ(fn.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(fn.status().message().find(feature), std::string::npos) << fn.status().message();
}

TEST(CpuBackend, ReportsBadTargets) {
  for (const cpu::Target& bad : {cpu::Target{"pentium-9000", "", 0}, cpu::Target{"", "+no-such-feature", 0},
                                 cpu::Target{"", "avx2", 0}, cpu::Target{"", "", 384}}) {
    auto d = cpu::DescribeTarget(bad);
    ASSERT_FALSE(d.ok()) << bad.cpu << bad.features << bad.prefer_vector_width;
    EXPECT_EQ(d.status().code(), Code::kInvalidArgument);
    cpu::CompileOptions options;
    options.target = bad;
    EXPECT_EQ(cpu::Compile(kBiasRelu, options).status().code(), Code::kInvalidArgument);
  }
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

// The object file a compile makes is what the disk cache keeps: loaded again (as another
// process would), it computes what the compile's own executable does. What is not such an
// object does not load.
TEST(CpuBackend, AnObjectFileLoadsWithoutCompiling) {
  cpu::CompileReport report;
  auto object = cpu::CompileToObject(kBiasReluTanh, {}, &report);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->substr(0, 4),
            "\x7f"
            "ELF");
  auto compiled = cpu::Load(*object, {});
  auto loaded = cpu::Load(*object, {});
  ASSERT_TRUE(compiled.ok() && loaded.ok()) << loaded.status().ToString();
  std::vector<float> x(37 * 19), b(19, 0.25f), want(x.size()), got(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) - 6.5f;
  ASSERT_TRUE((*compiled)->Call("bias_relu_tanh", {x.data(), b.data(), want.data()}).ok());
  ASSERT_TRUE((*loaded)->Call("bias_relu_tanh", {x.data(), b.data(), got.data()}).ok());
  EXPECT_EQ(got, want);
  EXPECT_GT(want[12], 0.99f);

  for (const std::string& bad : {std::string(), std::string("not an object"), object->substr(0, object->size() / 2)}) {
    auto no = cpu::Load(bad, {});
    ASSERT_FALSE(no.ok());
    EXPECT_EQ(no.status().code(), Code::kInvalidArgument) << no.status().ToString();
  }
}

// An NVPTX intrinsic in CPU code: x86 instruction selection cannot select it, which LLVM
// reports with report_fatal_error. The compile fails with LLVM's message; the process goes
// on, and compiles again.
TEST(CpuBackend, AnLlvmFatalErrorIsAnErrorNotAnAbort) {
  const char* kNotForTheCpu = R"(
func.func @f(%out: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %t = nvvm.read.ptx.sreg.tid.x : i32
  memref.store %t, %out[%c0] : memref<4xi32>
  return
}
)";
  for (int attempt = 0; attempt < 2; ++attempt) {
#ifdef GRAPHJIT_LSAN
    __lsan::ScopedDisabler abandoned_compile_leaks;  // as documented
#endif
    auto exe = cpu::Compile(kNotForTheCpu);  // code may be generated at the first lookup
    const Status failed = exe.ok() ? (*exe)->Function("f").status() : exe.status();
    EXPECT_EQ(failed.code(), Code::kInternal) << failed.ToString();
    EXPECT_NE(failed.message().find("LLVM failed: Cannot select"), std::string::npos) << failed.ToString();
  }
  auto fine = cpu::Compile(kBiasReluTanh);
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_TRUE((*fine)->Function("bias_relu_tanh").ok());
}

// What an executable says it holds (what the kernel cache's bound counts) is what it
// holds: its code pages, and the heap of its execution engine, measured here (one thread,
// nothing else allocating) against Executable::kEngineHeapBytes.
TEST(CpuBackend, AnExecutableCountsWhatItHolds) {
#ifdef GRAPHJIT_SANITIZED_MALLOC
  GTEST_SKIP() << "the heap is measured with glibc's mallinfo2";
#else
  constexpr int kN = 8;
  ASSERT_TRUE(cpu::Compile(kBiasReluTanh).ok());  // the one-time set-up is not an executable's
  std::vector<std::unique_ptr<cpu::Executable>> held;
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < kN; ++i) {
    auto exe = cpu::Compile(kBiasReluTanh);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    held.push_back(std::move(*exe));
  }
  const double heap = static_cast<double>(mallinfo2().uordblks - before) / kN;
  EXPECT_GT(heap, 0.75 * cpu::Executable::kEngineHeapBytes);
  EXPECT_LT(heap, 1.25 * cpu::Executable::kEngineHeapBytes);
  for (const auto& exe : held) {
    EXPECT_GE(exe->bytes(), cpu::Executable::kEngineHeapBytes + 4096);  // and at least a page of code
    EXPECT_LT(exe->bytes(), cpu::Executable::kEngineHeapBytes + (256 << 10));
  }
#endif
}

}  // namespace
}  // namespace graphjit
