// jit/: compiled clusters against the reference kernels (JIT on vs off), the kernel
// cache, the fallback to op by op, megamorphic clusters, concurrent runs.
#include <gtest/gtest.h>

#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "jit/fault_injection.h"
#include "jit/jit.h"
#include "jit/kernel_cache.h"
#include "passes/passes.h"
#include "runtime/trace.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;

// Relative tolerance of each compiled op against its reference kernel, in one place:
// exact for arithmetic, an ulp or two for divisions (which may multiply by a
// reciprocal), a few ulps for the polynomial approximations of math functions.
const std::map<std::string, double>& Tolerances() {
  static const std::map<std::string, double> t = {{"AddV2", 1e-7},
                                                  {"Sub", 1e-7},
                                                  {"Mul", 1e-7},
                                                  {"RealDiv", 2.5e-7},
                                                  {"Maximum", 0},
                                                  {"Minimum", 0},
                                                  {"SquaredDifference", 1e-7},
                                                  {"Neg", 0},
                                                  {"Abs", 0},
                                                  {"Relu", 0},
                                                  {"Relu6", 0},
                                                  {"Square", 1e-7},
                                                  {"Floor", 0},
                                                  {"Ceil", 0},
                                                  {"Reciprocal", 2.5e-7},
                                                  {"Sqrt", 1e-7},
                                                  {"Rsqrt", 2e-7},
                                                  {"Exp", 2e-6},
                                                  {"Log", 2e-6},
                                                  {"Log1p", 2e-6},
                                                  {"Tanh", 2e-6},
                                                  {"Sigmoid", 2e-6},
                                                  {"Elu", 2e-6},
                                                  {"Erf", 2e-6},
                                                  {"Round", 0},
                                                  {"Sign", 0},
                                                  {"Selu", 2e-6},
                                                  {"Softplus", 2e-6},
                                                  {"LeakyRelu", 1e-7},
                                                  {"DivNoNan", 2.5e-7},
                                                  {"AddN", 2e-7},
                                                  {"Erfc", 2e-6},
                                                  {"Softsign", 2.5e-7}};
  return t;
}

class Jit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RegisterGraphOptimizer();
    RegisterJit();
  }
};

std::unique_ptr<Session> SessionAt(const tensorflow::GraphDef& gd, JitLevel level) {
  SessionOptions options;
  options.jit_level = level;
  return testing::MakeSession(gd, options);
}

std::vector<Tensor> RunAt(const tensorflow::GraphDef& gd, JitLevel level,
                          const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches) {
  return testing::RunOrDie(*SessionAt(gd, level), feeds, fetches);
}

// `fetches` with every op compiled (ON_2, min_cluster_size 1: nothing may fall back or fail
// in the compiler), then op by op: {jit, reference}.
std::pair<std::vector<Tensor>, std::vector<Tensor>> RunCompiledAndOpByOp(const tensorflow::GraphDef& gd,
                                                                         const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                                         const std::vector<std::string>& fetches) {
  SessionOptions options;
  options.jit_level = JitLevel::kOn2;
  options.min_cluster_size = 1;
  const JitStats before = GetJitStats();
  std::vector<Tensor> got = testing::RunOrDie(*testing::MakeSession(gd, options), feeds, fetches);
  const JitStats after = GetJitStats();
  EXPECT_GT(after.compiled - before.compiled, 0);
  EXPECT_EQ(after.fallback - before.fallback, 0);
  EXPECT_EQ(after.internal_errors - before.internal_errors, 0);
  return {std::move(got), RunAt(gd, JitLevel::kOff, feeds, fetches)};
}

// Element i of fetch f is expected[f][i] in both runs (as IEEE arithmetic gives it).
void ExpectBothAre(const std::pair<std::vector<Tensor>, std::vector<Tensor>>& runs, const std::vector<std::string>& fetches,
                   const std::vector<std::vector<double>>& expected) {
  for (const auto* run : {&runs.first, &runs.second}) {
    for (size_t f = 0; f < fetches.size(); ++f) {
      ASSERT_EQ((*run)[f].num_elements(), static_cast<int64_t>(expected[f].size())) << fetches[f];
      for (int64_t i = 0; i < (*run)[f].num_elements(); ++i) {
        EXPECT_EQ((*run)[f].ValueAsDouble(i), expected[f][i])
            << (run == &runs.first ? "jit " : "reference ") << fetches[f] << " element " << i;
      }
    }
  }
}

// Same NaNs, same infinities, values within `rtol` (plus a tiny absolute slack).
void ExpectMatch(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < got.num_elements() && reported < 5; ++i) {
    const double g = got.ValueAsDouble(i), w = want.ValueAsDouble(i);
    const bool ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= 1e-6 + rtol * std::fabs(w);
    if (!ok) ADD_FAILURE() << what << " element " << i << ": jit " << g << ", reference " << w << (++reported, "");
  }
}

Tensor Stressing(const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<int> pick(0, 39);
  std::vector<float> v(shape.num_elements());
  for (float& x : v) {
    switch (pick(rng)) {
      case 0: x = NAN; break;
      case 1: x = INFINITY; break;
      case 2: x = -INFINITY; break;
      case 3: x = 1e30f; break;
      case 4: x = -88.5f; break;
      default: x = normal(rng);
    }
  }
  return testing::MakeFloat(shape, v);
}

TEST_F(Jit, RandomElementwiseGraphsMatchTheReferenceKernels) {
  std::mt19937 rng(20261122);
  const std::vector<std::string> unary = {"Neg",   "Abs",   "Exp",  "Log",   "Log1p",    "Tanh",       "Sigmoid", "Relu",
                                          "Relu6", "Elu",   "Sqrt", "Rsqrt", "Square",   "Reciprocal", "Erf",     "Floor",
                                          "Ceil",  "Round", "Sign", "Selu",  "Softplus", "LeakyRelu",  "Erfc",    "Softsign"};
  const std::vector<std::string> binary = {"AddV2",    "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference",
                                           "DivNoNan", "AddN"};
  const std::vector<int64_t> sizes = {1, 2, 3, 5, 7, 16, 17, 33};
  const JitStats before = GetJitStats();
  int graphs = 0;
  for (int g = 0; g < 80; ++g) {
    // The output shape: rank 0 to 5, some sizes not a multiple of the vector width, some 0.
    const int rank = static_cast<int>(rng() % 6);
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) {
      int64_t d = sizes[rng() % sizes.size()];
      if (n * d > 2048) d = 1;
      if (g % 13 == 5 && i == 0) d = 0;
      dims.push_back(d);
      n *= d;
    }
    const Shape out(dims);
    GraphBuilder b;
    std::vector<std::pair<std::string, Tensor>> feeds;
    std::vector<std::string> values;
    // Inputs broadcast into `out`: the full shape, size-1 dims, dropped leading dims.
    const int inputs = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < inputs; ++i) {
      std::vector<int64_t> in = dims;
      if (i > 0) {
        for (int64_t& d : in)
          if (rng() % 3 == 0) d = 1;
        if (!in.empty() && rng() % 2) in.erase(in.begin());
      }
      std::string name = "x" + std::to_string(i);
      b.Placeholder(name, DType::kFloat, in);
      feeds.emplace_back(name, Stressing(Shape(in), rng));
      values.push_back(name);
    }
    double rtol = 0;
    std::string ops;
    const int count = 2 + static_cast<int>(rng() % 6);
    for (int k = 0; k < count; ++k) {
      std::string name = "op" + std::to_string(k), op;
      if (rng() % 2) {
        op = unary[rng() % unary.size()];
        b.Op(name, op, {values[rng() % values.size()]});
      } else {
        op = binary[rng() % binary.size()];
        std::string x = values[rng() % values.size()], y = values[rng() % values.size()];
        if (op == "AddN") y = x;  // AddN does not broadcast
        auto* node = b.Op(name, op, {x, y});
        if (op == "AddN") testing::SetAttrInt(node, "N", 2);
      }
      rtol = std::max(rtol, Tolerances().at(op));
      ops += op + " ";
      values.push_back(name);
    }
    b.Op("result", "AddV2", {values.back(), "x0"});  // the full output shape
    const auto want = RunAt(b.graph_def(), JitLevel::kOff, feeds, {"result"});
    const auto got = RunAt(b.graph_def(), JitLevel::kOn1, feeds, {"result"});
    ExpectMatch(got[0], want[0], rtol, "graph " + std::to_string(g) + " [" + ops + "] shape " + out.ToString());
    ++graphs;
  }
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.fallback, before.fallback) << "every random graph compiles";
  EXPECT_GE(after.compiled - before.compiled, graphs);
}

// A value the cluster outputs (read outside it, here by CheckNumerics, which the JIT does
// not compile) and that a row reduction inside reads through a concatenation: its buffer
// is stored by a kernel before the reduction's, which loads it. (It was stored after: the
// log-softmax read the buffer before it was written.)
TEST_F(Jit, AnOutputIsStoredBeforeAKernelReadsIt) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {16, 7});
  b.Op("square", "Mul", {"x", "x"});
  tensorflow::NodeDef* concat =
      b.Op("concat", "ConcatV2", {"square", "square", b.Const("axis", testing::MakeInt32(Shape{}, {0}))});
  testing::SetAttrInt(concat, "N", 2);
  testing::SetAttrType(concat, "Tidx", DType::kInt32);
  b.Op("log_softmax", "LogSoftmax", {"concat"});
  b.Op("result", "Tanh", {"log_softmax"});
  testing::SetAttrString(b.Op("outside", "CheckNumerics", {"square"}), "message", "square");
  std::vector<float> x(16 * 7);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 23) * 0.25f - 2.5f;
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", testing::MakeFloat(Shape{16, 7}, x)}};
  const JitStats before = GetJitStats();
  const auto got = RunAt(b.graph_def(), JitLevel::kOn1, feeds, {"result", "outside"});
  EXPECT_GT(GetJitStats().compiled, before.compiled);
  const auto want = RunAt(b.graph_def(), JitLevel::kOff, feeds, {"result", "outside"});
  ExpectMatch(got[0], want[0], 1e-5, "result");
  ExpectMatch(got[1], want[1], 0, "outside");
}

