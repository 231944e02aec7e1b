#include <set>

#include "passes/graph_edit.h"
#include "passes/passes.h"

namespace graphjit {

namespace {

// Ops that only matter for training or debugging and forward their input unchanged.
bool IsTrainingForwarder(const std::string& op) {
  static const std::set<std::string, std::less<>> ops = {"Identity", "StopGradient",  "PreventGradient",
                                                         "Snapshot", "CheckNumerics", "CheckNumericsV2"};
  return ops.count(op) > 0;
}

// Removes every node that no fetch or target needs (through data and control edges).
int PruneToFetches(Graph& graph, const PassContext& context) {
  const int n = graph.num_nodes();
  std::vector<bool> needed(n, false);
  std::vector<int> work;
  for (int id = 0; id < n; ++id)
    if (context.IsPreserved(*graph.node(id))) work.push_back(id);
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    if (needed[id]) continue;
    needed[id] = true;
    for (const TensorId& in : graph.node(id)->inputs) work.push_back(in.node);
    for (int c : graph.node(id)->control_inputs) work.push_back(c);
  }
  std::vector<bool> remove(n);
  int removed = 0;
  for (int id = 0; id < n; ++id) removed += remove[id] = !needed[id];
  if (removed) graph.RemoveNodes(remove);
  return removed;
}

}  // namespace

StatusOr<bool> Prune(Graph& graph, const PassContext& context) {
  bool changed = PruneToFetches(graph, context) > 0;
  // Bypass training-only forwarders and NoOps that only relay one dependency.
  std::vector<int> bypassed;
  const auto out_edges = graph.ComputeOutEdges();
  Consumers consumers = ComputeConsumers(graph);
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = *graph.node(id);
    if (context.IsPreserved(node)) continue;
    if (IsTrainingForwarder(node.op) && node.inputs.size() == 1) {
      Bypass(graph, id, node.inputs[0], consumers);
      bypassed.push_back(id);
    } else if (node.op == "NoOp" && node.inputs.empty() && (node.control_inputs.size() <= 1 || out_edges[id].size() <= 1)) {
      Bypass(graph, id, {-1, 0}, consumers);
      bypassed.push_back(id);
    }
  }
  changed |= RemoveDeadNodes(graph, context, bypassed) > 0;
  return changed;
}

}  // namespace graphjit
