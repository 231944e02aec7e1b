#include "jit/passes/specialize_inputs.h"

#include <cstdlib>

#include "ir/attr.h"
#include "runtime/const_node.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

constexpr char kArgPrefix[] = "_arg_";

}  // namespace

std::string BodyInputName(size_t i) { return kArgPrefix + std::to_string(i); }

std::set<int> NodesDecidingShapes(const Graph& graph) {
  std::set<int> needed;
  std::vector<int> work;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& n = *graph.node(id);
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    const int num_inputs = static_cast<int>(n.inputs.size());
    for (int i = 0; def && i < num_inputs; ++i)
      if (def->IsValueInput(i, num_inputs)) work.push_back(n.inputs[i].node);
  }
  while (!work.empty()) {
    const int id = work.back();
    work.pop_back();
    if (!needed.insert(id).second) continue;
    const Node& n = *graph.node(id);
    if (TraitsOf(n.op).pattern == OpPattern::kShapeOnly) continue;  // reads a shape, not data
    for (const TensorId& in : n.inputs) work.push_back(in.node);
  }
  return needed;
}

std::vector<bool> ValueInputs(const Graph& graph, int num_inputs) {
  std::vector<bool> value(num_inputs, false);
  for (int id : NodesDecidingShapes(graph)) {
    const std::string& name = graph.node(id)->name;
    if (name.rfind(kArgPrefix, 0) != 0) continue;
    const int i = std::atoi(name.c_str() + sizeof kArgPrefix - 1);
    if (i >= 0 && i < num_inputs) value[i] = true;
  }
  return value;
}

StatusOr<bool> SpecializeInputs(Graph& graph, const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs) {
  bool changed = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = BodyInputName(i);
    Node* arg = graph.FindNode(name);
    if (arg == nullptr) return Internal("the body lacks " + name);
    if (value_inputs[i]) {
      // Its value is known now: what it waited for no longer matters.
      ReplaceWithConst(graph, arg->id, inputs[i]);
      arg->control_inputs.clear();
      changed = true;
      continue;
    }
    tensorflow::TensorShapeProto shape;
    ShapeToProto(inputs[i].shape(), &shape);
    const tensorflow::AttrValue* old = arg->FindAttr("shape");
    if (old != nullptr && old->shape().SerializeAsString() == shape.SerializeAsString()) continue;
    *arg->attrs["shape"].mutable_shape() = std::move(shape);
    changed = true;
  }
  return changed;
}

}  // namespace graphjit
