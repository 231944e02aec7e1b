// The pass `specialize_inputs` (the JIT's, per call): a cluster body's inputs, the
// placeholders `_arg_0`, `_arg_1`, ..., given the shapes of one call's inputs, and those
// whose values decide shapes (reduction axes, Reshape's shape, Transpose's perm, ConcatV2's
// axis, ...) replaced by those values.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace graphjit {

// The name of a body's input `i`: `_arg_i`.
std::string BodyInputName(size_t i);

// The nodes whose values decide shapes: what the shape operands read, transitively (up to
// the ops that read a shape, not data).
std::set<int> NodesDecidingShapes(const Graph& graph);

// For each of the body's `num_inputs` inputs, whether its value decides a shape, an axis
// or a permutation (then it is part of the signature).
std::vector<bool> ValueInputs(const Graph& graph, int num_inputs);

// Gives each input `_arg_i` the static shape of `inputs[i]`, or, where `value_inputs[i]`,
// makes it a Const of that value. Internal for a body that lacks an input. Returns whether
// it changed anything.
StatusOr<bool> SpecializeInputs(Graph& graph, const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs);

}  // namespace graphjit
