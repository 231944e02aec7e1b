// The pass `mark_row_shifts`: marks the Max of a softmax written out as ops, so that the
// emitter folds it without the IEEE order of NaNs and signed zeros.
#pragma once

#include <set>
#include <string>

#include "ir/graph.h"

namespace graphjit {

// Set (true) on a row's max that only shifts the row before exp (ExpandSoftmax writes it,
// MarkRowShifts finds it): folded without the IEEE order of NaNs and signed zeros.
inline constexpr char kRowShiftAttr[] = "_graphjit_row_shift";

// Marks (kRowShiftAttr) the Max of a softmax written out, exp(x - max(x)) / sum(exp(x -
// max(x))) with max and sum over the same axes, when its max, difference, exp and sum feed
// nothing else and are not among the nodes named in `fetched`: a NaN in the row reaches
// every quotient through the sum, as through the max. Returns whether it marked any.
bool MarkRowShifts(Graph& graph, const std::set<std::string>& fetched);

}  // namespace graphjit
