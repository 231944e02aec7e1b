// The pass `lower_bias_add_grads`: TensorFlow's BiasAddGrad as the Sum it is.
#pragma once

#include <functional>

#include "passes/pass_manager.h"

namespace graphjit {

// A tensor's rank, or -1 where it is not known.
using RankOf = std::function<int(const Graph& graph, TensorId tensor)>;

// Rewrites the BiasAddGrad node `id`, whose input has rank `rank` (-1: unknown), as a Sum
// over every axis but the channels', if TensorFlow takes that rank (at least 2; 3 for
// NCHW): an op TensorFlow runs too, which clustering takes (with the gradient's producers)
// into one reduction. The node keeps its name; the axes are a Const named
// "<node>/graphjit_axes". Returns whether it rewrote it.
bool LowerBiasAddGrad(Graph& graph, int id, int rank);

// LowerBiasAddGrad on each BiasAddGrad, ranked by `rank_of`. Returns whether it rewrote any.
bool LowerBiasAddGrads(Graph& graph, const RankOf& rank_of);

// lower_bias_add_grads; ranks from `rank_of`, or (null) from graphjit's shape inference,
// which then must accept the graph.
PassFunction LowerBiasAddGradsPass(RankOf rank_of);

}  // namespace graphjit
