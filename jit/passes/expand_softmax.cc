#include "jit/passes/expand_softmax.h"

#include <map>
#include <string_view>

#include "jit/passes/mark_row_shifts.h"
#include "runtime/const_node.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

// Adds the nodes that write out one row op, named after it, on its device and of its type.
class RowWriter {
 public:
  RowWriter(Graph& graph, int id)
      : g_(graph), id_(id), name_(graph.node(id)->name), device_(graph.node(id)->device), type_(graph.node(id)->attrs.at("T")) {
    axis_ = {AddConst(g_, name_ + "/axis", Tensor::Scalar(int32_t{-1}), device_)->id, 0};
  }

  // The last axis, the row's.
  TensorId axis() const { return axis_; }
  TensorId x() const { return g_.node(id_)->inputs[0]; }
  TensorId input(int i) const { return g_.node(id_)->inputs[i]; }

  // `op` over `inputs`; a reduction keeps the row's dim, and a max only shifts the row before
  // exp, after which the sum of exps carries a NaN of the row to every output: it needs no
  // IEEE order of NaNs and signed zeros.
  TensorId Op(const std::string& suffix, const std::string& op, std::vector<TensorId> inputs) {
    Node* node = g_.AddNode(UniqueName(g_, name_ + "/" + suffix), op);
    node->device = device_;
    node->inputs = std::move(inputs);
    node->attrs["T"] = type_;
    const OpReducer reducer = TraitsOf(op).reducer;
    if (reducer != OpReducer::kNone) {
      node->attrs["keep_dims"].set_b(true);
      node->attrs["Tidx"].set_type(tensorflow::DT_INT32);
    }
    if (reducer == OpReducer::kMax) node->attrs[kRowShiftAttr].set_b(true);
    return {node->id, 0};
  }
  // The row shifted by its max, and its exp.
  std::pair<TensorId, TensorId> ShiftedAndExp() {
    const TensorId shifted = Op("shifted", "Sub", {x(), Op("max", "Max", {x(), axis_})});
    return {shifted, Op("exp", "Exp", {shifted})};
  }
  // The row op's node becomes `op` over `inputs` (its name, its readers, its control inputs
  // kept).
  Node* Become(const std::string& op, std::vector<TensorId> inputs) {
    Node* node = g_.node(id_);
    node->op = op;
    node->inputs = std::move(inputs);
    return node;
  }

 private:
  Graph& g_;
  const int id_;
  const std::string name_, device_;
  const tensorflow::AttrValue type_;
  TensorId axis_;
};

// exp * (1 / sum): one division per row. The sum is in [1, row length], so the reciprocal
// neither overflows nor underflows, and the product is within an ulp of exp / sum.
void WriteSoftmax(RowWriter& w, Graph&, std::vector<std::string>*) {
  const auto [shifted, exp] = w.ShiftedAndExp();
  const TensorId sum = w.Op("sum", "Sum", {exp, w.axis()});
  w.Become("Mul", {exp, w.Op("inverse_sum", "Reciprocal", {sum})});
}

// (x - max) - log(sum(exp(x - max))).
void WriteLogSoftmax(RowWriter& w, Graph&, std::vector<std::string>*) {
  const auto [shifted, exp] = w.ShiftedAndExp();
  const TensorId sum = w.Op("sum", "Sum", {exp, w.axis()});
  w.Become("Sub", {shifted, w.Op("log_sum", "Log", {sum})});
}

// loss = sum(labels * (log(sum) - shifted)) over the row, as TensorFlow's kernel computes
// it; backprop = softmax - labels, a node its readers (and `outputs`) then name.
void WriteCrossEntropy(RowWriter& w, Graph& g, std::vector<std::string>* outputs) {
  const auto [shifted, exp] = w.ShiftedAndExp();
  const TensorId sum = w.Op("sum", "Sum", {exp, w.axis()});
  const TensorId labels = w.input(1);
  const TensorId backprop =
      w.Op("backprop", "Sub", {w.Op("softmax", "Mul", {exp, w.Op("inverse_sum", "Reciprocal", {sum})}), labels});
  const TensorId weighted =
      w.Op("weighted", "Mul", {labels, w.Op("neg_log_softmax", "Sub", {w.Op("log_sum", "Log", {sum}), shifted})});
  Node* loss = w.Become("Sum", {weighted, w.axis()});
  const tensorflow::AttrValue type = loss->attrs.at("T");
  loss->attrs.clear();
  loss->attrs["T"] = type;
  loss->attrs["Tidx"].set_type(tensorflow::DT_INT32);
  loss->attrs["keep_dims"].set_b(false);
  const TensorId old_backprop{loss->id, 1};
  for (int id = 0; id < g.num_nodes(); ++id)
    for (TensorId& in : g.node(id)->inputs)
      if (in == old_backprop) in = backprop;
  if (outputs) {
    const std::string old_name = g.TensorName(old_backprop), new_name = g.TensorName(backprop);
    for (std::string& out : *outputs)
      if (out == old_name) out = new_name;
  }
}

// How each row op is written out, and how many data inputs it reads.
struct RowOpForm {
  void (*write)(RowWriter&, Graph&, std::vector<std::string>*);
  size_t inputs;
};

const RowOpForm* FormOf(std::string_view op) {
  static const std::map<std::string, RowOpForm, std::less<>> kForms = {
      {"Softmax", {WriteSoftmax, 1}},
      {"LogSoftmax", {WriteLogSoftmax, 1}},
      {"SoftmaxCrossEntropyWithLogits", {WriteCrossEntropy, 2}},
  };
  auto it = kForms.find(op);
  return it == kForms.end() ? nullptr : &it->second;
}

}  // namespace

bool ExpandSoftmax(Graph& graph, std::vector<std::string>* outputs) {
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    const Node& node = *graph.node(id);
    const OpTraits& traits = TraitsOf(node.op);
    const RowOpForm* form = FormOf(node.op);
    if (traits.pattern != OpPattern::kRowOp || !traits.compiled() || form == nullptr) continue;
    if (node.FindAttr("T") == nullptr || node.inputs.size() < form->inputs) continue;
    RowWriter writer(graph, id);
    form->write(writer, graph, outputs);
    changed = true;
  }
  return changed;
}

}  // namespace graphjit
