#include "runtime/graph_analysis.h"

#include <map>

#include "ir/graphdef.h"

namespace graphjit {

namespace {

Status CheckAllOpsKnown(const Graph& graph, const OpRegistry& registry) {
  std::map<std::string, std::vector<std::string>> missing;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    if (registry.Find(n->op) == nullptr) missing[n->op].push_back(n->name);
  }
  if (missing.empty()) return Status::Ok();
  std::string message = std::to_string(missing.size()) + " unsupported op" + (missing.size() > 1 ? "s" : "") + ": ";
  bool first = true;
  for (const auto& [op, nodes] : missing) {
    message += (first ? "" : "; ") + op + " (" + std::to_string(nodes.size()) + " node" + (nodes.size() > 1 ? "s" : "") + ": '" +
               nodes[0] + "'" + (nodes.size() > 1 ? ", ..." : "") + ")";
    first = false;
  }
  return Unimplemented(message);
}

}  // namespace

StatusOr<AnalyzedGraph> AnalyzeGraph(Graph graph, const OpRegistry& registry) {
  AnalyzedGraph a;
  // 1. Every op known, reported all at once; then cycles.
  GJ_RETURN_IF_ERROR(CheckAllOpsKnown(graph, registry));
  GJ_ASSIGN_OR_RETURN(a.topo_order, TopologicalOrder(graph));
  a.nodes.resize(graph.num_nodes());
  a.constants.resize(graph.num_nodes());

  // 2. Types and shapes in dataflow order.
  for (int id : a.topo_order) {
    const Node& n = *graph.node(id);
    NodeInfo& info = a.nodes[id];
    info.op = registry.Find(n.op);
    const int num_inputs = static_cast<int>(n.inputs.size());
    if (num_inputs < info.op->min_inputs || (info.op->max_inputs >= 0 && num_inputs > info.op->max_inputs)) {
      std::string expected = info.op->min_inputs == info.op->max_inputs ? std::to_string(info.op->min_inputs)
                             : info.op->max_inputs < 0
                                 ? "at least " + std::to_string(info.op->min_inputs)
                                 : std::to_string(info.op->min_inputs) + " to " + std::to_string(info.op->max_inputs);
      return InvalidArgument(NodeLabel(n) + ": expected " + expected + " data input" + (expected == "1" ? "" : "s") + ", got " +
                             std::to_string(num_inputs));
    }
    InferenceContext c{n, {}, {}, {}, {}, {}};
    for (int i = 0; i < num_inputs; ++i) {
      TensorId in = n.inputs[i];
      const NodeInfo& src = a.nodes[in.node];
      if (in.index >= static_cast<int>(src.dtypes.size()))
        return InvalidArgument(NodeLabel(n) + ": input " + std::to_string(i) + " refers to output " + std::to_string(in.index) +
                               " of '" + graph.node(in.node)->name + "', which has " + std::to_string(src.dtypes.size()) +
                               " output" + (src.dtypes.size() == 1 ? "" : "s"));
      c.input_dtypes.push_back(src.dtypes[in.index]);
      c.input_shapes.push_back(src.shapes[in.index]);
      const Tensor& v = a.constants[in.node];
      c.input_values.push_back(v.valid() ? &v : nullptr);
    }
    Status s = info.op->infer(c);
    if (!s.ok() && s.code() == Code::kFailedPrecondition) {
      // A shape problem: keep going with unknown shapes; it is reported when the node runs.
      c.output_dtypes.clear();
      c.output_shapes.clear();
      for (auto& shape : c.input_shapes) shape = Shape::UnknownRank();
      for (auto& value : c.input_values) value = nullptr;
      s = info.op->infer(c);
    }
    if (!s.ok()) return s;
    info.dtypes = std::move(c.output_dtypes);
    info.shapes = std::move(c.output_shapes);
    if (info.op->prepare) {
      auto state = info.op->prepare(n);
      if (!state.ok()) return state.status();
      info.state = std::move(state).value();
    }
    if (n.op == "Const") {
      auto t = TensorFromProto(n.FindAttr("value")->tensor());
      if (!t.ok()) return InvalidArgument(NodeLabel(n) + ": " + t.status().message());
      a.constants[id] = std::move(t).value();
    }
  }
  // 3. Aliases declared by `_aliases` attrs: "original_tensor_name" per output.
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const tensorflow::AttrValue* al = graph.node(id)->FindAttr("_aliases");
    if (al == nullptr) continue;
    for (int i = 0; i < al->list().s_size() && i < static_cast<int>(a.nodes[id].dtypes.size()); ++i)
      a.aliases[al->list().s(i)] = TensorId{id, i};
  }
  a.graph = std::move(graph);
  return a;
}

// Resolves "node" / "node:i" in `graph`; a tensor a graph pass moved (e.g. into a
// cluster's outputs) resolves to its new home.
StatusOr<TensorId> ResolveTensor(const AnalyzedGraph& graph, const std::string& name) {
  auto alias = graph.aliases.find(name);
  if (alias == graph.aliases.end() && name.size() > 2 && name.compare(name.size() - 2, 2, ":0") == 0)
    alias = graph.aliases.find(name.substr(0, name.size() - 2));
  if (alias != graph.aliases.end()) return alias->second;
  ParsedInput parsed;
  if (!ParseInputString(name, &parsed) || parsed.control) return InvalidArgument("malformed tensor name '" + name + "'");
  const Node* node = graph.graph.FindNode(parsed.node);
  if (node == nullptr) return NotFound("no node named '" + std::string(parsed.node) + "' in the graph");
  int outputs = static_cast<int>(graph.info(node->id).dtypes.size());
  if (parsed.index >= outputs)
    return NotFound("node '" + node->name + "' has " + std::to_string(outputs) + " output" + (outputs == 1 ? "" : "s") +
                    ", so '" + name + "' does not exist");
  return TensorId{node->id, parsed.index};
}

}  // namespace graphjit
