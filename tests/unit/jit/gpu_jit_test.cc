// The JIT's GPU backend on the CUDA emulator: every schedule (loops with and without 4-wide
// accesses, a warp or a block per row, rows held in registers, staged in shared memory or
// looped over, column and full reductions by thread or by block, the thread-per-row
// fallback) against the reference kernels; the unfused baseline; placement; reproducible
// float reductions; what is copied between the host and the device (weights once per
// session, tensors kept on the device between clusters). Every module is also assembled by
// ptxas for sm_80 and sm_90 without spills (gpu_ptxas_check).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "cuda_emulator/cuemu.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "runtime/trace.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;

class GpuJit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RegisterGraphOptimizer();
    RegisterJit();
  }
  void SetUp() override { REQUIRE_TEST_GPU(); }
};

SessionOptions OnGpu(JitLevel level) {
  SessionOptions options;
  options.device = testing::TestGpu();
  options.gpu_ptxas_check = true;
  options.jit_level = level;
  options.min_cluster_size = 1;
  options.intra_op_threads = options.inter_op_threads = 1;
  options.gpu_graphs = false;  // each kernel launched (and counted) on its own
  options.gpu_tf32 = false;    // GEMMs compared with the CPU's float32 ones
  return options;
}

// Runs on the GPU (nothing may fall back or fail in the compiler) and op by op on the CPU;
// returns {gpu, reference} and the kernels the GPU run launched.
struct Runs {
  std::vector<Tensor> gpu, reference;
  int64_t launches = 0;
};
Runs RunBoth(const tensorflow::GraphDef& gd, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, JitLevel level = JitLevel::kOn2) {
  Runs r;
  const JitStats before = GetJitStats();
  r.gpu = testing::RunOrDie(*testing::MakeSession(gd, OnGpu(level)), feeds, fetches);
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.fallback, before.fallback) << "a cluster ran op by op";
  EXPECT_EQ(after.internal_errors, before.internal_errors);
  r.launches = after.gpu_launches - before.gpu_launches;
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  r.reference = testing::RunOrDie(*testing::MakeSession(gd, cpu), feeds, fetches);
  return r;
}

void ExpectClose(const Tensor& got, const Tensor& want, double rtol, const std::string& what, double atol = 1e-6) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  int reported = 0;
  for (int64_t i = 0; i < got.num_elements() && reported < 5; ++i) {
    const double g = got.ValueAsDouble(i), w = want.ValueAsDouble(i);
    const bool ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) ADD_FAILURE() << what << " element " << i << ": gpu " << g << ", reference " << w << (++reported, "");
  }
}

// The softmax of each row of x (its last axis), in float64, rounded to float32: what a
// kernel's float32 rounding errors are measured against (a float32 reference's own sum of
// n exponentials drifts by up to ~1e-4 of it at n = 600000, with SSE2's four lanes).
Tensor ExactSoftmax(const Tensor& x) {
  const int64_t cols = x.shape().dim(x.shape().rank() - 1), rows = x.num_elements() / cols;
  std::vector<float> y(x.num_elements());
  const float* in = x.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    const double max = *std::max_element(row, row + cols);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(row[c] - max);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = static_cast<float>(std::exp(row[c] - max) / sum);
  }
  return testing::MakeFloat(x.shape(), y);
}

Tensor Random(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(shape.num_elements());
  for (float& x : v) x = normal(rng);
  return testing::MakeFloat(shape, v);
}

// softmax(x) over the last dim, written as TensorFlow's Python writes it, plus the row's
// mean and max as outputs of their own.
tensorflow::GraphDef Softmax(int64_t cols) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, cols});
  b.Const("axis", testing::MakeInt32({}, {-1}));
  auto* max = b.Op("max", "Max", {"x", "axis"});
  testing::SetAttrType(max, "Tidx", DType::kInt32);
  testing::SetAttrBool(max, "keep_dims", true);
  b.Op("sub", "Sub", {"x", "max"});
  b.Op("exp", "Exp", {"sub"});
  auto* sum = b.Op("sum", "Sum", {"exp", "axis"});
  testing::SetAttrType(sum, "Tidx", DType::kInt32);
  testing::SetAttrBool(sum, "keep_dims", true);
  b.Op("softmax", "RealDiv", {"exp", "sum"});
  auto* mean = b.Op("mean", "Mean", {"x", "axis"});
  testing::SetAttrType(mean, "Tidx", DType::kInt32);
  return b.graph_def();
}

// Rows of 5 (a warp per row, 4 rows per block, the last block short), 256, 1000 (a block per
// row, the last column guarded), 1024 (8 per thread, held), 10000 (looped over), 150000 (too
// long for a block's shared memory: on sm_90 a cluster of blocks per row, elsewhere each
// reduction in two phases, then the stores), 600000 (too long for a cluster: in phases).
TEST_F(GpuJit, RowSchedulesMatchTheReference) {
  auto driver = CudaDriver::Open(CudaDriverLibrary(testing::TestGpu(), "").value());
  ASSERT_TRUE(driver.ok()) << driver.status().message();
  const bool clusters = (*driver)->device().compute_capability_major >= 9;
  struct Case {
    int64_t rows, cols, launches;
  };
  // Two clusters (nothing connects the mean to the softmax), one kernel each; or in phases:
  // max, sum and the mean two kernels each, then the softmax's stores.
  for (const Case& c : std::vector<Case>{
           {7, 5, 2}, {9, 256, 2}, {3, 1000, 2}, {5, 1024, 2}, {2, 10000, 2}, {2, 150000, clusters ? 3 : 7}, {1, 600000, 7}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols));
    const Tensor x = Random(Shape({c.rows, c.cols}), static_cast<uint32_t>(c.cols));
    const Runs r = RunBoth(Softmax(c.cols), {{"x", x}}, {"softmax", "mean", "max"});
    // The sum of a row of n exponentials: rounding errors that grow as sqrt(n) (in either
    // order of summation), against the exact softmax.
    ExpectClose(r.gpu[0], ExactSoftmax(x), 2e-6 + 3e-8 * std::sqrt(static_cast<double>(c.cols)), "softmax", 1e-9);
    ExpectClose(r.gpu[1], r.reference[1], 1e-5, "mean");
    ExpectClose(r.gpu[2], r.reference[2], 0, "max", 0);
    EXPECT_EQ(r.launches, c.launches);
  }
}

// Rows too long for a block's registers (more than 8 elements for each of 1024 threads) are
// read from memory once: the softmax's first loop (the max) stages each thread's columns in
// dynamic shared memory, the later ones (the sum, the stores) read them there. Above 48 KB
// the kernel opts in. A row beyond what a block may have (227 KB on an H100, 163 KB on an
// A100, less 4 KB kept for the kernel's own arrays) is split among the blocks of a
// thread-block cluster on an sm_90 GPU (up to 8, each staging a slice; their maxima and
// sums combined through distributed shared memory); on an A100 it is read by each loop.
TEST_F(GpuJit, LongRowsAreReadFromMemoryOnce) {
  auto driver = CudaDriver::Open(CudaDriverLibrary(testing::TestGpu(), "").value());
  ASSERT_TRUE(driver.ok()) << driver.status().message();
  const int64_t shared = (*driver)->device().shared_memory_per_block_optin - 4096;
  const bool clusters = (*driver)->device().compute_capability_major >= 9;
  for (const int64_t cols : {10000, 16384, 50000, 70000, 100000, 262144}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 3, bytes = rows * cols * 4;
    int64_t cluster = 0;  // blocks per row holding it: 0 where none do
    for (int64_t n = 1; n <= (clusters ? 8 : 1) && cluster == 0; ++n)
      if ((cols + n - 1) / n * 4 <= shared) cluster = n;
    const Tensor x = Random(Shape({rows, cols}), static_cast<uint32_t>(cols));
    SessionOptions options = OnGpu(JitLevel::kOn2);
    options.gpu_profile = true;
    (void)TakeGpuProfiles();
    const std::vector<Tensor> gpu = testing::RunOrDie(*testing::MakeSession(Softmax(cols), options), {{"x", x}}, {"softmax"});
    const std::vector<GpuKernelProfile> profiles = TakeGpuProfiles();
    ExpectClose(gpu[0], ExactSoftmax(x), 2e-6 + 3e-8 * std::sqrt(static_cast<double>(cols)), "softmax", 1e-9);
    if (cols == 262144) {  // launched from a launch graph too (captured, then replayed): the same bits
      SessionOptions graphs = OnGpu(JitLevel::kOn2);
      graphs.gpu_graphs = true;
      auto session = testing::MakeSession(Softmax(cols), graphs);
      for (int run = 0; run < 2; ++run)
        ExpectClose(testing::RunOrDie(*session, {{"x", x}}, {"softmax"})[0], gpu[0], 0, "softmax from a graph", 0);
    }
    if (cols > 70000 && !clusters) continue;  // an A100: rows too few for a block each (two phases)
    ASSERT_EQ(profiles.size(), 1u);
    const GpuKernelProfile& p = profiles[0];
    EXPECT_EQ(p.grid, rows * std::max<int64_t>(cluster, 1));
    EXPECT_EQ(p.block, 1024);
    if (!p.counted) continue;  // a GPU: what it read is not counted
    // Loaded (once, or by the max, the sum and the stores) and stored once.
    EXPECT_EQ(p.requested_bytes, (cluster ? 1 : 3) * bytes + bytes);
    EXPECT_EQ(p.shared_bytes >= (cols + std::max<int64_t>(cluster, 1) - 1) / std::max<int64_t>(cluster, 1) * 4, cluster > 0)
        << p.shared_bytes;
  }
}

