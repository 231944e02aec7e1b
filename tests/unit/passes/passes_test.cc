// passes/: the PassManager's contract (unchanged means byte-identical, verification,
// dumps, disabling), and each rewrite's numbers: the optimized graph computes what the
// original computes, with the fused ops actually in it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "ir/graphdef.h"
#include "jit/jit.h"
#include "jit/passes/jit_passes.h"
#include "passes/control_flow.h"
#include "passes/passes.h"
#include "runtime/pass_registry.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;
using testing::MakeFloat;
using testing::SetAttrBool;
using testing::SetAttrFloat;
using testing::SetAttrInts;
using testing::SetAttrString;
using testing::SetAttrType;
using testing::Values;

Graph Load(const std::string& path) {
  auto gd = ReadGraphDefFile(path);
  EXPECT_TRUE(gd.ok()) << gd.status().ToString();
  auto g = ImportGraphDef(*gd);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return std::move(g).value();
}

const std::vector<std::pair<std::string, PassFunction>>& AllPasses() {
  static const std::vector<std::pair<std::string, PassFunction>> passes = {{"prune", Prune},
                                                                           {"constant_folding", FoldConstants},
                                                                           {"arithmetic", SimplifyArithmetic},
                                                                           {"cse", EliminateCommonSubexpressions},
                                                                           {"remapper", Remap}};
  return passes;
}

TEST(PassManager, UnchangedMeansByteIdentical) {
  int changed = 0, unchanged = 0;
  for (const char* model : {"mnist_softmax", "keras_mlp", "small_cnn", "transformer_block"}) {
    Graph graph = Load(testing::TestData(std::string(model) + "/model.pb"));
    PassContext context({}, {}, ModelOutputsAndInputs(graph));
    // Each pass twice in a row over the pipeline: the second run finds nothing to do.
    for (const auto& [name, pass] : AllPasses()) {
      for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(std::string(model) + " " + name + " round " + std::to_string(round));
        const std::string before = GraphBytes(graph);
        auto r = pass(graph, context);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        if (*r) {
          ++changed;
          EXPECT_EQ(round, 0) << "a second run changed the graph again";
        } else {
          ++unchanged;
          EXPECT_EQ(GraphBytes(graph), before);
        }
      }
    }
  }
  // Both outcomes happened, so both branches above were checked.
  EXPECT_GT(changed, 4);
  EXPECT_GT(unchanged, 4);
}

// The control flow's and the JIT's passes keep the same contract. A pass that needs what a
// model lacks (lower_cnn_ops: static shapes) may refuse it, and then changes nothing. The
// verifier is off in every build: a graph with TensorFlow's while loops is cyclic until
// functionalize_loops runs, and the verifier takes only acyclic graphs.
TEST(PassManager, TheControlFlowsAndTheJitsPassesReportUnchangedTruly) {
  PassManager all;
  all.set_verify(false);
  AddControlFlowPasses(all);
  AddJitPasses(all);
  int changed = 0, unchanged = 0;
  for (const char* model : {"mnist_softmax", "keras_mlp", "small_cnn", "transformer_block", "lstm_classifier_small"}) {
    Graph graph = Load(testing::TestData(std::string(model) + "/model.pb"));
    PassContext context({}, {}, ModelOutputsAndInputs(graph));
    for (const std::string& name : all.names()) {
      auto one = all.Only({name});
      ASSERT_TRUE(one.ok()) << one.status().ToString();
      for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(std::string(model) + " " + name + " round " + std::to_string(round));
        const std::string before = GraphBytes(graph);
        auto r = one->Run(graph, context);
        if (!r.ok() || !*r) {
          ++unchanged;
          EXPECT_EQ(GraphBytes(graph), before);
          continue;
        }
        ++changed;
        EXPECT_EQ(round, 0) << "a second run changed the graph again";
      }
    }
  }
  EXPECT_GT(changed, 2);
  EXPECT_GT(unchanged, 4);
}

