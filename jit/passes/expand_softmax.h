// The pass `expand_softmax`: the row ops written as the primitive ops they are made of.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphjit {

// Rewrites Softmax, LogSoftmax and SoftmaxCrossEntropyWithLogits as the primitive ops
// they are made of (Max, Sub, Exp, Sum, Reciprocal, Mul; Log), so that the fusion planner
// sees their row reductions; the Max is marked a row shift (kRowShiftAttr). The last node
// keeps the op's name; the cross-entropy's second output (backprop) becomes a node of its
// own, which its readers and the tensors named in `outputs` (may be null) then name.
// Returns whether it rewrote any.
bool ExpandSoftmax(Graph& graph, std::vector<std::string>* outputs);

}  // namespace graphjit
