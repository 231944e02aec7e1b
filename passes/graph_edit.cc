#include "passes/graph_edit.h"

#include <algorithm>
#include <utility>

#include "ir/attr.h"
#include "runtime/executor.h"

namespace graphjit {

namespace {

void AddControlInput(Node* node, int control) {
  if (std::find(node->control_inputs.begin(), node->control_inputs.end(), control) == node->control_inputs.end())
    node->control_inputs.push_back(control);
}

// Runs what the given tensors need (all inputs are constants) and returns them.
StatusOr<std::vector<Tensor>> Evaluate(const AnalyzedGraph& graph, const std::vector<TensorId>& tensors) {
  GJ_ASSIGN_OR_RETURN(ExecutionPlan plan, BuildExecutionPlan(graph, {}, tensors, {}));
  ExecutorOptions options;
  options.allocator = Allocator::Default();
  std::vector<Tensor> values;
  GJ_RETURN_IF_ERROR(Execute(graph, plan, {}, options, &values));
  return values;
}

// Rewires one consumer of the forwarder `node` (see Bypass); true if it read `node`.
bool RewireConsumer(Node* consumer, int node, TensorId forwarded, const std::vector<int>& controls) {
  bool reads = false;
  for (TensorId& in : consumer->inputs)
    if (in.node == node) {
      in = forwarded;
      reads = true;
    }
  auto& ci = consumer->control_inputs;
  auto waits = std::find(ci.begin(), ci.end(), node);
  if (waits != ci.end()) {
    ci.erase(waits);
    if (forwarded.node >= 0) AddControlInput(consumer, forwarded.node);
    reads = true;
  }
  if (reads)
    for (int c : controls) AddControlInput(consumer, c);
  return reads;
}

}  // namespace

void Bypass(Graph& graph, int node, TensorId forwarded) {
  const std::vector<int> controls = graph.node(node)->control_inputs;
  for (int id = 0; id < graph.num_nodes(); ++id) RewireConsumer(graph.node(id), node, forwarded, controls);
}

Consumers ComputeConsumers(const Graph& graph) {
  Consumers consumers(graph.num_nodes());
  for (int id = 0; id < graph.num_nodes(); ++id) {
    for (const TensorId& in : graph.node(id)->inputs) consumers[in.node].push_back(id);
    for (int c : graph.node(id)->control_inputs) consumers[c].push_back(id);
  }
  return consumers;
}

void Bypass(Graph& graph, int node, TensorId forwarded, Consumers& consumers) {
  const std::vector<int> controls = graph.node(node)->control_inputs;
  // A consumer may be listed twice, or no longer read `node`: rewiring it again finds nothing.
  for (int id : std::exchange(consumers[node], {})) {
    if (!RewireConsumer(graph.node(id), node, forwarded, controls)) continue;
    if (forwarded.node >= 0) consumers[forwarded.node].push_back(id);
    for (int c : controls) consumers[c].push_back(id);
  }
}

void ReplaceNode(Graph& graph, int from, int to) {
  for (int id = 0; id < graph.num_nodes(); ++id) {
    Node* consumer = graph.node(id);
    for (TensorId& in : consumer->inputs)
      if (in.node == from) in.node = to;
    auto& ci = consumer->control_inputs;
    auto waits = std::find(ci.begin(), ci.end(), from);
    if (waits != ci.end()) {
      ci.erase(waits);
      if (id != to) AddControlInput(consumer, to);
    }
  }
}

void MakeIdentity(Graph& graph, int node, TensorId input, DType dtype) {
  Node* n = graph.node(node);
  n->op = "Identity";
  n->inputs = {input};
  n->attrs = InternalAttrs(*n);
  n->attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
}

int RemoveDeadNodes(Graph& graph, const PassContext& context, const std::vector<int>& seeds) {
  const int n = graph.num_nodes();
  std::vector<int> uses(n, 0);
  for (int id = 0; id < n; ++id) {
    for (const TensorId& in : graph.node(id)->inputs) ++uses[in.node];
    for (int c : graph.node(id)->control_inputs) ++uses[c];
  }
  std::vector<bool> remove(n, false);
  std::vector<int> work = seeds;
  int removed = 0;
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    const Node* node = graph.node(id);
    if (remove[id] || uses[id] > 0 || context.IsPreserved(*node)) continue;
    remove[id] = true;
    ++removed;
    for (const TensorId& in : node->inputs) {
      --uses[in.node];
      work.push_back(in.node);
    }
    for (int c : node->control_inputs) {
      --uses[c];
      work.push_back(c);
    }
  }
  if (removed) graph.RemoveNodes(remove);
  return removed;
}

const Tensor* ConstValue(const AnalyzedGraph& graph, TensorId t) {
  if (graph.graph.node(t.node)->op != "Const" || t.index != 0) return nullptr;
  const Tensor& value = graph.constants[t.node];
  return value.valid() ? &value : nullptr;
}

StatusOr<std::vector<Tensor>> EvaluateNode(const Node& node, const std::vector<Tensor>& inputs) {
  Graph graph;
  Node* copy = graph.AddNode(node.name, node.op);
  copy->attrs = node.attrs;
  copy->device = node.device;
  for (const Tensor& value : inputs) {
    Node* input = AddConst(graph, node.name + "/input", value, node.device);
    copy->inputs.push_back({input->id, 0});
  }
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(std::move(graph)));
  std::vector<TensorId> outputs;
  for (int i = 0; i < static_cast<int>(analyzed.info(0).dtypes.size()); ++i) outputs.push_back({0, i});
  return Evaluate(analyzed, outputs);
}

}  // namespace graphjit
