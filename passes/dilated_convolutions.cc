#include <algorithm>
#include <optional>
#include <string>

#include "passes/passes.h"
#include "runtime/tensor.h"

namespace graphjit {

namespace {

// The integers of a Const node's value, or nothing.
std::optional<std::vector<int64_t>> ConstInts(const Graph& graph, TensorId t) {
  const Node& n = *graph.node(t.node);
  const tensorflow::AttrValue* proto = n.FindAttr("value");
  if (n.op != "Const" || proto == nullptr) return std::nullopt;
  const StatusOr<Tensor> value = TensorFromProto(proto->tensor());
  if (!value.ok() || (value->dtype() != DType::kInt32 && value->dtype() != DType::kInt64)) return std::nullopt;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < value->num_elements(); ++i) v.push_back(value->ValueAsInt(i));
  return v;
}

bool IsAttr(const Node& n, const char* attr, const std::string& value, const std::string& absent) {
  const tensorflow::AttrValue* a = n.FindAttr(attr);
  return (a ? a->s() : absent) == value;
}

bool AllOnes(const Node& n, const char* attr) {
  const tensorflow::AttrValue* a = n.FindAttr(attr);
  if (a == nullptr) return true;
  for (int64_t v : a->list().i())
    if (v != 1) return false;
  return true;
}

// The dilated convolution the BatchToSpaceND node `id` ends, if it is one: its input a
// Conv2D or DepthwiseConv2dNative (NHWC, VALID, unit strides and dilations) read by it alone,
// whose input is a SpaceToBatchND read by it alone, both with the same constant 2-D block
// shape; the crops no larger than the paddings. Rewrites `id` as that convolution of the
// SpaceToBatchND's input, dilated by the block shape, padded explicitly by the paddings less
// the crops: output (y, x) of the original is the valid convolution of the padded input at
// (y + crop_top, x + crop_left), taps block apart: the same sums, in the same order.
bool FuseOne(Graph& graph, const std::vector<std::vector<OutEdge>>& out, const PassContext& context, int id,
             std::vector<bool>* remove) {
  Node& b2s = *graph.node(id);
  if (b2s.op != "BatchToSpaceND" || b2s.inputs.size() != 3 || b2s.inputs[0].index != 0) return false;
  const int conv_id = b2s.inputs[0].node;
  Node& conv = *graph.node(conv_id);
  if ((conv.op != "Conv2D" && conv.op != "DepthwiseConv2dNative") || conv.inputs.size() != 2 || !conv.control_inputs.empty() ||
      out[conv_id].size() != 1 || context.IsPreserved(conv) || conv.device != b2s.device)
    return false;
  if (!IsAttr(conv, "padding", "VALID", "") || !IsAttr(conv, "data_format", "NHWC", "NHWC") || !AllOnes(conv, "strides") ||
      !AllOnes(conv, "dilations"))
    return false;
  const int s2b_id = conv.inputs[0].node;
  const Node& s2b = *graph.node(s2b_id);
  if (s2b.op != "SpaceToBatchND" || s2b.inputs.size() != 3 || conv.inputs[0].index != 0 || !s2b.control_inputs.empty() ||
      out[s2b_id].size() != 1 || context.IsPreserved(s2b) || s2b.device != b2s.device)
    return false;
  const auto block = ConstInts(graph, s2b.inputs[1]), block_out = ConstInts(graph, b2s.inputs[1]);
  const auto pads = ConstInts(graph, s2b.inputs[2]), crops = ConstInts(graph, b2s.inputs[2]);
  if (!block || !block_out || !pads || !crops || *block != *block_out || block->size() != 2 || pads->size() != 4 ||
      crops->size() != 4)
    return false;
  std::vector<int64_t> explicit_pads = {0, 0};
  for (int i = 0; i < 4; ++i) {
    if ((*crops)[i] < 0 || (*pads)[i] < (*crops)[i]) return false;
    explicit_pads.push_back((*pads)[i] - (*crops)[i]);
  }
  explicit_pads.insert(explicit_pads.end(), {0, 0});
  const bool valid = std::all_of(explicit_pads.begin(), explicit_pads.end(), [](int64_t p) { return p == 0; });
  AttrMap attrs = InternalAttrs(b2s);
  for (const char* attr : {"T", "data_format", "strides"})
    if (const tensorflow::AttrValue* a = conv.FindAttr(attr)) attrs[attr] = *a;
  auto& dilations = *attrs["dilations"].mutable_list();
  for (int64_t d : {int64_t{1}, (*block)[0], (*block)[1], int64_t{1}}) dilations.add_i(d);
  attrs["padding"].set_s(valid ? "VALID" : "EXPLICIT");
  if (!valid)
    for (int64_t p : explicit_pads) attrs["explicit_paddings"].mutable_list()->add_i(p);
  const std::vector<TensorId> inputs = {s2b.inputs[0], conv.inputs[1]};
  b2s.op = conv.op;
  b2s.attrs = std::move(attrs);
  b2s.inputs = inputs;
  (*remove)[conv_id] = (*remove)[s2b_id] = true;
  return true;
}

}  // namespace

StatusOr<bool> FuseDilatedConvolutions(Graph& graph, const PassContext& context) {
  const std::vector<std::vector<OutEdge>> out = graph.ComputeOutEdges();
  std::vector<bool> remove(graph.num_nodes(), false);
  bool changed = false;
  for (int id = 0; id < graph.num_nodes(); ++id) changed |= FuseOne(graph, out, context, id, &remove);
  if (!changed) return false;
  for (int id = 0; id < graph.num_nodes(); ++id)
    if (remove[id]) {
      graph.node(id)->inputs.clear();
      graph.node(id)->control_inputs.clear();
    }
  graph.RemoveNodes(remove);
  return true;
}

}  // namespace graphjit
