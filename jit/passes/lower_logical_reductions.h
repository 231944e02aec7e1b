// The pass `lower_logical_reductions`: All and Any as integer reductions the emitters
// compile on both targets.
#pragma once

#include "ir/graph.h"

namespace graphjit {

// Rewrites All(x, axes) as Min(Cast<int32>(x), axes) > 0 and Any(x, axes) as
// Max(Cast<int32>(x), axes) > 0 (keep_dims as the node's): booleans are 0 and 1, so the
// minimum is 1 where every element is true and the maximum where any is; over no elements
// Min gives INT32_MAX (All of nothing is true) and Max INT32_MIN (Any of nothing is false).
// The comparison keeps the node's name. Returns whether it rewrote any.
bool LowerLogicalReductions(Graph& graph);

}  // namespace graphjit
