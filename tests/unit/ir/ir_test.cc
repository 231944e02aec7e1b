// ir/: dtypes, shapes, devices, GraphDef import/export and structural validation.
#include <gtest/gtest.h>

#include <fstream>

#include <google/protobuf/util/message_differencer.h>

#include "ir/attr.h"
#include "ir/device.h"
#include "ir/graphdef.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;

TEST(DType, NamesRoundTripAndMatchTensorFlowEnum) {
  EXPECT_EQ(static_cast<int>(DType::kFloat), tensorflow::DT_FLOAT);
  EXPECT_EQ(static_cast<int>(DType::kHalf), tensorflow::DT_HALF);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), tensorflow::DT_BFLOAT16);
  EXPECT_EQ(static_cast<int>(DType::kInt64), tensorflow::DT_INT64);
  for (DType d : {DType::kFloat, DType::kDouble, DType::kHalf, DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kBool}) {
    DType parsed;
    ASSERT_TRUE(ParseDType(DTypeName(d), &parsed)) << DTypeName(d);
    EXPECT_EQ(parsed, d);
  }
  EXPECT_EQ(DTypeFromProto(tensorflow::DT_FLOAT_REF), DType::kFloat);
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
}

TEST(Shape, BroadcastingFollowsNumPy) {
  EXPECT_EQ(*BroadcastShapes(Shape{3, 1}, Shape{1, 4}), (Shape{3, 4}));
  EXPECT_EQ(*BroadcastShapes(Shape{}, Shape{2, 3}), (Shape{2, 3}));
  EXPECT_EQ(*BroadcastShapes(Shape{4}, Shape{2, 3, 4}), (Shape{2, 3, 4}));
  EXPECT_EQ(*BroadcastShapes(Shape{-1, 4}, Shape{3, 1}), (Shape{3, 4}));
  auto bad = BroadcastShapes(Shape{3}, Shape{4});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[3] and [4]"), std::string::npos);
}

TEST(Shape, ElementCountOverflowIsAnError) {
  EXPECT_EQ(*CheckedNumElements({2, 3, 4}), 24);
  EXPECT_EQ(*CheckedNumElements({0, int64_t{1} << 62}), 0);
  EXPECT_FALSE(CheckedNumElements({int64_t{1} << 40, int64_t{1} << 40}).ok());
  EXPECT_FALSE(CheckedNumElements({-2}).ok());
}

// Bytes overflow where elements do not: 2^61 floats are 2^63 bytes.
TEST(Shape, ByteCountOverflowIsAnError) {
  EXPECT_EQ(*CheckedMul(6, 7), 42);
  EXPECT_EQ(*CheckedMul(0, INT64_MAX), 0);
  EXPECT_FALSE(CheckedMul(int64_t{1} << 31, int64_t{1} << 32).ok());
  EXPECT_FALSE(CheckedMul(-1, 2).ok());
  EXPECT_EQ(*CheckedBytes({2, 3}, 4), 24);
  EXPECT_TRUE(CheckedNumElements({int64_t{1} << 61}).ok());
  const auto bytes = CheckedBytes({int64_t{1} << 61}, 4);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("too many bytes"), std::string::npos) << bytes.status().ToString();
}

TEST(Device, EquivalentSpellingsNormalise) {
  for (const char* s : {"", "/cpu:0", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0", "/CPU:0"}) {
    auto d = ParseDeviceName(s);
    ASSERT_TRUE(d.ok()) << s << ": " << d.status().ToString();
    EXPECT_EQ(d->ToString(), "/device:CPU:0") << s;
  }
  EXPECT_EQ(ParseDeviceName("/device:XLA_CPU:0")->type, "XLA_CPU");
  EXPECT_EQ(ParseDeviceName("/gpu:1")->ToString(), "/device:GPU:1");
  EXPECT_FALSE(ParseDeviceName("/job:worker/device:CPU:0").ok());
  EXPECT_FALSE(ParseDeviceName("/device:CPU:x").ok());
  EXPECT_FALSE(ParseDeviceName("garbage").ok());
}

TEST(ParseInputString, Forms) {
  ParsedInput p;
  ASSERT_TRUE(ParseInputString("a/b", &p));
  EXPECT_EQ(p.node, "a/b");
  EXPECT_EQ(p.index, 0);
  ASSERT_TRUE(ParseInputString("a:2", &p));
  EXPECT_EQ(p.index, 2);
  ASSERT_TRUE(ParseInputString("^ctl", &p));
  EXPECT_TRUE(p.control);
  EXPECT_EQ(p.node, "ctl");
  EXPECT_FALSE(ParseInputString("", &p));
  EXPECT_FALSE(ParseInputString("a:", &p));
  EXPECT_FALSE(ParseInputString("a:-1", &p));
  EXPECT_FALSE(ParseInputString("a:1x", &p));
}

tensorflow::GraphDef SmallGraph() {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {2});
  auto* y = b.Op("y", "Relu", {"x"});
  y->set_device("/cpu:0");
  auto* z = b.Op("z", "NoOp", {"^y"}, DType::kInvalid);
  (void)z;
  b.graph_def().mutable_versions()->set_producer(1882);
  auto* f = b.graph_def().mutable_library()->add_function();
  f->mutable_signature()->set_name("my_fn");
  return b.graph_def();
}

