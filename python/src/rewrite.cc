#include "python/src/rewrite.h"

#include "ir/graph.h"
#include "ir/graphdef.h"
#include "passes/lower_bias_add_grads.h"
#include "passes/lower_unary_ops_compositions.h"

namespace graphjit {

namespace {

// TensorFlow's fused ops written as the ops they are made of (BiasAddGrad, ranked by
// TensorFlow's shapes; _UnaryOpsComposition); the nodes they add are typed as the nodes
// they come from. Returns whether they changed the graph.
StatusOr<bool> LowerTensorFlowOps(Graph& graph, const PassContext& context, TensorFlowTypes& types) {
  auto rank_of = [&types](const Graph& g, TensorId t) {
    auto it = types.find(g.node(t.node)->name);
    if (it == types.end() || t.index >= static_cast<int>(it->second.size())) return -1;
    const tensorflow::TensorShapeProto& shape = it->second[t.index].shape;
    return shape.unknown_rank() ? -1 : shape.dim_size();
  };
  std::map<std::string, std::string> steps;  // a node the lowering added -> its composition
  PassManager pm;
  pm.set_verify(false);  // the graph holds TensorFlow's own ops, which graphjit does not know
  pm.Add("lower_bias_add_grads", LowerBiasAddGradsPass(rank_of));
  pm.Add("lower_unary_ops_compositions", LowerUnaryOpsCompositionsPass(&steps));
  GJ_ASSIGN_OR_RETURN(bool changed, pm.Run(graph, context));
  for (const auto& [step, composition] : steps)
    if (auto typed = types.find(composition); typed != types.end()) types[step] = typed->second;
  return changed;
}

}  // namespace

StatusOr<TensorFlowRewrite> ClusterForTensorFlow(const TensorFlowGraphFacts& facts, const SessionOptions& options,
                                                 tensorflow::GraphDef* graph_def) {
  TensorFlowRewrite result;
  auto imported = ImportGraphDef(*graph_def);
  if (!imported.ok()) {
    result.skipped = imported.status().message();
    return result;
  }
  Graph& graph = *imported;
  const PassContext context({}, {}, std::vector<std::string>(facts.preserve.begin(), facts.preserve.end()));
  TensorFlowTypes types = facts.outputs;  // with the nodes the lowerings add
  GJ_ASSIGN_OR_RETURN(const bool lowered, LowerTensorFlowOps(graph, context, types));
  PassManager pm;
  pm.set_verify(false);
  pm.Add("cluster_for_tensorflow", ClusterForTensorFlowPass(&types, options, &result));
  GJ_ASSIGN_OR_RETURN(const bool clustered, pm.Run(graph, context));
  if (lowered || clustered) *graph_def = ExportGraphDef(graph);
  return result;
}

}  // namespace graphjit
