#include "jit/passes/fold_shape_values.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "ir/attr.h"
#include "jit/passes/specialize_inputs.h"
#include "runtime/const_node.h"
#include "runtime/executor.h"
#include "runtime/op_traits.h"

namespace graphjit {

StatusOr<bool> FoldShapeValues(Graph& graph, const std::map<std::string, Tensor>& feeds) {
  // Constants and inputs only (the most common case): nothing to compute, nothing to analyze.
  const std::set<int> deciders = NodesDecidingShapes(graph);
  if (std::all_of(deciders.begin(), deciders.end(),
                  [&](int id) { return TraitsOf(graph.node(id)->op).pattern == OpPattern::kSource; }))
    return false;
  GJ_ASSIGN_OR_RETURN(const AnalyzedGraph analyzed, AnalyzeGraph(graph.Clone()));
  std::vector<int> deciding;
  for (int id : NodesDecidingShapes(analyzed.graph)) {
    if (feeds.count(analyzed.graph.node(id)->name)) return false;  // a value not known here
    if (!analyzed.constants[id].valid()) deciding.push_back(id);
  }
  if (deciding.empty()) return false;
  std::vector<TensorId> fetches;
  for (int id : deciding) {
    if (analyzed.info(id).dtypes.size() != 1)
      return Unimplemented(NodeLabel(*analyzed.graph.node(id)) + " decides a shape and has several outputs");
    fetches.push_back({id, 0});
  }
  std::vector<TensorId> feed_ids;
  std::vector<Tensor> feed_values;
  for (const auto& [name, value] : feeds) {
    const Node* node = analyzed.graph.FindNode(name);
    if (node == nullptr) return Internal("no node '" + name + "' to feed");
    feed_ids.push_back({node->id, 0});
    feed_values.push_back(value);
  }
  GJ_ASSIGN_OR_RETURN(ExecutionPlan plan, BuildExecutionPlan(analyzed, feed_ids, fetches, {}));
  ExecutorOptions options;
  options.allocator = Allocator::Default();
  std::vector<Tensor> values;
  GJ_RETURN_IF_ERROR(Execute(analyzed, plan, feed_values, options, &values));
  for (size_t i = 0; i < deciding.size(); ++i) {
    // Its value is known now: what it waited for no longer matters.
    ReplaceWithConst(graph, deciding[i], values[i]);
    graph.node(deciding[i])->control_inputs.clear();
  }
  return true;
}

std::map<std::string, Tensor> ZeroFeeds(const Graph& graph) {
  static constexpr char kPlaceholder[] = "Placeholder";
  std::map<std::string, Tensor> feeds;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = *graph.node(id);
    if (node.op != kPlaceholder) continue;
    const auto dtype = GetTypeAttr(node, "dtype");
    const tensorflow::AttrValue* shape = node.FindAttr("shape");
    if (!dtype.ok() || shape == nullptr) continue;
    const Shape static_shape = ShapeFromProto(shape->shape());
    if (!static_shape.IsFullyDefined()) continue;
    auto zeros = Tensor::Allocate(*dtype, static_shape);
    if (!zeros.ok()) continue;
    if (zeros->bytes() > 0) std::memset(zeros->raw(), 0, zeros->bytes());
    feeds.emplace(node.name, *std::move(zeros));
  }
  return feeds;
}

}  // namespace graphjit