// Random graphs of reductions (any axes, keep_dims or not), softmax and log-softmax,
// transposes, reshapes, ExpandDims and concatenations between elementwise ops: each
// cluster is planned into loop, row and reduce fusions, and must match op by op.
TEST_F(Jit, RandomReductionGraphsMatchTheReferenceKernels) {
  std::mt19937 rng(7);
  const std::vector<std::string> unary = {"Neg", "Exp", "Tanh", "Sigmoid", "Relu", "Abs", "Square"};
  const std::vector<std::string> binary = {"AddV2", "Sub", "Mul", "Maximum"};
  const std::vector<std::string> reductions = {"Sum", "Mean", "Max", "Min", "Prod"};
  const std::vector<int64_t> sizes = {1, 2, 3, 5, 7, 16, 17, 33};
  const JitStats before = GetJitStats();
  int graphs = 0;
  for (int g = 0; g < 80; ++g) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) {
      int64_t d = sizes[rng() % sizes.size()];
      if (n * d > 4096) d = 1;
      if (g % 17 == 3 && i == rank - 1) d = 0;
      dims.push_back(d);
      n *= d;
    }
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, dims);
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Stressing(Shape(dims), rng)}};
    std::string value = "x", ops;
    std::vector<int64_t> shape = dims;
    std::vector<std::string> fetches;
    auto axis_const = [&](const std::string& name, const std::vector<int>& values) {
      std::vector<int32_t> v(values.begin(), values.end());
      return b.Const(name, testing::MakeInt32(Shape{static_cast<int64_t>(v.size())}, v));
    };
    const int steps = 3 + static_cast<int>(rng() % 5);
    for (int k = 0; k < steps; ++k) {
      const std::string name = "op" + std::to_string(k);
      const int r = static_cast<int>(shape.size());
      std::string op;
      switch (rng() % 8) {
        case 0:
          op = unary[rng() % unary.size()];
          b.Op(name, op, {value});
          break;
        case 1: {  // with x broadcast in when the shapes allow it, else with itself
          op = binary[rng() % binary.size()];
          b.Op(name, op, {value, shape == dims ? "x" : value});
          break;
        }
        case 2:
        case 3: {
          if (r == 0) continue;
          op = reductions[rng() % reductions.size()];
          std::vector<int> axes;
          const int kind = static_cast<int>(rng() % 3);  // trailing, leading, any
          for (int i = 0; i < r; ++i)
            if ((kind == 0 && i >= r - 1 - static_cast<int>(rng() % r)) || (kind == 1 && i == 0) || (kind == 2 && rng() % 2))
              axes.push_back(i);
          if (axes.empty()) axes = {r - 1};
          const bool keep = rng() % 2;
          tensorflow::NodeDef* node = b.Op(name, op, {value, axis_const(name + "/axes", axes)});
          testing::SetAttrBool(node, "keep_dims", keep);
          testing::SetAttrType(node, "Tidx", DType::kInt32);
          std::vector<int64_t> reduced;
          for (int i = 0; i < r; ++i) {
            const bool is_reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
            if (!is_reduced)
              reduced.push_back(shape[i]);
            else if (keep)
              reduced.push_back(1);
          }
          shape = reduced;
          op += keep ? "(keep)" : "";
          break;
        }
        case 4:
          if (r == 0) continue;
          op = rng() % 2 ? "Softmax" : "LogSoftmax";
          b.Op(name, op, {value});
          break;
        case 5: {
          if (r < 2) continue;
          std::vector<int> perm(r);
          for (int i = 0; i < r; ++i) perm[i] = i;
          std::shuffle(perm.begin(), perm.end(), rng);
          testing::SetAttrType(b.Op(name, "Transpose", {value, axis_const(name + "/perm", perm)}), "Tperm", DType::kInt32);
          std::vector<int64_t> t(r);
          for (int i = 0; i < r; ++i) t[i] = shape[perm[i]];
          shape = t;
          op = "Transpose";
          break;
        }
        case 6: {
          if (r < 2) continue;
          std::vector<int64_t> merged(shape.begin(), shape.end() - 2);
          merged.push_back(shape[r - 2] * shape[r - 1]);
          std::vector<int> target(merged.begin(), merged.end());
          testing::SetAttrType(b.Op(name, "Reshape", {value, axis_const(name + "/shape", target)}), "Tshape", DType::kInt32);
          shape = merged;
          op = "Reshape";
          break;
        }
        case 7: {
          const int axis = static_cast<int>(rng() % (r + 1));
          if (rng() % 2 && r > 0) {
            const int at = static_cast<int>(rng() % r);
            tensorflow::NodeDef* node =
                b.Op(name, "ConcatV2", {value, value, b.Const(name + "/axis", testing::MakeInt32(Shape{}, {at}))});
            testing::SetAttrInt(node, "N", 2);
            testing::SetAttrType(node, "Tidx", DType::kInt32);
            shape[at] *= 2;
            op = "ConcatV2";
          } else {
            testing::SetAttrType(b.Op(name, "ExpandDims", {value, b.Const(name + "/dim", testing::MakeInt32(Shape{}, {axis}))}),
                                 "Tdim", DType::kInt32);
            shape.insert(shape.begin() + axis, 1);
            op = "ExpandDims";
          }
          break;
        }
      }
      if (rng() % 4 == 0) fetches.push_back(name);  // a second output, read inside too
      ops += op + " ";
      value = name;
    }
    b.Op("result", "Tanh", {value});
    fetches.push_back("result");
    const auto want = RunAt(b.graph_def(), JitLevel::kOff, feeds, fetches);
    const auto got = RunAt(b.graph_def(), JitLevel::kOn1, feeds, fetches);
    for (size_t i = 0; i < fetches.size(); ++i)
      ExpectMatch(got[i], want[i], 1e-4,
                  "graph " + std::to_string(g) + " [" + ops + "] x " + Shape(dims).ToString() + " fetch " + fetches[i]);
    ++graphs;
  }
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.fallback, before.fallback) << "every random graph compiles";
  EXPECT_GE(after.compiled - before.compiled, graphs / 2);
}

// Erf is a rational approximation of the JIT's own (scripts/fit_erf.py): checked densely
// over [-6, 6], near 0 (where erf(x) ~ 2x/sqrt(pi)), on denormals and the special values;
// also of x / sqrt 2 (GELU's), x * 3 and 0.25 * x, whose scales the JIT folds into the fit.
TEST_F(Jit, ErfMatchesTheReferenceEverywhere) {
  std::vector<float> v;
  for (int i = 0; i <= 24000; ++i) v.push_back(-6.0f + i * 0.0005f);
  for (float tiny : {1e-30f, 1e-20f, 1e-8f, 1e-4f, 1.4e-45f, -1e-8f, 0.0f, -0.0f}) v.push_back(tiny);
  for (float special : {INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 3.9f, 4.0f, 4.1f, 5.6568542f, 1.3333334f}) v.push_back(special);
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {static_cast<int64_t>(v.size())});
  b.Const("sqrt2", testing::MakeFloat(Shape{}, {1.41421356f}));
  b.Const("three", testing::MakeFloat(Shape{}, {3.0f}));
  b.Const("quarter", testing::MakeFloat(Shape{1}, {0.25f}));
  b.Op("d", "RealDiv", {"x", "sqrt2"});
  b.Op("m", "Mul", {"x", "three"});
  b.Op("q", "Mul", {"quarter", "x"});
  const std::vector<std::string> fetches = {"z", "zd", "zm", "zq"};
  for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{{"x", ""}, {"d", "d"}, {"m", "m"}, {"q", "q"}}) {
    b.Op("e" + out, "Erf", {in});
    b.Op("y" + out, "Identity", {"e" + out});
    b.Op("z" + out, "Neg", {"y" + out});  // a cluster of two ops
  }
  const Tensor x = testing::MakeFloat(Shape{static_cast<int64_t>(v.size())}, v);
  const JitStats before = GetJitStats();
  const auto got = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", x}}, fetches);
  EXPECT_EQ(GetJitStats().compiled - before.compiled, 4);  // one cluster per chain
  const auto want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, fetches);
  for (size_t f = 0; f < fetches.size(); ++f) ExpectMatch(got[f], want[f], 1e-6, "erf of " + fetches[f]);
}