TEST(PassManager, VerifierNamesThePassThatBrokeTheGraph) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  b.Op("y", "Relu", {"x"});
  Graph graph = ImportGraphDef(b.graph_def()).value();
  PassManagerOptions options;
  options.verify = true;
  PassManager pm(options);
  pm.Add("breaker", [](Graph& g, const PassContext&) -> StatusOr<bool> {
    g.FindNode("y")->inputs.clear();  // Relu without its input
    return true;
  });
  auto r = pm.Run(graph, PassContext({}, {"y"}, {}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("graph pass 'breaker' left an invalid graph"), std::string::npos) << r.status().message();
}

TEST(PassManager, DisabledPassesDoNotRunAndUnknownNamesFail) {
  int runs = 0;
  auto counting = [&runs](Graph&, const PassContext&) -> StatusOr<bool> {
    ++runs;
    return false;
  };
  Graph graph;
  PassManagerOptions options;
  options.disabled = {"b"};
  PassManager pm(options);
  pm.Add("a", counting);
  pm.Add("b", counting);
  std::vector<PassRecord> records;
  ASSERT_TRUE(pm.Run(graph, PassContext({}, {}, {}), &records).ok());
  EXPECT_EQ(runs, 1);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].ran);
  EXPECT_FALSE(records[1].ran);

  options.disabled = {"c"};
  auto r = PassManager(options).Run(graph, PassContext({}, {}, {}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no graph pass named 'c'"), std::string::npos);
}

// A manager of some of the passes, in another order (one twice), runs those only; a name
// that is not a pass is an error listing the passes.
TEST(PassManager, OnlyTheNamedPassesInTheirOrder) {
  std::vector<std::string> ran;
  PassManager pm;
  for (const char* name : {"a", "b", "c"})
    pm.Add(name, [&ran, name](Graph&, const PassContext&) -> StatusOr<bool> {
      ran.push_back(name);
      return false;
    });
  auto only = pm.Only({"c", "a", "c"});
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_EQ(only->names(), (std::vector<std::string>{"c", "a", "c"}));
  Graph graph;
  ASSERT_TRUE(only->Run(graph, PassContext({}, {}, {})).ok());
  EXPECT_EQ(ran, (std::vector<std::string>{"c", "a", "c"}));
  auto unknown = pm.Only({"a", "d"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "'d' is not a graph pass (the passes: a, b, c)");
}

TEST(PassManager, DumpsTheGraphAfterEveryPass) {
  Graph graph = Load(testing::TestData("keras_mlp/model.pb"));
  SessionOptions so;
  so.dump_to = testing::TempDir();
  auto r = DefaultPipeline(so).Run(graph, PassContext({}, {}, ModelOutputsAndInputs(graph)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string dir = so.dump_to + "/graph_passes/";
  for (const char* file :
       {"00_input", "01_prune", "02_constant_folding", "03_arithmetic", "04_cse", "05_dilated_convolutions", "06_remapper"}) {
    auto dumped = ReadGraphDefFile(dir + file + ".pbtxt");
    EXPECT_TRUE(dumped.ok()) << file << ": " << dumped.status().ToString();
  }
  // The last dump is the result.
  EXPECT_EQ(ReadGraphDefFile(dir + "06_remapper.pbtxt")->node_size(), graph.num_nodes());
}

TEST(Optimizer, RewriteOptionsChooseThePasses) {
  SessionOptions so;
  EXPECT_EQ(DefaultPipeline(so).names(),
            (std::vector<std::string>{"prune", "constant_folding", "arithmetic", "cse", "dilated_convolutions", "remapper"}));
  so.rewrite_options.set_constant_folding(tensorflow::RewriterConfig::OFF);
  so.rewrite_options.set_remapping(tensorflow::RewriterConfig::OFF);
  so.rewrite_options.set_disable_model_pruning(true);
  EXPECT_EQ(DefaultPipeline(so).names(), (std::vector<std::string>{"arithmetic", "cse"}));
  so.rewrite_options.set_disable_meta_optimizer(true);
  EXPECT_TRUE(DefaultPipeline(so).names().empty());
}

// ---- the numbers: optimized against unoptimized sessions ------------------------------

class Numbers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { RegisterGraphOptimizer(); }

  static Tensor Random(const Shape& shape, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(shape.num_elements());
    for (float& x : v) x = dist(rng);
    return MakeFloat(shape, v);
  }

  // Runs with and without optimization, expects the same values, and returns the
  // optimized graph's ops.
  static std::vector<std::string> Compare(const tensorflow::GraphDef& gd,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches, double tol = 1e-5) {
    SessionOptions off;
    off.rewrite_options.set_disable_meta_optimizer(true);
    auto plain = testing::MakeSession(gd, off);
    auto optimized = testing::MakeSession(gd);
    auto want = testing::RunOrDie(*plain, feeds, fetches);
    auto got = testing::RunOrDie(*optimized, feeds, fetches);
    for (size_t i = 0; i < fetches.size(); ++i) {
      SCOPED_TRACE("fetch " + fetches[i]);
      EXPECT_EQ(got[i].shape(), want[i].shape());
      auto g = Values(got[i]), w = Values(want[i]);
      for (size_t j = 0; j < g.size() && j < w.size(); ++j)
        EXPECT_NEAR(g[j], w[j], tol * (1 + std::fabs(w[j]))) << "element " << j;
    }
    std::vector<std::string> feed_names;
    for (const auto& [name, t] : feeds) feed_names.push_back(name);
    auto graph = optimized->OptimizedGraph(feed_names, fetches);
    EXPECT_TRUE(graph.ok()) << graph.status().ToString();
    std::vector<std::string> ops;
    for (int id = 0; graph.ok() && id < (*graph)->graph.num_nodes(); ++id) ops.push_back((*graph)->graph.node(id)->op);
    return ops;
  }

  static bool Has(const std::vector<std::string>& ops, const std::string& op) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  }
};

TEST_F(Numbers, FusedMatMulWithEachActivation) {
  for (const char* act : {"", "Relu", "Relu6", "Elu"}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(act) + (tb ? " transpose_b" : ""));
      GraphBuilder b;
      b.Placeholder("x", DType::kFloat, {7, 13});
      b.Const("w", Random(tb ? Shape{5, 13} : Shape{13, 5}, 1));
      b.Const("b", Random(Shape{5}, 2));
      SetAttrBool(b.Op("mm", "MatMul", {"x", "w"}), "transpose_b", tb);
      b.Op("bias", "BiasAdd", {"mm", "b"});
      std::string out = "bias";
      if (*act) out = b.Op("act", act, {"bias"})->name();
      auto ops = Compare(b.graph_def(), {{"x", Random(Shape{7, 13}, 3)}}, {out});
      EXPECT_TRUE(Has(ops, "_FusedMatMul"));
      EXPECT_FALSE(Has(ops, "MatMul"));
    }
  }
}