// A row over two axes of a float16 input, normalized (mean, variance, stores): 8 x 2048 is
// staged as float16 in one block's shared memory (32 KB), 8 x 40000 (625 KB) across a
// cluster of three blocks on sm_90; either is read from memory once.
TEST_F(GpuJit, LongRowsOfHalvesOverTwoAxesAreStagedToo) {
  auto driver = CudaDriver::Open(CudaDriverLibrary(testing::TestGpu(), "").value());
  ASSERT_TRUE(driver.ok()) << driver.status().message();
  const bool clusters = (*driver)->device().compute_capability_major >= 9;
  for (const int64_t inner : {2048, 40000}) {
    SCOPED_TRACE(inner);
    const int64_t rows = 3, cols = 8 * inner;
    GraphBuilder b;
    b.Placeholder("x", DType::kHalf, {-1, 8, -1});
    b.Const("axes", testing::MakeInt32({2}, {1, 2}));
    auto* cast = b.Op("xf", "Cast", {"x"}, DType::kInvalid);
    testing::SetAttrType(cast, "SrcT", DType::kHalf);
    testing::SetAttrType(cast, "DstT", DType::kFloat);
    for (const auto& [name, input] : std::vector<std::pair<std::string, std::string>>{{"mean", "xf"}, {"var", "sqdiff"}}) {
      if (name == "var") b.Op("sqdiff", "SquaredDifference", {"xf", "mean"});
      auto* mean = b.Op(name, "Mean", {input, "axes"});
      testing::SetAttrType(mean, "Tidx", DType::kInt32);
      testing::SetAttrBool(mean, "keep_dims", true);
    }
    b.Op("centered", "Sub", {"xf", "mean"});
    b.Op("y", "Mul", {"centered", "var"});
    const Tensor xf = Random(Shape{rows, 8, inner}, 11);
    std::vector<double> values(xf.num_elements());
    for (size_t i = 0; i < values.size(); ++i) values[i] = xf.data<float>()[i];
    const Tensor x = testing::MakeTensor(DType::kHalf, Shape{rows, 8, inner}, values);
    SessionOptions options = OnGpu(JitLevel::kOn2);
    options.gpu_profile = true;
    (void)TakeGpuProfiles();
    const std::vector<Tensor> gpu = testing::RunOrDie(*testing::MakeSession(b.graph_def(), options), {{"x", x}}, {"y"});
    const std::vector<GpuKernelProfile> profiles = TakeGpuProfiles();
    SessionOptions cpu;
    cpu.jit_level = JitLevel::kOff;
    const std::vector<Tensor> want = testing::RunOrDie(*testing::MakeSession(b.graph_def(), cpu), {{"x", x}}, {"y"});
    ExpectClose(gpu[0], want[0], 1e-5, "y", 1e-4);
    const int64_t cluster = inner == 2048 ? 1 : 3;
    if (cluster > 1 && !clusters) continue;  // an A100: read by each loop
    ASSERT_EQ(profiles.size(), 1u);
    EXPECT_EQ(profiles[0].grid, rows * cluster);
    if (!profiles[0].counted) continue;  // a GPU: what it read is not counted
    EXPECT_GE(profiles[0].shared_bytes, cols / cluster * 2);
    EXPECT_EQ(profiles[0].requested_bytes, rows * cols * (2 + 4));  // read once (float16), stored once (float32)
  }
}

// The unfused baseline: the same clusters, each op a kernel of its own (max, sub, exp, sum,
// div; the mean), the same results; fused: a kernel per cluster.
TEST_F(GpuJit, OffRunsEachOpAsItsOwnKernel) {
  const Tensor x = Random(Shape({6, 300}), 1);
  const Runs off = RunBoth(Softmax(300), {{"x", x}}, {"softmax", "mean"}, JitLevel::kOff);
  ExpectClose(off.gpu[0], off.reference[0], 2e-6, "softmax");
  ExpectClose(off.gpu[1], off.reference[1], 1e-5, "mean");
  EXPECT_EQ(off.launches, 6);
  const Runs on = RunBoth(Softmax(300), {{"x", x}}, {"softmax", "mean"}, JitLevel::kOn2);
  EXPECT_EQ(on.launches, 2);
}

// Grids are sized from the device (its SMs and blocks per SM), not for one GPU: a loop
// over more elements than the device's resident threads takes exactly the blocks it holds
// at once. ctest runs this on the emulator as an H100 (132 SMs) and as an A100
// (CUEMU_DEVICE=a100: 108 SMs, sm_80 code, which the emulator then requires).
TEST_F(GpuJit, GridsFollowTheDevicesSmCount) {
  auto driver = CudaDriver::Open(CudaDriverLibrary(testing::TestGpu(), "").value());
  ASSERT_TRUE(driver.ok()) << driver.status().message();
  const CudaDeviceInfo& device = (*driver)->device();
  const char* model = std::getenv("CUEMU_DEVICE");
  if (device.emulated && model && std::string(model) == "a100") {
    EXPECT_EQ(device.multiprocessors, 108);
    EXPECT_EQ(device.compute_capability_major, 8);
  } else if (device.emulated) {
    EXPECT_EQ(device.multiprocessors, 132);
  }  // a real GPU: its own SMs, whatever they are
  const int64_t resident = int64_t{device.multiprocessors} * device.max_blocks_per_multiprocessor;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1});
  b.Op("t", "Tanh", {"x"});
  b.Op("y", "Mul", {"t", "x"});
  SessionOptions options = OnGpu(JitLevel::kOn2);
  options.gpu_profile = true;
  const int64_t n = 4 * 256 * (resident + 100) + 3;  // 4 elements a thread: more threads than resident
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 1000) / 250 - 2;
  (void)TakeGpuProfiles();
  const JitStats before = GetJitStats();
  const std::vector<Tensor> y =
      testing::RunOrDie(*testing::MakeSession(b.graph_def(), options), {{"x", testing::MakeFloat(Shape({n}), values)}}, {"y"});
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.fallback, before.fallback);
  const std::vector<GpuKernelProfile> profiles = TakeGpuProfiles();
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].grid, resident) << profiles[0].name;
  for (int64_t i : {int64_t{0}, n / 2, n - 1}) EXPECT_NEAR(y[0].data<float>()[i], std::tanh(values[i]) * values[i], 1e-6) << i;
}

// Loops: 4-wide when the last dim allows it, else one element per thread; broadcasts.
TEST_F(GpuJit, LoopsMatchTheReference) {
  for (int64_t cols : {8, 7, 1}) {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, cols});
    b.Placeholder("bias", DType::kFloat, {cols});
    b.Op("add", "BiasAdd", {"x", "bias"});
    b.Op("relu", "Relu", {"add"});
    b.Op("y", "Tanh", {"relu"});
    const Runs r = RunBoth(b.graph_def(), {{"x", Random(Shape({301, cols}), 2)}, {"bias", Random(Shape({cols}), 3)}}, {"y"});
    ExpectClose(r.gpu[0], r.reference[0], 2e-6, "cols " + std::to_string(cols));
  }
}

// Column reductions (a thread per output when there are many, a block per output when
// there are few, two phases when either leaves threads idle), full reductions in two
// phases, integer and 64-bit rows, ArgMax along rows. Max and Min see NaNs and zeros of
// both signs.
TEST_F(GpuJit, ReductionsMatchTheReference) {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int32_t> axes;
    std::string op;
    DType dtype;
    int64_t launches;  // of the whole graph (the reduction and the Neg after it)
  };
  // Reductions over trailing dims are row fusions, the others reduce fusions.
  for (const Case& c : std::vector<Case>{{{16, 4096}, {0}, "Sum", DType::kFloat, 2},       // a thread per output
                                         {{5000, 3}, {0}, "Max", DType::kFloat, 2},        // a block per output
                                         {{40, 50, 60}, {0, 2}, "Min", DType::kFloat, 2},  // a block per output
                                         {{512, 1024}, {0}, "Sum", DType::kFloat, 3},      // two phases, a thread per output
                                         {{40000, 3}, {0}, "Min", DType::kFloat, 3},       // two phases, a block per output
                                         {{40000, 2}, {0}, "Sum", DType::kInt32, 3},
                                         {{300, 40}, {0, 1}, "Mean", DType::kFloat, 1},  // a block per row
                                         {{3, 50000}, {0, 1}, "Max", DType::kFloat, 2},  // two phases (the second stores y)
                                         {{2, 200000}, {1}, "Mean", DType::kFloat, 2},   // two phases per row
                                         {{17, 33}, {1}, "Sum", DType::kInt32, 1},
                                         {{17, 33}, {1}, "Sum", DType::kInt64, 1},
                                         {{17, 33}, {1}, "ArgMax", DType::kFloat, 1}}) {
    SCOPED_TRACE(c.op + " of " + DTypeName(c.dtype) + " " + Shape(c.shape).ToString());
    GraphBuilder b;
    b.Placeholder("x", c.dtype, c.shape);
    b.Const("axes", testing::MakeInt32({static_cast<int64_t>(c.axes.size())}, c.axes));
    auto* r = b.Op("r", c.op, {"x", "axes"}, c.dtype);
    testing::SetAttrType(r, "Tidx", DType::kInt32);
    if (c.op == "ArgMax") {
      testing::SetAttrType(r, "output_type", DType::kInt64);
      b.graph_def().mutable_node(1)->mutable_attr()->at("value").mutable_tensor()->mutable_tensor_shape()->clear_dim();
    }
    b.Op("y", "Neg", {"r"}, c.op == "ArgMax" ? DType::kInt64 : c.dtype);
    Tensor x = Random(Shape(c.shape), 4);
    if (c.op == "Max" || c.op == "Min") {
      float* v = x.data<float>();
      v[7] = NAN;                       // one output (or the only one) is NaN
      v[x.num_elements() - 2] = -0.0f;  // signed zeros elsewhere
      v[x.num_elements() / 2] = 0.0f;
    }
    if (c.dtype != DType::kFloat) x = *CastTensor(x, c.dtype);
    const Runs runs = RunBoth(b.graph_def(), {{"x", x}}, {"y"});
    // Two float sums of n values (of standard deviation 3) in different orders: each
    // rounds n partial sums of about 3 sqrt(n), so they differ by about 2^-24 * 3n.
    double count = 1;
    for (int32_t a : c.axes) count *= c.shape[a];
    ExpectClose(runs.gpu[0], runs.reference[0], 1e-5, "y", 1e-6 + 1.2e-7 * 3 * (c.op == "Mean" ? 1 : count));
    EXPECT_EQ(runs.launches, c.launches);
  }
}

