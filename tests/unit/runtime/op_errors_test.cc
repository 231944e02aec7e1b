// Shape problems inside a graph are run-time errors (FailedPrecondition) that name the
// node; none of them crashes or allocates absurd amounts of memory.
#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;
using testing::MakeFloat;
using testing::MakeInt32;

struct Case {
  const char* name;
  const char* op;
  std::vector<Tensor> inputs;  // fed through placeholders of unknown shape
  std::function<void(tensorflow::NodeDef*)> attrs;
  const char* message;  // expected fragment
  Code code = Code::kFailedPrecondition;
};

void ExpectRunError(const Case& c) {
  SCOPED_TRACE(c.name);
  GraphBuilder b;
  std::vector<std::string> names;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    names.push_back(b.Placeholder("in" + std::to_string(i), c.inputs[i].dtype(), {}, /*unknown_rank=*/true));
    feeds.emplace_back(names.back(), c.inputs[i]);
  }
  tensorflow::NodeDef* n = b.Op("op", c.op, names, c.inputs[0].dtype());
  if (c.attrs) c.attrs(n);
  auto session = Session::Create({}, b.graph_def());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<Tensor> out;
  Status s = (*session)->Run(feeds, {"op"}, {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), c.code) << s.ToString();
  EXPECT_NE(s.message().find("node 'op' (" + std::string(c.op) + ")"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
}

Tensor F(std::vector<int64_t> dims) {
  Shape s(dims);
  return MakeFloat(s, std::vector<float>(s.num_elements(), 1.0f));
}

TEST(OpErrors, ShapeProblemsAreRunTimeErrorsNamingTheNode) {
  auto batch_norm = [](float factor) {
    return [factor](tensorflow::NodeDef* n) {
      testing::SetAttrType(n, "U", DType::kFloat);
      testing::SetAttrBool(n, "is_training", true);
      testing::SetAttrFloat(n, "exponential_avg_factor", factor);
    };
  };
  auto tidx = [](const char* attr) { return [attr](tensorflow::NodeDef* n) { testing::SetAttrType(n, attr, DType::kInt32); }; };
  std::vector<Case> cases = {
      {"broadcast", "AddV2", {F({2, 3}), F({4})}, nullptr, "incompatible shapes for broadcasting: [2,3] and [4]"},
      {"reshape count",
       "Reshape",
       {F({2, 3}), MakeInt32(Shape{1}, {5})},
       tidx("Tshape"),
       "cannot reshape a tensor of shape [2,3] (6 elements) into [5]"},
      {"reshape two -1", "Reshape", {F({2, 3}), MakeInt32(Shape{2}, {-1, -1})}, tidx("Tshape"), "more than one -1"},
      {"reshape huge",
       "Reshape",
       {F({2}), MakeInt32(Shape{3}, {1 << 30, 1 << 30, 1 << 30})},
       tidx("Tshape"),
       "too many elements"},
      {"grouped conv outputs",  // 5 output channels from 2 groups of 2 of the 4 input channels
       "Conv2D",
       {F({1, 4, 4, 4}), F({1, 1, 2, 5})},
       [](tensorflow::NodeDef* n) {
         testing::SetAttrInts(n, "strides", {1, 1, 1, 1});
         testing::SetAttrString(n, "padding", "SAME");
       },
       "its 5 output channels are not a multiple of the 2 groups"},
      {"gather_nd index",  // an index row outside params, an error on the CPU as in TensorFlow
       "GatherNd",
       {F({2, 3}), MakeInt32(Shape{2, 2}, {1, 2, 2, 0})},
       [](tensorflow::NodeDef* n) {
         testing::SetAttrType(n, "Tparams", DType::kFloat);
         testing::SetAttrType(n, "Tindices", DType::kInt32);
       },
       "index row 1 = [2, 0] does not index into params of shape [2,3]"},
      {"depth_to_space depth",
       "DepthToSpace",
       {F({1, 2, 2, 6})},
       [](tensorflow::NodeDef* n) { testing::SetAttrInt(n, "block_size", 2); },
       "input depth 6 is not divisible by block_size squared (4)"},
      {"space_to_batch padding",
       "SpaceToBatchND",
       {F({1, 5, 2}), MakeInt32(Shape{1}, {2}), MakeInt32(Shape{1, 2}, {0, 0})},
       [](tensorflow::NodeDef* n) {
         testing::SetAttrType(n, "Tblock_shape", DType::kInt32);
         testing::SetAttrType(n, "Tpaddings", DType::kInt32);
       },
       "padded spatial dim 0 (5) is not divisible by its block size 2"},
      {"band part lower",
       "MatrixBandPart",
       {F({3, 4}), MakeInt32(Shape{}, {4}), MakeInt32(Shape{}, {0})},
       [](tensorflow::NodeDef* n) { testing::SetAttrType(n, "Tindex", DType::kInt32); },
       "num_lower (4) must be negative or at most the matrix's rows (3)"},
      {"scatter_nd index",
       "ScatterNd",
       {MakeInt32(Shape{2, 1}, {0, 3}), F({2, 2}), MakeInt32(Shape{2}, {3, 2})},
       [](tensorflow::NodeDef* n) {
         testing::SetAttrType(n, "T", DType::kFloat);
         testing::SetAttrType(n, "Tindices", DType::kInt32);
       },
       "indices[1] = [3] does not index into shape [3,2]"},
      {"segment id",
       "UnsortedSegmentSum",
       {F({3}), MakeInt32(Shape{3}, {0, 2, 1}), MakeInt32(Shape{}, {2})},
       [](tensorflow::NodeDef* n) { testing::SetAttrType(n, "Tindices", DType::kInt32); },
       "segment_ids[1] = 2 is out of range [0, 2)"},
      {"top_k columns", "TopKV2", {F({2, 3}), MakeInt32(Shape{}, {4})}, nullptr, "input must have at least k = 4 columns, got 3"},
      {"transpose perm", "Transpose", {F({2, 3}), MakeInt32(Shape{2}, {0, 0})}, tidx("Tperm"), "is not a permutation"},
      {"transpose rank", "Transpose", {F({2, 3}), MakeInt32(Shape{3}, {0, 1, 2})}, tidx("Tperm"), "does not match rank"},
      {"slice bounds",
       "Slice",
       {F({3}), MakeInt32(Shape{1}, {4}), MakeInt32(Shape{1}, {-1})},
       [](tensorflow::NodeDef* n) { testing::SetAttrType(n, "Index", DType::kInt32); },
       "out of bounds"},
      {"slice size",
       "Slice",
       {F({3}), MakeInt32(Shape{1}, {1}), MakeInt32(Shape{1}, {3})},
       [](tensorflow::NodeDef* n) { testing::SetAttrType(n, "Index", DType::kInt32); },
       "out of bounds"},
      {"expand dims axis", "ExpandDims", {F({2}), MakeInt32(Shape{}, {5})}, tidx("Tdim"), "axis 5 is out of range"},
      {"squeeze non-1",
       "Squeeze",
       {F({2, 3})},
       [](tensorflow::NodeDef* n) { testing::SetAttrInts(n, "squeeze_dims", {0}); },
       "cannot squeeze dimension 0"},
      {"sum axis", "Sum", {F({2, 3}), MakeInt32(Shape{1}, {2})}, tidx("Tidx"), "axis 2 is out of range for rank 2"},
      {"argmax empty", "ArgMax", {F({0, 3}), MakeInt32(Shape{}, {0})}, tidx("Tidx"), "empty dimension"},
      {"argmin empty",
       "ArgMin",
       {F({0, 3}), MakeInt32(Shape{}, {0})},
       tidx("Tidx"),
       "cannot take the argmin of an empty dimension"},
      {"matmul inner", "MatMul", {F({2, 3}), F({4, 5})}, nullptr, "inner dimensions do not match: [2,3] x [4,5]"},
      {"matmul rank", "MatMul", {F({2, 3, 4}), F({4, 5})}, nullptr, "inputs must be matrices"},
      {"batch matmul", "BatchMatMulV2", {F({2, 3, 4}), F({3, 4, 5})}, nullptr, "batch dimensions"},
      {"broadcast_to", "BroadcastTo", {F({3}), MakeInt32(Shape{2}, {2, 4})}, tidx("Tidx"), "cannot broadcast [3] to [2,4]"},
      {"fill huge",
       "Fill",
       {MakeInt32(Shape{2}, {1 << 30, 1 << 30}), F({})},
       tidx("index_type"),
       "cannot allocate",
       Code::kResourceExhausted},
      {"reverse repeated axis",
       "ReverseV2",
       {F({2, 3}), MakeInt32(Shape{2}, {1, -1})},
       tidx("Tidx"),
       "axis 1 is given more than once"},
      {"reverse axis", "ReverseV2", {F({2, 3}), MakeInt32(Shape{1}, {2})}, tidx("Tidx"), "axis 2 is out of range"},
      {"reverse axis rank", "ReverseV2", {F({2, 3}), MakeInt32(Shape{}, {0})}, tidx("Tidx"), "axis must be a vector"},
      {"bias size", "BiasAdd", {F({2, 3}), F({4})}, nullptr, "bias of size 4 does not match"},
      {"bias grad rank", "BiasAddGrad", {F({3})}, nullptr, "out_backprop must have rank >= 2, got [3]"},
      {"softmax scalar", "Softmax", {F({})}, nullptr, "logits must have rank >= 1"},
      {"batch norm scale",
       "FusedBatchNormV3",
       {F({2, 2, 2, 3}), F({4}), F({3}), F({0}), F({0})},
       batch_norm(0.5f),
       "input 1 must be a vector of 3 channels, got [4]"},
      {"batch norm running mean",
       "FusedBatchNormV3",
       {F({2, 2, 2, 3}), F({3}), F({3}), F({0}), F({0})},
       batch_norm(0.5f),
       "When exponential_avg_factor != 1, input 3 must have the 3 elements of x's channels, got 0"},
      {"batch norm grad shapes",
       "FusedBatchNormGradV3",
       {F({2, 2, 2, 3}), F({2, 2, 3, 3}), F({3}), F({3}), F({3}), F({0})},
       batch_norm(1.0f),
       "y_backprop [2,2,2,3] and x [2,2,3,3] differ"},
      {"select shapes",
       "Select",
       {testing::MakeTensor(DType::kBool, Shape{2}, {1, 0}), F({2, 3}), F({3, 2})},
       nullptr,
       "x and y must have the same shape"},
  };
  for (const Case& c : cases) {
    if (std::string(c.op) == "Select") {
      // Select's first input is bool; its T attr comes from x.
      Case fixed = c;
      fixed.attrs = [](tensorflow::NodeDef* n) { testing::SetAttrType(n, "T", DType::kFloat); };
      ExpectRunError(fixed);
    } else if (std::string(c.op) == "Fill") {
      Case fixed = c;
      fixed.attrs = [](tensorflow::NodeDef* n) { testing::SetAttrType(n, "T", DType::kFloat); };
      ExpectRunError(fixed);
    } else {
      ExpectRunError(c);
    }
  }
}

TEST(OpErrors, ConcatAndPackCheckTheirParts) {
  GraphBuilder b;
  b.Placeholder("a", DType::kFloat, {}, true);
  b.Placeholder("c", DType::kFloat, {}, true);
  auto* cat = b.Op("cat", "ConcatV2", {"a", "c", b.Const("axis", MakeInt32(Shape{}, {0}))});
  testing::SetAttrInt(cat, "N", 2);
  testing::SetAttrType(cat, "Tidx", DType::kInt32);
  auto* pack = b.Op("pack", "Pack", {"a", "c"});
  testing::SetAttrInt(pack, "N", 2);
  auto s = testing::MakeSession(b.graph_def());
  std::vector<Tensor> out;
  Status st = s->Run({{"a", F({2, 3})}, {"c", F({2, 4})}}, {"cat"}, {}, &out);
  EXPECT_NE(st.message().find("node 'cat' (ConcatV2): input 1 has shape [2,4], which does not match"), std::string::npos)
      << st.message();
  st = s->Run({{"a", F({2, 3})}, {"c", F({2, 4})}}, {"pack"}, {}, &out);
  EXPECT_NE(st.message().find("node 'pack' (Pack): inputs must have the same shape"), std::string::npos) << st.message();
  // Along axis 1 the same inputs concatenate fine.
  st = s->Run({{"a", F({3, 2})}, {"c", F({4, 2})}}, {"cat"}, {}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out[0].shape(), (Shape{7, 2}));
}

}  // namespace
}  // namespace graphjit
