#include "passes/lower_unary_ops_compositions.h"

#include <vector>

namespace graphjit {

namespace {

// The composition's jit_scope attrs from its input, unless it has its own.
void TakeJitScopeOfInput(Graph& graph, int id, int num_original_nodes) {
  Node* node = graph.node(id);
  const int producer = node->inputs[0].node;
  if (node->FindAttr("_XlaCompile") != nullptr || producer >= num_original_nodes) return;
  for (const char* attr : {"_XlaCompile", "_XlaScope"})
    if (const tensorflow::AttrValue* value = graph.node(producer)->FindAttr(attr)) node->attrs[attr] = *value;
}

// Each op but the last as a node of its own, in order; the composition becomes the last.
void LowerUnaryOpsComposition(Graph& graph, int id, std::map<std::string, std::string>* steps) {
  const auto& names = graph.node(id)->FindAttr("op_names")->list().s();
  const std::vector<std::string> chain(names.begin(), names.end());
  TensorId input = graph.node(id)->inputs[0];
  for (size_t k = 0; k + 1 < chain.size(); ++k) {
    const Node& composition = *graph.node(id);
    Node* step = graph.AddNode(UniqueName(graph, composition.name + "/graphjit_" + std::to_string(k)), chain[k]);
    step->device = composition.device;
    step->inputs = {input};
    step->attrs = composition.attrs;
    step->attrs.erase("op_names");
    if (steps) (*steps)[step->name] = composition.name;
    input = {step->id, 0};
  }
  Node* node = graph.node(id);
  node->op = chain.back();
  node->attrs.erase("op_names");
  node->inputs[0] = input;
}

}  // namespace

bool LowerUnaryOpsCompositions(Graph& graph, std::map<std::string, std::string>* steps) {
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    const Node& node = *graph.node(id);
    const tensorflow::AttrValue* ops = node.FindAttr("op_names");
    if (node.op != "_UnaryOpsComposition" || ops == nullptr || ops->list().s_size() == 0 || node.inputs.empty()) continue;
    TakeJitScopeOfInput(graph, id, n);
    LowerUnaryOpsComposition(graph, id, steps);
    changed = true;
  }
  return changed;
}

PassFunction LowerUnaryOpsCompositionsPass(std::map<std::string, std::string>* steps) {
  return [steps](Graph& graph, const PassContext&) -> StatusOr<bool> { return LowerUnaryOpsCompositions(graph, steps); };
}

}  // namespace graphjit
