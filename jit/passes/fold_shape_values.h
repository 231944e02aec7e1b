// The pass `fold_shape_values`: what decides shapes (reduction axes, Reshape's shape,
// Transpose's perm, ...), computed from the inputs' shapes into constants, so that the
// fusion planner and the emitters see static shapes.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace graphjit {

// Evaluates each node that decides a shape (NodesDecidingShapes) and is not a constant into
// a Const of its value (its name kept; its control inputs dropped), running the graph on
// `feeds` (node name -> its output 0's value; only the shapes of their values are read).
// Leaves the graph as is when a fed node's value, not its shape, decides one. Unimplemented
// for a node that decides a shape and has several outputs. Returns whether it changed
// anything.
StatusOr<bool> FoldShapeValues(Graph& graph, const std::map<std::string, Tensor>& feeds);

// Feeds for FoldShapeValues when the inputs' values are not at hand: zeros for each
// Placeholder of a static shape.
std::map<std::string, Tensor> ZeroFeeds(const Graph& graph);

}  // namespace graphjit
