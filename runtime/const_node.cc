#include "runtime/const_node.h"

namespace graphjit {

namespace {

// The node's op and attrs are the Const's, its data inputs gone.
void SetConstAttrs(Node* node, const Tensor& value) {
  AttrMap attrs;
  attrs["dtype"].set_type(static_cast<tensorflow::DataType>(value.dtype()));
  TensorToProto(value, attrs["value"].mutable_tensor());
  node->attrs = std::move(attrs);
  node->op = "Const";
  node->inputs.clear();
}

}  // namespace

Node* AddConst(Graph& graph, const std::string& base, const Tensor& value, const std::string& device) {
  Node* node = graph.AddNode(UniqueName(graph, base), "Const");
  node->device = device;
  SetConstAttrs(node, value);
  return node;
}

void ReplaceWithConst(Graph& graph, int node, const Tensor& value) {
  Node* n = graph.node(node);
  AttrMap internal = InternalAttrs(*n);
  SetConstAttrs(n, value);
  n->attrs.merge(internal);
}

}  // namespace graphjit