// Erfinv is M. Giles' single-precision approximation of the JIT's own (jit/elemental.cc), of
// the argument TensorFlow's kernel inverts: x where x <= 0, else 2 fl(x / 2 + 1 / 2) - 1
// (0.99999994 rounds to 1: inf). Checked on every 4093rd float of (-1, 1) of either sign
// against the exact inverse of erf in double (Newton's method on erf, on erfc in the tails),
// within 4 ulp of it; and on the special values against the reference kernel (its inf and
// NaN exactly, within 4 ulp elsewhere).
TEST_F(Jit, ErfinvIsWithinFourUlpsOfTheExactInverse) {
  std::vector<float> v;
  for (uint32_t bits = 0; bits < 0x3F800000u; bits += 4093)
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint32_t b = bits | sign;
      float x;
      std::memcpy(&x, &b, sizeof x);
      v.push_back(x);
    }
  const size_t measured = v.size();
  for (float special : {1.0f, -1.0f, 0.99999994f, -0.99999994f, 1.0000001f, -1.5f, INFINITY, -INFINITY, NAN, 0.0f, -0.0f})
    v.push_back(special);
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {static_cast<int64_t>(v.size())});
  b.Op("e", "Erfinv", {"x"});
  b.Op("y", "Neg", {"e"});
  const Tensor x = testing::MakeFloat(Shape{static_cast<int64_t>(v.size())}, v);
  const JitStats before = GetJitStats();
  const auto got = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", x}}, {"y"});
  EXPECT_EQ(GetJitStats().compiled - before.compiled, 1);
  auto exact = [](double t) {
    const double a = std::fabs(t), c = 2 / std::sqrt(M_PI);
    double z = a < 0.5 ? a : std::sqrt(-std::log(1 - a));  // a start on the right side of the root
    for (int i = 0; i < 100; ++i) {
      const double f = a < 0.5 ? std::erf(z) - a : (1 - a) - std::erfc(z);
      const double step = f / (c * std::exp(-z * z));
      z -= step;
      if (std::fabs(step) <= 1e-17 * std::fabs(z)) break;
    }
    return std::copysign(z, t);
  };
  double worst = 0;
  int reported = 0;
  for (size_t i = 0; i < measured; ++i) {
    const float y = v[i] * 0.5f + 0.5f;
    const double t = v[i] <= 0 ? v[i] : 2.0 * y - 1.0;
    const double g = -got[0].data<float>()[i], w = t == 1 ? INFINITY : exact(t);
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(w), -126) - 23);
    const bool ok = g == w || std::fabs(g - w) <= 4 * ulp;
    if (std::isfinite(w)) worst = std::max(worst, std::fabs(g - w) / ulp);
    if (!ok && ++reported <= 5) ADD_FAILURE() << "erfinv(" << v[i] << "): jit " << g << ", exact " << w;
  }
  RecordProperty("worst_ulp", std::to_string(worst));
  const auto want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"y"});
  for (size_t i = measured; i < v.size(); ++i) {
    const float g = got[0].data<float>()[i], w = want[0].data<float>()[i];
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(w), -126) - 23);
    EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w)) || std::fabs(g - w) <= 4 * ulp)
        << "erfinv(" << v[i] << "): jit " << -g << ", kernel " << -w;
  }
}

// Erfc is e^(-x^2) times a rational fit of the JIT's own (scripts/fit_erfc.py): checked
// densely over [-5, 11] against libm's erfcf, relative to the value even where it is tiny
// (1 - erf(x) would be 100% off from x = 4 on), on both sides of where results leave the
// normal range (about 9.1, where both flush to 0), and on the special values.
TEST_F(Jit, ErfcKeepsItsRelativeAccuracyInTheTail) {
  std::vector<float> v;
  for (int i = 0; i <= 32000; ++i) v.push_back(-5.0f + i * 0.0005f);
  for (float special : {INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 0.0f, -0.0f, 1e-30f, 9.9f, 10.0f, 10.1f, 26.0f})
    v.push_back(special);
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {static_cast<int64_t>(v.size())});
  b.Op("e", "Erfc", {"x"});
  b.Op("y", "Neg", {"e"});
  const Tensor x = testing::MakeFloat(Shape{static_cast<int64_t>(v.size())}, v);
  const JitStats before = GetJitStats();
  const auto got = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", x}}, {"y"});
  EXPECT_EQ(GetJitStats().compiled - before.compiled, 1);
  int reported = 0;
  for (size_t i = 0; i < v.size() && reported < 5; ++i) {
    const double g = -got[0].data<float>()[i];
    double w = std::erfc(static_cast<double>(v[i]));
    if (w < 1.17549435e-38) w = 0;  // flushed, as the reference kernel does
    // Within 2e-6 of the value, or both within an ulp of the flush threshold.
    const bool ok = (std::isnan(g) && std::isnan(w)) || std::fabs(g - w) <= 2e-6 * w || (g < 2e-38 && w < 2e-38);
    if (!ok) ADD_FAILURE() << "erfc(" << v[i] << "): jit " << g << ", exact " << w << (++reported, "");
  }
  const auto want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"y"});
  ExpectMatch(got[0], want[0], 2e-6, "erfc vs the reference kernel");
}

// Rows of `cols` floats: for NaN, +Inf and -Inf in turn, `cols` rows with the special
// value in column 0, 1, ..., cols - 1 and finite values elsewhere.
std::vector<float> RowsWithASpecialValue(int64_t cols) {
  std::vector<float> v;
  for (float special : {NAN, INFINITY, -INFINITY}) {
    for (int64_t at = 0; at < cols; ++at)
      for (int64_t j = 0; j < cols; ++j) v.push_back(j == at ? special : std::sin(static_cast<float>(j + at)));
  }
  return v;
}

// Row maxima and minima keep a NaN flag beside a plain max/min: a NaN anywhere in a
// row (first, last, in the vector tail) makes the row NaN, and infinities win as usual.
TEST_F(Jit, RowMaxAndMinPropagateNaNFromAnyColumn) {
  constexpr int64_t kCols = 37;  // two 16-wide vectors and a tail
  std::vector<float> v = RowsWithASpecialValue(kCols);
  for (int64_t j = 0; j < kCols; ++j) v.push_back(-static_cast<float>(j));  // no special value
  const int64_t rows = static_cast<int64_t>(v.size()) / kCols;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {rows, kCols});
  const std::string axis = b.Const("axis", testing::MakeInt32(Shape{1}, {1}));
  for (const char* op : {"Max", "Min"}) {
    tensorflow::NodeDef* node = b.Op(std::string("r") + op, op, {"x", axis});
    testing::SetAttrBool(node, "keep_dims", true);
    testing::SetAttrType(node, "Tidx", DType::kInt32);
    b.Op(std::string("d") + op, "Sub", {"x", std::string("r") + op});  // x - max: one row fusion
  }
  const Tensor x = testing::MakeFloat(Shape{rows, kCols}, v);
  const JitStats before = GetJitStats();
  const auto got = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", x}}, {"rMax", "rMin", "dMax", "dMin"});
  EXPECT_GE(GetJitStats().compiled - before.compiled, 1);
  EXPECT_EQ(GetJitStats().fallback - before.fallback, 0);
  const auto want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"rMax", "rMin", "dMax", "dMin"});
  for (int i = 0; i < 4; ++i) ExpectMatch(got[i], want[i], 0, "output " + std::to_string(i));
  for (int64_t r = 0; r < kCols; ++r) {  // the NaN rows, checked directly too
    EXPECT_TRUE(std::isnan(got[0].data<float>()[r])) << "max of row " << r;
    EXPECT_TRUE(std::isnan(got[1].data<float>()[r])) << "min of row " << r;
  }
  EXPECT_EQ(got[0].data<float>()[kCols], INFINITY);
  EXPECT_EQ(got[1].data<float>()[2 * kCols], -INFINITY);
  EXPECT_EQ(got[0].data<float>()[rows - 1], 0.0f);
  EXPECT_EQ(got[1].data<float>()[rows - 1], -static_cast<float>(kCols - 1));
}

// Softmax's row max is one vmaxps, blind to NaN: a NaN anywhere in a row (first, last,
// in the vector tail) still makes the whole row NaN, through the sum of exps; a +Inf row
// is NaN as well, and -Inf gives 0 (log: -Inf) where the row has finite values. So for
// Softmax, LogSoftmax and a softmax written out of Max, Sub, Exp, Sum and RealDiv.
TEST_F(Jit, SoftmaxRowsWithANaNAreNaN) {
  constexpr int64_t kCols = 37;  // two 16-wide vectors and a tail
  std::vector<float> v = RowsWithASpecialValue(kCols);
  const int64_t rows = static_cast<int64_t>(v.size()) / kCols;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {rows, kCols});
  b.Op("softmax", "Softmax", {"x"});
  b.Op("log_softmax", "LogSoftmax", {"x"});
  // Written out, exp(x - max) / sum: its max is a row shift too (MarkRowShifts).
  const std::string axis = b.Const("axis", testing::MakeInt32(Shape{1}, {1}));
  tensorflow::NodeDef* max = b.Op("max", "Max", {"x", axis});
  b.Op("shifted", "Sub", {"x", "max"});
  b.Op("exp", "Exp", {"shifted"});
  tensorflow::NodeDef* sum = b.Op("sum", "Sum", {"exp", axis});
  for (tensorflow::NodeDef* reduction : {max, sum}) {
    testing::SetAttrBool(reduction, "keep_dims", true);
    testing::SetAttrType(reduction, "Tidx", DType::kInt32);
  }
  b.Op("written_out", "RealDiv", {"exp", "sum"});
  const Tensor x = testing::MakeFloat(Shape{rows, kCols}, v);
  const std::vector<std::string> fetches = {"softmax", "log_softmax", "written_out"};
  const auto runs = RunCompiledAndOpByOp(b.graph_def(), {{"x", x}}, fetches);
  for (int i = 0; i < 3; ++i) ExpectMatch(runs.first[i], runs.second[i], 1e-5, fetches[i]);
  for (int i = 0; i < 3; ++i) {
    const float* got = runs.first[i].data<float>();
    for (int64_t k = 0; k < 2 * kCols * kCols; ++k) EXPECT_TRUE(std::isnan(got[k])) << i << " element " << k;
    const int64_t minus_inf = (2 * kCols + 5) * kCols + 5;  // row 2 kCols + 5 has -Inf in column 5
    EXPECT_EQ(got[minus_inf], i == 1 ? -INFINITY : 0.0f);
    EXPECT_TRUE(std::isfinite(got[minus_inf + 1])) << i;
  }
}

