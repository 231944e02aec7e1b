// The elemental emitter: one TensorFlow op, computed on one element, as MLIR arith/math
// operations on scalars. Every fusion emitter (loop, reduction, GEMM epilogue) builds its
// element computations with it; floating-point values are computed in f32.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace graphjit {

// Writes MLIR lines into a block body, with fresh SSA names.
class MlirWriter {
 public:
  // Names are "<prefix>N": writers with distinct prefixes can share one function.
  explicit MlirWriter(std::string prefix = "%v") : prefix_(std::move(prefix)) {}
  std::string Fresh() { return prefix_ + std::to_string(next_++); }
  // Emits "%vN = <rhs>" and returns %vN.
  std::string Let(const std::string& rhs) {
    std::string name = Fresh();
    code_ += "    " + name + " = " + rhs + "\n";
    return name;
  }
  void Line(const std::string& line) { code_ += "    " + line + "\n"; }
  const std::string& code() const { return code_; }

 private:
  std::string prefix_;
  int next_ = 0;
  std::string code_;
};

// The scalar type an element of `dtype` is computed in: "f32" for the float types, "i1"
// for bool; empty if the elemental emitter does not take it.
std::string ElementType(DType dtype);

// Whether `op` is one the elemental emitter computes (for some element types). Whether
// it is expensive or approximate is the op's trait (runtime/op_traits.h).
bool IsElementalOp(const std::string& op);
// Every op it computes, in name order.
std::vector<std::string> ElementalOps();
// Empty if EmitElemental takes `op` on data operands of these computed types (ElementType),
// else why not.
std::string WhyNotElemental(const std::string& op, const std::vector<std::string>& types);

// erf(s x) of an f32 `x`, for a constant s in [2^-16, 2^16]: s folded into the fit's
// coefficients (GELU's erf(x / sqrt 2) costs no multiplication for the scale).
std::string ScaledErf(const std::string& x, double s, MlirWriter& w);

// Emits `node`'s op on scalar operands of the given element types; returns the result's
// SSA name. Unimplemented if the op (or its attrs) is not supported.
StatusOr<std::string> EmitElemental(const Node& node, const std::vector<std::string>& operands,
                                    const std::vector<std::string>& types, MlirWriter& w);

}  // namespace graphjit
