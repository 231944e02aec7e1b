#include <algorithm>
#include <set>
#include <unordered_map>

#include "passes/graph_edit.h"
#include "passes/passes.h"

namespace graphjit {

namespace {

bool IsCommutative(const std::string& op) {
  static const std::set<std::string, std::less<>> ops = {
      "Add",       "AddV2",     "AddN",       "Mul",       "Maximum",           "Minimum",
      "Equal",     "NotEqual",  "LogicalAnd", "LogicalOr", "SquaredDifference", "BitwiseAnd",
      "BitwiseOr", "BitwiseXor"};
  return ops.count(op) > 0;
}

// Everything that decides a pure node's outputs: op, device, inputs (in order unless the
// op is commutative), control inputs, attrs. Two nodes with the same key compute the same.
std::string Key(const Node& node) {
  std::vector<std::string> inputs;
  for (const TensorId& in : node.inputs) inputs.push_back(std::to_string(in.node) + ":" + std::to_string(in.index));
  if (IsCommutative(node.op)) std::sort(inputs.begin(), inputs.end());
  std::vector<int> controls = node.control_inputs;
  std::sort(controls.begin(), controls.end());
  std::string key = node.op + "|" + node.device + "|";
  for (const std::string& in : inputs) key += in + ",";
  key += "|";
  for (int c : controls) key += std::to_string(c) + ",";
  for (const auto& [name, value] : node.attrs) {
    std::string bytes;
    value.SerializeToString(&bytes);
    key += "|" + name + "=" + std::to_string(bytes.size()) + ":" + bytes;
  }
  return key;
}

}  // namespace

StatusOr<bool> EliminateCommonSubexpressions(Graph& graph, const PassContext& context) {
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph a, AnalyzeGraph(graph.Clone()));
  std::unordered_map<std::string, int> first;  // key -> the node that stays
  std::vector<int> duplicates;
  // In dataflow order, so a node's inputs are already replaced by their representatives.
  for (int id : a.topo_order) {
    const Node& node = *graph.node(id);
    const NodeInfo& info = a.info(id);
    if (info.op->stateful || info.dtypes.empty() || node.op == "Placeholder" || node.op == "PlaceholderWithDefault" ||
        context.IsFed(node))
      continue;
    auto [it, inserted] = first.emplace(Key(node), id);
    if (inserted || context.IsPreserved(node)) continue;
    ReplaceNode(graph, id, it->second);
    duplicates.push_back(id);
  }
  return RemoveDeadNodes(graph, context, duplicates) > 0;
}

}  // namespace graphjit