// Select with a vector condition and matrices picks whole rows (TensorFlow's rule), in the
// fused kernel as op by op: Relu(Select(cond, x, y)) * 2 at [6] x [6,6] and [3] x [3,40].
TEST_F(Jit, SelectWithAVectorConditionPicksRows) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{6, 6}, {3, 40}}) {
    GraphBuilder b;
    b.Placeholder("cond", DType::kBool, {rows});
    b.Placeholder("x", DType::kFloat, {rows, cols});
    b.Placeholder("y", DType::kFloat, {rows, cols});
    b.Op("s", "Select", {"cond", "x", "y"});
    b.Op("r", "Relu", {"s"});
    b.Op("z", "Mul", {"r", b.Const("two", testing::MakeFloat(Shape{}, {2.0f}))});
    std::vector<double> cond;
    std::vector<float> x, y;
    for (int64_t i = 0; i < rows; ++i) cond.push_back(i % 3 != 1);
    for (int64_t i = 0; i < rows * cols; ++i) {
      x.push_back(std::sin(0.7f * static_cast<float>(i)) * 3);
      y.push_back(std::cos(0.3f * static_cast<float>(i)) * 3);
    }
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"cond", testing::MakeTensor(DType::kBool, Shape{rows}, cond)},
                                                               {"x", testing::MakeFloat(Shape{rows, cols}, x)},
                                                               {"y", testing::MakeFloat(Shape{rows, cols}, y)}};
    const JitStats before = GetJitStats();
    const Tensor got = RunAt(b.graph_def(), JitLevel::kOn1, feeds, {"z"})[0];
    EXPECT_EQ(GetJitStats().compiled - before.compiled, 1);
    EXPECT_EQ(GetJitStats().fallback - before.fallback, 0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const float picked = cond[i] ? x[i * cols + j] : y[i * cols + j];
        ASSERT_EQ(got.data<float>()[i * cols + j], std::max(picked, 0.0f) * 2) << rows << "x" << cols << " at " << i << "," << j;
      }
    ExpectMatch(got, RunAt(b.graph_def(), JitLevel::kOff, feeds, {"z"})[0], 0, "select");
  }
}

TEST_F(Jit, DivisionsAreExactForHugeAndSubnormalDivisors) {
  // A divisor that is the same for a whole loop invites x * (1 / d), which gives 0 * inf =
  // NaN for DivNoNan(0, 1e-40), inf for 1e-5 / 1e-40, and 0 for 1 / 3e38 (a subnormal
  // reciprocal, or flushed): divisions must divide.
  const std::vector<float> x = {0.0f, 1e-5f, 1.0f, -3.0f, 5.0f, 7.0f, 1e-30f, 3e38f, -0.0f, 2.0f, 9.0f, 1.0f};
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {12});
  b.Placeholder("d", DType::kFloat, {});
  b.Op("q", "RealDiv", {"x", "d"});
  b.Op("nn", "DivNoNan", {"x", "d"});
  b.Op("qa", "Abs", {"q"});
  b.Op("na", "Abs", {"nn"});
  auto session = SessionAt(b.graph_def(), JitLevel::kOn1);
  const JitStats before = GetJitStats();
  for (float d : {1e-40f, 2.5e-39f, -1e-45f, 3e38f, 1e30f, 3.0f, 0.0f}) {
    const std::vector<Tensor> got = testing::RunOrDie(
        *session, {{"x", testing::MakeFloat(Shape{12}, x)}, {"d", testing::MakeFloat(Shape{}, {d})}}, {"qa", "na"});
    auto same = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    for (size_t i = 0; i < x.size(); ++i) {
      const float q = std::fabs(x[i] / d);
      const float nn = d == 0 ? 0.0f : q;
      EXPECT_TRUE(same(got[0].data<float>()[i], q)) << x[i] << " / " << d << ": " << got[0].data<float>()[i];
      EXPECT_TRUE(same(got[1].data<float>()[i], nn)) << "DivNoNan(" << x[i] << ", " << d << "): " << got[1].data<float>()[i];
    }
  }
  EXPECT_GE(GetJitStats().compiled - before.compiled, 1);
  EXPECT_EQ(GetJitStats().fallback - before.fallback, 0);
}

// Integer arithmetic and casts compile, and give what the reference kernels give, bit for
// bit: a float cast to an integer truncates, NaN and what is out of range give the
// minimum; an integer mean truncates; ArgMax takes the first largest, and a NaN only when
// it comes first. (No input overflows: the reference kernels' integer overflow is undefined.)
TEST_F(Jit, IntegersAndCastsMatchTheReferenceBitForBit) {
  const float nan = NAN, inf = INFINITY;
  const std::vector<float> x = {nan, inf, -inf, 3e9f, -3e9f, 2.5f, -2.5f, 1e19f, -1e19f, -0.0f, 2147483520.0f, -0.75f};
  const std::vector<int32_t> i = {1000, 1, -5, -1, 7, -7, 5, 2, -9, 9, 3, -4};
  const std::vector<int32_t> e = {INT32_MAX, 1, INT32_MIN, -1, 7, -7, 5, 2, INT32_MIN, INT32_MIN, 3, -4};
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {3, 4});
  b.Placeholder("i", DType::kInt32, {3, 4});
  b.Placeholder("e", DType::kInt32, {3, 4});
  for (DType t : {DType::kInt32, DType::kInt64, DType::kBool}) {
    const std::string name = std::string("c") + DTypeName(t);
    tensorflow::NodeDef* cast = b.Op(name, "Cast", {"x"}, DType::kInvalid);
    testing::SetAttrType(cast, "SrcT", DType::kFloat);
    testing::SetAttrType(cast, "DstT", t);
  }
  b.Op("top", "Maximum", {"cint32", "e"}, DType::kInt32);
  b.Op("sum", "AddV2", {"i", "i"}, DType::kInt32);
  b.Op("neg", "Neg", {"sum"}, DType::kInt32);
  b.Op("sel", "SelectV2", {"cbool", "neg", "top"}, DType::kInt32);
  b.Const("axis1", testing::MakeInt32(Shape{}, {1}));
  b.Const("axis0", testing::MakeInt32(Shape{}, {0}));
  testing::SetAttrType(b.Op("rowsum", "Sum", {"neg", "axis1"}, DType::kInt32), "Tidx", DType::kInt32);
  testing::SetAttrType(b.Op("colmean", "Mean", {"i", "axis0"}, DType::kInt32), "Tidx", DType::kInt32);
  testing::SetAttrType(b.Op("colmin", "Min", {"sel", "axis0"}, DType::kInt32), "Tidx", DType::kInt32);
  for (const char* axis : {"axis0", "axis1"}) {
    tensorflow::NodeDef* am = b.Op(std::string("argmax_") + axis, "ArgMax", {"x", axis});
    testing::SetAttrType(am, "Tidx", DType::kInt32);
    testing::SetAttrType(am, "output_type", DType::kInt64);
  }
  const std::vector<std::string> fetches = {"cint64", "sel", "rowsum", "colmean", "colmin", "argmax_axis0", "argmax_axis1"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", testing::MakeFloat(Shape{3, 4}, x)},
                                                             {"i", testing::MakeInt32(Shape{3, 4}, i)},
                                                             {"e", testing::MakeInt32(Shape{3, 4}, e)}};
  const std::vector<Tensor> want = RunAt(b.graph_def(), JitLevel::kOff, feeds, fetches);
  const JitStats before = GetJitStats();
  SessionOptions options;  // every op in a cluster, however small
  options.jit_level = JitLevel::kOn1;
  options.min_cluster_size = 1;
  const std::vector<Tensor> got = testing::RunOrDie(*testing::MakeSession(b.graph_def(), options), feeds, fetches);
  EXPECT_GE(GetJitStats().compiled - before.compiled, 2);
  EXPECT_EQ(GetJitStats().fallback - before.fallback, 0);
  for (size_t f = 0; f < fetches.size(); ++f) {
    ASSERT_EQ(got[f].shape(), want[f].shape()) << fetches[f];
    ASSERT_EQ(got[f].dtype(), want[f].dtype()) << fetches[f];
    for (int64_t e = 0; e < got[f].num_elements(); ++e)
      EXPECT_EQ(got[f].ValueAsInt(e), want[f].ValueAsInt(e)) << fetches[f] << " element " << e;
  }
}

// What tests/fuzz/jit_fuzz found, each fixed; 17 elements, so that vector and scalar code
// both run. Each value is checked against IEEE arithmetic and against op by op.
TEST_F(Jit, FuzzerFindingsStayFixed) {
  const float nan = NAN, inf = INFINITY;
  std::vector<float> x(17, 0.0f), h(17, 1.0f);
  x[1] = -0.0f, x[2] = -1e-42f, x[3] = inf, x[4] = nan;
  h[0] = 300.0f, h[1] = nan, h[2] = -0.0f;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {17});
  b.Placeholder("h", DType::kHalf, {17});
  b.Placeholder("c", DType::kBool, {17});
  auto op = [&](const std::string& name, const std::string& o, const std::vector<std::string>& in, DType t) {
    b.Op(name, o, in, t);
  };
  op("neg", "Neg", {"x"}, DType::kFloat);  // Neg(+0) is -0 (Eigen's AVX negation gave +0)
  op("inv_neg", "Reciprocal", {"neg"}, DType::kFloat);
  op("sign", "Sign", {"x"}, DType::kFloat);  // Sign(-0) is +0, as the reference
  op("inv_sign", "Reciprocal", {"sign"}, DType::kFloat);
  op("selu", "Selu", {"x"}, DType::kFloat);  // exp(x) - 1, not expm1: Selu(-1e-42) is +0
  op("inv_selu", "Reciprocal", {"selu"}, DType::kFloat);
  b.Placeholder("r", DType::kFloat, {17});
  op("rsqrt", "Rsqrt", {"r"}, DType::kFloat);  // 1 / sqrt(x) (Eigen's AVX rsqrt was not)
  op("sq", "Square", {"h"}, DType::kHalf);     // 300^2 overflows f16: Inf, as op by op
  op("inv_sq", "Reciprocal", {"sq"}, DType::kHalf);
  op("hmax", "Maximum", {"inv_sq", "h"}, DType::kHalf);                       // keeps h's NaN
  tensorflow::NodeDef* cast = b.Op("cbf16", "Cast", {"c"}, DType::kInvalid);  // bool -> bf16 compiles
  testing::SetAttrType(cast, "SrcT", DType::kBool);
  testing::SetAttrType(cast, "DstT", DType::kBFloat16);
  b.Const("axis0", testing::MakeInt32(Shape{}, {0}));
  testing::SetAttrType(b.Op("hsum", "Sum", {"hmax", "axis0"}, DType::kHalf), "Tidx", DType::kInt32);  // f16 column sum
  const std::vector<std::string> fetches = {"inv_neg", "inv_sign", "inv_selu", "rsqrt", "hmax", "cbf16", "hsum"};
  std::vector<double> hv(h.begin(), h.end()), cv(17, 1.0);
  cv[3] = 0;
  std::vector<float> rv(17, 4.0f);
  rv[0] = 0.0f, rv[3] = inf, rv[5] = -0.0f, rv[6] = 1e-40f;
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", testing::MakeFloat(Shape{17}, x)},
                                                             {"r", testing::MakeFloat(Shape{17}, rv)},
                                                             {"h", testing::MakeTensor(DType::kHalf, Shape{17}, hv)},
                                                             {"c", testing::MakeTensor(DType::kBool, Shape{17}, cv)}};
  const auto [got, want] = RunCompiledAndOpByOp(b.graph_def(), feeds, fetches);
  for (size_t f = 0; f < fetches.size(); ++f) ExpectMatch(got[f], want[f], 0, fetches[f]);
  for (const std::vector<Tensor>* run : {&got, &want}) {
    const std::vector<Tensor>& r = *run;
    EXPECT_EQ(r[0].ValueAsDouble(0), -inf);  // 1 / Neg(+0)
    EXPECT_EQ(r[0].ValueAsDouble(16), -inf);
    EXPECT_EQ(r[1].ValueAsDouble(1), inf);                                        // 1 / Sign(-0)
    EXPECT_EQ(r[2].ValueAsDouble(2), inf);                                        // 1 / Selu(-1e-42)
    EXPECT_EQ(r[3].ValueAsDouble(0), inf);                                        // Rsqrt(0)
    EXPECT_EQ(r[3].ValueAsDouble(3), 0);                                          // Rsqrt(Inf)
    EXPECT_EQ(r[3].ValueAsDouble(5), -inf);                                       // Rsqrt(-0)
    EXPECT_EQ(r[3].ValueAsDouble(6), static_cast<float>(1 / std::sqrt(1e-40f)));  // a subnormal is not 0
    EXPECT_EQ(r[4].ValueAsDouble(0), 300);                                        // max(1 / Inf, 300)
    EXPECT_TRUE(std::isnan(r[4].ValueAsDouble(1)));
    EXPECT_EQ(r[5].ValueAsDouble(0), 1);
    EXPECT_EQ(r[5].ValueAsDouble(3), 0);
  }
}

