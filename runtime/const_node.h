// Const nodes, made the one way every graph rewrite makes them: the value's dtype and the
// value as a TensorProto, on a node named by UniqueName.
#pragma once

#include <string>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace graphjit {

// Adds a Const node holding `value`, named UniqueName(graph, base).
Node* AddConst(Graph& graph, const std::string& base, const Tensor& value, const std::string& device);

// Replaces `node` in place by a Const holding `value` (its name, control inputs and internal
// attrs stay).
void ReplaceWithConst(Graph& graph, int node, const Tensor& value);

}  // namespace graphjit
