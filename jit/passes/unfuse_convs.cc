#include "jit/passes/unfuse_convs.h"

#include "ir/attr.h"
#include "jit/passes/fused_activation.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

constexpr char kFusedPrefix[] = "_Fused";

// What one fused convolution computes after the convolution.
struct Epilogue {
  bool residual = false;   // an AddV2 of the fourth input after the bias
  std::string activation;  // empty: none
};

// The convolution, BiasAdd and AddV2 (the residual) of the fused convolution `id`, each a
// node; the last of them is the fused node itself when no activation follows.
TensorId AddParts(Graph& graph, int id, const Epilogue& e) {
  const Node& fused = *graph.node(id);
  const tensorflow::AttrValue type = fused.attrs.at("T");
  const std::string data_format = GetStringAttrOr(fused, "data_format", "NHWC").value_or("NHWC");
  const std::vector<TensorId> in = fused.inputs;
  const bool named = e.residual || !e.activation.empty();  // the bias is not the last op
  // `op` over `inputs`: a new node named name/suffix, or, when `last`, the fused node.
  auto part = [&](bool last, const std::string& suffix, const std::string& op, std::vector<TensorId> inputs) {
    if (!last) return AddPart(graph, *graph.node(id), graph.node(id)->name + "/" + suffix, op, std::move(inputs), type);
    RewriteAs(graph.node(id), op, std::move(inputs), type);
    return graph.node(id);
  };
  Node* conv = AddPart(graph, fused, fused.name + "/conv", fused.op.substr(sizeof kFusedPrefix - 1), {in[0], in[1]}, type);
  for (const char* a : {"strides", "padding", "explicit_paddings", "dilations", "data_format"})
    if (const tensorflow::AttrValue* value = fused.FindAttr(a)) conv->attrs[a] = *value;
  conv->control_inputs = fused.control_inputs;
  Node* bias = part(!named, "bias", "BiasAdd", {{conv->id, 0}, in[2]});
  bias->attrs["data_format"].set_s(data_format);
  TensorId last{bias->id, 0};
  if (e.residual) last = {part(e.activation.empty(), "residual", "AddV2", {last, in[3]})->id, 0};
  return last;
}

}  // namespace

bool UnfusesConv(const std::vector<std::string>& fused_ops) {
  if (fused_ops.empty() || fused_ops[0] != "BiasAdd") return false;
  const size_t residual = fused_ops.size() >= 2 && fused_ops[1] == "Add" ? 1 : 0;
  if (fused_ops.size() == 1 + residual) return true;
  const FusedActivation* activation = FindFusedActivation(fused_ops.back());
  return fused_ops.size() == 2 + residual && activation != nullptr && activation->convolution;
}

StatusOr<bool> UnfuseConvs(Graph& graph, bool activations_only) {
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    const Node& fused = *graph.node(id);
    if (TraitsOf(fused.op).pattern != OpPattern::kConv || fused.FindAttr("fused_ops") == nullptr) continue;
    const std::vector<std::string> ops = FusedOps(fused);
    Epilogue e;
    e.residual = ops.size() >= 2 && ops[1] == "Add";
    if (!UnfusesConv(ops) || fused.inputs.size() < (e.residual ? 4u : 3u))
      return Unimplemented(FusedOpLabel(fused) +
                           ": only BiasAdd, then Add (a residual), then Relu, Relu6, Elu, Tanh or Sigmoid is taken apart");
    if (ops.size() == (e.residual ? 3u : 2u)) e.activation = ops.back();
    // cuDNN's fused convolution takes the bias, the residual and a ReLU.
    if (activations_only && (e.activation.empty() || e.activation == "Relu")) continue;
    changed = true;
    // The last op takes the fused node's place and name: its readers read it.
    const TensorId last = activations_only ? AddWithoutActivation(graph, id, "conv") : AddParts(graph, id, e);
    if (!e.activation.empty()) FindFusedActivation(e.activation)->write(graph, id, last, e.activation);
  }
  return changed;
}

}  // namespace graphjit
