#include "jit/passes/fused_activation.h"

#include <cmath>
#include <map>

#include "runtime/const_node.h"

namespace graphjit {

namespace {

// The activation as the op of its name, of the fused op's type.
void WriteAsOp(Graph& graph, int out, TensorId x, const std::string& activation) {
  Node* node = graph.node(out);
  RewriteAs(node, activation, {x}, node->attrs.at("T"));
}

// gelu(x) as float32 ops: exact, 0.5 x (1 + erf(x / sqrt 2)), or approximate,
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as the _FusedMatMul CPU kernel
// computes them.
void WriteGelu(Graph& graph, int out, TensorId x, bool exact) {
  const Node& like = *graph.node(out);
  const std::string name = like.name, device = like.device;
  tensorflow::AttrValue f32;
  f32.set_type(tensorflow::DT_FLOAT);
  auto op = [&](const std::string& suffix, const std::string& type, std::vector<TensorId> inputs) {
    return TensorId{AddPart(graph, *graph.node(out), name + "/" + suffix, type, std::move(inputs), f32)->id, 0};
  };
  auto constant = [&](const std::string& suffix, float value) {
    return TensorId{AddConst(graph, name + "/" + suffix, Tensor::Scalar(value), device)->id, 0};
  };
  const std::string mul = "Mul", add = "AddV2";
  TensorId inner;
  if (exact) {
    inner = op("erf", "Erf", {op("scaled", mul, {x, constant("rsqrt2", M_SQRT1_2)})});
  } else {
    const TensorId cube = op("cube", mul, {op("square", mul, {x, x}), x});
    const TensorId sum = op("sum", add, {x, op("cubic", mul, {cube, constant("c", 0.044715f)})});
    inner = op("tanh", "Tanh", {op("scaled", mul, {sum, constant("sqrt_2_over_pi", std::sqrt(2.0 / M_PI))})});
  }
  const TensorId half_x = op("half_x", mul, {x, constant("half", 0.5f)});
  const TensorId one_plus = op("one_plus", add, {inner, constant("one", 1.0f)});
  RewriteAs(graph.node(out), mul, {half_x, one_plus}, f32);
}

void WriteGeluExact(Graph& graph, int out, TensorId x, const std::string&) { WriteGelu(graph, out, x, true); }
void WriteGeluApproximate(Graph& graph, int out, TensorId x, const std::string&) { WriteGelu(graph, out, x, false); }

}  // namespace

const FusedActivation* FindFusedActivation(std::string_view name) {
  // Keyed by fused_ops entry: the first five are ops of that name, the GELUs are not.
  static const std::map<std::string, FusedActivation, std::less<>> kActivations = {
      {"Relu", FusedActivation{WriteAsOp, false, true}},
      {"Relu6", FusedActivation{WriteAsOp, false, true}},
      {"Elu", FusedActivation{WriteAsOp, false, true}},
      {"Tanh", FusedActivation{WriteAsOp, false, true}},
      {"Sigmoid", FusedActivation{WriteAsOp, false, true}},
      {"GeluExact", FusedActivation{WriteGeluExact, true, false}},
      {"GeluApproximate", FusedActivation{WriteGeluApproximate, true, false}},
  };
  auto it = kActivations.find(name);
  return it == kActivations.end() ? nullptr : &it->second;
}

std::vector<std::string> FusedOps(const Node& node) {
  std::vector<std::string> ops;
  if (const tensorflow::AttrValue* fused = node.FindAttr("fused_ops"))
    for (const std::string& op : fused->list().s()) ops.push_back(op);
  return ops;
}

std::string FusedOpLabel(const Node& node) {
  std::string list;
  for (const std::string& op : FusedOps(node)) list += (list.empty() ? "" : ", ") + op;
  return "'" + node.name + "' (" + node.op + ") with fused_ops [" + list + "]";
}

void RewriteAs(Node* node, const std::string& op, std::vector<TensorId> inputs, const tensorflow::AttrValue& type) {
  const tensorflow::AttrValue t = type;  // `type` may be one of the node's own attrs
  node->op = op;
  node->inputs = std::move(inputs);
  node->control_inputs.clear();
  node->attrs.clear();
  node->attrs["T"] = t;
  node->passthrough.Clear();
}

TensorId AddWithoutActivation(Graph& graph, int id, const std::string& suffix) {
  const Node& fused = *graph.node(id);
  Node* part = graph.AddNode(UniqueName(graph, fused.name + "/" + suffix), fused.op);
  part->device = fused.device;
  part->inputs = fused.inputs;
  part->control_inputs = fused.control_inputs;
  part->attrs = fused.attrs;
  part->passthrough = fused.passthrough;
  part->attrs["fused_ops"].mutable_list()->mutable_s()->RemoveLast();
  return {part->id, 0};
}

Node* AddPart(Graph& graph, const Node& like, const std::string& base, const std::string& op, std::vector<TensorId> inputs,
              const tensorflow::AttrValue& type) {
  const std::string device = like.device;  // `like` may move as the graph grows
  Node* node = graph.AddNode(UniqueName(graph, base), op);
  node->device = device;
  node->inputs = std::move(inputs);
  node->attrs["T"] = type;
  return node;
}

}  // namespace graphjit