// Float reductions combine in a fixed order: runs give the same bits, whatever order the
// threads of a block run in (the emulator runs them in the orders below; a real GPU in its own).
TEST_F(GpuJit, FloatReductionsAreReproducible) {
  auto library = CudaDriverLibrary(testing::TestGpu(), "");
  ASSERT_TRUE(library.ok());
  const Tensor x = Random(Shape({4, 100000}), 5);
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4, 100000});
  b.Const("axes", testing::MakeInt32({2}, {0, 1}));
  auto* sum = b.Op("sum", "Sum", {"x", "axes"});
  testing::SetAttrType(sum, "Tidx", DType::kInt32);
  b.Const("columns", testing::MakeInt32({1}, {0}));
  auto* column_sums = b.Op("column_sums", "Sum", {"x", "columns"});
  testing::SetAttrType(column_sums, "Tidx", DType::kInt32);
  b.Op("y", "Neg", {"sum"});
  b.Op("z", "Neg", {"column_sums"});
  auto session = testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2));
  const std::vector<Tensor> first = testing::RunOrDie(*session, {{"x", x}}, {"y", "z"});
  void* driver = dlopen(library->c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(driver, nullptr) << "the driver is loaded by the first run";
  auto set_order = reinterpret_cast<decltype(&cuemuSetThreadOrder)>(dlsym(driver, "cuemuSetThreadOrder"));
  if (testing::TestGpu() == DeviceKind::kGpuEmu) {
    ASSERT_NE(set_order, nullptr);
  }
  for (const auto& [order, seed] : std::vector<std::pair<CUemuThreadOrder, unsigned long long>>{
           {CUEMU_ORDER_REVERSE, 0}, {CUEMU_ORDER_SHUFFLE, 7}, {CUEMU_ORDER_SHUFFLE, 8}, {CUEMU_ORDER_FORWARD, 0}}) {
    if (set_order) {
      ASSERT_EQ(set_order(order, seed), CUDA_SUCCESS);
    }
    const std::vector<Tensor> again = testing::RunOrDie(*session, {{"x", x}}, {"y", "z"});
    for (size_t i = 0; i < first.size(); ++i)
      EXPECT_EQ(std::memcmp(first[i].raw(), again[i].raw(), first[i].bytes()), 0) << "order " << order << " seed " << seed;
  }
}

// Nodes a graph places on a GPU run on the CPU in a session without one (the JIT compiles
// them for the CPU), and on the GPU in a session with one.
// A _FusedMatMul's bias, and a ReLU after it, are cuBLASLt's epilogue; any other activation
// TensorFlow's remapper fuses runs in the next kernel, with what follows it: one GEMM and
// one kernel, where the CPU would otherwise run the whole node.
TEST_F(GpuJit, GemmActivationsCublasLtLacksRunInTheNextKernel) {
  for (const std::string act : {"Relu", "Relu6", "Elu", "Tanh", "Sigmoid", "GeluExact", "GeluApproximate"}) {
    SCOPED_TRACE(act);
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, 40});
    b.Const("w", Random(Shape{40, 24}, 1));
    b.Const("b", Random(Shape{24}, 2));
    tensorflow::NodeDef* fused = b.Op("fused", "_FusedMatMul", {"x", "w", "b"});
    testing::SetAttrType(fused, "T", DType::kFloat);
    testing::SetAttrInt(fused, "num_args", 1);
    for (const char* op : {"BiasAdd", act.c_str()}) (*fused->mutable_attr())["fused_ops"].mutable_list()->add_s(op);
    b.Const("two", testing::MakeFloat({}, {2.0f}));
    b.Op("y", "Mul", {"fused", "two"});
    const Runs r = RunBoth(b.graph_def(), {{"x", Random(Shape({67, 40}), 3)}}, {"y"});
    // Sums of 40 products of about 9 each: float32's order differences reach 2e-5.
    ExpectClose(r.gpu[0], r.reference[0], 1e-4, act, 1e-4);
    EXPECT_EQ(r.launches, 2) << "the GEMM and one kernel";
  }
}

// Range, its limit fed (a value of the signature): start + i * delta, as TensorFlow's GPU
// kernel computes it; integers exactly, float32 within a rounding or two of the exact value.
TEST_F(GpuJit, RangeCountsOnTheGpu) {
  for (const DType dtype : {DType::kInt32, DType::kInt64, DType::kFloat}) {
    SCOPED_TRACE(DTypeName(dtype));
    auto scalar = [&](double v) {
      if (dtype == DType::kInt32) return Tensor::Scalar(static_cast<int32_t>(v));
      if (dtype == DType::kInt64) return Tensor::Scalar(static_cast<int64_t>(v));
      return Tensor::Scalar(static_cast<float>(v));
    };
    const bool floating = dtype == DType::kFloat;
    const double start = floating ? 0.1 : -7, delta = floating ? 0.3 : 3;
    GraphBuilder b;
    b.Placeholder("limit", dtype, {});
    b.Const("start", scalar(start));
    b.Const("delta", scalar(delta));
    testing::SetAttrType(b.Op("range", "Range", {"start", "limit", "delta"}), "Tidx", dtype);
    const Runs r = RunBoth(b.graph_def(), {{"limit", scalar(2000)}}, {"range"});
    ASSERT_EQ(r.gpu[0].shape(), r.reference[0].shape());
    EXPECT_EQ(r.launches, 1);
    for (int64_t i = 0; i < r.gpu[0].num_elements(); ++i) {
      const double exact =
          floating ? static_cast<double>(static_cast<float>(start)) + i * static_cast<double>(static_cast<float>(delta))
                   : start + i * delta;
      if (floating)
        ASSERT_NEAR(r.gpu[0].ValueAsDouble(i), exact, 2.5e-7 * std::fabs(exact) + 1e-7) << "element " << i;
      else
        ASSERT_EQ(r.gpu[0].ValueAsDouble(i), exact) << "element " << i;
    }
    // On the CPU, a float Range is TensorFlow's CPU kernel's (the step added once per element).
    SessionOptions cpu = OnGpu(JitLevel::kOn2);
    cpu.device = DeviceKind::kCpu;
    const JitStats before = GetJitStats();
    testing::RunOrDie(*testing::MakeSession(b.graph_def(), cpu), {{"limit", scalar(2000)}}, {"range"});
    EXPECT_EQ(GetJitStats().compiled > before.compiled, !floating);
  }
}

// A float as a TF32 operand: 10 mantissa bits, the nearest, ties away from zero.
double Tf32(float x) {
  int exponent = 0;
  const double mantissa = std::frexp(static_cast<double>(x), &exponent);
  return std::ldexp(std::round(std::ldexp(mantissa, 11)), exponent - 11);
}

// GEMMs multiply TF32 operands unless the session turns it off (--gpu_tf32=off); the two
// policies are two signatures, so neither takes the other's kernels. A long k with a small
// output takes cuBLASLt's workspace (the emulator's stand-in splits k through it).
TEST_F(GpuJit, GemmsMultiplyInTf32UnlessTurnedOff) {
  for (const int64_t k : {40, 8192}) {
    SCOPED_TRACE("k " + std::to_string(k));
    const int64_t m = 5, n = 6;
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, k});
    const Tensor w = Random(Shape{k, n}, 1), x = Random(Shape{m, k}, 2);
    b.Const("w", w);
    b.Op("y", "MatMul", {"x", "w"});
    const Runs r = RunBoth(b.graph_def(), {{"x", x}}, {"y"});  // TF32 off
    ExpectClose(r.gpu[0], r.reference[0], 1e-5, "float32 products", 1e-4);
    for (const bool graphs : {false, true}) {
      SessionOptions tf32 = OnGpu(JitLevel::kOn2);
      tf32.gpu_tf32 = true;
      tf32.gpu_graphs = graphs;
      const Tensor got = testing::RunOrDie(*testing::MakeSession(b.graph_def(), tf32), {{"x", x}}, {"y"})[0];
      double apart = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double product = Tf32(x.data<float>()[i * k + p]) * Tf32(w.data<float>()[p * n + j]);
            want += product;
            magnitude += std::fabs(product);
          }
          const double g = got.data<float>()[i * n + j];
          EXPECT_NEAR(g, want, 1e-6 * magnitude) << i << "," << j;
          apart = std::max(apart, std::fabs(g - r.reference[0].data<float>()[i * n + j]));
        }
      EXPECT_GT(apart, 1e-3) << "TF32 products look like float32 ones";
    }
  }
}

// A GEMM's cuBLASLt algorithms are timed once per shape (--gpu_autotune; the emulator's
// stand-in offers three for k = 256: k whole, split in 2 and in 4): another session takes
// the kernel cache's choice; with autotuning off the heuristic's first is taken untimed
// (another target: it compiles its own kernel). Each gives the GEMM's answer.
TEST_F(GpuJit, GemmAlgorithmsAreTimedOncePerShape) {
  const int64_t k = 256;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, k});
  b.Const("w", Random(Shape{k, 24}, 1));
  b.Op("y", "MatMul", {"x", "w"});
  for (const int64_t m : {7, 9}) {
    SCOPED_TRACE("m " + std::to_string(m));
    const Tensor x = Random(Shape{m, k}, 2);
    const int64_t before = GetJitStats().gemms_autotuned;
    const Runs r = RunBoth(b.graph_def(), {{"x", x}}, {"y"});
    const int64_t timed = GetJitStats().gemms_autotuned - before;
    if (testing::TestGpu() == DeviceKind::kGpuEmu) {
      EXPECT_EQ(timed, 1);
    }
    EXPECT_LE(timed, 1);  // a GPU's cuBLASLt may offer one algorithm
    ExpectClose(r.gpu[0], r.reference[0], 1e-5, "timed", 1e-4);
    const Tensor again = testing::RunOrDie(*testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2)), {{"x", x}}, {"y"})[0];
    EXPECT_EQ(GetJitStats().gemms_autotuned - before, timed) << "a second session timed the GEMM again";
    EXPECT_EQ(std::memcmp(again.raw(), r.gpu[0].raw(), again.bytes()), 0) << "another algorithm";
    SessionOptions untuned = OnGpu(JitLevel::kOn2);
    untuned.gpu_autotune = false;
    const int64_t compiles = GetJitStats().compiles;
    const Tensor first = testing::RunOrDie(*testing::MakeSession(b.graph_def(), untuned), {{"x", x}}, {"y"})[0];
    EXPECT_EQ(GetJitStats().gemms_autotuned - before, timed);
    EXPECT_EQ(GetJitStats().compiles - compiles, 1) << "untuned kernels are another target's";
    ExpectClose(first, r.reference[0], 1e-5, "untuned", 1e-4);
  }
}

// An algorithm the library's heuristic offers may still fail on the device: autotuning
// leaves it out and times the rest (here the emulator's cuBLASLt refuses the heuristic's
// first choice, CUEMU_REJECT_ALGOS=0), and the GEMM compiles with another.
TEST_F(GpuJit, AutotuningSkipsWhatTheLibraryRejects) {
  if (testing::TestGpu() != DeviceKind::kGpuEmu) GTEST_SKIP() << "the CUDA emulator's cuBLASLt rejects algorithms on request";
  testing::ScopedEnv reject("CUEMU_REJECT_ALGOS", "0");
  const int64_t k = 256;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, k});
  b.Const("w", Random(Shape{k, 24}, 81));
  b.Op("y", "MatMul", {"x", "w"});
  const int64_t before = GetJitStats().gemms_autotuned;
  const Runs r = RunBoth(b.graph_def(), {{"x", Random(Shape{11, k}, 82)}}, {"y"});  // nothing falls back
  EXPECT_EQ(GetJitStats().gemms_autotuned - before, 1);
  ExpectClose(r.gpu[0], r.reference[0], 1e-5, "y", 1e-4);
}