// What the 30-minute jit_fuzz run of seed 99 found, as values both sides must give (the
// reference kernels too: their Eigen functors answered differently in vector body and tail):
// Maximum/Minimum of -0 and +0 are +0 and -0 at every position; exp-based results below
// 2^-126 are 0 (Eigen 3.4's exp gave 2.9e-39 for any x below -88.72, which a division
// turned into NaN against the JIT's 0); a float sum of -0s is -0, an empty one +0.
TEST_F(Jit, SignedZerosAndTinyExponentialsAgree) {
  constexpr int kN = 19;  // a vector body and a scalar tail
  const float inf = INFINITY;
  std::vector<float> a(kN), z(kN), t(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = i % 2 ? -0.0f : 0.0f;
    z[i] = -a[i];
    t[i] = i % 3 == 0 ? -100.0f : i % 3 == 1 ? -87.5f : -1000.0f;
  }
  GraphBuilder b;
  b.Placeholder("a", DType::kFloat, {kN});
  b.Placeholder("z", DType::kFloat, {kN});
  b.Placeholder("t", DType::kFloat, {kN});
  b.Placeholder("nz", DType::kFloat, {3, kN});  // -0 everywhere
  b.Placeholder("e", DType::kFloat, {3, 0});
  auto op = [&](const std::string& name, const std::string& o, const std::vector<std::string>& in) {
    b.Op(name, o, in, DType::kFloat);
  };
  op("max", "Maximum", {"a", "z"});
  op("inv_max", "Reciprocal", {"max"});
  op("min", "Minimum", {"a", "z"});
  op("inv_min", "Reciprocal", {"min"});
  for (const char* f : {"Exp", "Sigmoid", "Softplus"}) {
    op(f, f, {"t"});
    op(std::string("inv_") + f, "Reciprocal", {f});
  }
  b.Const("axis1", testing::MakeInt32(Shape{}, {1}));
  b.Const("axis0", testing::MakeInt32(Shape{}, {0}));
  testing::SetAttrType(b.Op("rows", "Sum", {"nz", "axis1"}, DType::kFloat), "Tidx", DType::kInt32);
  op("inv_rows", "Reciprocal", {"rows"});
  testing::SetAttrType(b.Op("cols", "Sum", {"nz", "axis0"}, DType::kFloat), "Tidx", DType::kInt32);
  op("inv_cols", "Reciprocal", {"cols"});
  testing::SetAttrType(b.Op("empty", "Sum", {"e", "axis1"}, DType::kFloat), "Tidx", DType::kInt32);
  op("inv_empty", "Reciprocal", {"empty"});
  const std::vector<std::string> fetches = {"inv_max",      "inv_min",  "inv_Exp",  "inv_Sigmoid",
                                            "inv_Softplus", "inv_rows", "inv_cols", "inv_empty"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"a", testing::MakeFloat(Shape{kN}, a)},
      {"z", testing::MakeFloat(Shape{kN}, z)},
      {"t", testing::MakeFloat(Shape{kN}, t)},
      {"nz", testing::MakeFloat(Shape{3, kN}, std::vector<float>(3 * kN, -0.0f))},
      {"e", testing::MakeFloat(Shape{3, 0}, {})}};
  // 1 / +0 or 1 / -0, for every element of each fetch.
  const std::vector<double> all = {inf, -inf, inf, inf, inf, -inf, -inf, inf};
  const std::vector<size_t> sizes = {kN, kN, kN, kN, kN, 3, kN, 3};
  std::vector<std::vector<double>> expected;
  for (size_t f = 0; f < all.size(); ++f) expected.emplace_back(sizes[f], all[f]);
  ExpectBothAre(RunCompiledAndOpByOp(b.graph_def(), feeds, fetches), fetches, expected);
}

// Found by jit_fuzz (seed 20261124, graph 702) on a CPU with AVX512-BF16: a bf16 value
// chosen by a select (held in a register, not in memory) was rounded with vcvtneps2bf16,
// which flushes subnormals, so Relu(SelectV2(c, a, b)) of a bf16 subnormal was 0.
TEST_F(Jit, Bf16SubnormalsSurviveASelect) {
  // As the fuzzer made it: the condition is per row of the transposed x, so LLVM unswitches
  // the column loop on it, and the stores are strided (not vectorized): a phi of bf16.
  constexpr int64_t kN = 2 * 3 * 3 * 3;
  std::vector<double> x(kN), a = {-1.5, 2.0, 3e-40};
  for (int64_t i = 0; i < kN; ++i) x[i] = (i % 2 ? -1 : 1) * 9.18354962e-41 * (1 + i % 5);
  const std::vector<double> cond = {1, 0, 0, 1, 0, 1, 0, 0, 1};
  GraphBuilder g;
  g.Placeholder("x", DType::kBFloat16, {2, 3, 3, 3});
  g.Placeholder("c", DType::kBool, {3, 3, 1});
  g.Placeholder("a", DType::kBFloat16, {1, 3});
  testing::SetAttrType(
      g.Op("moved", "Transpose", {"x", g.Const("perm", testing::MakeInt32(Shape{4}, {0, 2, 1, 3}))}, DType::kBFloat16), "Tperm",
      DType::kInt32);
  g.Op("s", "SelectV2", {"c", "a", "moved"}, DType::kBFloat16);
  g.Op("r", "Relu", {"s"}, DType::kBFloat16);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", testing::MakeTensor(DType::kBFloat16, Shape{2, 3, 3, 3}, x)},
                                                             {"c", testing::MakeTensor(DType::kBool, Shape{3, 3, 1}, cond)},
                                                             {"a", testing::MakeTensor(DType::kBFloat16, Shape{1, 3}, a)}};
  const std::vector<double> xv = testing::Values(feeds[0].second), av = testing::Values(feeds[2].second);
  std::vector<double> want;
  for (int i0 = 0; i0 < 2; ++i0)
    for (int i1 = 0; i1 < 3; ++i1)
      for (int i2 = 0; i2 < 3; ++i2)
        for (int i3 = 0; i3 < 3; ++i3)
          want.push_back(std::max(cond[i1 * 3 + i2] ? av[i3] : xv[((i0 * 3 + i2) * 3 + i1) * 3 + i3], 0.0));
  ASSERT_GT(*std::max_element(want.begin(), want.end()), 0.0);
  ExpectBothAre(RunCompiledAndOpByOp(g.graph_def(), feeds, {"r"}), {"r"}, {want});
}

// Found by jit_fuzz (seed 20261122, graph 1577) on an AVX-512 machine: exp(88.5) is
// 2.7e38, finite, but Eigen's AVX-512 exp gave Inf (from 88.38 on), so Exp(bf16 88.5) plus
// a -Inf bias was NaN op by op and -Inf compiled. Both now follow exp up to ln(FLT_MAX).
TEST_F(Jit, ExpIsFiniteUpToTheLogarithmOfTheLargestFloat) {
  constexpr int kN = 35;  // two 16-float vectors and a tail
  std::vector<double> x(kN);
  for (int i = 0; i < kN; ++i) x[i] = 88.0 + 0.025 * i;  // 88 .. 88.85, over both edges
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {kN});
  b.Placeholder("h", DType::kBFloat16, {kN});
  b.Op("e", "Exp", {"x"}, DType::kFloat);
  b.Op("eh", "Exp", {"h"}, DType::kBFloat16);
  const std::vector<std::string> fetches = {"e", "eh"};
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", testing::MakeTensor(DType::kFloat, Shape{kN}, x)},
                                                             {"h", testing::MakeTensor(DType::kBFloat16, Shape{kN}, x)}};
  const auto runs = RunCompiledAndOpByOp(b.graph_def(), feeds, fetches);
  for (const auto* run : {&runs.first, &runs.second}) {
    for (size_t f = 0; f < fetches.size(); ++f) {
      const Tensor& t = (*run)[f];
      for (int i = 0; i < kN; ++i) {
        // bf16 inputs are x rounded to 8 bits; the result is rounded to bf16 once more.
        const double in = f == 0 ? static_cast<float>(x[i]) : testing::Values(feeds[1].second)[i];
        const double want = std::exp(in), got = t.ValueAsDouble(i);
        const char* who = run == &runs.first ? "jit " : "reference ";
        if (want > (f == 0 ? FLT_MAX : 3.3895e38)) {
          EXPECT_EQ(got, INFINITY) << who << fetches[f] << " of " << in;
        } else {
          EXPECT_NEAR(got / want, 1.0, f == 0 ? 1e-6 : 8e-3) << who << fetches[f] << " of " << in;
        }
      }
    }
  }
}

