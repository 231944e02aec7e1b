#include "runtime/op_traits.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace graphjit {

namespace {

using P = OpPattern;
using R = OpReducer;
constexpr JitLevel kOn1 = JitLevel::kOn1, kOn2 = JitLevel::kOn2, kNever = JitLevel::kOff;

// Elementwise ops, clustered from ON_1; `cost`: 0 cheap, 1 expensive, 2 expensive and
// approximate (exp- and log-based: computed by polynomials), 3 approximate only.
OpTraitsEntry Elementwise(const char* op, int cost = 0) {
  OpTraits t{P::kElementwise, kOn1};
  t.expensive = cost == 1 || cost == 2;
  t.approximate = cost >= 2;
  return {op, t};
}
OpTraitsEntry Of(const char* op, OpPattern pattern, JitLevel level, int weight = 1) {
  OpTraits t{pattern, level};
  t.weight = weight;
  return {op, t};
}
OpTraitsEntry GpuOnly(OpTraitsEntry entry, const char* why) {
  entry.traits.gpu_only = why;
  return entry;
}
OpTraitsEntry FloatAsFloat32OnGpusOnly(OpTraitsEntry entry, const char* why) {
  entry.traits.float_as_float32_on_gpus_only = why;
  return entry;
}
OpTraitsEntry Reduction(const char* op, OpReducer reducer) {
  OpTraits t{P::kReduction, kOn1, reducer};
  return {op, t};
}

// Why some ops are compiled for GPUs only.
constexpr char kIndexOutOfRange[] = "on the CPU an index out of range is an error";
constexpr char kCudnn[] = "on the CPU its kernel runs; on a GPU, cuDNN's";
constexpr char kOwnKernel[] = "on the CPU its kernel runs";
// Why a float Range is compiled for GPUs only: the compiled kernel computes start + i * step,
// as TensorFlow's GPU kernel does; its CPU kernel adds the step once per element (and a
// 16-bit Range would round at each step).
constexpr char kStepAddedPerElement[] = "on the CPU, TensorFlow adds the step once per element";

std::vector<OpTraitsEntry> MakeTable() {
  std::vector<OpTraitsEntry> table = {
      // Elementwise: arithmetic, comparisons, logic, activations and their gradients.
      Elementwise("Abs"),
      Elementwise("Add"),
      Elementwise("AddN"),
      Elementwise("AddV2"),
      Elementwise("Cast"),
      Elementwise("Ceil"),
      Elementwise("Cos", 2),
      Elementwise("ClipByValue"),
      Elementwise("DivNoNan"),
      Elementwise("Elu", 2),
      Elementwise("Equal"),
      Elementwise("Erf", 2),
      Elementwise("Erfc", 2),
      Elementwise("Exp", 2),
      Elementwise("Floor"),
      Elementwise("FloorDiv"),
      Elementwise("FloorMod"),
      Elementwise("Greater"),
      Elementwise("GreaterEqual"),
      Elementwise("IsFinite"),
      Elementwise("IsInf"),
      Elementwise("IsNan"),
      Elementwise("LeakyRelu"),
      Elementwise("Less"),
      Elementwise("LessEqual"),
      Elementwise("Log", 2),
      Elementwise("Log1p", 2),
      Elementwise("LogicalAnd"),
      Elementwise("LogicalNot"),
      Elementwise("LogicalOr"),
      Elementwise("Maximum"),
      Elementwise("Minimum"),
      Elementwise("Mul"),
      Elementwise("Neg"),
      Elementwise("NotEqual"),
      Elementwise("Pow", 1),
      Elementwise("RealDiv", 1),
      Elementwise("Reciprocal", 1),
      Elementwise("Relu"),
      Elementwise("Relu6"),
      Elementwise("Relu6Grad"),
      Elementwise("ReluGrad"),
      Elementwise("Round"),
      Elementwise("Rsqrt", 1),
      Elementwise("Select"),
      Elementwise("SelectV2"),
      Elementwise("Selu", 3),
      Elementwise("Sigmoid", 2),
      Elementwise("SigmoidGrad"),
      Elementwise("Sign"),
      Elementwise("Sin", 2),
      Elementwise("Softplus", 3),
      Elementwise("Softsign"),
      Elementwise("Sqrt", 1),
      Elementwise("Square"),
      Elementwise("SquaredDifference"),
      Elementwise("Sub"),
      Elementwise("Tanh", 2),
      Elementwise("TanhGrad"),
      Elementwise("Tan", 2),
      Elementwise("Asin", 2),
      Elementwise("Acos", 2),
      Elementwise("Atan", 2),
      Elementwise("Atan2", 2),
      Elementwise("Sinh", 2),
      Elementwise("Cosh", 2),
      Elementwise("Asinh", 2),
      Elementwise("Acosh", 2),
      Elementwise("Atanh", 2),
      Elementwise("Expm1", 2),
      Elementwise("Erfinv", 2),
      Elementwise("Xlogy", 2),
      Elementwise("Xlog1py", 2),
      Elementwise("Xdivy", 1),
      Of("ZerosLike", P::kElementwise, kOn1),
      Of("OnesLike", P::kElementwise, kOn1),
      Of("CheckNumerics", P::kElementwise, kNever),
      // Broadcasts, and the outputs spread from scalars: a value filled, a sequence counted out.
      Of("BiasAdd", P::kBroadcast, kOn1),
      Of("BroadcastTo", P::kBroadcast, kOn1),
      Of("Fill", P::kBroadcast, kOn1),
      FloatAsFloat32OnGpusOnly(Of("Range", P::kBroadcast, kOn1), kStepAddedPerElement),
      // Reductions, and the row ops made of them.
      Reduction("Sum", R::kSum),
      Reduction("Mean", R::kMean),
      Reduction("Max", R::kMax),
      Reduction("Min", R::kMin),
      Reduction("Prod", R::kProd),
      Reduction("ArgMax", R::kArgMax),
      Reduction("ArgMin", R::kArgMin),
      Of("All", P::kReduction, kOn1),  // lowered to Min and Max of int32 (lower_logical_reductions)
      Of("Any", P::kReduction, kOn1),
      Of("Softmax", P::kRowOp, kOn1, 2),
      Of("LogSoftmax", P::kRowOp, kOn1, 2),
      Of("SoftmaxCrossEntropyWithLogits", P::kRowOp, kOn1, 2),
      Of("SparseSoftmaxCrossEntropyWithLogits", P::kRowOp, kNever, 2),
      // Views: free inside a fused kernel, so they do not count towards the size.
      Of("Reshape", P::kView, kOn1, 0),
      Of("ExpandDims", P::kView, kOn1, 0),
      Of("Squeeze", P::kView, kOn1, 0),
      Of("Identity", P::kView, kOn1, 0),
      Of("StopGradient", P::kView, kOn1, 0),
      Of("IdentityN", P::kView, kNever, 0),
      // Data movement.
      Of("Transpose", P::kDataMovement, kOn1),
      Of("ConcatV2", P::kDataMovement, kOn1),
      Of("Pack", P::kDataMovement, kOn1),
      Of("Unpack", P::kDataMovement, kOn1),
      Of("Slice", P::kDataMovement, kOn1),
      Of("StridedSlice", P::kDataMovement, kOn1),
      Of("Split", P::kDataMovement, kOn1),
      Of("SplitV", P::kDataMovement, kOn1),
      Of("Tile", P::kDataMovement, kOn1),
      Of("ReverseV2", P::kDataMovement, kOn1),
      Of("Pad", P::kDataMovement, kOn1),
      Of("PadV2", P::kDataMovement, kOn1),
      Of("MirrorPad", P::kDataMovement, kOn1),
      GpuOnly(Of("GatherV2", P::kDataMovement, kOn1), kIndexOutOfRange),
      Of("OneHot", P::kDataMovement, kOn1),
      Of("Cumsum", P::kDataMovement, kOn1),  // a scan: each element folds its part of the axis
      Of("Cumprod", P::kDataMovement, kOn1),
      Of("DepthToSpace", P::kDataMovement, kOn1),
      Of("SpaceToDepth", P::kDataMovement, kOn1),
      Of("SpaceToBatchND", P::kDataMovement, kOn1),
      Of("BatchToSpaceND", P::kDataMovement, kOn1),
      Of("MatrixBandPart", P::kDataMovement, kOn1),
      GpuOnly(Of("GatherNd", P::kDataMovement, kOn1), kIndexOutOfRange),
      Of("ResizeBilinear", P::kDataMovement, kOn1),
      Of("ResizeNearestNeighbor", P::kDataMovement, kOn1),
      Of("Where", P::kDataMovement, kNever),
      GpuOnly(Of("_GraphjitSetRow", P::kDataMovement, kOn1), kIndexOutOfRange),
      // Shapes.
      Of("Shape", P::kShapeOnly, kNever),
      Of("Size", P::kShapeOnly, kNever),
      Of("Rank", P::kShapeOnly, kNever),
      // GEMMs: fusion heroes, only when clustering aggressively; convolutions.
      Of("MatMul", P::kGemm, kOn2),
      Of("BatchMatMulV2", P::kGemm, kOn2),
      Of("_FusedMatMul", P::kGemm, kOn2),
      Of("Einsum", P::kGemm, kNever),
      GpuOnly(Of("Conv2D", P::kConv, kOn2), kCudnn),
      GpuOnly(Of("DepthwiseConv2dNative", P::kConv, kOn2), kCudnn),
      GpuOnly(Of("_FusedConv2D", P::kConv, kOn2), kCudnn),
      GpuOnly(Of("_FusedDepthwiseConv2dNative", P::kConv, kOn2), kCudnn),
      GpuOnly(Of("Conv2DBackpropInput", P::kConv, kOn2), kCudnn),
      // Pools, batch norms and their gradients: the windows and channels they read, written out on GPUs.
      GpuOnly(Of("MaxPool", P::kOther, kOn1), kOwnKernel),
      GpuOnly(Of("AvgPool", P::kOther, kOn1), kOwnKernel),
      GpuOnly(Of("FusedBatchNormV3", P::kOther, kOn1), kOwnKernel),
      GpuOnly(Of("FusedBatchNormGradV3", P::kOther, kOn1), kOwnKernel),
      // No computation, control flow, clusters.
      Of("Const", P::kSource, kNever),
      Of("Placeholder", P::kSource, kNever),
      Of("PlaceholderWithDefault", P::kSource, kNever),
      Of("NoOp", P::kSource, kNever),
      Of("_GraphjitWhile", P::kControl, kNever),
      Of("_GraphjitIf", P::kControl, kNever),
      Of("_JitCluster", P::kCluster, kNever),
  };
  std::sort(table.begin(), table.end(), [](const auto& a, const auto& b) { return std::strcmp(a.op, b.op) < 0; });
  return table;
}

const std::vector<OpTraitsEntry>& Table() {
  static const std::vector<OpTraitsEntry> table = MakeTable();
  return table;
}

}  // namespace

