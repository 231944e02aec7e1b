// Specializing a cluster body for one call: the body is a GraphDef whose inputs are the
// placeholders `_arg_0`, `_arg_1`, ...; a compiled kernel is made for the actual input
// shapes and, for the inputs that decide shapes (reduction axes, Reshape's shape,
// Transpose's perm, ConcatV2's axis, ...), the actual values.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph_analysis.h"

namespace graphjit {

// Rewrites Softmax and LogSoftmax as the primitive ops they are made of (Max, Sub, Exp,
// Sum, Reciprocal, Mul; Log), so that the fusion planner sees their row reductions. The last
// node keeps the op's name.
void ExpandSoftmax(tensorflow::GraphDef* body);

// For each of the body's `num_inputs` inputs, whether its value decides a shape, an axis
// or a permutation (then it is part of the signature).
std::vector<bool> ValueInputs(const tensorflow::GraphDef& body, int num_inputs);

struct SpecializedBody {
  AnalyzedGraph graph;
  std::vector<TensorId> args;        // per input: its placeholder, or node -1 if replaced by its value
  std::vector<TensorId> outputs;     // the body's outputs
};

// The body with the inputs' shapes set, the value inputs replaced by constants and what
// decides shapes evaluated into constants.
StatusOr<SpecializedBody> Specialize(const tensorflow::GraphDef& body, const std::vector<std::string>& outputs,
                                     const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs);

}  // namespace graphjit
