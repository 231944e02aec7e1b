#include <algorithm>
#include <climits>
#include <set>

#include "passes/graph_edit.h"
#include "passes/passes.h"

namespace graphjit {

namespace {

// Sources that stand for run-time values, ops without outputs, and ops whose result is
// not a function of their inputs.
bool NeverFolded(const Node& node, const NodeInfo& info) {
  static const std::set<std::string, std::less<>> ops = {"Const", "Placeholder", "PlaceholderWithDefault", "NoOp", "_JitCluster"};
  return ops.count(node.op) > 0 || info.op->stateful || info.dtypes.empty();
}

// The size of a node's outputs whose shapes are fully known (others count 0).
int64_t StaticBytes(const NodeInfo& info) {
  int64_t bytes = 0;
  for (size_t i = 0; i < info.shapes.size(); ++i) {
    if (!info.shapes[i].IsFullyDefined()) continue;
    auto size = CheckedBytes(info.shapes[i].dims(), static_cast<int64_t>(DTypeSize(info.dtypes[i])));
    if (!size.ok() || *size > INT64_MAX - bytes) return INT64_MAX;  // more than there is
    bytes += *size;
  }
  return bytes;
}

// Shape, Size or Rank of a tensor whose static shape is known well enough.
bool StaticShapeValue(const AnalyzedGraph& a, const Node& node, Tensor* out) {
  if ((node.op != "Shape" && node.op != "Size" && node.op != "Rank") || node.inputs.size() != 1) return false;
  const Shape& shape = StaticShape(a, node.inputs[0]);
  if (shape.unknown_rank() || (node.op != "Rank" && !shape.IsFullyDefined())) return false;
  std::vector<int64_t> values;
  if (node.op == "Shape") values = shape.dims();
  if (node.op == "Size") values = {shape.num_elements()};
  if (node.op == "Rank") values = {shape.rank()};
  const DType dtype = a.info(node.id).dtypes[0];
  if (dtype == DType::kInt32) {
    std::vector<int32_t> narrow;
    for (int64_t v : values) {
      if (v > INT32_MAX) return false;  // the kernel reports this at run time
      narrow.push_back(static_cast<int32_t>(v));
    }
    *out = Tensor::Vector(narrow);
  } else if (dtype == DType::kInt64) {
    *out = Tensor::Vector(values);
  } else {
    return false;
  }
  if (node.op != "Shape") *out = out->Reshaped(Shape{});
  return true;
}

// The node with `inputs` replaced (for evaluating a part of a node's operands).
Node WithInputCount(const Node& node, int n) {
  Node copy = node;
  copy.attrs["N"].set_i(n);
  return copy;
}

// AddN(c1, x, c2) -> AddN(c1 + c2, x). Returns whether it rewrote the node.
bool FoldAddNOperands(Graph& graph, int id, const std::vector<std::vector<Tensor>>& values) {
  Node* node = graph.node(id);
  std::vector<Tensor> constants;
  std::vector<TensorId> others;
  for (const TensorId& in : node->inputs) {
    if (values[in.node].empty())
      others.push_back(in);
    else
      constants.push_back(values[in.node][in.index]);
  }
  if (constants.size() < 2 || others.empty()) return false;
  auto sum = EvaluateNode(WithInputCount(*node, static_cast<int>(constants.size())), constants);
  if (!sum.ok()) return false;
  Node* c = AddConst(graph, node->name + "/folded_operands", (*sum)[0], node->device);
  node = graph.node(id);
  node->inputs = {{c->id, 0}};
  node->inputs.insert(node->inputs.end(), others.begin(), others.end());
  node->attrs["N"].set_i(static_cast<int64_t>(node->inputs.size()));
  return true;
}

// ConcatV2(x, c1, c2, y, axis) -> ConcatV2(x, concat(c1, c2), y, axis) for a constant axis.
bool FoldConcatOperands(Graph& graph, int id, const std::vector<std::vector<Tensor>>& values) {
  Node* node = graph.node(id);
  const int n = static_cast<int>(node->inputs.size()) - 1;
  const TensorId axis = node->inputs[n];
  if (n < 2 || values[axis.node].empty()) return false;
  auto is_const = [&](int i) { return !values[node->inputs[i].node].empty(); };
  std::vector<TensorId> inputs;
  bool changed = false;
  for (int i = 0; i < n;) {
    int end = i;
    while (end < n && is_const(end)) ++end;
    if (end - i >= 2) {
      std::vector<Tensor> run;
      for (int k = i; k < end; ++k) run.push_back(values[node->inputs[k].node][node->inputs[k].index]);
      run.push_back(values[axis.node][axis.index]);
      auto joined = EvaluateNode(WithInputCount(*node, end - i), run);
      if (joined.ok()) {
        Node* c = AddConst(graph, node->name + "/folded_operands", (*joined)[0], node->device);
        node = graph.node(id);
        inputs.push_back({c->id, 0});
        changed = true;
        i = end;
        continue;
      }
    }
    inputs.push_back(node->inputs[i]);
    ++i;
  }
  if (!changed) return false;
  inputs.push_back(axis);
  node->attrs["N"].set_i(static_cast<int64_t>(inputs.size()) - 1);
  node->inputs = std::move(inputs);
  return true;
}

StatusOr<bool> FoldOnce(Graph& graph, const PassContext& context) {
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph a, AnalyzeGraph(graph.Clone()));
  const int n = graph.num_nodes();
  // 1. The value of every node computable now, in dataflow order.
  std::vector<std::vector<Tensor>> values(n);
  std::vector<bool> folded(n, false);
  for (int id : a.topo_order) {
    const Node& node = *graph.node(id);
    if (context.IsFed(node)) continue;
    if (node.op == "Const") {
      values[id] = {a.constants[id]};
      continue;
    }
    if (NeverFolded(node, a.info(id))) continue;
    if (StaticBytes(a.info(id)) > context.max_constant_bytes) continue;  // known too big before computing it
    std::vector<Tensor> result(1);
    if (!StaticShapeValue(a, node, &result[0])) {
      std::vector<Tensor> inputs;
      for (const TensorId& in : node.inputs) {
        if (values[in.node].empty()) break;
        inputs.push_back(values[in.node][in.index]);
      }
      if (node.inputs.empty() || inputs.size() != node.inputs.size()) continue;
      auto evaluated = EvaluateNode(node, inputs);
      if (!evaluated.ok()) continue;  // left to run time, which reports it in context
      result = std::move(evaluated).value();
    }
    bool small = true;
    for (const Tensor& t : result) small &= static_cast<int64_t>(t.bytes()) <= context.max_constant_bytes;
    if (!small) continue;
    values[id] = std::move(result);
    folded[id] = true;
  }
  // 2. Folded nodes that an unfolded node reads (or that are kept by name) become Consts;
  //    the rest of the folded nodes are then unused.
  const auto out_edges = graph.ComputeOutEdges();
  std::vector<int> seeds;
  bool changed = false;
  for (int id = 0; id < n; ++id) {
    if (!folded[id]) continue;
    Node* node = graph.node(id);
    for (const TensorId& in : node->inputs) seeds.push_back(in.node);
    seeds.push_back(id);
    bool frontier = context.IsPreserved(*node);
    for (const OutEdge& e : out_edges[id]) frontier |= e.dst_input >= 0 && !folded[e.dst];
    if (!frontier) continue;
    changed = true;
    if (values[id].size() == 1) {
      ReplaceWithConst(graph, id, values[id][0]);
      continue;
    }
    std::vector<int> consts(values[id].size(), -1);
    for (const OutEdge& e : out_edges[id]) {
      if (e.dst_input < 0 || folded[e.dst]) continue;
      int& c = consts[e.src_output];
      if (c < 0) {
        Node* added = AddConst(graph, graph.node(id)->name + "/folded_" + std::to_string(e.src_output), values[id][e.src_output],
                               graph.node(id)->device);
        added->control_inputs = graph.node(id)->control_inputs;
        c = added->id;
      }
      graph.node(e.dst)->inputs[e.dst_input] = {c, 0};
    }
  }
  // 3. Constant operands of nodes that stay (Consts added above count as unknown).
  values.resize(graph.num_nodes());
  for (int id = 0; id < n; ++id) {
    if (folded[id]) continue;
    const std::string& op = graph.node(id)->op;
    for (const TensorId& in : graph.node(id)->inputs) seeds.push_back(in.node);
    if (op == "AddN") changed |= FoldAddNOperands(graph, id, values);
    if (op == "ConcatV2") changed |= FoldConcatOperands(graph, id, values);
  }
  changed |= RemoveDeadNodes(graph, context, seeds) > 0;
  return changed;
}

}  // namespace

StatusOr<bool> FoldConstants(Graph& graph, const PassContext& context) {
  // Folding can make more shapes static, which can make more nodes foldable.
  bool changed = false;
  for (int round = 0; round < 4; ++round) {
    GJ_ASSIGN_OR_RETURN(bool more, FoldOnce(graph, context));
    if (!more) break;
    changed = true;
  }
  return changed;
}

}  // namespace graphjit