// A capture that fails (CUEMU_INVALIDATE_CAPTURES=1: as one would that met a call it
// cannot take) does not fail the run: its kernels are launched one by one, right, and the
// executable is not captured again (--jit_verbose says so once).
TEST_F(GpuJit, AFailedCaptureIsReplayedByLaunchesAndNotTriedAgain) {
  if (testing::TestGpu() != DeviceKind::kGpuEmu) GTEST_SKIP() << "the CUDA emulator fails captures on request";
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {6, 48});
  b.Const("w", Random(Shape({48, 20}), 91));
  b.Op("mm", "MatMul", {"x", "w"});
  b.Op("y", "Softsign", {"mm"});
  SessionOptions options = OnGpu(JitLevel::kOn2);
  options.gpu_graphs = true;
  options.jit_verbose = true;
  auto session = testing::MakeSession(b.graph_def(), options);
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  auto reference = testing::MakeSession(b.graph_def(), cpu);
  testing::ScopedEnv fail("CUEMU_INVALIDATE_CAPTURES", "1");
  ::testing::internal::CaptureStderr();
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const Tensor x = Random(Shape({6, 48}), 92 + run);
    const JitStats before = GetJitStats();
    std::vector<Tensor> got;
    Status s = session->Run({{"x", x}}, {"y"}, {}, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const JitStats after = GetJitStats();
    EXPECT_EQ(after.fallback, before.fallback);
    EXPECT_EQ(after.graph_launches, before.graph_launches);
    EXPECT_EQ(after.gpu_launches - before.gpu_launches, 2) << "the GEMM and the Softsign, one by one";
    // The first call launches one by one; the second tries a capture, which fails; no later one tries.
    EXPECT_EQ(after.captures_failed - before.captures_failed, run == 1 ? 1 : 0);
    ExpectClose(got[0], testing::RunOrDie(*reference, {{"x", x}}, {"y"})[0], 1e-5, "y", 1e-5);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string said = "could not be captured into a CUDA graph";
  EXPECT_NE(err.find(said), std::string::npos) << err;
  EXPECT_EQ(err.find(said), err.rfind(said)) << "said more than once: " << err;
}

// float16 and bfloat16 GEMMs (a Keras mixed_float16 Dense: Casts around MatMul + BiasAdd,
// which the remapper makes one _FusedMatMul, and a BatchMatMulV2) are cuBLASLt's on the
// GPU, summed in float32 as the CPU's reference kernels sum them.
TEST_F(GpuJit, HalfAndBfloat16GemmsRunOnTheGpu) {
  for (const DType dtype : {DType::kHalf, DType::kBFloat16}) {
    SCOPED_TRACE(DTypeName(dtype));
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, 40});
    b.Placeholder("u", DType::kFloat, {3, -1, 16});
    b.Const("w", Random(Shape{40, 24}, 1));
    b.Const("bias", Random(Shape{24}, 2));
    b.Const("v", Random(Shape{3, 16, 8}, 3));
    for (const char* name : {"x", "w", "bias", "u", "v"}) {
      auto* cast = b.Op(std::string(name) + "_h", "Cast", {name}, DType::kInvalid);
      testing::SetAttrType(cast, "SrcT", DType::kFloat);
      testing::SetAttrType(cast, "DstT", dtype);
    }
    b.Op("mm", "MatMul", {"x_h", "w_h"}, dtype);
    b.Op("dense", "BiasAdd", {"mm", "bias_h"}, dtype);
    b.Op("bmm", "BatchMatMulV2", {"u_h", "v_h"}, dtype);
    for (const char* name : {"dense", "bmm"}) {
      auto* cast = b.Op(std::string(name) + "_f", "Cast", {name}, DType::kInvalid);
      testing::SetAttrType(cast, "SrcT", dtype);
      testing::SetAttrType(cast, "DstT", DType::kFloat);
    }
    const JitStats before = GetJitStats();
    const Runs r =
        RunBoth(b.graph_def(), {{"x", Random(Shape({33, 40}), 4)}, {"u", Random(Shape({3, 5, 16}), 5)}}, {"dense_f", "bmm_f"});
    // One cluster per path (Casts, GEMM, bias, Cast): a GEMM on the CPU would split its path.
    EXPECT_EQ(GetJitStats().clusters - before.clusters, 2) << "a GEMM left its cluster";
    const double rtol = dtype == DType::kHalf ? 2e-3 : 1.6e-2;  // 2 units in the last place
    ExpectClose(r.gpu[0], r.reference[0], rtol, "dense", 1e-2);
    ExpectClose(r.gpu[1], r.reference[1], rtol, "bmm", 1e-2);
  }
}

TEST_F(GpuJit, NodesPlacedOnAGpuRunWhereTheSessionCan) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {16});
  b.Op("a", "Exp", {"x"})->set_device("/job:localhost/replica:0/task:0/device:GPU:0");
  b.Op("y", "Tanh", {"a"})->set_device("/device:GPU:0");
  const Tensor x = Random(Shape({16}), 6);
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOn2;
  cpu.min_cluster_size = 1;
  JitStats before = GetJitStats();
  const Tensor on_cpu = testing::RunOrDie(*testing::MakeSession(b.graph_def(), cpu), {{"x", x}}, {"y"})[0];
  EXPECT_EQ(GetJitStats().gpu_launches, before.gpu_launches);
  EXPECT_GT(GetJitStats().compiled, before.compiled);
  before = GetJitStats();
  const Tensor on_gpu = testing::RunOrDie(*testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2)), {{"x", x}}, {"y"})[0];
  EXPECT_EQ(GetJitStats().gpu_launches, before.gpu_launches + 1);
  ExpectClose(on_gpu, on_cpu, 2e-6, "y");
}

// In a session with a GPU and the JIT off, ops on the GPU are compiled (each its own
// kernel), ops pinned to the CPU are not.
TEST_F(GpuJit, AtLevelOffOpsPinnedToTheCpuAreNotCompiled) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {16});
  b.Op("a", "Exp", {"x"})->set_device("/device:CPU:0");
  b.Op("y", "Tanh", {"a"});
  const JitStats before = GetJitStats();
  const Runs r = RunBoth(b.graph_def(), {{"x", Random(Shape({16}), 7)}}, {"y"}, JitLevel::kOff);
  ExpectClose(r.gpu[0], r.reference[0], 2e-6, "y");
  EXPECT_EQ(r.launches, 1);
  EXPECT_EQ(GetJitStats().compiled, before.compiled + 1) << "only the GPU's Tanh";
}

// GatherV2 on the GPU, as TensorFlow's GPU kernel computes it: rows, columns, batch dims,
// int64 indices, fused with its neighbours; an index out of range reads as zero. On the CPU
// it is not compiled (TensorFlow's CPU kernel fails on such an index: so does graphjit's).
TEST_F(GpuJit, GatherRunsOnTheGpuWithZerosForIndicesOutOfRange) {
  struct Case {
    const char* what;
    Shape params;
    Tensor indices;
    int axis, batch_dims;
  };
  const std::vector<Case> cases = {
      {"rows", Shape({6, 5}), testing::MakeInt32({4}, {5, 0, 2, 2}), 0, 0},
      {"columns, 2-D indices", Shape({3, 7}), testing::MakeInt32({2, 2}, {6, 1, 0, 3}), 1, 0},
      {"batch dims", Shape({2, 4, 3}), testing::MakeInt32({2, 3}, {3, 0, 1, 2, 2, 0}), 1, 1},
      {"int64, last axis", Shape({2, 3, 4}), testing::MakeTensor(DType::kInt64, Shape({2}), {3, 1}), -1, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    for (const bool out_of_range : {false, true}) {
      GraphBuilder b;
      b.Placeholder("p", DType::kFloat, c.params.dims());
      Tensor indices = c.indices;
      if (out_of_range) {
        indices = *indices.Clone(nullptr);
        const int64_t bad = c.params.dim(c.axis < 0 ? c.axis + c.params.rank() : c.axis);
        if (indices.dtype() == DType::kInt32)
          indices.data<int32_t>()[0] = static_cast<int32_t>(bad), indices.data<int32_t>()[1] = -1;
        else
          indices.data<int64_t>()[0] = bad, indices.data<int64_t>()[1] = -1;
      }
      b.Const("indices", indices);
      b.Const("axis", testing::MakeInt32({}, {c.axis}));
      b.Op("e", "Exp", {"p"});
      auto* gather = b.Op("g", "GatherV2", {"e", "indices", "axis"}, DType::kInvalid);
      testing::SetAttrType(gather, "Tparams", DType::kFloat);
      testing::SetAttrType(gather, "Tindices", indices.dtype());
      testing::SetAttrType(gather, "Taxis", DType::kInt32);
      testing::SetAttrInt(gather, "batch_dims", c.batch_dims);
      b.Op("y", "Neg", {"g"});
      const Tensor p = Random(c.params, 50);
      const JitStats before = GetJitStats();
      const Tensor got = testing::RunOrDie(*testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn1)), {{"p", p}}, {"y"})[0];
      EXPECT_EQ(GetJitStats().gpu_launches - before.gpu_launches, 1) << "Exp, GatherV2 and Neg in one kernel";
      EXPECT_EQ(GetJitStats().fallback, before.fallback);
      SessionOptions cpu;
      cpu.jit_level = JitLevel::kOn1;
      cpu.min_cluster_size = 1;
      auto on_cpu = testing::MakeSession(b.graph_def(), cpu);
      std::vector<Tensor> want;
      Status s = on_cpu->Run({{"p", p}}, {"y"}, {}, &want);
      if (!out_of_range) {
        ASSERT_TRUE(s.ok()) << s.ToString();
        ExpectClose(got, want[0], 2e-6, "y");
        continue;
      }
      EXPECT_EQ(s.code(), Code::kFailedPrecondition) << "the CPU's gather: " << s.ToString();
      // The first two indices read zeros (-0 after the Neg); the rest match the in-range run.
      int64_t zeros = 0;
      for (int64_t i = 0; i < got.num_elements(); ++i) zeros += got.data<float>()[i] == 0.0f;
      EXPECT_GE(zeros, 2) << "no zero where an index is out of range";
    }
  }
}

// ---- What crosses between the host and the device ----