// Found by the 30-minute jit_fuzz run of seed 20261123: the Max and Min reductions, along
// rows and columns, order zeros as IEEE maximum and minimum do (-0 < +0: before, the JIT
// and Eigen took either zero of a tie); Erf saturates at exactly +-1 (the JIT's fit was an
// ulp short at 4, which Pow(erf(x), 1e30) made 0 instead of 1).
TEST_F(Jit, MaxMinReductionsOrderZerosAndErfSaturates) {
  constexpr int kN = 19;
  const float inf = INFINITY;
  std::vector<float> m(3 * kN, -0.0f);
  for (int j = 0; j < kN; ++j) m[2 * kN + j] = 0.0f;
  m[17] = 0.0f;           // row 0: -0 but one +0, in the vector tail
  m[2 * kN + 3] = -0.0f;  // row 2: +0 but one -0
  const std::vector<float> e = {-inf, -4.0f, -4.5f, 4.5f, 4.0f, inf, -1000.0f, 100.0f};
  GraphBuilder b;
  b.Placeholder("m", DType::kFloat, {3, kN});
  b.Placeholder("e", DType::kFloat, {8});
  b.Placeholder("y", DType::kFloat, {8});
  b.Const("axis0", testing::MakeInt32(Shape{}, {0}));
  b.Const("axis1", testing::MakeInt32(Shape{}, {1}));
  std::vector<std::string> fetches;
  for (const char* op : {"Max", "Min"}) {
    for (const char* axis : {"axis1", "axis0"}) {
      const std::string name = std::string(op) + "_" + axis;
      testing::SetAttrType(b.Op(name, op, {"m", axis}, DType::kFloat), "Tidx", DType::kInt32);
      b.Op("inv_" + name, "Reciprocal", {name}, DType::kFloat);
      fetches.push_back("inv_" + name);
    }
  }
  b.Op("erf", "Erf", {"e"}, DType::kFloat);
  b.Op("pow", "Pow", {"erf", "y"}, DType::kFloat);
  fetches.push_back("pow");
  std::vector<double> cols_max(kN, inf);
  cols_max[3] = -inf;
  const std::vector<std::vector<double>> expected = {
      {inf, -inf, inf}, cols_max, {-inf, -inf, -inf}, std::vector<double>(kN, -inf), std::vector<double>(8, 1.0)};
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"m", testing::MakeFloat(Shape{3, kN}, m)},
                                                             {"e", testing::MakeFloat(Shape{8}, e)},
                                                             {"y", testing::MakeFloat(Shape{8}, std::vector<float>(8, 1e30f))}};
  ExpectBothAre(RunCompiledAndOpByOp(b.graph_def(), feeds, fetches), fetches, expected);
}

// The assembly the JIT wrote for the cluster of Relu(Tanh(x)) at [rows, 256], with these
// options (jit_cpu, prefer_vector_width), and the result against op by op.
std::string ClusterAssembly(SessionOptions options, int64_t rows = 64) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {rows, 256});
  b.Op("t", "Tanh", {"x"});
  b.Op("r", "Relu", {"t"});
  options.jit_level = JitLevel::kOn1;
  options.dump_to = testing::TempDir();
  std::mt19937 rng(7);
  const Tensor x = Stressing(Shape{rows, 256}, rng);
  const JitStats before = GetJitStats();
  const Tensor got = testing::RunOrDie(*testing::MakeSession(b.graph_def(), options), {{"x", x}}, {"r"})[0];
  EXPECT_EQ(GetJitStats().fallback - before.fallback, 0);
  ExpectMatch(got, RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"r"})[0], 2e-6, "tanh relu");
  std::ifstream in(testing::OnlyFolder(options.dump_to, "cluster_0-") + "/08_asm.s");
  EXPECT_TRUE(in.good()) << options.dump_to;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The target and the vector width reach the code: from the session's options, and for
// sessions that set none, from GRAPHJIT_FLAGS (ctest runs this binary again with
// GRAPHJIT_FLAGS=--jit_cpu=x86-64-v3: the whole JIT suite on code for a CPU without
// AVX-512, whatever the host).
TEST_F(Jit, TheTargetAndVectorWidthAreOptions) {
  SessionOptions v3;
  v3.jit_cpu = "x86-64-v3";
  const std::string avx2 = ClusterAssembly(v3);
  EXPECT_EQ(avx2.find("zmm"), std::string::npos);
  EXPECT_NE(avx2.find("ymm"), std::string::npos);
  v3.prefer_vector_width = 128;
  const std::string sse = ClusterAssembly(v3);
  EXPECT_EQ(sse.find("ymm"), std::string::npos);
  EXPECT_NE(sse.find("xmm"), std::string::npos);
  const char* flags = std::getenv("GRAPHJIT_FLAGS");
  if (flags && std::string(flags).find("--jit_cpu=x86-64-v3") != std::string::npos) {
    EXPECT_EQ(ClusterAssembly({}, 65).find("zmm"), std::string::npos) << "GRAPHJIT_FLAGS=" << flags;
  }
}

// r = Relu(Tanh(x)): one cluster at ON_1.
tensorflow::GraphDef TanhRelu(const std::vector<int64_t>& x_shape) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, x_shape);
  b.Op("t", "Tanh", {"x"});
  b.Op("r", "Relu", {"t"});
  return b.graph_def();
}

// Two graphs with a cluster_0 each, and one of them at two shapes: three dump folders.
TEST_F(Jit, DumpFoldersAreOnePerClusterAndSignature) {
  GraphBuilder other;
  other.Placeholder("x", DType::kFloat, {-1, 8});
  other.Op("e", "Exp", {"x"});
  other.Op("n", "Neg", {"e"});
  SessionOptions options;
  options.jit_level = JitLevel::kOn1;
  options.dump_to = testing::TempDir();
  std::mt19937 rng(3);
  auto tanh_relu = testing::MakeSession(TanhRelu({-1, 8}), options);
  testing::RunOrDie(*tanh_relu, {{"x", Stressing(Shape{4, 8}, rng)}}, {"r"});
  testing::RunOrDie(*tanh_relu, {{"x", Stressing(Shape{6, 8}, rng)}}, {"r"});
  testing::RunOrDie(*testing::MakeSession(other.graph_def(), options), {{"x", Stressing(Shape{4, 8}, rng)}}, {"n"});
  std::set<std::string> folders;
  for (const auto& e : std::filesystem::directory_iterator(options.dump_to)) {
    if (e.path().filename() == "graph_passes") continue;  // the graph after each pass
    EXPECT_EQ(e.path().filename().string().rfind("cluster_0-", 0), 0u) << e.path();
    EXPECT_TRUE(std::filesystem::exists(e.path() / "08_asm.s")) << e.path();
    folders.insert(e.path().filename().string());
  }
  EXPECT_EQ(folders.size(), 3u);
}

// A compile that throws becomes a failed entry, an internal error: callers of that
// signature, waiting or later, get the failure instead of waiting forever.
TEST(KernelCache, ACompileThatThrowsLeavesNoOneWaiting) {
  KernelCache cache(16, 1 << 20);
  std::atomic<bool> compiling{false};
  std::thread first([&] {
    bool hit = true;
    auto entry = cache.Get(
        "k",
        [&]() -> KernelCache::Entry {
          compiling = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the second caller wait
          throw std::runtime_error("boom");
        },
        &hit);
    EXPECT_FALSE(hit);
    EXPECT_EQ(entry->kernel, nullptr);
    EXPECT_NE(entry->failure.find("internal compiler error: boom"), std::string::npos) << entry->failure;
    EXPECT_TRUE(entry->internal);
  });
  while (!compiling) std::this_thread::yield();
  bool hit = false;
  auto waited = cache.Get("k", [] { return KernelCache::Entry{std::make_shared<int>(1), "", false, 1}; }, &hit);
  first.join();
  EXPECT_TRUE(hit);
  EXPECT_EQ(waited->kernel, nullptr);
  EXPECT_EQ(cache.stats().failures, 1);
}

TEST_F(Jit, TheCacheCompilesOncePerSignature) {
  const tensorflow::GraphDef gd = TanhRelu({-1, 5});
  auto s = SessionAt(gd, JitLevel::kOn1);
  std::mt19937 rng(1);
  const JitStats before = GetJitStats();
  for (int i = 0; i < 3; ++i) testing::RunOrDie(*s, {{"x", Stressing(Shape{4, 5}, rng)}}, {"r"});
  JitStats after = GetJitStats();
  EXPECT_EQ(after.cache_misses - before.cache_misses, 1);
  EXPECT_EQ(after.cache_hits - before.cache_hits, 2);
  testing::RunOrDie(*s, {{"x", Stressing(Shape{9, 5}, rng)}}, {"r"});  // a new shape: a new kernel
  EXPECT_EQ(GetJitStats().cache_misses - before.cache_misses, 2);
  // Another session with the same cluster and shapes reuses the kernel.
  auto s2 = SessionAt(gd, JitLevel::kOn1);
  testing::RunOrDie(*s2, {{"x", Stressing(Shape{9, 5}, rng)}}, {"r"});
  EXPECT_EQ(GetJitStats().cache_misses - before.cache_misses, 2);
}

