// runtime/: graph analysis, executor and Session semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include "runtime/build_info.h"
#include "runtime/pass_registry.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;
using testing::MakeFloat;
using testing::MakeSession;
using testing::RunOrDie;
using testing::Values;

TEST(Session, RunsAGraph) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 2});
  b.Const("c", MakeFloat(Shape{2}, {10, 20}));
  b.Op("y", "AddV2", {"x", "c"});
  auto s = MakeSession(b.graph_def());
  auto out = RunOrDie(*s, {{"x", MakeFloat(Shape{2, 2}, {1, 2, 3, 4})}}, {"y"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(Values(out[0]), (std::vector<double>{11, 22, 13, 24}));
}

TEST(Session, FetchedTensorsOutliveTheSession) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4});
  b.Op("y", "Exp", {"x"});
  std::vector<Tensor> out;
  {
    auto s = MakeSession(b.graph_def());
    out = RunOrDie(*s, {{"x", MakeFloat(Shape{4}, {0, 0, 0, 0})}}, {"y"});
  }
  // The session and its allocator are gone; the buffer still reads (and frees) cleanly.
  EXPECT_EQ(Values(out[0]), (std::vector<double>{1, 1, 1, 1}));
  out.clear();
}

TEST(Session, FetchesSecondOutputs) {
  GraphBuilder b;
  b.Placeholder("logits", DType::kFloat, {1, 2});
  b.Placeholder("labels", DType::kFloat, {1, 2});
  b.Op("xent", "SoftmaxCrossEntropyWithLogits", {"logits", "labels"});
  auto s = MakeSession(b.graph_def());
  auto out = RunOrDie(*s, {{"logits", MakeFloat(Shape{1, 2}, {0, 0})}, {"labels", MakeFloat(Shape{1, 2}, {1, 0})}},
                      {"xent:1", "xent", "xent:0"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-0.5, 0.5}));
  EXPECT_NEAR(Values(out[1])[0], std::log(2.0), 1e-6);
  EXPECT_EQ(Values(out[2]), Values(out[1]));
  std::vector<Tensor> none;
  Status bad = s->Run({}, {"xent:2"}, {}, &none);
  EXPECT_NE(bad.message().find("has 2 outputs"), std::string::npos) << bad.ToString();
}

TEST(Session, AFeedReplacesAnyTensorAndOnlyNeededNodesRun) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  b.Op("a", "Relu", {"x"});
  b.Op("bneg", "Neg", {"a"});
  // A branch that fails whenever it runs.
  b.Const("nan", MakeFloat(Shape{1}, {NAN}));
  auto* check = b.Op("check", "CheckNumerics", {"nan"});
  testing::SetAttrString(check, "message", "poisoned");
  auto s = MakeSession(b.graph_def());
  // x is not needed once 'a' is fed; 'check' is never needed.
  auto out = RunOrDie(*s, {{"a", MakeFloat(Shape{2}, {-1, 5})}}, {"bneg"});
  EXPECT_EQ(Values(out[0]), (std::vector<double>{1, -5}));
  // A fetched feed comes back as fed.
  out = RunOrDie(*s, {{"a", MakeFloat(Shape{2}, {7, 8})}}, {"a"});
  EXPECT_EQ(Values(out[0]), (std::vector<double>{7, 8}));
  std::vector<Tensor> r;
  Status st = s->Run({}, {"check"}, {}, &r);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("poisoned: tensor had NaN values"), std::string::npos) << st.message();
}

TEST(Session, TargetsAndControlEdgesAreHonoured) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {1 << 16});
  b.Op("slow", "Exp", {"x"});
  b.Op("after", "Neg", {"x"})->add_input("^slow");
  b.Op("group", "NoOp", {"^after"}, DType::kInvalid);
  SessionOptions opts;
  opts.inter_op_threads = 2;
  auto s = MakeSession(b.graph_def(), opts);
  std::vector<float> ones(1 << 16, 1.0f);
  Tensor x = MakeFloat(Shape{1 << 16}, ones);
  for (int rep = 0; rep < 20; ++rep) {
    Tracer tracer;
    RunOptions ro;
    ro.tracer = &tracer;
    std::vector<Tensor> out;
    ASSERT_TRUE(s->Run(ro, {{"x", x}}, {}, {"group"}, &out).ok());
    EXPECT_TRUE(out.empty());
    std::map<std::string, TraceEvent> ev;
    for (const auto& e : tracer.events()) ev[e.name] = e;
    ASSERT_EQ(ev.count("slow"), 1u);
    ASSERT_EQ(ev.count("after"), 1u);
    EXPECT_GE(ev["after"].start_us, ev["slow"].start_us + ev["slow"].duration_us);
  }
}

// Independent branches with big inputs run on two threads; a graph of small nodes
// stays on the calling thread, where a hand-off would cost more than the nodes.
TEST(Session, OnlyBigReadyNodesAreHandedToAnotherThread) {
  for (int64_t elems : {int64_t{1} << 18, int64_t{64}}) {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {elems});
    b.Op("a", "Exp", {"x"});
    b.Op("b", "Tanh", {"x"});
    b.Op("sum", "AddV2", {"a", "b"});
    SessionOptions opts;
    opts.inter_op_threads = 2;
    opts.intra_op_threads = 1;
    auto s = MakeSession(b.graph_def(), opts);
    Tensor x = MakeFloat(Shape{elems}, std::vector<float>(elems, 0.5f));
    Tracer tracer;
    RunOptions ro;
    ro.tracer = &tracer;
    std::vector<Tensor> out;
    ASSERT_TRUE(s->Run(ro, {{"x", x}}, {"sum"}, {}, &out).ok());
    EXPECT_NEAR(out[0].data<float>()[0], std::exp(0.5f) + std::tanh(0.5f), 1e-6);
    std::map<std::string, int> tid;
    for (const auto& e : tracer.events()) tid[e.name] = e.tid;
    ASSERT_EQ(tid.size(), 3u);
    if (elems > 1000) {
      EXPECT_NE(tid["a"], tid["b"]) << "1 MiB branches ran on one thread";
    } else {
      EXPECT_TRUE(tid["a"] == tid["b"] && tid["b"] == tid["sum"]) << "64-element nodes were handed off";
    }
  }
}