// A dense layer and a softmax over a weight and a bias: the weights are copied to the
// device at a session's first run alone, the feed at every run, the result back once.
TEST_F(GpuJit, WeightsAreCopiedOncePerSession) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 64});
  const Tensor w = Random(Shape({64, 32}), 11), bias = Random(Shape({32}), 12);
  b.Const("w", w);
  b.Const("bias", bias);
  b.Op("mm", "MatMul", {"x", "w"});
  b.Op("biased", "BiasAdd", {"mm", "bias"});
  b.Op("y", "Softmax", {"biased"});
  const Tensor x = Random(Shape({8, 64}), 13);
  const int64_t y_bytes = 8 * 32 * sizeof(float);
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  const Tensor want = testing::RunOrDie(*testing::MakeSession(b.graph_def(), cpu), {{"x", x}}, {"y"})[0];
  for (int session = 0; session < 2; ++session) {
    auto s = testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2));
    for (int run = 0; run < 3; ++run) {
      SCOPED_TRACE("session " + std::to_string(session) + ", run " + std::to_string(run));
      ExpectClose(testing::RunOrDie(*s, {{"x", x}}, {"y"})[0], want, 1e-5, "y");
      const StreamCounts t = s->LastRunCounts();
      const int64_t weights = run == 0 ? static_cast<int64_t>(w.bytes() + bias.bytes()) : 0;
      EXPECT_EQ(t.h2d_bytes, static_cast<int64_t>(x.bytes()) + weights);
      EXPECT_EQ(t.h2d_copies, run == 0 ? 3 : 1);
      EXPECT_EQ(t.d2h_bytes, y_bytes);
      EXPECT_EQ(t.d2h_copies, 1);
    }
  }
}

// A float GatherV2 along axis 0 ("axis", a Const the graph has) with int32 indices, placed
// on the CPU: an op of the host between GPU clusters.
void GatherOnCpu(GraphBuilder& b, const std::string& name, const std::string& params, const std::string& indices) {
  auto* gather = b.Op(name, "GatherV2", {params, indices, "axis"}, DType::kInvalid);
  gather->set_device("/device:CPU:0");
  testing::SetAttrType(gather, "Tparams", DType::kFloat);
  testing::SetAttrType(gather, "Tindices", DType::kInt32);
  testing::SetAttrType(gather, "Taxis", DType::kInt32);
}

// ---- Device tensors in the C++ API ----

// A caller that keeps its data on the GPU: a feed given as device memory is read in place
// and the fetch comes back as device memory, so nothing crosses to or from the host after
// the weights' first copy; a CPU op reading the device feed gets a copy for its run (made
// again when the caller changes the memory); bad device memory is refused up front.
TEST_F(GpuJit, DeviceTensorsGoInAndOutWithoutCopies) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {8, 64});
  b.Const("w", Random(Shape({64, 32}), 31));
  b.Const("bias", Random(Shape({32}), 32));
  b.Const("index", testing::MakeInt32({2}, {5, 1}));
  b.Const("axis", testing::MakeInt32({}, {0}));
  b.Op("mm", "MatMul", {"x", "w"});
  b.Op("biased", "BiasAdd", {"mm", "bias"});
  b.Op("y", "Softmax", {"biased"});
  GatherOnCpu(b, "rows", "x", "index");
  auto session = testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2));
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  auto reference = testing::MakeSession(b.graph_def(), cpu);
  // The caller's device memory (here from the same driver's allocator).
  auto library = CudaDriverLibrary(testing::TestGpu(), "");
  ASSERT_TRUE(library.ok()) << library.status().ToString();
  auto device = CudaDevice::Get(*library);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  auto stream = (*device)->NewStream();
  ASSERT_TRUE(stream.ok());
  const size_t x_bytes = 8 * 64 * sizeof(float);
  auto x_address = (*device)->Allocate(x_bytes);
  ASSERT_TRUE(x_address.ok());
  auto x_on_device = session->DeviceTensor(DType::kFloat, Shape({8, 64}), *x_address);
  ASSERT_TRUE(x_on_device.ok()) << x_on_device.status().ToString();
  RunOptions on_device;
  on_device.fetch_on_device = true;
  on_device.stream = (*stream)->handle();
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const Tensor x = Random(Shape({8, 64}), 40 + run);                        // new contents each run
    ASSERT_TRUE((*stream)->CopyToDevice(*x_address, x.raw(), x_bytes).ok());  // queued on the caller's stream
    std::vector<Tensor> got;
    Status s = session->Run(on_device, {{"x", *x_on_device}}, {"y"}, {}, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const StreamCounts counts = session->LastRunCounts();
    if (run > 0) {
      EXPECT_EQ(counts.h2d_bytes, 0) << counts.ToString();
    }
    EXPECT_EQ(counts.d2h_bytes, 0) << counts.ToString();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].raw(), nullptr) << "a host copy of a device fetch";
    auto y_address = session->DeviceAddress(got[0]);
    ASSERT_TRUE(y_address.ok()) << y_address.status().ToString();
    Tensor y = *Tensor::Allocate(DType::kFloat, Shape({8, 32}));
    ASSERT_TRUE((*stream)->CopyToHost(y.raw(), *y_address, y.bytes()).ok());
    const std::vector<Tensor> want = testing::RunOrDie(*reference, {{"x", x}}, {"y", "rows"});
    ExpectClose(y, want[0], 1e-4, "y");  // (the reference kernels of a baseline x86-64 build sum in another order)
    // The CPU op's copy of the device feed is this run's: the new contents.
    ASSERT_TRUE(session->Run(on_device, {{"x", *x_on_device}}, {"rows"}, {}, &got).ok());
    ASSERT_NE(got[0].raw(), nullptr) << "made on the host: a host tensor";
    ExpectClose(got[0], want[1], 0, "rows");
    EXPECT_EQ(session->LastRunCounts().d2h_bytes, static_cast<int64_t>(x_bytes));
  }
  // Fetched on the host (the default), the same tensor is a host tensor.
  std::vector<Tensor> host;
  ASSERT_TRUE(session->Run({{"x", *x_on_device}}, {"y"}, {}, &host).ok());
  EXPECT_NE(host[0].raw(), nullptr);
  EXPECT_FALSE(session->DeviceAddress(host[0]).ok());
  // Bad memory: past the allocation's end, or a host pointer.
  EXPECT_EQ(session->DeviceTensor(DType::kFloat, Shape({8, 65}), *x_address).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(session->DeviceTensor(DType::kFloat, Shape({2}), reinterpret_cast<uint64_t>(host[0].raw())).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(session->DeviceTensor(DType::kFloat, Shape({-1, 64}), *x_address).status().code(), Code::kInvalidArgument);
  // Without a GPU there are no device tensors, and a device tensor is no feed.
  EXPECT_EQ(reference->DeviceTensor(DType::kFloat, Shape({8, 64}), *x_address).status().code(), Code::kFailedPrecondition);
  std::vector<Tensor> none;
  EXPECT_EQ(reference->Run({{"x", *x_on_device}}, {"y"}, {}, &none).code(), Code::kFailedPrecondition);
  (*device)->Free(*x_address);
}

// Memory the caller lends is not always 16-byte aligned (a slice of a tensor): a feed 4
// bytes past such a boundary is copied to aligned memory once per run (the kernels load 16
// bytes at a time; on a GPU a misaligned load breaks the context for good), and gives the
// answer of the aligned one. A GEMM of broadcast batches calls cuBLASLt per matrix, at
// offsets 4-byte aligned only: its plan declares the alignments it gets (the emulator's
// cuBLASLt, like NVIDIA's, refuses pointers less aligned than the plan's minimums, 256
// bytes by default).
TEST_F(GpuJit, MisalignedFeedsAndBroadcastBatchesGetTheirAlignment) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {3, 1, 5, 7});
  b.Placeholder("v", DType::kFloat, {1, 4, 7, 3});
  b.Op("e", "Exp", {"x"});
  b.Op("bmm", "BatchMatMulV2", {"e", "v"});
  b.Op("y", "Tanh", {"bmm"});
  auto session = testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2));
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  auto reference = testing::MakeSession(b.graph_def(), cpu);
  auto device = CudaDevice::Get(CudaDriverLibrary(testing::TestGpu(), "").value());
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  auto stream = (*device)->NewStream();
  ASSERT_TRUE(stream.ok());
  const Tensor x = Random(Shape({3, 1, 5, 7}), 71), v = Random(Shape({1, 4, 7, 3}), 72);
  auto base = (*device)->Allocate(x.bytes() + v.bytes() + 64);
  ASSERT_TRUE(base.ok());
  const uint64_t x_at = *base + 4, v_at = *base + 36 + x.bytes();  // 4 mod 16 both
  ASSERT_TRUE((*stream)->CopyToDevice(x_at, x.raw(), x.bytes()).ok());
  ASSERT_TRUE((*stream)->CopyToDevice(v_at, v.raw(), v.bytes()).ok());
  ASSERT_TRUE((*stream)->Synchronize().ok());
  auto x_on_device = session->DeviceTensor(DType::kFloat, x.shape(), x_at);
  auto v_on_device = session->DeviceTensor(DType::kFloat, v.shape(), v_at);
  ASSERT_TRUE(x_on_device.ok() && v_on_device.ok());
  const std::vector<Tensor> want = testing::RunOrDie(*reference, {{"x", x}, {"v", v}}, {"y"});
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const JitStats before = GetJitStats();
    std::vector<Tensor> got;
    Status s = session->Run({{"x", *x_on_device}, {"v", *v_on_device}}, {"y"}, {}, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const JitStats after = GetJitStats();
    EXPECT_EQ(after.fallback, before.fallback) << "a cluster ran op by op";
    EXPECT_EQ(after.aligned_copies - before.aligned_copies, 2) << "each misaligned feed copied once per run";
    ExpectClose(got[0], want[0], 1e-5, "y", 1e-5);
  }
  (*device)->Free(*base);
}

// ---- Launch graphs ----