// One body, three sets of outputs: x -> Neg (n) -> Tanh (t) -> Relu (r), fetching r, then n
// and r, then t and r. Each fetch set makes a cluster of the same body with other outputs,
// which is other code: each compiles its own kernel and gives its own values (a signature
// without the outputs handed the first kernel to the others: t came out as n).
TEST_F(Jit, ClustersOfOneBodyWithOtherOutputsAreOtherKernels) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4});
  b.Op("n", "Neg", {"x"});
  b.Op("t", "Tanh", {"n"});
  b.Op("r", "Relu", {"t"});
  const std::vector<float> x = {1, -2, 3, -4};
  const std::vector<std::vector<std::string>> fetch_sets = {{"r"}, {"n", "r"}, {"t", "r"}, {"n", "t", "r"}};
  for (int round = 0; round < 2; ++round) {  // the second round meets every kernel in the cache
    for (const auto& fetches : fetch_sets) {
      const JitStats before = GetJitStats();
      const auto got = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", testing::MakeFloat(Shape{4}, x)}}, fetches);
      const JitStats after = GetJitStats();
      EXPECT_EQ(after.internal_errors, before.internal_errors);
      EXPECT_EQ(after.fallback, before.fallback);
      EXPECT_EQ(after.cache_misses - before.cache_misses, round == 0 ? 1 : 0);
      for (size_t f = 0; f < fetches.size(); ++f) {
        for (int i = 0; i < 4; ++i) {
          const float n = -x[i], t = std::tanh(n);
          const float want = fetches[f] == "n" ? n : fetches[f] == "t" ? t : std::max(t, 0.0f);
          EXPECT_NEAR(got[f].ValueAsDouble(i), want, 2e-6)
              << "round " << round << ", fetch " << fetches[f] << " of " << fetches.size() << ", element " << i;
        }
      }
    }
  }
}

// Shape values (Keras's Tensordot: Shape -> GatherV2 -> Prod -> Pack -> Reshape's shape,
// with an unknown batch dim) are clustered and computed when the cluster is specialized:
// the whole graph is one cluster, compiled without falling back, right at every batch size.
TEST_F(Jit, ShapeValuesAreComputedWhenSpecializing) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 4, 8});
  b.Const("w", testing::MakeFloat(Shape{8, 3}, std::vector<float>(24, 0.25f)));
  testing::SetAttrType(b.Op("shape", "Shape", {"x"}), "out_type", DType::kInt32);
  b.Const("free", testing::MakeInt32({2}, {0, 1}));
  b.Const("gather_axis", testing::MakeInt32({}, {0}));
  auto* gather = b.Op("gather", "GatherV2", {"shape", "free", "gather_axis"}, DType::kInvalid);
  testing::SetAttrType(gather, "Tparams", DType::kInt32);
  testing::SetAttrType(gather, "Tindices", DType::kInt32);
  testing::SetAttrType(gather, "Taxis", DType::kInt32);
  testing::SetAttrInt(gather, "batch_dims", 0);
  b.Const("prod_axis", testing::MakeInt32({}, {0}));
  auto* prod = b.Op("rows", "Prod", {"gather", "prod_axis"}, DType::kInt32);
  testing::SetAttrType(prod, "Tidx", DType::kInt32);
  b.Const("depth", testing::MakeInt32({}, {8}));
  auto* pack = b.Op("flat_shape", "Pack", {"rows", "depth"}, DType::kInt32);
  testing::SetAttrInt(pack, "N", 2);
  auto* flat = b.Op("flat", "Reshape", {"x", "flat_shape"});
  testing::SetAttrType(flat, "Tshape", DType::kInt32);
  b.Op("mm", "MatMul", {"flat", "w"});
  b.Op("y", "Tanh", {"mm"});
  auto session = SessionAt(b.graph_def(), JitLevel::kOn2);
  const JitStats before = GetJitStats();
  std::mt19937 rng(3);
  for (int64_t batch : {2, 5}) {
    SCOPED_TRACE(batch);
    const Tensor x = Stressing(Shape{batch, 4, 8}, rng);
    Tracer tracer;
    RunOptions run;
    run.tracer = &tracer;
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run(run, {{"x", x}}, {"y"}, {}, &out).ok());
    const Tensor& got = out[0];
    // Only the cluster ran (its kernels and compile stages are "cluster_0/...").
    for (const TraceEvent& e : tracer.events()) EXPECT_EQ(e.name.rfind("cluster_0", 0), 0u) << e.name;
    const Tensor want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"y"})[0];
    ExpectMatch(got, want, 1e-5, "y");
  }
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.cache_misses - before.cache_misses, 2);  // a kernel per batch size
  EXPECT_EQ(after.fallback, before.fallback);
}

// Small GEMMs are compiled as loops with the rest of the cluster (no library call):
// MatMul with each transpose, BatchMatMulV2 with each adjoint and a broadcast batch. A
// 16-bit GEMM (its products are not rounded to 16 bits) and one above the size limit stay
// library calls.
TEST_F(Jit, SmallGemmsAreCompiledAsLoops) {
  struct Case {
    std::string op;
    Shape a, b;
    bool ta, tb;
    DType dtype = DType::kFloat;
    bool library = false;  // expected to stay a library call
  };
  for (const Case& c : std::vector<Case>{{"MatMul", {5, 7}, {7, 9}, false, false},
                                         {"MatMul", {7, 5}, {9, 7}, true, true},
                                         {"MatMul", {5, 7}, {9, 7}, false, true, DType::kHalf, true},
                                         {"BatchMatMulV2", {2, 3, 4, 6}, {2, 3, 6, 5}, false, false},
                                         {"BatchMatMulV2", {2, 3, 6, 4}, {1, 5, 6}, true, true},
                                         {"BatchMatMulV2", {3, 4, 6}, {6, 5}, false, false, DType::kBFloat16, true},
                                         {"BatchMatMulV2", {3, 4, 6}, {6, 5}, false, false},
                                         {"MatMul", {64, 64}, {64, 64}, false, false, DType::kFloat, true}}) {
    SCOPED_TRACE(c.op + " " + c.a.ToString() + " x " + c.b.ToString() + (c.ta ? " ta" : "") + (c.tb ? " tb" : ""));
    GraphBuilder b;
    b.Placeholder("a", c.dtype, c.a.dims());
    b.Placeholder("b", c.dtype, c.b.dims());
    auto* mm = b.Op("mm", c.op, {"a", "b"}, c.dtype);
    testing::SetAttrBool(mm, c.op == "MatMul" ? "transpose_a" : "adj_x", c.ta);
    testing::SetAttrBool(mm, c.op == "MatMul" ? "transpose_b" : "adj_y", c.tb);
    b.Op("y", "Tanh", {"mm"}, c.dtype);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto random = [&](const Shape& shape) {
      std::vector<float> v(shape.num_elements());
      for (float& x : v) x = normal(rng);
      return *CastTensor(testing::MakeFloat(shape, v), c.dtype);
    };
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"a", random(c.a)}, {"b", random(c.b)}};
    SessionOptions options;
    options.jit_level = JitLevel::kOn2;
    auto session = testing::MakeSession(b.graph_def(), options);
    Tracer tracer;
    RunOptions run;
    run.tracer = &tracer;
    std::vector<Tensor> got;
    ASSERT_TRUE(session->Run(run, feeds, {"y"}, {}, &got).ok());
    bool library = false;
    for (const TraceEvent& e : tracer.events()) library |= e.op == c.op;
    EXPECT_EQ(library, c.library);
    ExpectMatch(got[0], RunAt(b.graph_def(), JitLevel::kOff, feeds, {"y"})[0], c.dtype == DType::kFloat ? 1e-5 : 1e-2, "y");
  }
}

// Every float is a literal the kernels can hold: a LeakyRelu whose alpha is Inf, NaN or a
// subnormal compiles, and computes what the reference kernel does, bit for bit.
TEST_F(Jit, LeakyReluCompilesWithAnyAlpha) {
  std::mt19937 rng(11);
  const Tensor x = Stressing(Shape{4, 16}, rng);
  for (float alpha : {INFINITY, -INFINITY, NAN, std::numeric_limits<float>::denorm_min(), -0.0f, FLT_MAX}) {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {-1, 16});
    testing::SetAttrFloat(b.Op("y", "LeakyRelu", {"x"}), "alpha", alpha);
    SessionOptions options;
    options.jit_level = JitLevel::kOn2;
    options.min_cluster_size = 1;
    options.jit_strict = true;  // a compile error is the run's error
    const JitStats before = GetJitStats();
    std::vector<Tensor> got;
    Status s = testing::MakeSession(b.graph_def(), options)->Run({{"x", x}}, {"y"}, {}, &got);
    ASSERT_TRUE(s.ok()) << "alpha " << alpha << ": " << s.ToString();
    EXPECT_EQ(GetJitStats().compiled - before.compiled, 1) << "alpha " << alpha;
    const Tensor want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"y"})[0];
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const float g = got[0].data<float>()[i], w = want.data<float>()[i];
      EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w)))
          << "alpha " << alpha << ", element " << i << ": " << g << " vs " << w;
    }
  }
}

// A kernel MLIR rejects is reported with the TensorFlow node its op came from: every op is
// located at its node.
TEST_F(Jit, ACompileErrorNamesTheNode) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 4});
  b.Op("scale", "Mul", {"x", "x"});
  b.Op("layer_3/shifted", "AddV2", {"scale", "x"});
  b.Op("y", "Tanh", {"layer_3/shifted"});
  SessionOptions options;
  options.jit_level = JitLevel::kOn2;
  options.min_cluster_size = 1;
  options.jit_strict = true;
  std::mt19937 rng(12);
  InjectMiscompile("arith.addf", "arith.addi");  // an integer addition of floats: the verifier refuses it
  std::vector<Tensor> out;
  Status s = testing::MakeSession(b.graph_def(), options)->Run({{"x", Stressing(Shape{3, 4}, rng)}}, {"y"}, {}, &out);
  InjectMiscompile("", "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("\"layer_3/shifted\""), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("arith.addi"), std::string::npos) << s.ToString();
}