// TensorFlow's remapper also writes _FusedMatMul with Tanh, Sigmoid and GELU (Keras's Dense
// activations): each applied to the product plus bias, by the small-GEMM loop and by oneDNN's
// post-op, op by op and compiled.
TEST_F(Numbers, FusedMatMulTakesEveryActivationTensorFlowWrites) {
  const std::map<std::string, double (*)(double)> activations = {
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"GeluExact", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"GeluApproximate", [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }}};
  RegisterJit();
  for (const auto& [act, f] : activations) {
    for (int64_t m : {3, 96}) {  // under and over the size oneDNN takes
      for (JitLevel level : {JitLevel::kOff, JitLevel::kOn2}) {
        SCOPED_TRACE(act + " m=" + std::to_string(m) + " " + JitLevelName(level));
        GraphBuilder b;
        b.Placeholder("x", DType::kFloat, {m, 40});
        b.Const("w", Random(Shape{40, 24}, 1));
        b.Const("b", Random(Shape{24}, 2));
        b.Op("bias", "BiasAdd", {b.Op("mm", "MatMul", {"x", "w"})->name(), "b"});
        tensorflow::NodeDef* fused = b.Op("fused", "_FusedMatMul", {"x", "w", "b"});
        SetAttrType(fused, "T", DType::kFloat);
        testing::SetAttrInt(fused, "num_args", 1);
        for (const char* op : {"BiasAdd", act.c_str()}) (*fused->mutable_attr())["fused_ops"].mutable_list()->add_s(op);
        SessionOptions options;
        options.jit_level = level;
        auto session = testing::MakeSession(b.graph_def(), options);
        const int compiled = GetJitStats().compiled;
        auto out = testing::RunOrDie(*session, {{"x", Random(Shape{m, 40}, 3)}}, {"bias", "fused"});
        EXPECT_EQ(GetJitStats().compiled > compiled, level == JitLevel::kOn2);
        auto pre = Values(out[0]), got = Values(out[1]);
        ASSERT_EQ(got.size(), pre.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], f(pre[i]), 2e-6 + 2e-6 * std::fabs(f(pre[i]))) << i;
      }
    }
  }
}