// A dense layer, a softmax and a centring tail (a GEMM and a fused kernel in one cluster):
// with launch graphs, every run is one graph launch and no kernel is launched on
// its own; the answers are those of the kernels launched one by one, also when the feed
// changes and when the caller keeps a run's result while the next runs (other buffers:
// another graph, or the same one updated).
TEST_F(GpuJit, ClustersReplayOneLaunchGraphPerRun) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {8, 64});
  b.Const("w", Random(Shape({64, 32}), 21));
  b.Const("bias", Random(Shape({32}), 22));
  b.Const("axis", testing::MakeInt32({1}, {1}));
  b.Op("mm", "MatMul", {"x", "w"});
  b.Op("biased", "BiasAdd", {"mm", "bias"});
  b.Op("p", "Softmax", {"biased"});
  testing::SetAttrBool(b.Op("m", "Mean", {"p", "axis"}), "keep_dims", true);
  b.Op("c", "Sub", {"p", "m"});
  b.Op("y", "Tanh", {"c"});
  SessionOptions graphs = OnGpu(JitLevel::kOn2);
  graphs.gpu_graphs = true;
  auto with = testing::MakeSession(b.graph_def(), graphs);
  auto without = testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2));
  std::vector<Tensor> kept;  // results held while later runs run
  for (int run = 0; run < 8; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const Tensor x = Random(Shape({8, 64}), 100 + run % 3);
    JitStats before = GetJitStats();
    const Tensor one_by_one = testing::RunOrDie(*without, {{"x", x}}, {"y"})[0];
    const int64_t kernels = GetJitStats().gpu_launches - before.gpu_launches;
    EXPECT_GE(kernels, 2) << "the GEMM and the fused rest";
    EXPECT_EQ(without->LastRunCounts().graph_launches, 0);
    before = GetJitStats();
    const Tensor replayed = testing::RunOrDie(*with, {{"x", x}}, {"y"})[0];
    // (The kernels are the other session's, which launched them one by one first: an
    // executable's first call is never captured.)
    EXPECT_EQ(GetJitStats().gpu_launches, before.gpu_launches) << "a kernel launched outside the graph";
    EXPECT_EQ(GetJitStats().graph_launches, before.graph_launches + 1);
    EXPECT_EQ(with->LastRunCounts().graph_launches, 1);
    ASSERT_EQ(replayed.bytes(), one_by_one.bytes());
    EXPECT_EQ(std::memcmp(replayed.raw(), one_by_one.raw(), replayed.bytes()), 0) << "not the same kernels' answer";
    if (run % 2) kept.push_back(replayed);
  }
  // Off by the flag.
  SessionOptions off = graphs;
  ASSERT_TRUE(ApplyFlags("--gpu_graphs=off", &off).ok());
  EXPECT_FALSE(off.gpu_graphs);
  EXPECT_FALSE(ApplyFlags("--gpu_graphs=maybe", &off).ok());
}

// Two clusters with ops on the CPU between them: a = exp(x) on the GPU is read by two CPU
// ops (two GatherV2s placed there: copied to the host once, for both) and by the second cluster
// (taken on the device, with no copy), which also reads the gather's output (copied in)
// and the feed (copied in once for both clusters, and again at the next run: the caller may
// have changed it in place).
TEST_F(GpuJit, TensorsStayOnTheDeviceUntilTheHostReadsThem) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {8, 16});
  b.Const("index", testing::MakeInt32({8}, {3, 1, 0, 7, 2, 6, 4, 5}));
  b.Const("axis", testing::MakeInt32({}, {0}));
  b.Const("reversed", testing::MakeInt32({8}, {7, 6, 5, 4, 3, 2, 1, 0}));
  b.Op("a", "Exp", {"x"});
  for (const auto& [name, index] : {std::pair{"g", "index"}, std::pair{"t", "reversed"}}) {
    GatherOnCpu(b, name, "a", index);
  }
  b.Op("tanh", "Tanh", {"a"});
  b.Op("sum", "Add", {"tanh", "g"});
  b.Op("y", "Add", {"sum", "x"});
  const Tensor x = Random(Shape({8, 16}), 14);
  const JitStats before = GetJitStats();
  auto s = testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2));
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  auto reference = testing::MakeSession(b.graph_def(), cpu);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    if (run == 1) x.data<float>()[5] += 1.0f;  // the same tensor, changed in place
    const std::vector<Tensor> got = testing::RunOrDie(*s, {{"x", x}}, {"y", "t"});
    const std::vector<Tensor> want = testing::RunOrDie(*reference, {{"x", x}}, {"y", "t"});
    ExpectClose(got[0], want[0], 2e-6, "y");
    ExpectClose(got[1], want[1], 2e-6, "t");
    EXPECT_EQ(GetJitStats().clusters - before.clusters, 2);
    EXPECT_EQ(GetJitStats().fallback, before.fallback);
    const StreamCounts t = s->LastRunCounts();
    const int64_t bytes = 8 * 16 * sizeof(float);
    EXPECT_EQ(t.h2d_copies, 2) << "x and g in";
    EXPECT_EQ(t.h2d_bytes, 2 * bytes);
    EXPECT_EQ(t.d2h_copies, 2) << "a once (for both gathers), y fetched";
    EXPECT_EQ(t.d2h_bytes, 2 * bytes);
  }
}

// The same graph from four threads at once, with two inter-op threads per run: the CPU ops
// that read `a` may copy it to the host at the same time (one of them does), while
// clusters of other runs read their tensors on the device. Two sessions with launch graphs
// share the kernels (and their graphs) from two streams, capturing and replaying at once.
TEST_F(GpuJit, ConcurrentRunsShareTheDeviceSafely) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {8, 16});
  b.Const("index", testing::MakeInt32({8}, {7, 6, 5, 4, 3, 2, 1, 0}));
  b.Const("axis", testing::MakeInt32({}, {0}));
  b.Const("w", Random(Shape({16, 16}), 15));
  b.Op("a", "Exp", {"x"});
  GatherOnCpu(b, "g", "a", "index");
  b.Const("multiples", testing::MakeInt32({2}, {1, 1}));
  auto* tile = b.Op("t", "Tile", {"a", "multiples"});
  testing::SetAttrType(tile, "Tmultiples", DType::kInt32);
  b.Op("mm", "MatMul", {"a", "w"});
  b.Op("sum", "Add", {"mm", "g"});
  b.Op("y", "Add", {"sum", "t"});
  SessionOptions options = OnGpu(JitLevel::kOn2);
  options.inter_op_threads = 2;
  std::vector<decltype(testing::MakeSession(b.graph_def(), options))> sessions;
  sessions.push_back(testing::MakeSession(b.graph_def(), options));
  options.gpu_graphs = true;
  for (int i = 0; i < 2; ++i) sessions.push_back(testing::MakeSession(b.graph_def(), options));
  SessionOptions cpu;
  cpu.jit_level = JitLevel::kOff;
  auto reference = testing::MakeSession(b.graph_def(), cpu);
  std::vector<Tensor> inputs, want;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(Random(Shape({8, 16}), 20 + i));
    want.push_back(testing::RunOrDie(*reference, {{"x", inputs[i]}}, {"y"})[0]);
  }
  std::vector<std::thread> threads;
  std::vector<std::vector<Tensor>> got(6);
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 10; ++run) {
        std::vector<Tensor> out;
        Status status = sessions[t % 3]->Run({{"x", inputs[(t + run) % 4]}}, {"y"}, {}, &out);
        if (!status.ok() || run == 9) got[t] = status.ok() ? out : std::vector<Tensor>{};
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 6; ++t) {
    ASSERT_EQ(got[t].size(), 1u) << "thread " << t;
    // exp(x) reaches thousands: the GEMM's sums, in cuBLASLt's order and in the CPU's, differ
    // in their last bits (a race would differ everywhere).
    ExpectClose(got[t][0], want[(t + 9) % 4], 1e-4, "y of thread " + std::to_string(t), 1e-2);
  }
}

// ---- convolutional networks ----------------------------------------------------------

// A node of `op` with TensorFlow's convolution attrs: `strides` (h, w), `padding`, NHWC
// (or NCHW).
tensorflow::NodeDef* Conv(GraphBuilder& b, const std::string& name, const std::string& op, std::vector<std::string> inputs,
                          int64_t stride, const std::string& padding, DType t = DType::kFloat, bool nchw = false) {
  tensorflow::NodeDef* n = b.Op(name, op, std::move(inputs), t);
  testing::SetAttrInts(n, "strides",
                       nchw ? std::vector<int64_t>{1, 1, stride, stride} : std::vector<int64_t>{1, stride, stride, 1});
  testing::SetAttrString(n, "padding", padding);
  testing::SetAttrString(n, "data_format", nchw ? "NCHW" : "NHWC");
  return n;
}

// Launches of library calls (cuDNN's here) and of compiled kernels in the profiles.
std::pair<int, int> LibraryAndKernelLaunches(const std::vector<GpuKernelProfile>& profiles) {
  std::pair<int, int> n{0, 0};
  for (const GpuKernelProfile& p : profiles) (p.library ? n.first : n.second)++;
  return n;
}

// A fused convolution's epilogue: what cuDNN's fused call takes (a bias, a residual, a ReLU)
// stays in the one cuDNN call; another activation runs in the next kernel (here the Square
// after it); the unfused baseline makes the same plain cuDNN call and a kernel per op. Each
// matches the CPU's kernels.
TEST_F(GpuJit, ConvEpiloguesCudnnLacksRunInTheNextKernel) {
  struct Case {
    std::vector<std::string> fused_ops;
    int kernels;  // fused, besides the cuDNN call: the Square, with the activation cuDNN lacks
  };
  for (const Case& c : std::vector<Case>{{{"BiasAdd"}, 1},
                                         {{"BiasAdd", "Relu"}, 1},
                                         {{"BiasAdd", "Add"}, 1},
                                         {{"BiasAdd", "Add", "Relu"}, 1},
                                         {{"BiasAdd", "Relu6"}, 1},
                                         {{"BiasAdd", "Add", "Elu"}, 1}}) {
    std::string name;
    for (const std::string& op : c.fused_ops) name += op + " ";
    SCOPED_TRACE(name);
    const bool residual = c.fused_ops.size() > 1 && c.fused_ops[1] == "Add";
    for (const bool depthwise : {false, true}) {
      SCOPED_TRACE(depthwise ? "depthwise" : "conv2d");
      GraphBuilder b;
      b.Placeholder("x", DType::kFloat, {-1, 7, 9, 4});
      b.Const("w", Random(Shape{3, 3, 4, depthwise ? 2 : 8}, 1));
      b.Const("bias", Random(Shape{8}, 2));
      b.Placeholder("r", DType::kFloat, {-1, 7, 9, 8});
      std::vector<std::string> inputs = {"x", "w", "bias"};
      if (residual) inputs.push_back("r");
      tensorflow::NodeDef* conv = Conv(b, "conv", depthwise ? "_FusedDepthwiseConv2dNative" : "_FusedConv2D", inputs, 1, "SAME");
      testing::SetAttrInt(conv, "num_args", residual ? 2 : 1);
      for (const std::string& op : c.fused_ops) (*conv->mutable_attr())["fused_ops"].mutable_list()->add_s(op);
      b.Op("y", "Square", {"conv"});  // (a Mul by a constant would be folded into the filter)
      const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(Shape({2, 7, 9, 4}), 3)},
                                                                 {"r", Random(Shape({2, 7, 9, 8}), 4)}};
      for (const JitLevel level : {JitLevel::kOn2, JitLevel::kOff}) {
        SessionOptions options = OnGpu(level);
        options.gpu_profile = true;
        (void)TakeGpuProfiles();
        const Tensor got = testing::RunOrDie(*testing::MakeSession(b.graph_def(), options), feeds, {"y"})[0];
        const auto [library, kernels] = LibraryAndKernelLaunches(TakeGpuProfiles());
        SessionOptions cpu;
        cpu.jit_level = JitLevel::kOff;
        const Tensor want = testing::RunOrDie(*testing::MakeSession(b.graph_def(), cpu), feeds, {"y"})[0];
        // Sums of 36 (depthwise: 9) products of about 9 each, then the epilogue, squared.
        ExpectClose(got, want, 2e-4, level == JitLevel::kOff ? "unfused" : "fused", 1e-4);
        EXPECT_EQ(library, 1) << "one cuDNN call";
        // Unfused: BiasAdd, the residual's AddV2, the activation and the Square, each a kernel.
        const int unfused = 2 + (residual ? 1 : 0) + (c.fused_ops.size() > (residual ? 2u : 1u) ? 1 : 0);
        EXPECT_EQ(kernels, level == JitLevel::kOff ? unfused : c.kernels);
      }
    }
  }
}

