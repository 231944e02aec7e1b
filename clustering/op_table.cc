#include "clustering/op_table.h"

namespace graphjit {

const char* OpFamilyName(OpFamily family) {
  switch (family) {
    case OpFamily::kElementwise: return "elementwise";
    case OpFamily::kBroadcast: return "broadcast";
    case OpFamily::kReduction: return "reduction";
    case OpFamily::kSoftmax: return "softmax";
    case OpFamily::kShape: return "shape";
    case OpFamily::kDataMovement: return "data-movement";
    case OpFamily::kGemm: return "gemm";
  }
  return "?";
}

const std::vector<OpTableEntry>& OpTable() {
  using F = OpFamily;
  constexpr JitLevel k1 = JitLevel::kOn1, k2 = JitLevel::kOn2;
  static const std::vector<OpTableEntry> table = {
      // Elementwise.
      {"Abs", F::kElementwise, k1}, {"Add", F::kElementwise, k1}, {"AddN", F::kElementwise, k1},
      {"AddV2", F::kElementwise, k1}, {"Cast", F::kElementwise, k1}, {"Ceil", F::kElementwise, k1},
      {"DivNoNan", F::kElementwise, k1}, {"Elu", F::kElementwise, k1}, {"Equal", F::kElementwise, k1},
      {"Erf", F::kElementwise, k1}, {"Erfc", F::kElementwise, k1}, {"Exp", F::kElementwise, k1}, {"Floor", F::kElementwise, k1},
      {"FloorDiv", F::kElementwise, k1}, {"FloorMod", F::kElementwise, k1},
      {"Greater", F::kElementwise, k1}, {"GreaterEqual", F::kElementwise, k1}, {"LeakyRelu", F::kElementwise, k1},
      {"Less", F::kElementwise, k1}, {"LessEqual", F::kElementwise, k1}, {"Log", F::kElementwise, k1},
      {"Log1p", F::kElementwise, k1}, {"LogicalAnd", F::kElementwise, k1}, {"LogicalNot", F::kElementwise, k1},
      {"LogicalOr", F::kElementwise, k1}, {"Maximum", F::kElementwise, k1}, {"Minimum", F::kElementwise, k1},
      {"Mul", F::kElementwise, k1}, {"Neg", F::kElementwise, k1}, {"NotEqual", F::kElementwise, k1},
      {"Pow", F::kElementwise, k1}, {"RealDiv", F::kElementwise, k1}, {"Reciprocal", F::kElementwise, k1},
      {"Relu", F::kElementwise, k1}, {"Relu6", F::kElementwise, k1}, {"Round", F::kElementwise, k1},
      {"Rsqrt", F::kElementwise, k1}, {"Select", F::kElementwise, k1}, {"SelectV2", F::kElementwise, k1},
      {"Selu", F::kElementwise, k1}, {"Sigmoid", F::kElementwise, k1}, {"Sign", F::kElementwise, k1},
      {"Softplus", F::kElementwise, k1}, {"Softsign", F::kElementwise, k1}, {"Sqrt", F::kElementwise, k1}, {"Square", F::kElementwise, k1},
      {"SquaredDifference", F::kElementwise, k1}, {"Sub", F::kElementwise, k1}, {"Tanh", F::kElementwise, k1},
      {"ReluGrad", F::kElementwise, k1}, {"Relu6Grad", F::kElementwise, k1}, {"TanhGrad", F::kElementwise, k1},
      {"SigmoidGrad", F::kElementwise, k1},
      // Broadcasts.
      {"BiasAdd", F::kBroadcast, k1}, {"BroadcastTo", F::kBroadcast, k1},
      // Reductions and row ops.
      {"Sum", F::kReduction, k1}, {"Mean", F::kReduction, k1}, {"Max", F::kReduction, k1},
      {"Min", F::kReduction, k1}, {"Prod", F::kReduction, k1}, {"ArgMax", F::kReduction, k1},
      {"ArgMin", F::kReduction, k1}, {"Softmax", F::kSoftmax, k1}, {"LogSoftmax", F::kSoftmax, k1},
      // Shape-only: free inside a fused kernel, so they do not count towards the size.
      {"Reshape", F::kShape, k1, false}, {"ExpandDims", F::kShape, k1, false}, {"Squeeze", F::kShape, k1, false},
      {"Identity", F::kShape, k1, false}, {"StopGradient", F::kShape, k1, false},
      // Data movement.
      {"Transpose", F::kDataMovement, k1}, {"ConcatV2", F::kDataMovement, k1},
      // GEMMs: fusion heroes, only when clustering aggressively.
      {"MatMul", F::kGemm, k2}, {"BatchMatMulV2", F::kGemm, k2}, {"_FusedMatMul", F::kGemm, k2},
  };
  return table;
}

const OpTableEntry* FindOpEntry(std::string_view op) {
  for (const auto& e : OpTable())
    if (op == e.op) return &e;
  return nullptr;
}

}  // namespace graphjit