TEST_F(Numbers, FusedConvAndFoldedBatchNorm) {
  GraphBuilder b;
  b.Placeholder("img", DType::kFloat, {2, 9, 7, 3});
  b.Const("f", Random(Shape{3, 3, 3, 5}, 4));
  b.Const("cb", Random(Shape{5}, 5));
  b.Const("f2", Random(Shape{3, 3, 3, 5}, 14));
  auto conv = [&](const std::string& name, const std::string& filter) {
    tensorflow::NodeDef* n = b.Op(name, "Conv2D", {"img", filter});
    SetAttrInts(n, "strides", {1, 2, 1, 1});
    SetAttrString(n, "padding", "SAME");
    return name;
  };
  b.Op("bias", "BiasAdd", {conv("conv1", "f"), "cb"});
  b.Op("relu", "Relu", {"bias"});
  // Batch norm with varied per-channel statistics (variance > 0).
  Tensor var = Random(Shape{5}, 6);
  for (int i = 0; i < 5; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
  b.Const("gamma", Random(Shape{5}, 7));
  b.Const("beta", Random(Shape{5}, 8));
  b.Const("mean", Random(Shape{5}, 9));
  b.Const("var", var);
  tensorflow::NodeDef* bn = b.Op("bn", "FusedBatchNormV3", {conv("conv2", "f2"), "gamma", "beta", "mean", "var"});
  SetAttrType(bn, "U", DType::kFloat);
  SetAttrFloat(bn, "epsilon", 0.001f);
  SetAttrBool(bn, "is_training", false);
  b.Op("bn_relu", "Relu", {"bn"});
  auto ops = Compare(b.graph_def(), {{"img", Random(Shape{2, 9, 7, 3}, 10)}}, {"relu", "bn_relu"}, 1e-4);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "_FusedConv2D"), 2);
  EXPECT_FALSE(Has(ops, "FusedBatchNormV3"));
  EXPECT_FALSE(Has(ops, "Conv2D"));
}

// A batch norm as Keras writes it for inference, x * s + t with s and t constants per
// channel ([C], [1, 1, 1, C] or a scalar, on either side), after a Conv2D, a depthwise
// convolution or a conv that already has a bias, folds into a fused convolution with
// the Relu6 after it. A Mul whose constant varies along another dim, one whose conv is
// read elsewhere too, and a MatMul's Add stay.
TEST_F(Numbers, ChannelScaleAndShiftFoldIntoConvolutions) {
  GraphBuilder b;
  b.Placeholder("img", DType::kFloat, {2, 9, 7, 4});
  auto conv = [&](const std::string& name, const std::string& op, const Shape& filter, int seed) {
    b.Const(name + "_f", Random(filter, seed));
    tensorflow::NodeDef* n = b.Op(name, op, {"img", name + "_f"});
    SetAttrInts(n, "strides", {1, 1, 1, 1});
    SetAttrString(n, "padding", "SAME");
    return name;
  };
  b.Const("s8", Random(Shape{8}, 20));
  b.Const("t8", Random(Shape{1, 1, 1, 8}, 21));
  b.Const("half", MakeFloat(Shape{}, {0.5f}));
  b.Const("t5", Random(Shape{5}, 22));
  b.Const("cb", Random(Shape{5}, 23));
  b.Const("rows", Random(Shape{7, 1}, 24));
  // Conv2D * s + t -> Relu6.
  b.Op("relu6", "Relu6",
       {b.Op("add", "AddV2", {b.Op("mul", "Mul", {conv("c1", "Conv2D", Shape{3, 3, 4, 8}, 1), "s8"})->name(), "t8"})->name()});
  // t + s * depthwise (channel multiplier 2: 8 channels).
  b.Op("dw_out", "AddV2",
       {"t8", b.Op("dw_mul", "Mul", {"s8", conv("dw", "DepthwiseConv2dNative", Shape{3, 3, 4, 2}, 2)})->name()});
  // (Conv2D + bias) * 0.5 + t.
  b.Op("biased", "BiasAdd", {conv("c2", "Conv2D", Shape{1, 1, 4, 5}, 3), "cb"});
  b.Op("biased_out", "AddV2", {b.Op("biased_mul", "Mul", {"biased", "half"})->name(), "t5"});
  // Not per channel: a [7, 1] constant scales along W.
  b.Op("by_rows", "Mul", {conv("c3", "Conv2D", Shape{1, 1, 4, 5}, 4), "rows"});
  // The conv is read twice.
  conv("c4", "Conv2D", Shape{1, 1, 4, 5}, 5);
  b.Op("shared_a", "Mul", {"c4", "t5"});
  b.Op("shared_b", "Relu", {"c4"});
  // A MatMul's Add stays: the JIT fuses what follows a GEMM.
  b.Placeholder("v", DType::kFloat, {3, 4});
  b.Const("mw", Random(Shape{4, 5}, 25));
  b.Op("mm_add", "AddV2", {b.Op("mm", "MatMul", {"v", "mw"})->name(), "t5"});
  const std::vector<std::string> fetches = {"relu6", "dw_out", "biased_out", "by_rows", "shared_a", "shared_b", "mm_add"};
  auto ops = Compare(b.graph_def(), {{"img", Random(Shape{2, 9, 7, 4}, 10)}, {"v", Random(Shape{3, 4}, 11)}}, fetches, 1e-5);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "_FusedConv2D"), 2);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "_FusedDepthwiseConv2dNative"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Conv2D"), 2);  // by_rows's and the shared one
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Mul"), 2);
  EXPECT_FALSE(Has(ops, "Relu6"));
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "AddV2"), 1);  // the MatMul's
  EXPECT_TRUE(Has(ops, "MatMul"));
  EXPECT_FALSE(Has(ops, "BiasAdd"));
}