// TensorFlow's SAME padding puts the odd row or column at the end, which cuDNN cannot: the
// input is padded first (a kernel), or, for Conv2DBackpropInput, the gradient of the padded
// input is sliced; EXPLICIT padding that differs at the two ends, dilations, strides. Each
// against the CPU's kernels.
TEST_F(GpuJit, ConvolutionsPaddedMoreAtOneEndMatchTheReference) {
  struct Case {
    std::string op, padding;
    int64_t stride, dilation;
    std::vector<int64_t> explicit_paddings;
  };
  for (const Case& c : std::vector<Case>{{"Conv2D", "SAME", 2, 1, {}},
                                         {"Conv2D", "SAME", 1, 2, {}},
                                         {"Conv2D", "EXPLICIT", 1, 1, {0, 0, 2, 0, 1, 3, 0, 0}},
                                         {"DepthwiseConv2dNative", "SAME", 2, 1, {}},
                                         {"Conv2DBackpropInput", "SAME", 2, 1, {}},
                                         {"Conv2DBackpropInput", "EXPLICIT", 2, 1, {0, 0, 0, 1, 2, 1, 0, 0}}}) {
    SCOPED_TRACE(c.op + " " + c.padding + " stride " + std::to_string(c.stride) + " dilation " + std::to_string(c.dilation));
    GraphBuilder b;
    const bool backprop = c.op == "Conv2DBackpropInput";
    const Shape x{2, 8, 10, 3};
    b.Const("w", Random(Shape{3, 4, 3, backprop ? 5 : 2}, 1));
    std::vector<std::string> inputs = {"x", "w"};
    Shape fed = x;
    if (backprop) {
      b.Const("sizes", testing::MakeInt32({4}, {2, 8, 10, 3}));
      inputs = {"sizes", "w", "x"};
      // The forward convolution's output: SAME, stride 2: 4 x 5; the EXPLICIT one: (8+1-3)/2+1 x (10+3-4)/2+1.
      fed = c.padding == "SAME" ? Shape{2, 4, 5, 5} : Shape{2, 4, 5, 5};
    }
    b.Placeholder("x", DType::kFloat, {-1, fed.dim(1), fed.dim(2), fed.dim(3)});
    tensorflow::NodeDef* conv = Conv(b, "y", c.op, inputs, c.stride, c.padding);
    if (!c.explicit_paddings.empty()) testing::SetAttrInts(conv, "explicit_paddings", c.explicit_paddings);
    if (c.dilation > 1) testing::SetAttrInts(conv, "dilations", {1, c.dilation, c.dilation, 1});
    const Runs r = RunBoth(b.graph_def(), {{"x", Random(fed, 2)}}, {"y"});
    ExpectClose(r.gpu[0], r.reference[0], 1e-4, c.op, 1e-4);
  }
}

// NCHW convolutions (cuDNN's NCHW tensors and KCRS filters; the CPU's kernels transpose
// to NHWC): Conv2D padded more at one end, with a dilation, a depthwise one and
// Conv2DBackpropInput, against the NHWC convolution of the transposed input, transposed
// back, on the CPU (TensorFlow's CPU build has no NCHW convolution to make fixtures with).
TEST_F(GpuJit, NchwConvolutionsMatchTheNhwcOnesThroughTransposes) {
  struct Case {
    std::string op;
    int64_t stride, dilation;
  };
  for (const Case& c :
       std::vector<Case>{{"Conv2D", 2, 1}, {"Conv2D", 1, 2}, {"DepthwiseConv2dNative", 2, 1}, {"Conv2DBackpropInput", 2, 1}}) {
    SCOPED_TRACE(c.op + " stride " + std::to_string(c.stride) + " dilation " + std::to_string(c.dilation));
    const bool backprop = c.op == "Conv2DBackpropInput";
    // x is NHWC [2, 8, 10, 3] (backprop: dy [2, 4, 5, 5], dx of x's shape).
    const Shape fed_nhwc = backprop ? Shape{2, 4, 5, 5} : Shape{2, 8, 10, 3};
    const Tensor fed = Random(fed_nhwc, 2);
    tensorflow::GraphDef graphs[2];
    for (const bool nchw : {false, true}) {
      GraphBuilder b;
      b.Const("w", Random(Shape{3, 4, 3, backprop ? 5 : 2}, 1));
      b.Placeholder("x", DType::kFloat, {-1, fed_nhwc.dim(1), fed_nhwc.dim(2), fed_nhwc.dim(3)});
      b.Const("to_nchw", testing::MakeInt32({4}, {0, 3, 1, 2}));
      b.Const("to_nhwc", testing::MakeInt32({4}, {0, 2, 3, 1}));
      std::string in = "x";
      if (nchw) {
        b.Op("x_nchw", "Transpose", {"x", "to_nchw"});
        in = "x_nchw";
      }
      std::vector<std::string> inputs = {in, "w"};
      if (backprop) {
        b.Const("sizes", nchw ? testing::MakeInt32({4}, {2, 3, 8, 10}) : testing::MakeInt32({4}, {2, 8, 10, 3}));
        inputs = {"sizes", "w", in};
      }
      tensorflow::NodeDef* conv = Conv(b, "conv", c.op, inputs, c.stride, "SAME", DType::kFloat, nchw);
      if (c.dilation > 1)
        testing::SetAttrInts(
            conv, "dilations",
            nchw ? std::vector<int64_t>{1, 1, c.dilation, c.dilation} : std::vector<int64_t>{1, c.dilation, c.dilation, 1});
      if (nchw)
        b.Op("y", "Transpose", {"conv", "to_nhwc"});
      else
        b.Op("y", "Identity", {"conv"});
      graphs[nchw] = b.graph_def();
    }
    SessionOptions cpu;
    cpu.jit_level = JitLevel::kOff;
    const Tensor want = testing::RunOrDie(*testing::MakeSession(graphs[0], cpu), {{"x", fed}}, {"y"})[0];
    const JitStats before = GetJitStats();
    const Tensor got = testing::RunOrDie(*testing::MakeSession(graphs[1], OnGpu(JitLevel::kOn2)), {{"x", fed}}, {"y"})[0];
    EXPECT_EQ(GetJitStats().fallback, before.fallback);
    ExpectClose(got, want, 1e-4, "NCHW on the GPU", 1e-4);
    const Tensor cpu_nchw = testing::RunOrDie(*testing::MakeSession(graphs[1], cpu), {{"x", fed}}, {"y"})[0];
    ExpectClose(cpu_nchw, want, 1e-5, "NCHW on the CPU", 1e-5);
  }
}

// float16 and bfloat16: a convolution (cuDNN, products summed in float32), a max and an
// average pool, a batch norm (its parameters float32) against the CPU's kernels, which also
// round once.
TEST_F(GpuJit, HalfAndBfloat16ConvolutionsPoolsAndBatchNorms) {
  for (const DType dtype : {DType::kHalf, DType::kBFloat16}) {
    SCOPED_TRACE(DTypeName(dtype));
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, 9, 8, 4});
    b.Const("w", Random(Shape{3, 3, 4, 6}, 1));
    for (const char* name : {"x", "w"}) {
      auto* cast = b.Op(std::string(name) + "_h", "Cast", {name}, DType::kInvalid);
      testing::SetAttrType(cast, "SrcT", DType::kFloat);
      testing::SetAttrType(cast, "DstT", dtype);
    }
    Conv(b, "conv", "Conv2D", {"x_h", "w_h"}, 1, "SAME", dtype);
    for (const char* pool : {"MaxPool", "AvgPool"}) {
      tensorflow::NodeDef* p = Conv(b, pool, pool, {"conv"}, 2, "SAME", dtype);
      testing::SetAttrInts(p, "ksize", {1, 3, 3, 1});
    }
    for (int i = 1; i <= 4; ++i) b.Const("p" + std::to_string(i), Random(Shape{6}, 10 + i));
    b.Const("var", testing::MakeFloat({6}, {0.5f, 1, 2, 3, 4, 5}));
    tensorflow::NodeDef* bn = b.Op("bn", "FusedBatchNormV3", {"AvgPool", "p1", "p2", "p3", "var"}, dtype);
    testing::SetAttrType(bn, "U", DType::kFloat);
    testing::SetAttrBool(bn, "is_training", false);
    testing::SetAttrFloat(bn, "epsilon", 0.001f);
    const Runs r = RunBoth(b.graph_def(), {{"x", Random(Shape({2, 9, 8, 4}), 4)}}, {"conv", "MaxPool", "bn"});
    const double ulp = dtype == DType::kHalf ? 1.0 / 1024 : 1.0 / 128;
    ExpectClose(r.gpu[0], r.reference[0], 2 * ulp, "conv", 1e-2);
    ExpectClose(r.gpu[1], r.reference[1], 0, "max pool");
    ExpectClose(r.gpu[2], r.reference[2], 2 * ulp, "batch norm of the average pool", 1e-2);
  }
}

