// The plugin's rewrite of the graph TensorFlow's Grappler hands it: TensorFlow's fused ops
// graphjit does not run written as the ops they are made of, then each cluster graphjit
// compiles replaced by one GraphjitCluster node (jit/passes/cluster_for_tensorflow.h).
#pragma once

#include <set>
#include <string>

#include "ir/proto/graph.pb.h"
#include "ir/status.h"
#include "jit/passes/cluster_for_tensorflow.h"
#include "runtime/session_options.h"

namespace graphjit {

struct TensorFlowGraphFacts {
  TensorFlowTypes outputs;  // each node's outputs as TensorFlow inferred them
  // Nodes that must keep their name and their outputs (fetches, feeds, ...).
  std::set<std::string> preserve;
};

// Rewrites `graph` for `options` (its JIT level, cluster sizes, excluded ops): the passes
// lower_bias_add_grads, lower_unary_ops_compositions and cluster_for_tensorflow.
StatusOr<TensorFlowRewrite> ClusterForTensorFlow(const TensorFlowGraphFacts& facts, const SessionOptions& options,
                                                 tensorflow::GraphDef* graph);

}  // namespace graphjit