// An Add of a fused convolution and a tensor of its shape (ResNet's skip connection)
// becomes the convolution's residual, with the activation after it: on a 3x3 convolution
// that runs as Winograd (a blocked destination the residual is reordered into), a 1x1 one
// whose batch norm folded first, and a depthwise one. An Add that broadcasts stays.
TEST_F(Numbers, ResidualAddsFoldIntoConvolutions) {
  GraphBuilder b;
  b.Placeholder("img", DType::kFloat, {2, 9, 9, 16});
  b.Placeholder("r8", DType::kFloat, {2, 9, 9, 8});
  b.Placeholder("row8", DType::kFloat, {8});
  auto conv = [&](const std::string& name, const std::string& op, const Shape& filter, int seed) {
    b.Const(name + "_f", Random(filter, seed));
    tensorflow::NodeDef* n = b.Op(name, op, {"img", name + "_f"});
    SetAttrInts(n, "strides", {1, 1, 1, 1});
    SetAttrString(n, "padding", "SAME");
    b.Const(name + "_b", Random(Shape{filter.dim(3) * (op == "Conv2D" ? 1 : filter.dim(2))}, seed + 100));
    return b.Op(name + "_bias", "BiasAdd", {name, name + "_b"})->name();
  };
  b.Op("block", "Relu", {b.Op("sum", "AddV2", {conv("c1", "Conv2D", Shape{3, 3, 16, 16}, 1), "img"})->name()});
  b.Const("s8", Random(Shape{8}, 20));
  b.Const("t8", Random(Shape{8}, 21));
  b.Op("c2_mul", "Mul", {conv("c2", "Conv2D", Shape{1, 1, 16, 8}, 2), "s8"});
  b.Op("projected", "AddV2", {"r8", b.Op("c2_shift", "AddV2", {"c2_mul", "t8"})->name()});
  b.Op("dw_block", "Relu6",
       {b.Op("dw_sum", "AddV2", {"img", conv("dw", "DepthwiseConv2dNative", Shape{3, 3, 16, 1}, 3)})->name()});
  b.Op("broadcast", "AddV2", {conv("c3", "Conv2D", Shape{1, 1, 16, 8}, 4), "row8"});
  const std::vector<std::string> fetches = {"block", "projected", "dw_block", "broadcast"};
  auto ops =
      Compare(b.graph_def(),
              {{"img", Random(Shape{2, 9, 9, 16}, 10)}, {"r8", Random(Shape{2, 9, 9, 8}, 11)}, {"row8", Random(Shape{8}, 12)}},
              fetches, 1e-4);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "_FusedConv2D"), 3);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "_FusedDepthwiseConv2dNative"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "AddV2"), 1);  // the broadcast one
  EXPECT_FALSE(Has(ops, "Relu"));
  EXPECT_FALSE(Has(ops, "Relu6"));
}