// A pool is one loop kernel with what reads it (here a Relu), over windows that the padding
// cuts short at the end (SAME: the average of the elements inside); a batch norm in NCHW
// (its per-channel scale along dim 1) joins the loop too, and its other outputs are the mean
// and variance it was given.
TEST_F(GpuJit, PoolsAndBatchNormsAreFusedLoops) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 9, 10, 3});
  for (const char* pool : {"MaxPool", "AvgPool"}) {
    tensorflow::NodeDef* p = Conv(b, pool, pool, {"x"}, 2, "SAME");
    testing::SetAttrInts(p, "ksize", {1, 3, 2, 1});
    b.Op(std::string(pool) + "_relu", "Relu", {pool});
  }
  b.Placeholder("nchw", DType::kFloat, {-1, 3, 5, 4});
  for (int i = 1; i <= 3; ++i) b.Const("p" + std::to_string(i), Random(Shape{3}, 10 + i));
  b.Const("var", testing::MakeFloat({3}, {0.5f, 1, 2}));
  tensorflow::NodeDef* bn = b.Op("bn", "FusedBatchNormV3", {"nchw", "p1", "p2", "p3", "var"});
  testing::SetAttrType(bn, "U", DType::kFloat);
  testing::SetAttrBool(bn, "is_training", false);
  testing::SetAttrString(bn, "data_format", "NCHW");
  b.Op("bn_relu", "Relu", {"bn"});
  const std::vector<std::string> fetches = {"MaxPool_relu", "AvgPool_relu", "bn_relu", "bn:1", "bn:2"};
  const Runs r =
      RunBoth(b.graph_def(), {{"x", Random(Shape({2, 9, 10, 3}), 1)}, {"nchw", Random(Shape({2, 3, 5, 4}), 2)}}, fetches);
  for (size_t i = 0; i < fetches.size(); ++i) ExpectClose(r.gpu[i], r.reference[i], 1e-6, fetches[i]);
  EXPECT_EQ(r.launches, 3) << "a loop kernel per pool and for the batch norm";
}

// A batch norm's training step, in both layouts: the forward op on the batch's statistics
// and the backward op on them, with relu(y) as the gradient from above. On the GPU they are
// column reductions (the mean, the variance of x less the mean, sum(dy), sum(dy * x^)) and
// elementwise kernels; they match the CPU's kernels (sums in float64), and a second run
// gives the same bits.
TEST_F(GpuJit, TrainingBatchNormsAndTheirGradientsAreColumnReductions) {
  for (const char* format : {"NHWC", "NCHW"}) {
    SCOPED_TRACE(format);
    const bool nhwc = std::string(format) == "NHWC";
    // 32768 elements per channel: enough for the reductions' two phases (48 blocks would not
    // fill the GPU).
    const Shape shape = nhwc ? Shape{128, 16, 16, 48} : Shape{128, 48, 16, 16};
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, shape.dim(1), shape.dim(2), shape.dim(3)});
    const Tensor scale = Random(Shape{48}, 2);
    b.Const("scale", scale);
    b.Const("offset", Random(Shape{48}, 3));
    b.Const("empty", testing::MakeFloat({0}, {}));
    tensorflow::NodeDef* bn = b.Op("bn", "FusedBatchNormV3", {"x", "scale", "offset", "empty", "empty"});
    b.Op("dy", "Relu", {"bn"});
    tensorflow::NodeDef* grad = b.Op("grad", "FusedBatchNormGradV3", {"dy", "x", "scale", "bn:3", "bn:4", "bn:5"});
    for (tensorflow::NodeDef* n : {bn, grad}) {
      testing::SetAttrType(n, "U", DType::kFloat);
      testing::SetAttrBool(n, "is_training", true);
      testing::SetAttrFloat(n, "epsilon", 0.001f);
      testing::SetAttrString(n, "data_format", format);
    }
    // A mean of 20 against a spread of 3: the variance must be taken of x less the mean.
    Tensor x = Random(shape, 1);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] += 20.0f;
    const std::vector<std::string> fetches = {"bn", "bn:1", "bn:2", "bn:3", "bn:4", "grad", "grad:1", "grad:2"};
    const Runs r = RunBoth(b.graph_def(), {{"x", x}}, fetches);
    for (size_t i = 0; i < 5; ++i) ExpectClose(r.gpu[i], r.reference[i], 2e-5, fetches[i], 2e-5);
    // The gradient against float64 from the GPU's own forward pass (its y, batch mean and
    // variance): with x ~20 against a spread of 3, the two sides' float32 means may be a few
    // ulp (2e-6) apart, which moves sum(dy * x^) by that times sum(dy) / sigma (~1e5).
    const int64_t C = 48, inner = nhwc ? 1 : shape.dim(2) * shape.dim(3), n = shape.num_elements() / C;
    auto channel = [&](int64_t i) { return (i / inner) % C; };
    auto value = [](const Tensor& t, int64_t i) { return static_cast<double>(t.data<float>()[i]); };
    const Tensor &y = r.gpu[0], &mean = r.gpu[3], &var = r.gpu[4];
    std::vector<double> inv(C), sum_dy(C), sum_dy_xn(C), magnitude(C);
    for (int64_t c = 0; c < C; ++c) inv[c] = 1 / std::sqrt(value(var, c) + 0.001);
    auto normalized = [&](int64_t i) { return (value(x, i) - value(mean, channel(i))) * inv[channel(i)]; };
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const double dy = std::max(value(y, i), 0.0);
      sum_dy[channel(i)] += dy;
      sum_dy_xn[channel(i)] += dy * normalized(i);
      magnitude[channel(i)] += std::fabs(dy * normalized(i));
    }
    for (int64_t c = 0; c < C; ++c) {
      EXPECT_NEAR(value(r.gpu[7], c), sum_dy[c], 1e-5 * sum_dy[c]) << "grad:2 of channel " << c;
      EXPECT_NEAR(value(r.gpu[6], c), sum_dy_xn[c], 1e-5 * magnitude[c]) << "grad:1 of channel " << c;
    }
    int reported = 0;
    for (int64_t i = 0; i < x.num_elements() && reported < 5; ++i) {
      const int64_t c = channel(i);
      // dx = scale / sigma * (dy - sum(dy) / n - x^ * sum(dy * x^) / n): within 1e-5 of its
      // terms' magnitude, which cancel.
      const double dy = std::max(value(y, i), 0.0), along = normalized(i) * sum_dy_xn[c] / n;
      const double factor = std::fabs(value(scale, c)) * inv[c];
      const double want = value(scale, c) * inv[c] * (dy - sum_dy[c] / n - along);
      const double terms = factor * (dy + sum_dy[c] / n + std::fabs(along));
      if (std::fabs(value(r.gpu[5], i) - want) > 1e-5 * terms + 1e-6)
        ADD_FAILURE() << "grad element " << i << ": gpu " << value(r.gpu[5], i) << ", float64 " << want << (++reported, "");
    }
    EXPECT_EQ(r.launches, 11) << "the four column reductions in two kernels each (the blocks' partial sums, then "
                                 "their sum), a kernel for the per-channel factors, one for y, one for dx";
    const std::vector<Tensor> again =
        testing::RunOrDie(*testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2)), {{"x", x}}, fetches);
    for (size_t i = 0; i < fetches.size(); ++i)
      EXPECT_EQ(std::memcmp(again[i].raw(), r.gpu[i].raw(), again[i].bytes()), 0) << fetches[i];
  }
}

// TensorFlow's filter is reordered into cuDNN's layout once where it stays the same: a
// session constant's at the session's first run (a traced "reorder_filter" event), kept
// with its buffer for the runs after it; a fed filter by each call, inside it. Both give
// the CPU's answer, every run alike.
TEST_F(GpuJit, ConstantFiltersAreReorderedOnce) {
  for (const bool fed : {false, true}) {
    SCOPED_TRACE(fed ? "fed filter" : "constant filter");
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, 9, 8, 3});
    const Tensor w = Random(Shape{3, 3, 3, 16}, 1);
    if (fed) {
      b.Placeholder("w", DType::kFloat, {3, 3, 3, 16});
    } else {
      b.Const("w", w);
    }
    Conv(b, "conv", "Conv2D", {"x", "w"}, 1, "SAME");
    b.Op("y", "Relu6", {"conv"});
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(Shape{2, 9, 8, 3}, 2)}};
    if (fed) feeds.emplace_back("w", w);
    SessionOptions cpu;
    cpu.jit_level = JitLevel::kOff;
    const Tensor want = testing::RunOrDie(*testing::MakeSession(b.graph_def(), cpu), feeds, {"y"})[0];
    SessionOptions options = OnGpu(JitLevel::kOn2);
    options.gpu_graphs = true;
    auto session = testing::MakeSession(b.graph_def(), options);
    std::vector<Tensor> first;
    for (int run = 0; run < 3; ++run) {
      Tracer tracer;
      RunOptions traced;
      traced.tracer = &tracer;
      std::vector<Tensor> out;
      ASSERT_TRUE(session->Run(traced, feeds, {"y"}, {}, &out).ok());
      int reorders = 0;
      for (const TraceEvent& e : tracer.events()) reorders += e.name.find("/reorder_filter_") != std::string::npos;
      EXPECT_EQ(reorders, !fed && run == 0 ? 1 : 0) << "run " << run;
      ExpectClose(out[0], want, 1e-5, "y", 1e-5);
      if (run == 0) first = out;
      EXPECT_EQ(std::memcmp(out[0].raw(), first[0].raw(), out[0].bytes()), 0) << "run " << run;
    }
  }
}

// A convolution's cuDNN algorithms are timed once per shape (the stand-in offers three for a
// plain forward convolution); another session takes the kernel cache's choice; with
// autotuning off the heuristic's first is taken untimed.
TEST_F(GpuJit, ConvAlgorithmsAreTimedOncePerShape) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 6, 6, 3});
  b.Const("w", Random(Shape{3, 3, 3, 5}, 1));
  Conv(b, "y", "Conv2D", {"x", "w"}, 1, "VALID");
  const Tensor x = Random(Shape{2, 6, 6, 3}, 2);
  const int64_t before = GetJitStats().convs_autotuned;
  const Runs r = RunBoth(b.graph_def(), {{"x", x}}, {"y"});
  const int64_t timed = GetJitStats().convs_autotuned - before;
  if (testing::TestGpu() == DeviceKind::kGpuEmu) {
    EXPECT_EQ(timed, 1);
  }
  ExpectClose(r.gpu[0], r.reference[0], 1e-5, "timed", 1e-5);
  const Tensor again = testing::RunOrDie(*testing::MakeSession(b.graph_def(), OnGpu(JitLevel::kOn2)), {{"x", x}}, {"y"})[0];
  EXPECT_EQ(GetJitStats().convs_autotuned - before, timed) << "a second session timed the convolution again";
  EXPECT_EQ(std::memcmp(again.raw(), r.gpu[0].raw(), again.bytes()), 0) << "another algorithm";
  SessionOptions untuned = OnGpu(JitLevel::kOn2);
  untuned.gpu_autotune = false;
  const Tensor first = testing::RunOrDie(*testing::MakeSession(b.graph_def(), untuned), {{"x", x}}, {"y"})[0];
  EXPECT_EQ(GetJitStats().convs_autotuned - before, timed);
  ExpectClose(first, r.reference[0], 1e-5, "untuned", 1e-5);
}

}  // namespace
}  // namespace graphjit