const OpTraits& TraitsOf(std::string_view op) {
  static const OpTraits kDefault;
  const auto& table = Table();
  auto it =
      std::lower_bound(table.begin(), table.end(), op, [](const OpTraitsEntry& e, std::string_view name) { return e.op < name; });
  return it != table.end() && it->op == op ? it->traits : kDefault;
}

const OpTraitsEntry* OpTraitsTable(int* size) {
  *size = static_cast<int>(Table().size());
  return Table().data();
}

const char* OpPatternName(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::kOther: return "other";
    case OpPattern::kSource: return "source";
    case OpPattern::kElementwise: return "elementwise";
    case OpPattern::kBroadcast: return "broadcast";
    case OpPattern::kReduction: return "reduction";
    case OpPattern::kRowOp: return "row-op";
    case OpPattern::kGemm: return "gemm";
    case OpPattern::kConv: return "conv";
    case OpPattern::kView: return "view";
    case OpPattern::kDataMovement: return "data-movement";
    case OpPattern::kShapeOnly: return "shape-only";
    case OpPattern::kControl: return "control";
    case OpPattern::kCluster: return "cluster";
  }
  return "?";
}

const char* OpReducerName(OpReducer reducer) {
  static const char* kNames[] = {"", "sum", "mean", "max", "min", "prod", "argmax", "argmin"};
  return kNames[static_cast<int>(reducer)];
}

}  // namespace graphjit
