// Thousands of distinct clusters in one process, many of them one body with other outputs,
// through the process's kernel cache at its default bound: every result is checked. A
// signature that leaves out something the code depends on hands one cluster's kernel to
// another only when the two meet in one process, which a short test never arranges.
//
// Each body is a chain of four exact ops on x (Neg, Abs, Relu, Relu6, Square, Floor, Ceil,
// Sign: one IEEE operation or none per element, so the host computes the same bits). Each
// body runs with every set of outputs that keeps its body: the last op always, any of the
// three before it, in an order picked at random; each (body, outputs) is a cluster of its
// own, compiled once, and run again after its body's other clusters (a cache hit).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "jit/jit.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

constexpr int kChain = 4;
constexpr int kOutputSets = 1 << (kChain - 1);  // subsets of the ops before the last
constexpr int kBodies = 1000;                   // kBodies * kOutputSets distinct clusters

const char* const kOps[] = {"Neg", "Abs", "Relu", "Relu6", "Square", "Floor", "Ceil", "Sign"};

float Apply(const std::string& op, float x) {
  if (op == "Neg") return -x;
  if (op == "Abs") return std::fabs(x);
  if (op == "Relu") return std::max(x, 0.0f);
  if (op == "Relu6") return std::min(std::max(x, 0.0f), 6.0f);
  if (op == "Square") return x * x;
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  return x > 0 ? 1.0f : x < 0 ? -1.0f : x;  // Sign (of a zero: the zero)
}

TEST(JitSignatures, EightThousandClustersOfSharedBodiesAllRight) {
  RegisterJit();
  SessionOptions options;
  options.jit_level = JitLevel::kOn2;
  options.min_cluster_size = 1;
  options.intra_op_threads = options.inter_op_threads = 1;
  const Shape shape{1, 16};  // one vector of 16 (two of 8): kernels with a tail loop take three times as long to compile
  std::mt19937 rng(20261127);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const JitStats before = GetJitStats();
  const auto start = std::chrono::steady_clock::now();
  int64_t checked = 0, wrong = 0;
  for (int body = 0; body < kBodies; ++body) {
    // Body `body`: its ops are the digits of a number spread over the 8^4 chains.
    std::vector<std::string> ops;
    for (int i = 0, code = body * 1637 % 4096; i < kChain; ++i, code /= 8) ops.push_back(kOps[code % 8]);
    testing::GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {shape.dim(0), shape.dim(1)});
    std::vector<std::string> names;
    for (int i = 0; i < kChain; ++i) {
      names.push_back("v" + std::to_string(i));
      b.Op(names.back(), ops[i], {i == 0 ? std::string("x") : names[i - 1]});
    }
    if (body % 250 == 0 && body > 0) {
      std::printf("%d clusters, %.0f s\n", body * kOutputSets,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      std::fflush(stdout);
    }
    auto session = testing::MakeSession(b.graph_def(), options);
    std::vector<int> sets;
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<int> order(kOutputSets);
      for (int s = 0; s < kOutputSets; ++s) order[s] = s;
      std::shuffle(order.begin(), order.end(), rng);
      sets.insert(sets.end(), order.begin(), order.end());
    }
    for (int set : sets) {
      std::vector<int> fetched = {kChain - 1};
      for (int i = 0; i < kChain - 1; ++i)
        if (set >> i & 1) fetched.push_back(i);
      std::shuffle(fetched.begin(), fetched.end(), std::mt19937(set));  // one order per set
      std::vector<std::string> fetches;
      for (int i : fetched) fetches.push_back(names[i]);
      std::vector<float> x(shape.num_elements());
      for (float& e : x) e = std::round(normal(rng) * 8) / 8;  // halves and eighths: ties for Floor and Ceil
      const std::vector<Tensor> got = testing::RunOrDie(*session, {{"x", testing::MakeFloat(shape, x)}}, fetches);
      for (size_t f = 0; f < fetched.size(); ++f) {
        for (int64_t e = 0; e < shape.num_elements(); ++e) {
          float want = x[e];
          for (int i = 0; i <= fetched[f]; ++i) want = Apply(ops[i], want);
          const float have = static_cast<float>(got[f].ValueAsDouble(e));
          ++checked;
          if (have != want && !(std::isnan(have) && std::isnan(want)) && ++wrong <= 10)
            ADD_FAILURE() << "body " << body << " (" << ops[0] << " " << ops[1] << " " << ops[2] << " " << ops[3] << "), fetch "
                          << fetches[f] << " of " << fetches.size() << ", element " << e << ": " << have << ", not " << want;
        }
      }
    }
  }
  const JitStats after = GetJitStats();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d clusters (%d bodies x %d sets of outputs), %lld values checked, %lld wrong; %lld compiles, %lld "
      "cache hits, %lld evictions, %lld kernels held; %.0f s\n",
      kBodies * kOutputSets, kBodies, kOutputSets, static_cast<long long>(checked), static_cast<long long>(wrong),
      static_cast<long long>(after.compiles - before.compiles), static_cast<long long>(after.cache_hits - before.cache_hits),
      static_cast<long long>(after.cache_evictions - before.cache_evictions), static_cast<long long>(after.cache_entries),
      seconds);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(after.internal_errors - before.internal_errors, 0);
  EXPECT_EQ(after.fallback - before.fallback, 0);
  EXPECT_EQ(after.compiled - before.compiled, kBodies * kOutputSets);
  EXPECT_EQ(after.compiles - before.compiles, kBodies * kOutputSets);
  EXPECT_EQ(after.cache_hits - before.cache_hits, kBodies * kOutputSets);
}

}  // namespace
}  // namespace graphjit
