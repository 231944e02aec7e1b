// clustering/: properties over thousands of random graphs, plus the rules that need C++
// to check (the lit tests in tests/lit check the command's output).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "clustering/pass.h"
#include "ir/graphdef.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;

const bool kPassRegistered = [] {
  RegisterClusteringPass();
  return true;
}();

// A random DAG over float [4] tensors: compilable unary/binary ops, a non-compilable
// op (CheckNumerics), control edges, and two devices.
tensorflow::GraphDef RandomDag(std::mt19937& rng, int n, std::vector<std::string>* fetches) {
  GraphBuilder b;
  std::vector<std::string> names = {b.Placeholder("p0", DType::kFloat, {4}), b.Placeholder("p1", DType::kFloat, {4})};
  const char* unary[] = {"Relu", "Tanh", "Neg", "CheckNumerics", "Identity"};
  const char* binary[] = {"AddV2", "Maximum", "Minimum"};
  std::set<std::string> consumed;
  for (int i = 0; i < n; ++i) {
    std::string name = std::string("n") + std::to_string(i);
    auto pick = [&] {
      // Prefer recent nodes, so chains form.
      int k = static_cast<int>(names.size());
      int j = std::max(0, k - 1 - static_cast<int>(std::geometric_distribution<int>(0.3)(rng)));
      consumed.insert(names[j]);
      return names[j];
    };
    tensorflow::NodeDef* node;
    if (rng() % 3 == 0) {
      std::string x = pick(), y = pick();
      node = b.Op(name, binary[rng() % 3], {x, y});
    } else {
      node = b.Op(name, unary[rng() % 5], {pick()});
      if (node->op() == "CheckNumerics") testing::SetAttrString(node, "message", "check");
    }
    if (rng() % 6 == 0 && names.size() > 2) node->add_input("^" + names[2 + rng() % (names.size() - 2)]);
    if (rng() % 8 == 0) node->set_device("/device:XLA_CPU:0");
    if (rng() % 15 == 0) testing::SetAttrBool(node, "_XlaCompile", false);
    names.push_back(name);
  }
  for (size_t i = 2; i < names.size(); ++i)
    if (!consumed.count(names[i]) || rng() % 10 == 0) fetches->push_back(names[i]);
  return b.graph_def();
}

// Nodes reachable from `from` (data and control edges).
std::vector<bool> Reachable(const Graph& g, const std::vector<std::vector<OutEdge>>& out, const std::vector<int>& from) {
  std::vector<bool> seen(g.num_nodes(), false);
  std::vector<int> stack;
  for (int f : from)
    for (const OutEdge& e : out[f]) stack.push_back(e.dst);
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    if (seen[x]) continue;
    seen[x] = true;
    for (const OutEdge& e : out[x]) stack.push_back(e.dst);
  }
  return seen;
}