TEST_F(Jit, AFailedCompileRunsOpByOpWithTheSameResults) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 4});
  b.Op("e", "Exp", {"x"});
  b.Op("s", "Softmax", {"e"});
  std::mt19937 rng(2);
  Tensor x = Stressing(Shape{3, 4}, rng);
  const JitStats before = GetJitStats();
  InjectCompileFailure("injected: the compiler failed");
  auto got = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", x}}, {"s"});
  InjectCompileFailure("");
  auto want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"s"});
  EXPECT_EQ(testing::Values(got[0]), testing::Values(want[0]));
  EXPECT_EQ(GetJitStats().fallback - before.fallback, 1);
  EXPECT_EQ(GetJitStats().internal_errors - before.internal_errors, 1);
  // Under --jit_strict a compiler bug is an error, named as one.
  InjectCompileFailure("injected: the compiler failed");
  SessionOptions strict;
  strict.jit_level = JitLevel::kOn1;
  strict.jit_strict = true;
  std::vector<Tensor> out;
  Status s = testing::MakeSession(b.graph_def(), strict)->Run({{"x", Stressing(Shape{7, 4}, rng)}}, {"s"}, {}, &out);
  InjectCompileFailure("");
  EXPECT_NE(s.message().find("internal compiler error (--jit_strict): injected"), std::string::npos) << s.ToString();
  // Without the fault, the cluster compiles (for another shape: failures stay cached).
  Tensor x2 = Stressing(Shape{5, 4}, rng);
  const JitStats middle = GetJitStats();
  auto compiled = RunAt(b.graph_def(), JitLevel::kOn1, {{"x", x2}}, {"s"});
  EXPECT_EQ(GetJitStats().fallback - middle.fallback, 0);
  EXPECT_EQ(GetJitStats().compiled - middle.compiled, 1);
  ExpectMatch(compiled[0], RunAt(b.graph_def(), JitLevel::kOff, {{"x", x2}}, {"s"})[0], 2e-6, "softmax");
}

// The numerics guard runs each compiled cluster op by op too. A right kernel passes; a
// wrong one (an addition compiled as a subtraction) is reported once per cluster, naming
// the cluster, the output, the element and both values, with its kernel's stages written,
// and under kFail it is the run's error.
TEST_F(Jit, TheNumericsGuardCatchesAWrongKernel) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 5});
  b.Const("c", testing::MakeFloat(Shape{5}, {0.75f, -1.25f, 2.5f, 0.125f, -3.0625f}));  // its own signature
  b.Op("sum", "AddV2", {"x", "c"});
  b.Op("y", "Tanh", {"sum"});
  std::mt19937 rng(17);
  const Tensor x = Stressing(Shape{3, 5}, rng);
  const std::string dir = (std::filesystem::temp_directory_path() / "graphjit_numerics_test").string();
  std::filesystem::remove_all(dir);
  auto session = [&](SessionOptions::NumericsCheck check) {
    SessionOptions options;
    options.jit_level = JitLevel::kOn2;
    options.min_cluster_size = 1;
    options.jit_check_numerics = check;
    options.dump_to = dir;
    return testing::MakeSession(b.graph_def(), options);
  };
  std::vector<Tensor> out;
  JitStats before = GetJitStats();
  ASSERT_TRUE(session(SessionOptions::NumericsCheck::kFail)->Run({{"x", x}}, {"y"}, {}, &out).ok());
  EXPECT_EQ(GetJitStats().numerics_checked - before.numerics_checked, 1);
  EXPECT_EQ(GetJitStats().numerics_mismatches, before.numerics_mismatches);

  // The same graph for another shape: a new signature, compiled wrong.
  const Tensor x2 = Stressing(Shape{4, 5}, rng);
  InjectMiscompile("arith.addf", "arith.subf");
  before = GetJitStats();
  ::testing::internal::CaptureStderr();
  auto warn = session(SessionOptions::NumericsCheck::kWarn);
  Status s = warn->Run({{"x", x2}}, {"y"}, {}, &out);
  Status again = warn->Run({{"x", x2}}, {"y"}, {}, &out);
  const std::string err = ::testing::internal::GetCapturedStderr();
  InjectMiscompile("", "");
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(GetJitStats().numerics_mismatches - before.numerics_mismatches, 2);
  EXPECT_NE(err.find("graphjit: warning: cluster "), std::string::npos) << err;
  EXPECT_NE(err.find("differs from op by op: output 0 ('y' of its body), element 0 [0, 0]: compiled "), std::string::npos) << err;
  EXPECT_EQ(err.find("differs from op by op", err.find("differs from op by op") + 1), std::string::npos)
      << "reported twice: " << err;
  // Its stages, the wrong addition among them.
  bool dumped = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename() != "02_fusions.mlir") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    dumped |= text.find("arith.subf") != std::string::npos;
  }
  EXPECT_TRUE(dumped) << "no dump of the wrong kernel under " << dir;
  // kFail: the cached wrong kernel is now an error.
  ::testing::internal::CaptureStderr();
  s = session(SessionOptions::NumericsCheck::kFail)->Run({{"x", x2}}, {"y"}, {}, &out);
  ::testing::internal::GetCapturedStderr();
  EXPECT_NE(s.message().find("--jit_check_numerics=fail: cluster "), std::string::npos) << s.ToString();
  std::filesystem::remove_all(dir);
}

// Asynchronous compilation: a new signature's first run goes op by op while the kernel
// compiles in the background, with the same results; once it is compiled, runs use it.
TEST_F(Jit, AsyncCompilationRunsOpByOpUntilTheKernelIsReady) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 6});
  b.Const("c", testing::MakeFloat(Shape{6}, {0.5f, -0.25f, 1.5f, 2.0f, -1.0f, 0.125f}));  // its own signature
  b.Op("m", "Mul", {"x", "c"});
  b.Op("y", "Softmax", {"m"});
  std::mt19937 rng(23);
  const Tensor x = Stressing(Shape{5, 6}, rng);
  SessionOptions options;
  options.jit_level = JitLevel::kOn2;
  options.min_cluster_size = 1;
  options.jit_async = true;
  auto session = testing::MakeSession(b.graph_def(), options);
  const auto want = RunAt(b.graph_def(), JitLevel::kOff, {{"x", x}}, {"y"});
  const JitStats before = GetJitStats();
  auto first = testing::RunOrDie(*session, {{"x", x}}, {"y"});
  EXPECT_EQ(GetJitStats().async_runs - before.async_runs, 1);
  ExpectMatch(first[0], want[0], 0, "softmax op by op");  // the same kernels: the same values
  WaitForBackgroundCompiles();
  EXPECT_EQ(GetJitStats().cache_misses - before.cache_misses, 1);
  const JitStats compiled = GetJitStats();
  auto later = testing::RunOrDie(*session, {{"x", x}}, {"y"});
  EXPECT_EQ(GetJitStats().async_runs, compiled.async_runs);
  EXPECT_EQ(GetJitStats().cache_hits - compiled.cache_hits, 1);
  ExpectMatch(later[0], want[0], 2e-6, "softmax");
}

// GRAPHJIT_FLAGS' spellings of the guard.
TEST(JitFlags, CheckNumerics) {
  using Check = SessionOptions::NumericsCheck;
  for (const auto& [flags, want] : std::vector<std::pair<std::string, Check>>{{"--jit_check_numerics", Check::kWarn},
                                                                              {"--jit_check_numerics=warn", Check::kWarn},
                                                                              {"--jit_check_numerics=fail", Check::kFail},
                                                                              {"--jit_check_numerics=off", Check::kOff}}) {
    SessionOptions o;
    o.jit_check_numerics = Check::kWarn;
    if (want == Check::kWarn) o.jit_check_numerics = Check::kOff;
    ASSERT_TRUE(ApplyFlags(flags, &o).ok()) << flags;
    EXPECT_EQ(o.jit_check_numerics, want) << flags;
  }
  SessionOptions o;
  Status s = ApplyFlags("--jit_check_numerics=maybe", &o);
  EXPECT_NE(s.message().find("--jit_check_numerics must be warn, fail or off, got 'maybe'"), std::string::npos) << s.ToString();
}

TEST_F(Jit, MegamorphicClustersRunOpByOp) {
  const tensorflow::GraphDef gd = TanhRelu({-1});
  auto s = SessionAt(gd, JitLevel::kOn1);
  std::mt19937 rng(3);
  const JitStats before = GetJitStats();
  for (int n = 1; n <= 14; ++n) {  // a new shape every run
    Tensor x = Stressing(Shape{n}, rng);
    auto got = testing::RunOrDie(*s, {{"x", x}}, {"r"});
    ExpectMatch(got[0], RunAt(gd, JitLevel::kOff, {{"x", x}}, {"r"})[0], 2e-6, "n=" + std::to_string(n));
  }
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.cache_misses - before.cache_misses, 11) << "no compiles after the 11th";
  EXPECT_EQ(after.fallback - before.fallback, 1);
}

TEST_F(Jit, ConcurrentRunsShareTheCache) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 8});
  b.Op("s", "Sigmoid", {"x"});
  b.Op("m", "Mul", {"s", "x"});
  auto s = SessionAt(b.graph_def(), JitLevel::kOn1);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const int64_t rows = 1 + (t + i) % 3;  // three signatures, compiled once each
        std::vector<float> v(rows * 8, static_cast<float>(t) * 0.1f);
        std::vector<Tensor> out;
        Status st = s->Run({{"x", testing::MakeFloat(Shape{rows, 8}, v)}}, {"m"}, {}, &out);
        const double x = t * 0.1f, want = x / (1 + std::exp(-x));
        if (!st.ok() || std::fabs(out[0].ValueAsDouble(0) - want) > 1e-6) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace graphjit
