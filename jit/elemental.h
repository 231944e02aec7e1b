// The elemental emitter: one TensorFlow op, computed on one element, as MLIR arith/math
// operations on scalars (through the typed builder, jit/ir_builder.h). Every fusion emitter
// (loop, reduction, GEMM epilogue) builds its element computations with it; floating-point
// values are computed in f32.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "jit/ir_builder.h"

namespace graphjit {

// The scalar type an element of `dtype` is computed in: f32 for the float types, i1 for
// bool; no type if the elemental emitter does not take it.
emitter::Type ElementType(DType dtype);

// Whether `op` is one the elemental emitter computes (for some element types). Whether
// it is expensive or approximate is the op's trait (runtime/op_traits.h).
bool IsElementalOp(const std::string& op);
// Every op it computes, in name order.
std::vector<std::string> ElementalOps();
// Empty if EmitElemental takes `op` on data operands of these computed types (ElementType),
// else why not.
std::string WhyNotElemental(const std::string& op, const std::vector<emitter::Type>& types);

// erf(s x) of an f32 `x`, for a constant s in [2^-16, 2^16]: s folded into the fit's
// coefficients (GELU's erf(x / sqrt 2) costs no multiplication for the scale).
emitter::Value ScaledErf(const emitter::Value& x, double s, emitter::Builder& b);

// `node`'s op on scalar operands (of computed types); Unimplemented if the op (or its
// attrs) is not supported.
StatusOr<emitter::Value> EmitElemental(const Node& node, const std::vector<emitter::Value>& operands, emitter::Builder& b);

}  // namespace graphjit