TEST(ClusteringProperty, RandomGraphsStayAcyclicConvexAndExact) {
  std::mt19937 rng(1234);
  int total_clusters = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    SCOPED_TRACE("graph " + std::to_string(iter));
    std::vector<std::string> fetches;
    tensorflow::GraphDef gd = RandomDag(rng, 5 + static_cast<int>(rng() % 40), &fetches);
    for (JitLevel level : {JitLevel::kOn1, JitLevel::kOn2}) {
      SessionOptions on;
      on.jit_level = level;
      on.min_cluster_size = 1 + static_cast<int>(rng() % 3);
      // 1. Convexity, on the clusters as found.
      auto explained = ExplainClustering(gd, on);
      ASSERT_TRUE(explained.ok()) << explained.status().ToString();
      const auto& [a, c] = *explained;
      auto out = a.graph.ComputeOutEdges();
      for (const auto& cluster : c.clusters) {
        std::set<int> members(cluster.begin(), cluster.end());
        // Leaving the cluster and coming back would make it non-convex.
        std::vector<int> exits;
        for (int m : cluster)
          for (const OutEdge& e : out[m])
            if (!members.count(e.dst)) exits.push_back(e.dst);
        std::vector<bool> from_outside = Reachable(a.graph, out, exits);
        for (int e : exits) from_outside[e] = true;
        for (int m : cluster) ASSERT_FALSE(from_outside[m]) << "cluster is not convex at " << a.graph.node(m)->name;
      }
      total_clusters += static_cast<int>(c.clusters.size());
      // 2. The encapsulated graph is valid (acyclic) and 3. computes the same values.
      auto jit = Session::Create(on, gd);
      ASSERT_TRUE(jit.ok()) << jit.status().ToString();
      auto plain = Session::Create(SessionOptions{}, gd);
      ASSERT_TRUE(plain.ok());
      std::vector<std::pair<std::string, Tensor>> feeds = {{"p0", testing::MakeFloat(Shape{4}, {0.5f, -1.5f, 2.0f, -0.25f})},
                                                           {"p1", testing::MakeFloat(Shape{4}, {-0.75f, 1.0f, 0.0f, 3.0f})}};
      std::vector<Tensor> x, y;
      Status sx = (*plain)->Run(feeds, fetches, {}, &x);
      Status sy = (*jit)->Run(feeds, fetches, {}, &y);
      ASSERT_EQ(sx.ok(), sy.ok()) << sx.ToString() << " vs " << sy.ToString();
      if (!sx.ok()) continue;
      for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(testing::Values(x[i]), testing::Values(y[i])) << fetches[i];
    }
  }
  EXPECT_GT(total_clusters, 2000);  // the property is not vacuous
}

TEST(Clustering, JitOnRunsTheBodyAndFetchesByOriginalNames) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {3});
  b.Op("r", "Relu", {"x"});
  b.Op("t", "Tanh", {"r"});
  b.Op("s", "Sigmoid", {"t"});
  SessionOptions on;
  on.jit_level = JitLevel::kOn1;
  auto s = testing::MakeSession(b.graph_def(), on);
  auto optimized = s->OptimizedGraph({"x"}, {"s"});
  ASSERT_TRUE(optimized.ok()) << optimized.status().message();
  const Graph& g = (*optimized)->graph;
  ASSERT_NE(g.FindNode("cluster_0"), nullptr);
  EXPECT_EQ(g.FindNode("cluster_0")->op, "_JitCluster");
  Tensor x = testing::MakeFloat(Shape{3}, {-1, 0.5f, 2});
  // "s" is the cluster's output; "t" is internal and recomputed op by op.
  auto out = testing::RunOrDie(*s, {{"x", x}}, {"s", "t", "s:0"});
  auto plain = testing::MakeSession(b.graph_def());
  auto ref = testing::RunOrDie(*plain, {{"x", x}}, {"s", "t", "s:0"});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(testing::Values(out[i]), testing::Values(ref[i]));
  // The fetch of "s" ran the cluster (its body op by op), not the original nodes.
  Tracer tracer;
  RunOptions ro;
  ro.tracer = &tracer;
  std::vector<Tensor> r;
  ASSERT_TRUE(s->Run(ro, {{"x", x}}, {"s"}, {}, &r).ok());
  std::set<std::string> ran;
  for (const auto& e : tracer.events()) ran.insert(e.name);
  EXPECT_EQ(ran, (std::set<std::string>{"cluster_0", "cluster_0/r", "cluster_0/t", "cluster_0/s"}));
}

