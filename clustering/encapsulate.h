// Encapsulation: every cluster becomes one `_JitCluster` node whose body (attr `_body`,
// a GraphDef) holds the cluster's nodes; consumers outside read the cluster's outputs. The
// body's first nodes are its inputs, Placeholders _arg_0, _arg_1, ... (attr `Tin` their types).
//
// The original nodes stay in the graph, marked with `_jit_cluster`, but nothing reads
// them: a fetched tensor of a member is an output of its cluster (and `fetched` names
// them), so they run only if a later run fetches an internal tensor of a cluster (which
// then is recomputed op by op, with the same result). A fetch or feed of a tensor that
// became a cluster output resolves to that output through the node's `_aliases` attr.
#pragma once

#include <set>

#include "clustering/find_clusters.h"

namespace graphjit {

// Which constants a cluster's body holds: the one rule of both hosts, graphjit's sessions
// and the TensorFlow plugin. A constant it copies is seen by the compiler, which
// specializes on its value (axes, shapes, GELU's 1 / sqrt 2); any other (a weight) is an
// input of the cluster, computed once and kept where the cluster runs.
struct EncapsulationPolicy {
  int64_t max_copied_constant_elements = 16;
  // Whether a Const node with this value's shape (and with control inputs or not) is copied.
  bool CopiesConstant(const Shape& shape, bool has_control_inputs) const {
    return !has_control_inputs && shape.IsFullyDefined() && shape.num_elements() <= max_copied_constant_elements;
  }
};

// Rewrites `graph` (whose analysis is `analyzed`). Returns whether anything changed.
StatusOr<bool> EncapsulateClusters(const AnalyzedGraph& analyzed, const Clustering& clustering, Graph* graph,
                                   const std::set<TensorId>& fetched = {}, const EncapsulationPolicy& policy = {});

}  // namespace graphjit