TEST(Session, IntermediatesAreFreedAfterTheirLastUse) {
  constexpr int kChain = 20;
  constexpr int64_t kElems = 1 << 18;  // 1 MiB of floats
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {kElems});
  std::string prev = "x";
  for (int i = 0; i < kChain; ++i) {
    std::string name = std::string("n") + std::to_string(i);
    b.Op(name, i % 2 ? "Neg" : "Relu", {prev});
    prev = name;
  }
  SessionOptions opts;
  opts.inter_op_threads = opts.intra_op_threads = 1;
  auto s = MakeSession(b.graph_def(), opts);
  Tensor x = MakeFloat(Shape{kElems}, std::vector<float>(kElems, 2.0f));
  s->allocator()->ResetPeak();
  auto out = RunOrDie(*s, {{"x", x}}, {prev});
  EXPECT_EQ(Values(out[0])[0], 0.0);  // -relu(-relu(...(2))) ends at 0 after the first Neg+Relu
  // At most an input and an output are alive at once (the fed x is not the session's).
  EXPECT_LE(s->allocator()->stats().peak_bytes_in_use, 2 * kElems * 4);
  out.clear();
  EXPECT_EQ(s->allocator()->stats().bytes_in_use, 0);
}

TEST(Session, ElementwiseOpsWriteIntoAnInputTheyReadLast) {
  // x -> Neg -> Relu -> Neg ... on 1 MiB: each op after the first writes into its input's
  // buffer, so one buffer serves the whole chain; the fed x is never written.
  constexpr int64_t kElems = 1 << 18;
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {kElems});
  b.Op("n0", "Neg", {"x"});
  b.Op("n1", "Relu", {"n0"});
  b.Op("n2", "Neg", {"n1"});
  b.Op("two", "AddV2", {"n2", "n2"});  // reads one tensor twice: a new buffer
  b.Op("n3", "Sub", {"x", "two"});     // the fed x is kept; `two` is reused
  SessionOptions opts;
  opts.inter_op_threads = opts.intra_op_threads = 1;
  auto s = MakeSession(b.graph_def(), opts);
  Tensor x = MakeFloat(Shape{kElems}, std::vector<float>(kElems, -3.0f));
  s->allocator()->ResetPeak();
  auto out = RunOrDie(*s, {{"x", x}}, {"n3"});
  EXPECT_EQ(Values(x)[kElems - 1], -3.0);
  EXPECT_EQ(Values(out[0])[kElems - 1], -3.0 - 2 * -3.0);
  EXPECT_LE(s->allocator()->stats().peak_bytes_in_use, 2 * kElems * 4);
  EXPECT_GT(s->allocator()->stats().peak_bytes_in_use, kElems * 4);  // `two` needed its own
}

TEST(Session, ATensorStillReadOrFetchedIsNeverOverwritten) {
  // a feeds three readers; each must see a as it was computed.
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4});
  b.Op("a", "Neg", {"x"});
  b.Op("r", "Relu", {"a"});
  b.Op("t", "Abs", {"a"});
  b.Op("s", "Square", {"a"});
  for (int threads : {1, 2}) {
    SessionOptions opts;
    opts.inter_op_threads = opts.intra_op_threads = threads;
    auto s = MakeSession(b.graph_def(), opts);
    // Unfetched, a's last reader may take its buffer; fetched, none may.
    auto out = RunOrDie(*s, {{"x", MakeFloat(Shape{4}, {1, -2, 3, -4})}}, {"r", "t", "s"});
    EXPECT_EQ(Values(out[0]), (std::vector<double>{0, 2, 0, 4}));
    EXPECT_EQ(Values(out[1]), (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(Values(out[2]), (std::vector<double>{1, 4, 9, 16}));
    out = RunOrDie(*s, {{"x", MakeFloat(Shape{4}, {1, -2, 3, -4})}}, {"r", "t", "s", "a"});
    EXPECT_EQ(Values(out[3]), (std::vector<double>{-1, 2, -3, 4}));
  }
}

TEST(Session, WritingIntoAFetchedTensorChangesNothingInTheSession) {
  // c is a constant, v a view of it, f fed and fetched back: a caller writing into what
  // it fetched must not change the next run's c, nor its own feed.
  GraphBuilder b;
  b.Const("c", MakeFloat(Shape{2, 2}, {1, 2, 3, 4}));
  b.Const("shape", testing::MakeInt32(Shape{1}, {4}));
  b.Op("v", "Reshape", {"c", "shape"});
  b.Placeholder("f", DType::kFloat, {2});
  for (int threads : {1, 2}) {
    SessionOptions opts;
    opts.inter_op_threads = opts.intra_op_threads = threads;
    auto s = MakeSession(b.graph_def(), opts);
    Tensor feed = MakeFloat(Shape{2}, {5, 6});
    for (int run = 0; run < 2; ++run) {
      auto out = RunOrDie(*s, {{"f", feed}}, {"c", "v", "f"});
      EXPECT_EQ(Values(out[0]), (std::vector<double>{1, 2, 3, 4}));
      EXPECT_EQ(Values(out[1]), (std::vector<double>{1, 2, 3, 4}));
      EXPECT_EQ(Values(out[2]), (std::vector<double>{5, 6}));
      for (Tensor& t : out) t.data<float>()[0] = -100;
      EXPECT_EQ(Values(feed), (std::vector<double>{5, 6}));
    }
  }
}

// A control edge from a fed node is satisfied by the feed: the node (a Placeholder, which
// would fail unfed) does not run.
TEST(Session, AControlEdgeFromAFedNodeWaitsForNothing) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  b.Placeholder("go", DType::kFloat, {});
  b.Op("y", "Neg", {"x"})->add_input("^go");
  auto s = MakeSession(b.graph_def());
  auto out = RunOrDie(*s, {{"x", MakeFloat(Shape{2}, {1, 2})}, {"go", MakeFloat(Shape{}, {0})}}, {"y"});
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-1, -2}));
}

