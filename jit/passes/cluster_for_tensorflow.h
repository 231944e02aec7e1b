// The pass `cluster_for_tensorflow`: clustering inside TensorFlow. The graph is the one
// TensorFlow's Grappler hands the plugin; each cluster graphjit compiles becomes one
// GraphjitCluster node.
//
// The graph holds TensorFlow's own ops too (variables, optimizer updates, _Arg/_Retval,
// ops graphjit does not know, nodes on another device). Those stay TensorFlow's:
// clustering sees the nodes graphjit knows, with a Placeholder standing in for every
// output of another node they read. The Placeholder has control inputs from the known
// nodes that reach that node through TensorFlow's own, so a path through TensorFlow's nodes
// still counts when clustering checks that merging two nodes creates no cycle.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/proto/tensor_shape.pb.h"
#include "passes/pass_manager.h"
#include "runtime/session_options.h"

namespace graphjit {

// A node output as TensorFlow inferred it.
struct TensorProperties {
  int dtype = 0;  // TensorFlow's DataType
  tensorflow::TensorShapeProto shape;
};

// Each node's outputs, by node name (TF_GetOutputPropertiesList).
using TensorFlowTypes = std::map<std::string, std::vector<TensorProperties>>;

struct TensorFlowRewrite {
  int clusters = 0;
  int nodes_clustered = 0;
  std::map<std::string, int> ops;  // of the clustered nodes, by op
  std::string skipped;             // why the graph was left as it is, if it was
};

// The op TensorFlow runs for a cluster: inputs `args` (Tin), outputs `results` (Tout);
// attr `body` holds the cluster as a serialized GraphDef, `inputs` names its Placeholders
// (one per input) and `outputs` the body tensors that are the results.
inline constexpr char kClusterOp[] = "GraphjitCluster";

inline constexpr char kClusterForTensorFlow[] = "cluster_for_tensorflow";

// The pass, for `options` (its JIT level, cluster sizes, excluded ops). Nodes that carry
// _XlaCompile/_XlaScope (tf.xla.experimental.jit_scope) are clustered at every level, and
// lose those attrs with the rest of the node, so XLA does not take them again. The nodes
// TensorFlow must keep (fetches, feeds) are the context's preserved ones.
//  - `types` (may be null): TensorFlow's types of the node outputs. Without them, graphjit's
//    shape inference types the graph, and a graph with an op graphjit does not know is left
//    as it is.
//  - `result` (may be null): what was clustered, or why the graph was left as it is (the
//    pass then says it changed nothing).
PassFunction ClusterForTensorFlowPass(const TensorFlowTypes* types, const SessionOptions& options, TensorFlowRewrite* result);

}  // namespace graphjit
