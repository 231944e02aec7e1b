// The kernel cache's bound, in a process of its own (the cache is the process's): with
// thousands of signatures compiled, the cache holds at most --jit_cache_mb, and the
// process's memory stops growing once the cache is full.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/jit.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

constexpr int kCacheMb = 8;

// The process's resident memory in bytes.
int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

TEST(KernelCacheBound, ThousandsOfSignaturesInBoundedMemory) {
  // Before anything makes the cache, which reads GRAPHJIT_FLAGS once.
  setenv("GRAPHJIT_FLAGS", ("--jit_cache_mb=" + std::to_string(kCacheMb)).c_str(), 1);
  RegisterJit();
  // Shapes [a, b, c] of 720720 elements each: every signature is new, and every feed the
  // same size (so that the allocator's reuse of released blocks stays flat).
  constexpr int64_t kElements = 720720;  // 2^4 3^2 5 7 11 13: thousands of ordered factorings
  std::vector<Shape> shapes;
  for (int64_t a = 1; a <= kElements; ++a) {
    if (kElements % a) continue;
    for (int64_t b = 1; b <= kElements / a; ++b)
      if ((kElements / a) % b == 0) shapes.push_back(Shape{a, b, kElements / a / b});
  }
  testing::GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, -1, -1});
  b.Op("t", "Tanh", {"x"});
  b.Op("r", "Relu", {"t"});
  SessionOptions options;
  options.jit_level = JitLevel::kOn1;
  options.intra_op_threads = options.inter_op_threads = 1;
  constexpr int kSignatures = 2000, kWarm = 500;
  ASSERT_GE(shapes.size(), static_cast<size_t>(kSignatures));
  const std::vector<float> values(kElements, 0.5f);
  std::unique_ptr<Session> session;
  int64_t first_rss = 0, warm_rss = 0, peak_after_warm = 0, peak = 0;
  for (int k = 1; k <= kSignatures; ++k) {
    // A new session every 8 shapes: one cluster compiled at more shapes than that, at few
    // runs each, would be megamorphic and stop compiling.
    if (k % 8 == 1) session = testing::MakeSession(b.graph_def(), options);
    testing::RunOrDie(*session, {{"x", testing::MakeFloat(shapes[k - 1], values)}}, {"r"});
    const JitStats s = GetJitStats();
    ASSERT_LE(s.cache_bytes, int64_t{kCacheMb} << 20) << "after " << k << " signatures";
    const int64_t rss = ResidentBytes();
    if (k == 1) first_rss = rss;  // LLVM and the session machinery set up
    if (k == kWarm) warm_rss = rss;
    if (k > kWarm) peak_after_warm = std::max(peak_after_warm, rss);
    peak = std::max(peak, rss);
  }
  const JitStats s = GetJitStats();
  EXPECT_EQ(s.cache_misses, kSignatures);  // every shape compiled once
  EXPECT_EQ(s.fallback, 0);
  EXPECT_GT(s.cache_evictions, kSignatures / 2);
  EXPECT_LT(s.cache_entries, 8 * 1024 / 32);  // at least 28 KiB of heap and a page of code each
  std::printf(
      "%d signatures: the cache holds %lld kernels in %.1f MiB (%lld evicted); resident %.1f MiB after the "
      "first, %.1f MiB after %d, peak %.1f MiB\n",
      kSignatures, static_cast<long long>(s.cache_entries), s.cache_bytes / 1048576.0, static_cast<long long>(s.cache_evictions),
      first_rss / 1048576.0, warm_rss / 1048576.0, kWarm, peak / 1048576.0);
  // What the cache holds is what it counts: the process grows by the bound and what the
  // allocator keeps, no more (an undercount of a kernel's JIT heap would show here as
  // tens of MiB).
  EXPECT_LT(peak - first_rss, (int64_t{kCacheMb} << 20) + (int64_t{24} << 20));
  // Once the cache is full, compiling more leaves the process's memory where it was.
  EXPECT_LT(peak_after_warm - warm_rss, int64_t{8} << 20);
}

}  // namespace
}  // namespace graphjit