TEST(Session, RunTimeErrorsNameTheProblem) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 3});
  b.Placeholder("y", DType::kFloat, {}, /*unknown_rank=*/true);
  b.Op("sum", "Add", {"x", "y"});
  auto s = MakeSession(b.graph_def());
  std::vector<Tensor> out;
  auto expect = [&](const std::vector<std::pair<std::string, Tensor>>& feeds, const std::string& fragment) {
    Status st = s->Run(feeds, {"sum"}, {}, &out);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), Code::kFailedPrecondition);
    EXPECT_NE(st.message().find(fragment), std::string::npos) << st.message();
  };
  Tensor x = MakeFloat(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  expect({{"x", x}}, "a value must be fed for placeholder 'y'");
  expect({{"x", testing::MakeInt32(Shape{2, 3}, {1, 2, 3, 4, 5, 6})}}, "feed 'x' has type int32");
  expect({{"x", MakeFloat(Shape{3, 2}, {1, 2, 3, 4, 5, 6})}}, "feed 'x' has shape [3,2], which does not match");
  expect({{"x", x}, {"y", MakeFloat(Shape{2}, {1, 2})}}, "node 'sum' (Add): incompatible shapes");
  expect({{"ghost", x}}, "no node named 'ghost'");
  expect({{"x", x}, {"x:0", x}}, "fed twice");
}

TEST(Session, ConcurrentRunsAreIndependent) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1});
  b.Op("sq", "Square", {"x"});
  b.Op("s", "Sum", {"sq", b.Const("axis", testing::MakeInt32(Shape{1}, {0}))});
  auto s = MakeSession(b.graph_def());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        int n = 1 + (t * 50 + i) % 37;
        std::vector<float> v(n, static_cast<float>(t + 1));
        std::vector<Tensor> out;
        Status st = s->Run({{"x", MakeFloat(Shape{n}, v)}}, {"s"}, {}, &out);
        if (!st.ok() || out[0].ValueAsDouble(0) != n * (t + 1.0) * (t + 1.0)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// oneDNN's default scratchpad is shared by all executions of a primitive; convolutions
// of one geometry running at once on the inter-op threads must not share it.
TEST(Session, ConvolutionsOfOneGeometryRunConcurrently) {
  GraphBuilder b;
  b.Placeholder("img", DType::kFloat, {2, 16, 16, 8});
  std::vector<std::string> fetches;
  for (int i = 0; i < 4; ++i) {
    std::vector<float> f(3 * 3 * 8 * 8);
    for (size_t j = 0; j < f.size(); ++j) f[j] = static_cast<float>((j * (i + 3)) % 7) - 3.0f;
    std::string name = "conv" + std::to_string(i);
    tensorflow::NodeDef* n = b.Op(name, "Conv2D", {"img", b.Const("f" + std::to_string(i), MakeFloat(Shape{3, 3, 8, 8}, f))});
    testing::SetAttrInts(n, "strides", {1, 1, 1, 1});
    testing::SetAttrString(n, "padding", "SAME");
    fetches.push_back(name);
  }
  std::vector<float> img(2 * 16 * 16 * 8);
  for (size_t j = 0; j < img.size(); ++j) img[j] = static_cast<float>(j % 11) - 5.0f;
  Tensor x = MakeFloat(Shape{2, 16, 16, 8}, img);
  SessionOptions one;
  one.inter_op_threads = one.intra_op_threads = 1;
  auto want = RunOrDie(*MakeSession(b.graph_def(), one), {{"img", x}}, fetches);
  SessionOptions many;
  many.inter_op_threads = 4;
  auto s = MakeSession(b.graph_def(), many);
  for (int run = 0; run < 30; ++run) {
    auto got = RunOrDie(*s, {{"img", x}}, fetches);
    for (size_t i = 0; i < fetches.size(); ++i) ASSERT_EQ(Values(got[i]), Values(want[i])) << fetches[i] << " run " << run;
  }
}

// TensorFlow's integer kernels wrap around; in C++ a signed overflow is undefined (the
// ASan+UBSan build of this test stops at one). Every kernel that adds or multiplies int32 and
// int64 values, fed the extremes, against the two's complement result.
template <typename T>
void ExpectSignedArithmeticWraps(DType dtype) {
  using U = std::make_unsigned_t<T>;
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const std::vector<T> x = {hi, lo, lo, hi, 3, -7}, y = {1, -1, lo, hi, hi, lo};
  auto tensor = [&](const Shape& shape, const std::vector<T>& v) {
    Tensor t = Tensor::Allocate(dtype, shape).value();
    std::copy(v.begin(), v.end(), t.template data<T>());
    return t;
  };
  auto wrap = [](U v) { return static_cast<T>(v); };
  GraphBuilder b;
  b.Placeholder("x", dtype, {6});
  b.Placeholder("y", dtype, {6});
  b.Placeholder("row", dtype, {1, 6});
  b.Placeholder("col", dtype, {6, 1});
  b.Const("axis", testing::MakeInt32(Shape{}, {0}));
  for (const char* op : {"AddV2", "Sub", "Mul", "SquaredDifference"}) b.Op(op, op, {"x", "y"}, dtype);
  for (const char* op : {"Neg", "Abs", "Square"}) b.Op(op, op, {"x"}, dtype);
  for (const char* op : {"Sum", "Prod", "Mean"}) b.Op(op, op, {"x", "axis"}, dtype);
  testing::SetAttrInt(b.Op("AddN", "AddN", {"x", "y", "x"}, dtype), "N", 3);
  b.Op("MatMul", "MatMul", {"row", "col"}, dtype);
  b.Op("BiasAdd", "BiasAdd", {"row", "y"}, dtype);
  b.Const("start", tensor(Shape{}, {static_cast<T>(hi - 3)}));
  b.Const("limit", tensor(Shape{}, {hi}));
  b.Const("delta", tensor(Shape{}, {2}));
  testing::SetAttrType(b.Op("Range", "Range", {"start", "limit", "delta"}), "Tidx", dtype);

  std::map<std::string, std::vector<T>> want;
  U sum = 0, prod = 1, dot = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const U a = static_cast<U>(x[i]), c = static_cast<U>(y[i]);
    want["AddV2"].push_back(wrap(a + c));
    want["Sub"].push_back(wrap(a - c));
    want["Mul"].push_back(wrap(a * c));
    want["SquaredDifference"].push_back(wrap((a - c) * (a - c)));
    want["Neg"].push_back(wrap(U(0) - a));
    want["Abs"].push_back(x[i] < 0 ? wrap(U(0) - a) : x[i]);
    want["Square"].push_back(wrap(a * a));
    want["AddN"].push_back(wrap(a + c + a));
    want["BiasAdd"].push_back(wrap(a + c));
    sum += a;
    prod *= a;
    dot += a * c;
  }
  want["Sum"] = {wrap(sum)};
  want["Prod"] = {wrap(prod)};
  want["Mean"] = {static_cast<T>(wrap(sum) / 6)};
  want["MatMul"] = {wrap(dot)};
  want["Range"] = {static_cast<T>(hi - 3), static_cast<T>(hi - 1)};
  std::vector<std::string> fetches;
  for (const auto& [name, v] : want) fetches.push_back(name);
  auto s = MakeSession(b.graph_def());
  auto got = RunOrDie(
      *s,
      {{"x", tensor(Shape{6}, x)}, {"y", tensor(Shape{6}, y)}, {"row", tensor(Shape{1, 6}, x)}, {"col", tensor(Shape{6, 1}, y)}},
      fetches);
  for (size_t i = 0; i < fetches.size(); ++i) {
    const std::vector<T> g(got[i].template data<T>(), got[i].template data<T>() + got[i].num_elements());
    EXPECT_EQ(g, want[fetches[i]]) << fetches[i];
  }
}