// A zero Pad of H and W before a VALID or EXPLICIT convolution becomes the convolution's
// own padding (no padded copy); a Pad of the channels, or with a non-zero value, stays.
TEST_F(Numbers, ZeroPaddingFoldsIntoConvolutions) {
  GraphBuilder b;
  b.Placeholder("img", DType::kFloat, {2, 7, 6, 3});
  b.Const("hw", testing::MakeInt32(Shape{4, 2}, {0, 0, 1, 2, 0, 1, 0, 0}));
  b.Const("hw2", testing::MakeInt32(Shape{4, 2}, {0, 0, 2, 0, 1, 1, 0, 0}));
  b.Const("hwc", testing::MakeInt32(Shape{4, 2}, {0, 0, 1, 1, 1, 1, 0, 1}));
  b.Const("one", MakeFloat(Shape{}, {1.0f}));
  b.Op("p1", "Pad", {"img", "hw"});
  b.Op("p2", "Pad", {"img", "hw2"});
  b.Op("p3", "PadV2", {"img", "hw", "one"});
  b.Op("p4", "Pad", {"img", "hwc"});
  auto conv = [&](const std::string& name, const std::string& op, const std::string& in, const Shape& filter, int seed,
                  const std::string& padding) {
    b.Const(name + "_f", Random(filter, seed));
    tensorflow::NodeDef* n = b.Op(name, op, {in, name + "_f"});
    SetAttrInts(n, "strides", {1, 2, 2, 1});
    SetAttrString(n, "padding", padding);
    if (padding == "EXPLICIT") SetAttrInts(n, "explicit_paddings", {0, 0, 1, 0, 0, 1, 0, 0});
  };
  conv("c1", "Conv2D", "p1", Shape{3, 3, 3, 4}, 1, "VALID");
  conv("c2", "DepthwiseConv2dNative", "p2", Shape{3, 3, 3, 2}, 2, "EXPLICIT");
  conv("c3", "Conv2D", "p3", Shape{3, 3, 3, 4}, 3, "VALID");
  conv("c4", "Conv2D", "p4", Shape{3, 3, 4, 4}, 4, "VALID");
  auto ops = Compare(b.graph_def(), {{"img", Random(Shape{2, 7, 6, 3}, 10)}}, {"c1", "c2", "c3", "c4"});
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Pad"), 1);  // p4's
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "PadV2"), 1);
}