// A cluster that reads another cluster's output reads the cluster node, so the members of
// the first (still in the graph, unused) do not run a second time.
TEST(Clustering, ALaterClusterReadsAnEarlierClustersOutput) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2, 3});
  b.Op("r", "Relu", {"x"});
  b.Op("t", "Tanh", {"r"});
  b.Const("w", testing::MakeFloat(Shape{3, 3}, {1, 0, 2, 0, 1, 0, -1, 0, 1}));
  b.Op("m", "MatMul", {"t", "w"});  // clustered from ON_2 only: t -> m -> u keeps u out of t's cluster
  b.Op("u", "AddV2", {"t", "m"});
  b.Op("v", "Sigmoid", {"u"});
  SessionOptions on;
  on.jit_level = JitLevel::kOn1;
  auto s = testing::MakeSession(b.graph_def(), on);
  auto optimized = s->OptimizedGraph({"x"}, {"v"});
  ASSERT_TRUE(optimized.ok()) << optimized.status().message();
  const Graph& g = (*optimized)->graph;
  const Node* first = g.FindNode("cluster_0");
  const Node* second = g.FindNode("cluster_1");
  ASSERT_TRUE(first != nullptr && second != nullptr);
  for (const TensorId& in : second->inputs) EXPECT_NE(g.node(in.node)->name, "t") << "reads the original member";
  Tensor x = testing::MakeFloat(Shape{2, 3}, {-1, 0.5f, 2, 3, -0.25f, 1});
  Tracer tracer;
  RunOptions ro;
  ro.tracer = &tracer;
  std::vector<Tensor> got;
  ASSERT_TRUE(s->Run(ro, {{"x", x}}, {"v"}, {}, &got).ok());
  std::set<std::string> ran;
  for (const auto& e : tracer.events()) ran.insert(e.name);
  EXPECT_EQ(ran.count("r") + ran.count("t"), 0u) << "the first cluster's members ran op by op too";
  auto plain = testing::MakeSession(b.graph_def());
  EXPECT_EQ(testing::Values(got[0]), testing::Values(testing::RunOrDie(*plain, {{"x", x}}, {"v"})[0]));
}

// A small constant a cluster reads is copied into its body (the compiler sees its value);
// a large one stays an argument.
TEST(Clustering, SmallConstantsAreCopiedIntoTheBody) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2, 20});
  b.Const("half", testing::MakeFloat(Shape{}, {0.5f}));
  b.Const("bias", testing::MakeFloat(Shape{20}, std::vector<float>(20, 0.25f)));
  b.Op("m", "Mul", {"x", "half"});
  b.Op("a", "AddV2", {"m", "bias"});
  b.Op("t", "Relu", {"a"});
  b.Op("u", "Mul", {"t", "half"});  // a second read of the same constant
  SessionOptions on;
  on.jit_level = JitLevel::kOn1;
  auto s = testing::MakeSession(b.graph_def(), on);
  auto optimized = s->OptimizedGraph({"x"}, {"u"});
  ASSERT_TRUE(optimized.ok()) << optimized.status().message();
  const Node* cluster = (*optimized)->graph.FindNode("cluster_0");
  ASSERT_NE(cluster, nullptr);
  std::vector<std::string> inputs;
  for (const TensorId& in : cluster->inputs) inputs.push_back((*optimized)->graph.node(in.node)->name);
  EXPECT_EQ(inputs, (std::vector<std::string>{"x", "bias"}));
  tensorflow::GraphDef body;
  ASSERT_TRUE(body.ParseFromString(cluster->FindAttr("_body")->s()));
  int copies = 0;
  for (const auto& node : body.node())
    if (node.name() == "half") {
      ++copies;
      EXPECT_EQ(node.op(), "Const");
    }
  EXPECT_EQ(copies, 1);
  Tensor x = testing::MakeFloat(Shape{2, 20}, std::vector<float>(40, 0.75f));
  auto plain = testing::MakeSession(b.graph_def());
  EXPECT_EQ(testing::Values(testing::RunOrDie(*s, {{"x", x}}, {"u"})[0]),
            testing::Values(testing::RunOrDie(*plain, {{"x", x}}, {"u"})[0]));
}

TEST(Clustering, FuelBoundsTheMerges) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {3});
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    std::string name = std::string("n") + std::to_string(i);
    b.Op(name, "Relu", {prev});
    prev = name;
  }
  for (int fuel : {0, 1, 3, -1}) {
    SessionOptions o;
    o.jit_level = JitLevel::kOn1;
    o.clustering_fuel = fuel;
    auto e = ExplainClustering(b.graph_def(), o);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->second.merges, fuel < 0 ? 5 : fuel) << fuel;
  }
}

}  // namespace
}  // namespace graphjit