TEST(Kernels, SignedIntegerArithmeticWrapsAsTensorFlowsDoes) {
  ExpectSignedArithmeticWraps<int32_t>(DType::kInt32);
  ExpectSignedArithmeticWraps<int64_t>(DType::kInt64);
}

// Floor, Ceil and Round give IEEE's signed zeros (ceil(-0.5) = -0, rint(-0.25) = -0), in the
// vector body and the scalar tail, whatever CPU the kernels were built for (ctest runs this
// with the baseline x86-64 build of them too, whose Eigen packets made those zeros +0).
TEST(Kernels, RoundingKeepsTheSignOfAZero) {
  const std::vector<double> x = {-0.5, -0.25, -0.0, 0.0,  0.25, 0.5,  -0.75, 0.75,   -1.5,  1.5,  2.5,
                                 -2.5, -0.1,  0.1,  -0.9, 0.9,  -3.5, -0.5,  -1e-30, 1e-30, -7.25};  // 21: vectors and a tail
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kHalf}) {
    for (const std::string op : {"Floor", "Ceil", "Round"}) {
      GraphBuilder b;
      b.Placeholder("x", dtype, {static_cast<int64_t>(x.size())});
      b.Op("y", op, {"x"}, dtype);
      auto s = MakeSession(b.graph_def());
      const Tensor in = testing::MakeTensor(dtype, Shape{static_cast<int64_t>(x.size())}, x);
      const Tensor y = RunOrDie(*s, {{"x", in}}, {"y"})[0];
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        const double v = in.ValueAsDouble(i);
        const double want = op == "Floor" ? std::floor(v) : op == "Ceil" ? std::ceil(v) : std::rint(v);
        const double got = y.ValueAsDouble(i);
        EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want))
            << op << " " << DTypeName(dtype) << " of " << v << ": " << got << ", not " << want << " (kernels for " << KernelsIsa()
            << ")";
      }
    }
  }
}

