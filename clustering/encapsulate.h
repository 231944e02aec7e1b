// Encapsulation: every cluster becomes one `_JitCluster` node whose body (attr `_body`,
// a GraphDef) holds the cluster's nodes; consumers outside read the cluster's outputs.
//
// The original nodes stay in the graph, marked with `_jit_cluster`, but nothing reads
// them: they run only if a fetch names an internal tensor of a cluster (which then is
// recomputed op by op, with the same result). A fetch or feed of a tensor that became a
// cluster output resolves to that output through the node's `_aliases` attr.
#pragma once

#include "clustering/find_clusters.h"

namespace graphjit {

// Rewrites `graph` (whose analysis is `analyzed`). Returns whether anything changed.
StatusOr<bool> EncapsulateClusters(const AnalyzedGraph& analyzed, const Clustering& clustering, Graph* graph);

}  // namespace graphjit