// Einsums of a batched GEMM's form become BatchMatMulV2 with the transposes they need
// (none, or an adjoint operand, where the labels are in order), and Reshapes where an
// operand has several dims of a kind; others stay Einsums.
TEST_F(Numbers, EinsumAsBatchMatMul) {
  struct Case {
    std::string equation;
    Shape a, b;
    int transposes;       // expected; -1: stays an Einsum
    bool merged = false;  // dims of a kind merged by Reshapes
  };
  for (const Case& c : std::vector<Case>{{"BTNH,BSNH->BNTS", {2, 5, 3, 4}, {2, 6, 3, 4}, 2},
                                         {"BNTS,BSNH->BTNH", {2, 3, 5, 6}, {2, 6, 3, 4}, 2},
                                         {"bij,bjk->bik", {2, 3, 4}, {2, 4, 5}, 0},
                                         {"bij,bkj->bik", {2, 3, 4}, {2, 5, 4}, 0},  // b read adjoint
                                         {"ij,jk->ki", {3, 4}, {4, 5}, 1},
                                         {"bij,bjk->bk", {2, 3, 4}, {2, 4, 5}, -1},    // i summed in a alone
                                         {"bij,bjk->bijk", {2, 3, 4}, {2, 4, 5}, -1},  // an outer product
                                         // Several dims of a kind: merged by Reshapes (Keras's EinsumDense).
                                         {"bij,bjkl->bikl", {2, 3, 4}, {2, 4, 5, 6}, 0, true},
                                         {"abc,cde->abde", {2, 3, 4}, {4, 2, 3}, 0, true},
                                         {"abcd,cde->abe", {2, 3, 2, 3}, {2, 3, 4}, 0, true},
                                         {"acb,cde->abde", {2, 4, 3}, {4, 2, 3}, 1, true},
                                         {"abc,cde->adbe", {2, 3, 4}, {4, 2, 3}, 1, true},
                                         // ... with a dim unknown until it runs: stays an Einsum.
                                         {"abc,cde->abde", {-1, 3, 4}, {4, 2, 3}, -1}}) {
    SCOPED_TRACE(c.equation);
    GraphBuilder b;
    b.Placeholder("a", DType::kFloat, c.a.dims());
    b.Placeholder("b", DType::kFloat, c.b.dims());
    tensorflow::NodeDef* e = b.Op("e", "Einsum", {"a", "b"});
    SetAttrString(e, "equation", c.equation);
    (*e->mutable_attr())["N"].set_i(2);
    std::vector<int64_t> fed = c.a.dims();
    for (int64_t& d : fed) d = d < 0 ? 2 : d;
    auto ops = Compare(b.graph_def(), {{"a", Random(Shape(fed), 1)}, {"b", Random(c.b, 2)}}, {"e"});
    EXPECT_EQ(Has(ops, "Einsum"), c.transposes < 0);
    if (c.transposes < 0) continue;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "Transpose"), c.transposes);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "BatchMatMulV2"), 1);
    EXPECT_EQ(Has(ops, "Reshape"), c.merged);
  }
}

TEST_F(Numbers, ArithmeticRewritesKeepValues) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4, 3});
  b.Placeholder("w", DType::kFloat, {4, 6});
  b.Const("one", MakeFloat(Shape{}, {1}));
  b.Const("zero", MakeFloat(Shape{3}, {0, 0, 0}));
  b.Const("two", MakeFloat(Shape{}, {2}));
  b.Const("three", MakeFloat(Shape{3}, {3, 4, 5}));
  b.Const("perm", testing::MakeInt32(Shape{2}, {1, 0}));
  b.Op("x1", "Mul", {"x", "one"});
  b.Op("x2", "AddV2", {"zero", "x1"});
  b.Op("neg", "Sub", {"zero", "x2"});
  b.Op("recip", "RealDiv", {"one", "x2"});
  b.Op("inner", "Mul", {"x2", "three"});
  b.Op("push", "Mul", {"two", "inner"});
  SetAttrType(b.Op("xt", "Transpose", {"x", "perm"}), "Tperm", DType::kInt32);
  b.Op("mm", "MatMul", {"xt", "w"});  // x^T w: [3, 6]
  SetAttrType(b.Op("tt", "Transpose", {"xt", "perm"}), "Tperm", DType::kInt32);
  b.Op("sum", "AddN", {"tt", "neg", "recip", "push"})->mutable_attr()->operator[]("N").set_i(4);
  auto ops = Compare(b.graph_def(), {{"x", Random(Shape{4, 3}, 11)}, {"w", Random(Shape{4, 6}, 12)}}, {"sum", "mm"});
  EXPECT_TRUE(Has(ops, "Neg"));
  EXPECT_TRUE(Has(ops, "Reciprocal"));
  EXPECT_FALSE(Has(ops, "Transpose"));
  EXPECT_FALSE(Has(ops, "Sub"));
}