// Pad, PadV2 and MirrorPad copy runs of unpadded trailing dimensions whole: checked
// against an element-by-element loop on random shapes and paddings (some dimensions not
// padded, some 0-sized), in every mode, on several threads.
TEST(Kernels, PadMatchesAnElementLoopInEveryMode) {
  std::mt19937 rng(20261124);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    const int mode = trial % 4;  // Pad, PadV2 with 7.5, REFLECT, SYMMETRIC
    std::vector<int64_t> dims, pads;
    for (int k = 0; k < rank; ++k) {
      dims.push_back(mode >= 2 ? 2 + rng() % 4 : rng() % 5);
      const int64_t most = mode == 2 ? dims.back() - 1 : mode == 3 ? dims.back() : 3;
      for (int side = 0; side < 2; ++side) pads.push_back(rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % (most + 1)));
    }
    std::vector<float> x(Shape(dims).num_elements());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, dims);
    std::vector<int32_t> p(pads.begin(), pads.end());
    b.Const("p", testing::MakeInt32(Shape{rank, 2}, p));
    std::vector<std::string> inputs = {"x", "p"};
    if (mode == 1) inputs.push_back(b.Const("v", MakeFloat(Shape{}, {7.5f})));
    tensorflow::NodeDef* n = b.Op("y", mode == 1 ? "PadV2" : mode == 0 ? "Pad" : "MirrorPad", inputs);
    if (mode >= 2) testing::SetAttrString(n, "mode", mode == 2 ? "REFLECT" : "SYMMETRIC");
    SessionOptions options;
    options.intra_op_threads = 2;
    auto s = MakeSession(b.graph_def(), options);
    const std::vector<double> got = Values(RunOrDie(*s, {{"x", MakeFloat(Shape(dims), x)}}, {"y"})[0]);
    // The element loop: each output index maps back dimension by dimension.
    std::vector<int64_t> od;
    for (int k = 0; k < rank; ++k) od.push_back(dims[k] + pads[2 * k] + pads[2 * k + 1]);
    ASSERT_EQ(static_cast<int64_t>(got.size()), Shape(od).num_elements());
    std::vector<int64_t> idx(rank, 0);
    for (size_t o = 0; o < got.size(); ++o) {
      double want = mode == 1 ? 7.5 : 0;
      int64_t off = 0;
      bool pad = false;
      for (int k = 0; k < rank; ++k) {
        int64_t i = idx[k] - pads[2 * k];
        if (i < 0 || i >= dims[k]) {
          if (mode < 2)
            pad = true;
          else if (i < 0)
            i = mode == 2 ? -i : -i - 1;
          else
            i = mode == 2 ? 2 * (dims[k] - 1) - i : 2 * dims[k] - 1 - i;
        }
        off = off * dims[k] + i;
      }
      if (!pad) want = x[off];
      ASSERT_EQ(got[o], want) << "trial " << trial << " output " << o;
      for (int k = rank - 1; k >= 0 && ++idx[k] == od[k]; --k) idx[k] = 0;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

// A 3x3 convolution on a 16x16 map (by Winograd's algorithm) and a 1x1 one, each with a
// constant filter (reordered once, then cached) and with the same filter fed (never
// cached): against a float64 loop, on a second run, and with another fed filter.
TEST(Kernels, ConvolutionsMatchAFloat64LoopWithConstantAndFedFilters) {
  constexpr int64_t N = 2, H = 16, W = 16, C = 32, O = 48;
  auto random = [](int64_t n, int seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  };
  const std::vector<float> x = random(N * H * W * C, 1);
  for (int64_t k : {3, 1}) {
    SCOPED_TRACE(std::to_string(k) + "x" + std::to_string(k));
    const std::vector<float> f1 = random(k * k * C * O, 2), f2 = random(k * k * C * O, 3);
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {N, H, W, C});
    b.Placeholder("fed", DType::kFloat, {k, k, C, O});
    b.Const("f", MakeFloat(Shape{k, k, C, O}, f1));
    for (const char* filter : {"f", "fed"}) {
      tensorflow::NodeDef* n = b.Op(std::string("y_") + filter, "Conv2D", {"x", filter});
      testing::SetAttrInts(n, "strides", {1, 1, 1, 1});
      testing::SetAttrString(n, "padding", "SAME");
    }
    auto s = MakeSession(b.graph_def());
    // SAME padding in float64.
    auto reference = [&](const std::vector<float>& f) {
      std::vector<double> y(N * H * W * O, 0.0);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < H; ++i)
          for (int64_t j = 0; j < W; ++j)
            for (int64_t di = 0; di < k; ++di)
              for (int64_t dj = 0; dj < k; ++dj) {
                const int64_t ii = i + di - (k - 1) / 2, jj = j + dj - (k - 1) / 2;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                for (int64_t c = 0; c < C; ++c)
                  for (int64_t o = 0; o < O; ++o)
                    y[((n * H + i) * W + j) * O + o] +=
                        double(x[((n * H + ii) * W + jj) * C + c]) * f[((di * k + dj) * C + c) * O + o];
              }
      return y;
    };
    const std::vector<double> want1 = reference(f1), want2 = reference(f2);
    for (int run = 0; run < 2; ++run) {
      const auto& fed = run == 0 ? f1 : f2;
      const auto& fed_want = run == 0 ? want1 : want2;
      auto out =
          RunOrDie(*s, {{"x", MakeFloat(Shape{N, H, W, C}, x)}, {"fed", MakeFloat(Shape{k, k, C, O}, fed)}}, {"y_f", "y_fed"});
      for (int which = 0; which < 2; ++which) {
        const std::vector<double> got = Values(out[which]);
        const std::vector<double>& want = which == 0 ? want1 : fed_want;
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
        // |y| reaches about 4 sqrt(k^2 C): Winograd's error is about 1e-5 of that.
        EXPECT_LT(worst, 2e-4 * std::sqrt(double(k * k * C))) << "run " << run << (which ? ", fed filter" : ", constant filter");
      }
    }
  }
}

// A while loop as TensorFlow lowers one (Enter, Merge, Switch, LoopCond, NextIteration,
// Exit): i = 0, x = x0; while i < n: x = x * 2 + c; i += 1, with n and c loop invariants,
// and a TensorList (made by TensorListReserve) that collects each iteration's x.
tensorflow::GraphDef CountingLoop(bool x_grows) {
  GraphBuilder b;
  auto variant = [](tensorflow::NodeDef* n) { (*n->mutable_attr())["T"].set_type(tensorflow::DT_VARIANT); };
  b.Placeholder("x0", DType::kFloat, {2});
  b.Placeholder("n", DType::kInt32, {});
  b.Const("zero", testing::MakeInt32(Shape{}, {0}));
  b.Const("one", testing::MakeInt32(Shape{}, {1}));
  b.Const("two", MakeFloat(Shape{}, {2.0f}));
  b.Const("c", MakeFloat(Shape{2}, {1.0f, -1.0f}));
  b.Const("shape", testing::MakeInt32(Shape{1}, {2}));
  b.Const("rows", testing::MakeInt32(Shape{}, {3}));
  tensorflow::NodeDef* reserve = b.Op("list", "TensorListReserve", {"shape", "rows"}, DType::kInvalid);
  testing::SetAttrType(reserve, "element_dtype", DType::kFloat);
  testing::SetAttrType(reserve, "shape_type", DType::kInt32);
  auto enter = [&](const std::string& name, const std::string& in, DType t, bool constant) {
    tensorflow::NodeDef* e = b.Op(name, "Enter", {in}, t);
    testing::SetAttrString(e, "frame_name", "loop");
    testing::SetAttrBool(e, "is_constant", constant);
    return e;
  };
  enter("i_enter", "zero", DType::kInt32, false);
  enter("x_enter", "x0", DType::kFloat, false);
  variant(enter("l_enter", "list", DType::kInvalid, false));
  enter("n_enter", "n", DType::kInt32, true);
  enter("c_enter", "c", DType::kFloat, true);
  for (const char* v : {"i", "x", "l"}) {
    const std::string s(v);
    tensorflow::NodeDef* m = b.Op(s + "_merge", "Merge", {s + "_enter", s + "_next"}, s == "i" ? DType::kInt32 : DType::kFloat);
    (*m->mutable_attr())["N"].set_i(2);
    if (s == "l") variant(m);
  }
  b.Op("less", "Less", {"i_merge", "n_enter"}, DType::kInt32);
  b.Op("cond", "LoopCond", {"less"}, DType::kInvalid);
  for (const char* v : {"i", "x", "l"}) {
    const std::string s(v);
    tensorflow::NodeDef* sw = b.Op(s + "_switch", "Switch", {s + "_merge", "cond"}, s == "i" ? DType::kInt32 : DType::kFloat);
    tensorflow::NodeDef* ex = b.Op(s + "_exit", "Exit", {s + "_switch"}, s == "i" ? DType::kInt32 : DType::kFloat);
    if (s == "l") variant(sw), variant(ex);
  }
  b.Op("i_body", "AddV2", {"i_switch:1", "one"}, DType::kInt32);
  b.Op("x_twice", "Mul", {"x_switch:1", "two"});
  if (x_grows) {
    (*b.Op("x_body", "ConcatV2", {"x_twice", "c_enter", "zero"})->mutable_attr())["N"].set_i(2);
  } else {
    b.Op("x_body", "AddV2", {"x_twice", "c_enter"});
  }
  tensorflow::NodeDef* set =
      b.Op("l_body", "TensorListSetItem", {"l_switch:1", "i_switch:1", x_grows ? "x_twice" : "x_body"}, DType::kInvalid);
  testing::SetAttrType(set, "element_dtype", DType::kFloat);
  b.Op("i_next", "NextIteration", {"i_body"}, DType::kInt32);
  b.Op("x_next", "NextIteration", {"x_body"});
  variant(b.Op("l_next", "NextIteration", {"l_body"}, DType::kInvalid));
  tensorflow::NodeDef* stack = b.Op("stacked", "TensorListStack", {"l_exit", "shape"}, DType::kInvalid);
  testing::SetAttrType(stack, "element_dtype", DType::kFloat);
  return b.graph_def();
}