TEST(GraphDefImport, EdgesAttrsDevicesAndControlInputs) {
  auto g = ImportGraphDef(SmallGraph());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->num_nodes(), 3);
  const Node* y = g->FindNode("y");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->inputs.size(), 1u);
  EXPECT_EQ(y->inputs[0], (TensorId{g->FindNode("x")->id, 0}));
  EXPECT_EQ(y->device, "/cpu:0");
  EXPECT_EQ(*GetTypeAttr(*y, "T"), DType::kFloat);
  const Node* z = g->FindNode("z");
  ASSERT_EQ(z->control_inputs.size(), 1u);
  EXPECT_EQ(z->control_inputs[0], y->id);
  EXPECT_EQ(g->versions().producer(), 1882);
}

TEST(GraphDefImport, ExportRoundTripIsLossless) {
  tensorflow::GraphDef in = SmallGraph();
  (*in.mutable_node(1)->mutable_experimental_debug_info()->add_original_node_names()) = "orig";
  auto g = ImportGraphDef(in);
  ASSERT_TRUE(g.ok());
  tensorflow::GraphDef out = ExportGraphDef(*g);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(out, in)) << out.DebugString();
}

TEST(GraphDefFiles, BinaryAndTextRoundTrip) {
  std::string dir = testing::TempDir();
  tensorflow::GraphDef gd = SmallGraph();
  for (const char* name : {"/g.pb", "/g.pbtxt"}) {
    ASSERT_TRUE(WriteGraphDefFile(gd, dir + name).ok());
    auto back = ReadGraphDefFile(dir + name);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, gd)) << name;
  }
}

TEST(GraphDefFiles, ErrorsAreClear) {
  std::string dir = testing::TempDir();
  auto missing = ReadGraphDefFile(dir + "/nope.pb");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  {
    std::ofstream(dir + "/bad.pbtxt") << "node { name: \"a\" op: \n";
  }
  auto bad_text = ReadGraphDefFile(dir + "/bad.pbtxt");
  ASSERT_EQ(bad_text.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad_text.status().message().find("bad.pbtxt"), std::string::npos);
  EXPECT_NE(bad_text.status().message().find("2:1"), std::string::npos) << bad_text.status().message();
  {
    std::ofstream(dir + "/bad.pb", std::ios::binary) << "\x0a\xff\xff\xff";
  }
  EXPECT_EQ(ReadGraphDefFile(dir + "/bad.pb").status().code(), Code::kInvalidArgument);
}

TEST(GraphDefImport, RejectsDuplicateNames) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat);
  b.Placeholder("x", DType::kFloat);
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'x'"), std::string::npos);
}

TEST(GraphDefImport, RejectsDanglingAndMalformedInputs) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat);
  b.Op("y", "Add", {"x", "ghost"});
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("node 'y' (Add)"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("ghost"), std::string::npos);

  GraphBuilder c;
  c.Placeholder("x", DType::kFloat);
  c.Op("y", "Relu", {"x:zz"});
  EXPECT_NE(ImportGraphDef(c.graph_def()).status().message().find("malformed input 'x:zz'"), std::string::npos);

  GraphBuilder d;
  d.Placeholder("x", DType::kFloat);
  d.Op("y", "Add", {"^x", "x"});
  EXPECT_NE(ImportGraphDef(d.graph_def()).status().message().find("after a control input"), std::string::npos);
}

TEST(GraphDefImport, RejectsBadDevice) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat);
  b.graph_def().mutable_node(0)->set_device("/job:ps/device:CPU:0");
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("node 'x'"), std::string::npos);
}

TEST(GraphStructure, CycleIsReportedWithItsNodes) {
  GraphBuilder b;
  b.Placeholder("x", DType::kFloat);
  b.Op("a", "Add", {"x", "c"});
  b.Op("b", "Relu", {"a"});
  b.Op("c", "Relu", {"b"});
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_TRUE(g.ok());
  Status s = ValidateGraphStructure(*g);
  ASSERT_FALSE(s.ok());
  for (const char* name : {"'a'", "'b'", "'c'"}) EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("'x'"), std::string::npos) << s.message();
}

TEST(GraphStructure, TopologicalOrderKeepsGraphOrderForTies) {
  GraphBuilder b;
  b.Op("late", "Relu", {"early"});
  b.Placeholder("early", DType::kFloat);
  b.Placeholder("other", DType::kFloat);
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_TRUE(g.ok());
  auto order = TopologicalOrder(*g);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<int>{1, 0, 2}));
}

TEST(Graph, RemoveNodesRenumbers) {
  auto g = ImportGraphDef(SmallGraph());
  ASSERT_TRUE(g.ok());
  Node* z = g->FindNode("z");
  z->control_inputs.clear();
  std::vector<bool> remove(g->num_nodes(), false);
  remove[g->FindNode("x")->id] = false;
  remove[z->id] = true;
  g->RemoveNodes(remove);
  EXPECT_EQ(g->num_nodes(), 2);
  EXPECT_EQ(g->FindNode("z"), nullptr);
  EXPECT_EQ(g->FindNode("y")->inputs[0].node, g->FindNode("x")->id);
}

TEST(Attr, TypedAccessErrorsNameNodeAndAttr) {
  GraphBuilder b;
  auto* n = b.Op("m", "MatMul", {}, DType::kFloat);
  testing::SetAttrInt(n, "transpose_a", 3);
  auto g = ImportGraphDef(b.graph_def());
  ASSERT_TRUE(g.ok());
  auto v = GetBoolAttr(*g->FindNode("m"), "transpose_a");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "node 'm' (MatMul): attr 'transpose_a' must be a bool");
  EXPECT_EQ(GetIntAttr(*g->FindNode("m"), "N").status().message(), "node 'm' (MatMul): attr 'N' is missing");
  EXPECT_EQ(*GetBoolAttrOr(*g->FindNode("m"), "transpose_b", true), true);
}

}  // namespace
}  // namespace graphjit