// Pow with a constant exponent of 1, 2, 3 or -1 becomes multiplications (no call of pow
// per element); 0.5 and mixed exponents stay Pow. Same values as Pow, special ones too:
// signed zeros, infinities, NaN, overflow and underflow.
TEST_F(Numbers, PowOfASmallIntegerBecomesMultiplications) {
  const std::vector<float> xs = {0.f,
                                 -0.f,
                                 1.5f,
                                 -2.25f,
                                 1e13f,
                                 -1e13f,
                                 1e-30f,
                                 -1e-30f,
                                 3.f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN()};
  struct Case {
    std::vector<float> exponent;
    const char* becomes;  // an op the rewritten graph has, or nullptr: it stays Pow
  } cases[] = {{{1}, nullptr},  {{2}, "Square"},  {{3}, "Mul"},     {{-1}, "Reciprocal"},
               {{3, 3}, "Mul"}, {{0.5}, nullptr}, {{2, 3}, nullptr}};
  for (const Case& c : cases) {
    SCOPED_TRACE("exponent " + std::to_string(c.exponent[0]) + (c.exponent.size() > 1 ? ", ..." : ""));
    GraphBuilder b;
    const int64_t n = static_cast<int64_t>(xs.size());
    b.Placeholder("x", DType::kFloat, {n / 2, 2});
    b.Const("e", MakeFloat(c.exponent.size() == 1 ? Shape{} : Shape{2}, c.exponent));
    b.Op("y", "Pow", {"x", "e"});
    Tensor x = MakeFloat(Shape{n / 2, 2}, xs);
    SessionOptions off;
    off.rewrite_options.set_disable_meta_optimizer(true);
    auto want = Values(testing::RunOrDie(*testing::MakeSession(b.graph_def(), off), {{"x", x}}, {"y"})[0]);
    auto optimized = testing::MakeSession(b.graph_def());
    auto got = Values(testing::RunOrDie(*optimized, {{"x", x}}, {"y"})[0]);
    for (int64_t i = 0; i < n; ++i) {
      SCOPED_TRACE("x = " + std::to_string(xs[i]));
      if (std::isnan(want[i]) || std::isinf(want[i]) || want[i] == 0) {
        EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i]));
        if (!std::isnan(want[i])) {
          EXPECT_EQ(got[i], want[i]);
        }
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i]));
      } else {
        EXPECT_NEAR(got[i], want[i], std::fabs(want[i]) * 2.5e-7);  // an ulp of float32
      }
    }
    auto graph = optimized->OptimizedGraph({"x"}, {"y"});
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    std::vector<std::string> ops;
    for (int id = 0; id < (*graph)->graph.num_nodes(); ++id) ops.push_back((*graph)->graph.node(id)->op);
    EXPECT_EQ(Has(ops, "Pow"), c.becomes == nullptr && c.exponent[0] != 1);
    if (c.becomes) {
      EXPECT_TRUE(Has(ops, c.becomes));
    }
  }
}

TEST_F(Numbers, AFedTensorIsNeverFoldedAway) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  b.Const("c1", MakeFloat(Shape{2}, {1, 2}));
  b.Const("c2", MakeFloat(Shape{2}, {10, 20}));
  b.Op("c", "AddV2", {"c1", "c2"});
  b.Op("y", "Mul", {"x", "c"});
  auto s = testing::MakeSession(b.graph_def());
  Tensor x = MakeFloat(Shape{2}, {1, 1});
  EXPECT_EQ(Values(testing::RunOrDie(*s, {{"x", x}}, {"y"})[0]), (std::vector<double>{11, 22}));
  // Feeding the foldable "c" replaces it; the cached folded program is not reused.
  EXPECT_EQ(Values(testing::RunOrDie(*s, {{"x", x}, {"c", MakeFloat(Shape{2}, {3, 4})}}, {"y"})[0]), (std::vector<double>{3, 4}));
}

TEST_F(Numbers, AFetchedIntermediateIsNotFusedAway) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2, 2});
  b.Const("w", MakeFloat(Shape{2, 2}, {1, 0, 0, 1}));
  b.Const("b", MakeFloat(Shape{2}, {-1, 1}));
  b.Op("mm", "MatMul", {"x", "w"});
  b.Op("bias", "BiasAdd", {"mm", "b"});
  b.Op("relu", "Relu", {"bias"});
  auto s = testing::MakeSession(b.graph_def());
  auto out = testing::RunOrDie(*s, {{"x", MakeFloat(Shape{2, 2}, {0, 0, 3, -3})}}, {"bias", "relu"});
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-1, 1, 2, -2}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{0, 1, 2, 0}));
  auto graph = s->OptimizedGraph({"x"}, {"bias", "relu"});
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ((*graph)->graph.FindNode("bias")->op, "_FusedMatMul");  // the fetched bias is still there
  EXPECT_EQ((*graph)->graph.FindNode("relu")->op, "Relu");
}

}  // namespace
}  // namespace graphjit