TEST(ControlFlow, AWhileLoopAsTensorFlowLowersItRuns) {
  auto s = MakeSession(CountingLoop(false));
  auto out = RunOrDie(*s, {{"x0", MakeFloat(Shape{2}, {1, 0})}, {"n", testing::MakeInt32(Shape{}, {3})}},
                      {"x_exit", "i_exit", "stacked"});
  // x: (1, 0) -> (3, -1) -> (7, -3) -> (15, -7).
  EXPECT_EQ(Values(out[0]), (std::vector<double>{15, -7}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{3}));
  EXPECT_EQ(Values(out[2]), (std::vector<double>{3, -1, 7, -3, 15, -7}));
  // No iteration: the initial values, and the list's zeros.
  out = RunOrDie(*s, {{"x0", MakeFloat(Shape{2}, {1, 0})}, {"n", testing::MakeInt32(Shape{}, {0})}}, {"x_exit", "stacked"});
  EXPECT_EQ(Values(out[0]), (std::vector<double>{1, 0}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>(6, 0.0)));
  // Past the list's end: an error naming the index.
  std::vector<Tensor> outputs;
  Status st = s->Run({{"x0", MakeFloat(Shape{2}, {1, 0})}, {"n", testing::MakeInt32(Shape{}, {4})}}, {"x_exit"}, {}, &outputs);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("index 3 is outside the list of 3"), std::string::npos) << st.ToString();
}

// A conditional as tf.cond writes one in a TensorFlow 1 graph: a Switch of the predicate
// on itself whose then side gates a constant, the value's Switch on an Identity of the
// predicate; y = p ? -x + c : x.
tensorflow::GraphDef Conditional(bool read_value_index) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  b.Placeholder("p", DType::kBool, {});
  b.Op("pred_id", "Identity", {"p"}, DType::kBool);
  b.Op("sw_p", "Switch", {"p", "p"}, DType::kBool);
  b.Op("switch_t", "Identity", {"sw_p:1"}, DType::kBool);
  b.Const("c", MakeFloat(Shape{2}, {10.0f, 20.0f}));
  b.graph_def().mutable_node(b.graph_def().node_size() - 1)->add_input("^switch_t");
  b.Op("sw", "Switch", {"x", "pred_id"});
  b.Op("neg", "Neg", {"sw:1"});
  b.Op("then", "AddV2", {"neg", "c"});
  (*b.Op("y", "Merge", {"sw:0", "then"})->mutable_attr())["N"].set_i(2);
  if (read_value_index) b.Op("which", "Identity", {"y:1"}, DType::kInt32);
  return b.graph_def();
}

TEST(ControlFlow, AConditionalRunsTheBranchItsPredicateTakes) {
  auto s = MakeSession(Conditional(false));
  const Tensor x = MakeFloat(Shape{2}, {1, -2});
  EXPECT_EQ(Values(RunOrDie(*s, {{"x", x}, {"p", testing::MakeTensor(DType::kBool, Shape{}, {1})}}, {"y"})[0]),
            (std::vector<double>{9, 22}));
  EXPECT_EQ(Values(RunOrDie(*s, {{"x", x}, {"p", testing::MakeTensor(DType::kBool, Shape{}, {0})}}, {"y"})[0]),
            (std::vector<double>{1, -2}));
}

// A Merge whose value_index is read says which branch ran: that stays TensorFlow's, and
// the session rejects it up front, naming the ops.
TEST(ControlFlow, AConditionalWhoseBranchIndexIsReadIsRejectedNamingItsOps) {
  auto session = Session::Create(SessionOptions{}, Conditional(true));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("Merge"), std::string::npos) << session.status().ToString();
  EXPECT_NE(session.status().message().find("Switch"), std::string::npos) << session.status().ToString();
}

// A library function `name` of one float argument "v", returning "y" (its body to add).
tensorflow::FunctionDef* AddFloatFunction(tensorflow::GraphDef* graph, const std::string& name) {
  tensorflow::FunctionDef* f = graph->mutable_library()->add_function();
  f->mutable_signature()->set_name(name);
  auto* in = f->mutable_signature()->add_input_arg();
  in->set_name("v");
  in->set_type(tensorflow::DT_FLOAT);
  auto* out = f->mutable_signature()->add_output_arg();
  out->set_name("y");
  out->set_type(tensorflow::DT_FLOAT);
  return f;
}

