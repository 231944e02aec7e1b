// ir/builder.h: the C++ graph builder and JitScope, and the README's example program.
#include <gtest/gtest.h>

#include "clustering/pass.h"
#include "ir/attr.h"
#include "ir/builder.h"
#include "ir/graphdef.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

const bool kPassRegistered = [] {
  RegisterClusteringPass();
  return true;
}();

TEST(JitScope, MarksTheNodesCreatedInsideIt) {
  GraphBuilder b;
  Output x = b.Placeholder("x", DType::kFloat, Shape{2});
  Output outside = b.Relu(x);
  Output a, c;
  {
    JitScope s1(b);
    a = b.Tanh(b.Exp(outside));
    {
      JitScope named(b, "inner");
      c = b.Add(a, a);
    }
  }
  Output after = b.Relu(c);
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_TRUE(g.ok());
  auto scope_of = [&](const Output& o) -> std::string {
    const Node* n = g->FindNode(o.node);
    if (!n->FindAttr("_XlaCompile")) return "";
    EXPECT_TRUE(*GetBoolAttr(*n, "_XlaCompile"));
    return *GetStringAttr(*n, "_XlaScope");
  };
  EXPECT_EQ(scope_of(outside), "");
  EXPECT_EQ(scope_of(a), "jit_scope_0");
  EXPECT_EQ(scope_of(c), "inner");
  EXPECT_EQ(scope_of(after), "");
  EXPECT_EQ(g->FindNode(x.node)->FindAttr("_XlaCompile"), nullptr);  // placeholders never

  // At level OFF, the two scopes become two clusters and the results are unchanged.
  auto s = testing::MakeSession(b.graph_def());
  auto optimized = s->OptimizedGraph({x.ToString()}, {after.ToString()});
  ASSERT_TRUE(optimized.ok()) << optimized.status().message();
  int clusters = 0;
  for (int id = 0; id < (*optimized)->graph.num_nodes(); ++id) clusters += (*optimized)->graph.node(id)->op == "_JitCluster";
  EXPECT_EQ(clusters, 2);
  Tensor in = testing::MakeFloat(Shape{2}, {-1, 0.5f});
  auto out = testing::RunOrDie(*s, {{"x", in}}, {after.ToString()});
  double t = std::tanh(std::exp(0.5));
  EXPECT_NEAR(testing::Values(out[0])[1], 2 * t, 1e-6);
  EXPECT_NEAR(testing::Values(out[0])[0], 2 * std::tanh(1.0), 1e-6);
}

TEST(JitScope, ReadmeExampleRuns) {
  std::string binary = testing::GraphjitBinary();
  binary = binary.substr(0, binary.rfind('/')) + "/jit_scope_example";
  FILE* p = popen(binary.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(pclose(p), 0);
  EXPECT_NE(out.find("cluster: cluster_0"), std::string::npos) << out;
  EXPECT_NE(out.find("Softmax = float32[2,4]"), std::string::npos) << out;
}

}  // namespace
}  // namespace graphjit
