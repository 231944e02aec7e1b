#include "jit/passes/lower_logical_reductions.h"

#include <map>
#include <string_view>

#include "runtime/const_node.h"
#include "runtime/op_traits.h"
#include "runtime/tensor.h"

namespace graphjit {

namespace {

// The integer reduction each logical one becomes.
const char* IntegerReductionOf(std::string_view op) {
  static const std::map<std::string, const char*, std::less<>> kReductions = {{"All", "Min"}, {"Any", "Max"}};
  auto it = kReductions.find(op);
  return it == kReductions.end() ? nullptr : it->second;
}

}  // namespace

bool LowerLogicalReductions(Graph& graph) {
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    const char* reduction = IntegerReductionOf(graph.node(id)->op);
    if (reduction == nullptr || graph.node(id)->inputs.size() != 2) continue;
    const std::string name = graph.node(id)->name, device = graph.node(id)->device;
    auto add = [&](const std::string& suffix, const std::string& op, std::vector<TensorId> inputs) {
      Node* added = graph.AddNode(UniqueName(graph, name + "/" + suffix), op);
      added->device = device;
      added->inputs = std::move(inputs);
      return added;
    };
    Node* ints = add("as_int32", "Cast", {graph.node(id)->inputs[0]});
    ints->attrs["SrcT"].set_type(tensorflow::DT_BOOL);
    ints->attrs["DstT"].set_type(tensorflow::DT_INT32);
    ints->attrs["Truncate"].set_b(false);
    Node* folded =
        add(reduction == std::string_view("Min") ? "min" : "max", reduction, {{ints->id, 0}, graph.node(id)->inputs[1]});
    folded->attrs["T"].set_type(tensorflow::DT_INT32);
    const AttrMap& attrs = graph.node(id)->attrs;
    if (auto it = attrs.find("Tidx"); it != attrs.end()) folded->attrs["Tidx"] = it->second;
    if (auto it = attrs.find("keep_dims"); it != attrs.end()) folded->attrs["keep_dims"] = it->second;
    const Node* zero = AddConst(graph, name + "/zero", Tensor::Scalar(int32_t{0}), device);
    Node* node = graph.node(id);
    AttrMap kept = InternalAttrs(*node);
    kept["T"].set_type(tensorflow::DT_INT32);
    node->op = "Greater";
    node->attrs = std::move(kept);
    node->inputs = {{folded->id, 0}, {zero->id, 0}};
    changed = true;
  }
  return changed;
}

}  // namespace graphjit