// An If whose branch function holds the same If: its graphs would nest without end; the
// session fails, saying so, instead of overflowing the stack.
TEST(ControlFlow, AFunctionThatHoldsItselfIsAnError) {
  auto make_if = [](tensorflow::NodeDef* n) {
    testing::SetAttrType(n, "Tcond", DType::kBool);
    for (const char* attr : {"Tin", "Tout"}) (*n->mutable_attr())[attr].mutable_list()->add_type(tensorflow::DT_FLOAT);
    for (const char* attr : {"then_branch", "else_branch"}) (*n->mutable_attr())[attr].mutable_func()->set_name("f");
  };
  GraphBuilder b;
  b.Placeholder("p", DType::kBool, {});
  b.Placeholder("x", DType::kFloat, {2});
  make_if(b.Op("if", "StatelessIf", {"p", "x"}, DType::kInvalid));
  tensorflow::FunctionDef* f = AddFloatFunction(&b.graph_def(), "f");
  tensorflow::NodeDef* c = f->add_node_def();
  c->set_name("c");
  c->set_op("Const");
  testing::SetAttrType(c, "dtype", DType::kBool);
  auto* value = (*c->mutable_attr())["value"].mutable_tensor();
  value->set_dtype(tensorflow::DT_BOOL);
  value->add_bool_val(true);
  tensorflow::NodeDef* inner = f->add_node_def();
  inner->set_name("inner");
  inner->set_op("StatelessIf");
  inner->add_input("c:output:0");
  inner->add_input("v");
  make_if(inner);
  (*f->mutable_ret())["y"] = "inner:output:0";
  auto session = Session::Create(SessionOptions{}, b.graph_def());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("nested more than 32 deep"), std::string::npos) << session.status().ToString();
}

// A function "f" of one float argument "v", its body `op` of it, returned as "y"; when
// `callee` is set, the body calls that function on v instead.
void AddFunction(tensorflow::GraphDef* graph, const std::string& name, const std::string& op, const std::string& callee = "") {
  tensorflow::FunctionDef* f = AddFloatFunction(graph, name);
  tensorflow::NodeDef* n = f->add_node_def();
  n->set_name("body");
  n->set_op(callee.empty() ? op : "StatefulPartitionedCall");
  n->add_input("v");
  if (callee.empty()) {
    testing::SetAttrType(n, "T", DType::kFloat);
  } else {
    for (const char* attr : {"Tin", "Tout"}) (*n->mutable_attr())[attr].mutable_list()->add_type(tensorflow::DT_FLOAT);
    (*n->mutable_attr())["f"].mutable_func()->set_name(callee);
  }
  (*f->mutable_ret())["y"] = callee.empty() ? "body:y:0" : "body:output:0";
}

tensorflow::NodeDef* AddCall(GraphBuilder& b, const std::string& name, const std::string& input, const std::string& function) {
  tensorflow::NodeDef* n = b.Op(name, "PartitionedCall", {input}, DType::kInvalid);
  for (const char* attr : {"Tin", "Tout"}) (*n->mutable_attr())[attr].mutable_list()->add_type(tensorflow::DT_FLOAT);
  (*n->mutable_attr())["f"].mutable_func()->set_name(function);
  return n;
}

// Calls run their functions' bodies (a call of a call too); a call of a function the
// library lacks, or of one that calls itself, is an error that says so.
TEST(ControlFlow, FunctionCallsRunTheirBodies) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {3});
  AddFunction(&b.graph_def(), "neg", "Neg");
  AddFunction(&b.graph_def(), "outer", "", "neg");
  AddCall(b, "once", "x", "neg");
  AddCall(b, "twice", "once", "outer");
  auto s = MakeSession(b.graph_def());
  auto out = RunOrDie(*s, {{"x", MakeFloat(Shape{3}, {1.0f, -2.0f, 0.5f})}}, {"once", "twice"});
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-1.0, 2.0, -0.5}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{1.0, -2.0, 0.5}));

  GraphBuilder missing;
  missing.Placeholder("x", DType::kFloat, {3});
  AddCall(missing, "call", "x", "nowhere");
  auto session = Session::Create(SessionOptions{}, missing.graph_def());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("calls function 'nowhere', which the graph's library does not hold"),
            std::string::npos)
      << session.status().ToString();

  GraphBuilder self;
  self.Placeholder("x", DType::kFloat, {3});
  AddFunction(&self.graph_def(), "again", "", "again");
  AddCall(self, "call", "x", "again");
  session = Session::Create(SessionOptions{}, self.graph_def());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("function calls nested more than 32 deep"), std::string::npos)
      << session.status().ToString();
}

TEST(ControlFlow, ALoopVariableThatChangesShapeIsAnError) {
  auto s = MakeSession(CountingLoop(true));
  std::vector<Tensor> outputs;
  Status st = s->Run({{"x0", MakeFloat(Shape{2}, {1, 0})}, {"n", testing::MakeInt32(Shape{}, {2})}}, {"x_exit"}, {}, &outputs);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("loop variable 1 changes from float32[2] to float32[4]"), std::string::npos) << st.ToString();
}

TEST(Analysis, EveryUnsupportedOpIsListedAtOnce) {
  GraphBuilder b;
  b.Placeholder("p", DType::kBool);
  b.Placeholder("x", DType::kFloat);
  b.Op("sw", "Switch", {"x", "p"});
  b.Op("sw2", "Switch", {"x", "p"});
  b.Op("m", "Merge", {"sw", "sw2"});  // two values of the same branch: not a conditional
  b.Op("w", "While", {"x"});
  auto s = Session::Create({}, b.graph_def());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnimplemented);
  const std::string m = s.status().message();
  EXPECT_NE(m.find("3 unsupported ops"), std::string::npos) << m;
  EXPECT_NE(m.find("Switch (2 nodes: 'sw', ...)"), std::string::npos) << m;
  EXPECT_NE(m.find("Merge (1 node: 'm')"), std::string::npos) << m;
  EXPECT_NE(m.find("While (1 node: 'w')"), std::string::npos) << m;
}

