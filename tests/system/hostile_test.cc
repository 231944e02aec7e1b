// Big or hostile inputs end in a clear error or a correct run: never a crash, never
// an absurd allocation, never quadratic time.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ir/graphdef.h"
#include "passes/passes.h"
#include "runtime/npy.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;

tensorflow::GraphDef Chain(int n) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string name = std::string("n") + std::to_string(i);
    b.Op(name, i % 3 == 0 ? "Neg" : "Identity", {prev});
    prev = name;
  }
  return b.graph_def();
}

double SecondsToCreateAndRun(int n) {
  tensorflow::GraphDef gd = Chain(n);
  auto start = std::chrono::steady_clock::now();
  auto s = testing::MakeSession(gd);
  auto out = testing::RunOrDie(*s, {{"x", testing::MakeFloat(Shape{4}, {1, 2, 3, 4})}}, {"n" + std::to_string(n - 1)});
  double sign = ((n + 2) / 3) % 2 ? -1 : 1;  // one Neg every third node
  EXPECT_EQ(testing::Values(out[0]), (std::vector<double>{sign, 2 * sign, 3 * sign, 4 * sign}));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(Hostile, DeepChainsScaleLinearly) {
  // 100k nodes in a chain import, validate and run; five times the nodes take about five
  // times as long (a quadratic step would take 25 times). The bound is loose on purpose.
  double small = SecondsToCreateAndRun(20000);
  double large = SecondsToCreateAndRun(100000);
  EXPECT_LT(large, 12 * small + 0.5) << "20k nodes: " << small << " s, 100k nodes: " << large << " s";
}

// Seconds to prune a chain of n nodes; checks that two in three were bypassed.
double SecondsToPrune(int n) {
  auto graph = ImportGraphDef(Chain(n));
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  PassContext context({"x"}, {"n" + std::to_string(n - 1)}, {});
  auto start = std::chrono::steady_clock::now();
  auto changed = Prune(*graph, context);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(changed.ok() && *changed);
  // x, every Neg, and the fetched last node stay.
  EXPECT_EQ(graph->num_nodes(), 1 + (n + 2) / 3 + ((n - 1) % 3 != 0));
  return seconds;
}

TEST(Hostile, DeepChainsPruneLinearly) {
  // Bypassing each Identity once used to scan the whole graph: 100k nodes took 96 s.
  double small = SecondsToPrune(20000);
  double large = SecondsToPrune(100000);
  EXPECT_LT(large, 12 * small + 0.5) << "20k nodes: " << small << " s, 100k nodes: " << large << " s";
}

TEST(Hostile, DeepChainRoundTripsThroughFiles) {
  std::string path = testing::TempDir() + "/deep.pb";
  ASSERT_TRUE(WriteGraphDefFile(Chain(100000), path).ok());
  auto r = testing::RunGraphjit("run " + path + " --random-feeds --fetch n99999");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("n99999 float32 [4]"), std::string::npos);
}

TEST(Hostile, TenGigabyteRequestsFailCleanly) {
  // A random feed of 50000 x 50000 floats (10 GB).
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, -1});
  b.Op("y", "Relu", {"x"});
  std::string path = testing::TempDir() + "/m.pb";
  ASSERT_TRUE(WriteGraphDefFile(b.graph_def(), path).ok());
  auto r = testing::RunGraphjit("run " + path + " --random-feeds --shape x=50000,50000");
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot allocate 10000000000 bytes"), std::string::npos) << r.err;

  // A graph that asks for 10 GB at run time: Fill([50000, 50000], 1.0).
  GraphBuilder f;
  f.Const("dims", testing::MakeInt32(Shape{2}, {50000, 50000}));
  f.Const("one", testing::MakeFloat(Shape{}, {1}));
  f.Op("fill", "Fill", {"dims", "one"});
  std::string fpath = testing::TempDir() + "/fill.pb";
  ASSERT_TRUE(WriteGraphDefFile(f.graph_def(), fpath).ok());
  r = testing::RunGraphjit("run " + fpath);
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("node 'fill' (Fill): cannot allocate 10000000000 bytes"), std::string::npos) << r.err;
}

// The fuzzers' GraphDef findings (tests/fuzz/regressions/graphdef_fuzzer/ and
// jit_path_fuzzer/: a Pad, a Tile, a Slice, a SplitV whose sizes overflow, a Switch output
// that does not exist, a LeakyRelu alpha that is not a float, ...) end in an error or a
// run, in every build: graphjit run on each, with the JIT on, exits 0, 1 or 2 with a
// message, never by a signal.
TEST(Hostile, FuzzFindingsEndInAnErrorOrARun) {
  const std::string regressions = testing::SourcePath("tests/fuzz/regressions/");
  std::vector<std::filesystem::path> findings;
  for (const char* target : {"graphdef_fuzzer", "jit_path_fuzzer"})
    for (const auto& entry : std::filesystem::directory_iterator(regressions + target)) findings.push_back(entry.path());
  int seen = 0;
  for (const auto& finding : findings) {
    SCOPED_TRACE(finding.string());
    std::ifstream in(finding, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    tensorflow::GraphDef gd;
    ASSERT_TRUE(gd.ParseFromString(bytes));
    const std::string path = testing::TempDir() + "/finding.pb";
    ASSERT_TRUE(WriteGraphDefFile(gd, path).ok());
    auto r = testing::RunGraphjit("run " + path + " --random-feeds --jit on_2");
    EXPECT_FALSE(r.signaled) << r.err;
    EXPECT_TRUE(r.exit_code == 0 || !r.err.empty()) << r.exit_code;
    ++seen;
  }
  EXPECT_GE(seen, 9);
}

TEST(Hostile, ConstantsThatLie) {
  // Declared shape and content disagree; a declared element count that overflows.
  for (int variant = 0; variant < 3; ++variant) {
    GraphBuilder b;
    tensorflow::NodeDef* n = b.graph_def().add_node();
    n->set_name("k");
    n->set_op("Const");
    testing::SetAttrType(n, "dtype", DType::kFloat);
    auto* t = (*n->mutable_attr())["value"].mutable_tensor();
    t->set_dtype(tensorflow::DT_FLOAT);
    if (variant == 0) {
      t->mutable_tensor_shape()->add_dim()->set_size(1000);
      t->set_tensor_content(std::string(12, '\0'));
    } else if (variant == 1) {
      for (int i = 0; i < 4; ++i) t->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 20);
      t->add_float_val(1);
    } else {
      t->mutable_tensor_shape()->add_dim()->set_size(-5);
    }
    auto s = Session::Create({}, b.graph_def());
    ASSERT_FALSE(s.ok()) << variant;
    EXPECT_NE(s.status().message().find("node 'k' (Const)"), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace graphjit