Status CreateError(const tensorflow::GraphDef& gd) { return Session::Create({}, gd).status(); }

TEST(Analysis, ModelErrorsNameTheNode) {
  {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat);
    b.Op("r", "Relu", {"x", "x"});
    Status s = CreateError(b.graph_def());
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.message(), "node 'r' (Relu): expected 1 data input, got 2");
  }
  {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat);
    b.Placeholder("i", DType::kInt32);
    b.Op("a", "Add", {"x", "i"});
    Status s = CreateError(b.graph_def());
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_NE(s.message().find("node 'a' (Add): input 1 has type int32 but attr 'T' is float32"), std::string::npos)
        << s.message();
  }
  {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat, {2, 2});
    testing::SetAttrInt(b.Op("m", "MatMul", {"x", "x"}), "transpose_a", 1);
    EXPECT_NE(CreateError(b.graph_def()).message().find("attr 'transpose_a' must be a bool"), std::string::npos);
  }
  {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat);
    b.Op("r", "Relu", {"x:3"});
    EXPECT_NE(CreateError(b.graph_def()).message().find("refers to output 3 of 'x', which has 1 output"), std::string::npos);
  }
  {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat);
    b.Op("r", "Relu", {"x"})->mutable_attr()->erase("T");
    EXPECT_EQ(CreateError(b.graph_def()).message(), "node 'r' (Relu): attr 'T' is missing");
  }
  {
    GraphBuilder b;
    b.Placeholder("x", DType::kFloat);
    b.Op("a", "Relu", {"b"});
    b.Op("b", "Relu", {"a"});
    EXPECT_NE(CreateError(b.graph_def()).message().find("cycle"), std::string::npos);
  }
}

TEST(Analysis, StaticShapesUseConstants) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 6});
  b.Op("r", "Reshape", {"x", b.Const("shape", testing::MakeInt32(Shape{3}, {-1, 2, 3}))})->mutable_attr();
  testing::SetAttrType(b.graph_def().mutable_node(2), "Tshape", DType::kInt32);
  auto s = MakeSession(b.graph_def());
  const auto& g = s->graph();
  EXPECT_EQ(g.info(g.graph.FindNode("r")->id).shapes[0], (Shape{-1, 2, 3}));
}

TEST(PassRegistry, PassesRewriteTheGraphThatRuns) {
  // A pass that turns Relu into Neg, only in graphs that carry its marker node.
  static const bool registered = [] {
    PassRegistry::Global()->Register({"test_relu_to_neg", 0, [](Graph& g, const GraphPassContext&) -> StatusOr<bool> {
                                        if (g.FindNode("__relu_to_neg") == nullptr) return false;
                                        bool changed = false;
                                        for (int i = 0; i < g.num_nodes(); ++i) {
                                          if (g.node(i)->op == "Relu") {
                                            g.node(i)->op = "Neg";
                                            changed = true;
                                          }
                                        }
                                        return changed;
                                      }});
    return true;
  }();
  ASSERT_TRUE(registered);
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  b.Op("r", "Relu", {"x"});
  auto plain = MakeSession(b.graph_def());
  EXPECT_EQ(Values(RunOrDie(*plain, {{"x", MakeFloat(Shape{2}, {-1, 2})}}, {"r"})[0]), (std::vector<double>{0, 2}));
  b.Op("__relu_to_neg", "NoOp", {}, DType::kInvalid);
  auto rewritten = MakeSession(b.graph_def());
  EXPECT_EQ(Values(RunOrDie(*rewritten, {{"x", MakeFloat(Shape{2}, {-1, 2})}}, {"r"})[0]), (std::vector<double>{1, -2}));
}

TEST(SessionOptions, ReadsATensorFlowTextConfig) {
  std::string path = testing::TempDir() + "/config.pbtxt";
  std::ofstream(path) << R"(
    intra_op_parallelism_threads: 3
    inter_op_parallelism_threads: 2
    gpu_options { per_process_gpu_memory_fraction: 0.25 allow_growth: true force_gpu_compatible: true }
    graph_options {
      optimizer_options { global_jit_level: ON_2 cpu_global_jit: true }
      rewrite_options { constant_folding: OFF remapping: ON disable_model_pruning: true }
    })";
  auto o = SessionOptions::FromConfigFile(path);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->intra_op_threads, 3);
  EXPECT_EQ(o->inter_op_threads, 2);
  EXPECT_EQ(o->jit_level, JitLevel::kOn2);
  EXPECT_TRUE(o->cpu_global_jit);
  EXPECT_EQ(o->rewrite_options.constant_folding(), tensorflow::RewriterConfig::OFF);
  EXPECT_TRUE(o->rewrite_options.disable_model_pruning());
  EXPECT_EQ(o->gpu_memory_fraction, 0.25);
  EXPECT_TRUE(o->gpu_allow_growth);
  EXPECT_EQ(o->ToConfigProto().graph_options().optimizer_options().global_jit_level(), tensorflow::OptimizerOptions::ON_2);
  EXPECT_EQ(o->ToConfigProto().gpu_options().per_process_gpu_memory_fraction(), 0.25);

  std::ofstream(path) << "intra_op_parallelism_threads: \"many\"";
  EXPECT_EQ(SessionOptions::FromConfigFile(path).status().code(), Code::kInvalidArgument);
}

TEST(SessionOptions, Flags) {
  SessionOptions o;
  ASSERT_TRUE(ApplyFlags("  --jit_level=on_2 ", &o).ok());
  EXPECT_EQ(o.jit_level, JitLevel::kOn2);
  EXPECT_FALSE(ApplyFlags("--jit_level=fast", &o).ok());
  EXPECT_NE(ApplyFlags("--no_such_flag=1", &o).message().find("unknown flag"), std::string::npos);
}

}  // namespace
}  // namespace graphjit
