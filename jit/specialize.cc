#include "jit/specialize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "ir/attr.h"
#include "ir/graph.h"
#include "ir/graphdef.h"
#include "runtime/executor.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

// The nodes whose values decide shapes: what the shape operands read, transitively.
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

void MakeConst(Node* node, const Tensor& value) {
  node->op = "Const";
  node->inputs.clear();
  node->control_inputs.clear();
  node->attrs.clear();
  node->attrs["dtype"].set_type(static_cast<tensorflow::DataType>(value.dtype()));
  TensorToProto(value, node->attrs["value"].mutable_tensor());
}

}  // namespace

void ExpandSoftmax(tensorflow::GraphDef* body, std::vector<std::string>* outputs) {
  const int n = body->node_size();
  for (int i = 0; i < n; ++i) {
    const OpTraits& traits = TraitsOf(body->node(i).op());
    if (traits.pattern != OpPattern::kRowOp || !traits.compiled()) continue;
    const bool cross_entropy = body->node(i).op() == "SoftmaxCrossEntropyWithLogits";
    const bool log = body->node(i).op() == "LogSoftmax";
    const tensorflow::NodeDef original = body->node(i);
    const std::string& name = original.name();
    auto add = [&](const std::string& suffix, const std::string& op, const std::vector<std::string>& inputs) {
      tensorflow::NodeDef* node = body->add_node();
      node->set_name(name + "/" + suffix);
      node->set_op(op);
      node->set_device(original.device());
      for (const std::string& in : inputs) node->add_input(in);
      if (op == "Const") {
        (*node->mutable_attr())["dtype"].set_type(tensorflow::DT_INT32);
        tensorflow::TensorProto* axis = (*node->mutable_attr())["value"].mutable_tensor();
        axis->set_dtype(tensorflow::DT_INT32);
        axis->mutable_tensor_shape();
        axis->add_int_val(-1);
        return node->name();
      }
      (*node->mutable_attr())["T"] = original.attr().at("T");
      const OpReducer reducer = TraitsOf(op).reducer;
      if (reducer != OpReducer::kNone) {
        (*node->mutable_attr())["keep_dims"].set_b(true);
        (*node->mutable_attr())["Tidx"].set_type(tensorflow::DT_INT32);
      }
      // The max only shifts the row before exp, and the sum of exps then carries a NaN of
      // the row to every output: it needs no IEEE order of NaNs and signed zeros.
      if (reducer == OpReducer::kMax) (*node->mutable_attr())[kRowShiftAttr].set_b(true);
      return node->name();
    };
    if (!original.attr().count("T") || original.input_size() < (cross_entropy ? 2 : 1)) continue;
    const std::string x = original.input(0);
    const std::string axis = add("axis", "Const", {});
    const std::string shifted = add("shifted", "Sub", {x, add("max", "Max", {x, axis})});
    const std::string exp = add("exp", "Exp", {shifted});
    const std::string sum = add("sum", "Sum", {exp, axis});
    tensorflow::NodeDef* last = body->mutable_node(i);
    if (cross_entropy) {
      // loss = sum(labels * (log(sum) - shifted)) over the row, as TensorFlow's kernel
      // computes it; backprop = softmax - labels, read by its consumers as name/backprop.
      const std::string labels = original.input(1);
      const std::string backprop =
          add("backprop", "Sub", {add("softmax", "Mul", {exp, add("inverse_sum", "Reciprocal", {sum})}), labels});
      const std::string weighted = add("weighted", "Mul", {labels, add("neg_log_softmax", "Sub", {add("log_sum", "Log", {sum}), shifted})});
      last = body->mutable_node(i);  // add_node may have moved it
      last->set_op("Sum");
      last->clear_input();
      last->add_input(weighted);
      last->add_input(axis);
      auto& attrs = *last->mutable_attr();
      const tensorflow::AttrValue t = attrs.at("T");
      attrs.clear();
      attrs["T"] = t;
      attrs["Tidx"].set_type(tensorflow::DT_INT32);
      attrs["keep_dims"].set_b(false);
      for (tensorflow::NodeDef& node : *body->mutable_node())
        for (std::string& in : *node.mutable_input())
          if (in == name + ":1") in = backprop;
      if (outputs)
        for (std::string& out : *outputs)
          if (out == name + ":1") out = backprop;
    } else {
      // exp * (1 / sum): one division per row. The sum is in [1, row length], so the
      // reciprocal neither overflows nor underflows, and the product is within an ulp of
      // exp / sum.
      last->set_op(log ? "Sub" : "Mul");
      last->clear_input();
      last->add_input(log ? shifted : exp);
      last->add_input(log ? add("log_sum", "Log", {sum}) : add("inverse_sum", "Reciprocal", {sum}));
    }
    last = body->mutable_node(i);  // add_node may have moved it
    for (const std::string& in : original.input())
      if (!in.empty() && in[0] == '^') last->add_input(in);
  }
}

void MarkRowShifts(tensorflow::GraphDef* body, const std::vector<std::string>& outputs) {
  auto node_of = [](const std::string& input) {
    ParsedInput parsed;
    return ParseInputString(input, &parsed) ? std::string(parsed.node) : input;
  };
  std::map<std::string, std::vector<const tensorflow::NodeDef*>> consumers;  // by data and control edges
  for (const tensorflow::NodeDef& n : body->node())
    for (const std::string& in : n.input()) consumers[node_of(in)].push_back(&n);
  std::set<std::string> fetched;
  for (const std::string& out : outputs) fetched.insert(node_of(out));
  // The one consumer of `name`, if it has exactly one and is not fetched.
  auto only_consumer = [&](const std::string& name) -> const tensorflow::NodeDef* {
    const auto& c = consumers[name];
    return c.size() == 1 && !fetched.count(name) ? c[0] : nullptr;
  };
  auto keeps_dims = [](const tensorflow::NodeDef& n) {
    auto it = n.attr().find("keep_dims");
    return it != n.attr().end() && it->second.b();
  };
  for (tensorflow::NodeDef& max : *body->mutable_node()) {
    if (max.op() != "Max" || max.input_size() != 2 || !keeps_dims(max)) continue;
    const tensorflow::NodeDef* sub = only_consumer(max.name());
    if (!sub || sub->op() != "Sub" || sub->input_size() != 2 || sub->input(0) != max.input(0) || sub->input(1) != max.name()) continue;
    const tensorflow::NodeDef* exp = only_consumer(sub->name());
    if (!exp || exp->op() != "Exp" || fetched.count(exp->name())) continue;
    const tensorflow::NodeDef* sum = nullptr;
    for (const tensorflow::NodeDef* c : consumers[exp->name()])
      if (c->op() == "Sum" && c->input_size() == 2 && c->input(0) == exp->name() && c->input(1) == max.input(1) && keeps_dims(*c)) sum = c;
    if (!sum || fetched.count(sum->name())) continue;
    auto is_quotient = [&](const tensorflow::NodeDef* c) {
      return c->op() == "RealDiv" && c->input_size() == 2 && c->input(0) == exp->name() && c->input(1) == sum->name();
    };
    const auto& of_exp = consumers[exp->name()];
    const auto& of_sum = consumers[sum->name()];
    if (std::all_of(of_exp.begin(), of_exp.end(), [&](const auto* c) { return c == sum || is_quotient(c); }) &&
        std::all_of(of_sum.begin(), of_sum.end(), is_quotient) && !of_sum.empty())
      (*max.mutable_attr())[kRowShiftAttr].set_b(true);
  }
}

std::vector<bool> ValueInputs(const tensorflow::GraphDef& body, int num_inputs) {
  std::vector<bool> value(num_inputs, false);
  auto graph = ImportGraphDef(body);
  if (!graph.ok()) return value;
  for (int id : NodesDecidingShapes(*graph)) {
    const std::string& name = graph->node(id)->name;
    if (name.rfind("_arg_", 0) != 0) continue;
    const int i = std::atoi(name.c_str() + 5);
    if (i >= 0 && i < num_inputs) value[i] = true;
  }
  return value;
}

StatusOr<SpecializedBody> Specialize(const tensorflow::GraphDef& body, const std::vector<std::string>& outputs,
                                     const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs) {
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(body));
  SpecializedBody result;
  // 1. The inputs: a static shape, or the value itself.
  std::vector<TensorId> feeds;
  std::vector<Tensor> feed_values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node* arg = graph.FindNode("_arg_" + std::to_string(i));
    if (arg == nullptr) return Internal("the body lacks _arg_" + std::to_string(i));
    if (value_inputs[i]) {
      MakeConst(arg, inputs[i]);
      result.args.push_back({-1, 0});
    } else {
      ShapeToProto(inputs[i].shape(), arg->attrs["shape"].mutable_shape());
      result.args.push_back({arg->id, 0});
      feeds.push_back({arg->id, 0});
      feed_values.push_back(inputs[i]);
    }
  }
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(std::move(graph)));
  // 2. What decides shapes, computed now (from the inputs' shapes and values).
  std::vector<int> deciding;
  for (int id : NodesDecidingShapes(analyzed.graph))
    if (analyzed.graph.node(id)->op != "Const") deciding.push_back(id);
  if (!deciding.empty()) {
    std::vector<TensorId> fetches;
    for (int id : deciding) {
      if (analyzed.info(id).dtypes.size() != 1)
        return Unimplemented(NodeLabel(*analyzed.graph.node(id)) + " decides a shape and has several outputs");
      fetches.push_back({id, 0});
    }
    GJ_ASSIGN_OR_RETURN(ExecutionPlan plan, BuildExecutionPlan(analyzed, feeds, fetches, {}));
    ExecutorOptions options;
    options.allocator = Allocator::Default();
    std::vector<Tensor> values;
    GJ_RETURN_IF_ERROR(Execute(analyzed, plan, feed_values, options, &values));
    Graph folded = std::move(analyzed.graph);
    for (size_t i = 0; i < deciding.size(); ++i) MakeConst(folded.node(deciding[i]), values[i]);
    GJ_ASSIGN_OR_RETURN(analyzed, AnalyzeGraph(std::move(folded)));
  }
  // 3. The outputs.
  for (const std::string& name : outputs) {
    ParsedInput p;
    const Node* n = ParseInputString(name, &p) ? analyzed.graph.FindNode(p.node) : nullptr;
    if (n == nullptr) return Internal("the body lacks " + name);
    result.outputs.push_back({n->id, p.index});
  }
  result.graph = std::move(analyzed);
  return result;
}

namespace {

// `node` rewritten as `op` over `inputs`, named `name`, on the device of `like` and of its
// type T (a fused op's parts).
tensorflow::NodeDef* WriteNodeLike(const tensorflow::NodeDef& like, tensorflow::NodeDef* node, const std::string& name,
                                   const std::string& op, const std::vector<std::string>& inputs) {
  node->Clear();
  node->set_name(name);
  node->set_op(op);
  node->set_device(like.device());
  for (const std::string& in : inputs) node->add_input(in);
  (*node->mutable_attr())["T"] = like.attr().at("T");
  return node;
}

// The activations of a fused op that are taken apart as the op of that name.
bool IsActivationOp(const std::string& act) {
  return act == "Relu" || act == "Relu6" || act == "Elu" || act == "Tanh" || act == "Sigmoid";
}

}  // namespace

bool UnfusesMatMul(const std::vector<std::string>& fused_ops, DType type) {
  if (fused_ops.empty() || fused_ops[0] != "BiasAdd" || fused_ops.size() > 2) return false;
  if (fused_ops.size() == 1) return true;
  const std::string& act = fused_ops[1];
  if (act == "GeluExact" || act == "GeluApproximate") return type == DType::kFloat;
  return IsActivationOp(act);
}

bool UnfusesConv(const std::vector<std::string>& fused_ops) {
  if (fused_ops.empty() || fused_ops[0] != "BiasAdd") return false;
  const size_t residual = fused_ops.size() >= 2 && fused_ops[1] == "Add" ? 1 : 0;
  return fused_ops.size() == 1 + residual || (fused_ops.size() == 2 + residual && IsActivationOp(fused_ops.back()));
}

namespace {

// Writes `name` = gelu(x) as float32 nodes of `body`: exact, 0.5 x (1 + erf(x / sqrt 2)), or
// approximate, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as the _FusedMatMul CPU
// kernel computes them.
void AddGelu(tensorflow::GraphDef* body, tensorflow::NodeDef* out, const std::string& name, const std::string& x, bool exact,
             const std::string& device) {
  const std::string mul = "Mul", add = "AddV2";
  auto node = [&](tensorflow::NodeDef* n, const std::string& suffix, const std::string& op, std::vector<std::string> inputs) {
    n->Clear();
    n->set_name(suffix.empty() ? name : name + "/" + suffix);
    n->set_op(op);
    n->set_device(device);
    for (const std::string& in : inputs) n->add_input(in);
    (*n->mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
    return n->name();
  };
  auto constant = [&](const std::string& suffix, float value) {
    tensorflow::NodeDef* n = body->add_node();
    n->set_name(name + "/" + suffix);
    n->set_op("Const");
    n->set_device(device);
    (*n->mutable_attr())["dtype"].set_type(tensorflow::DT_FLOAT);
    tensorflow::TensorProto* t = (*n->mutable_attr())["value"].mutable_tensor();
    t->set_dtype(tensorflow::DT_FLOAT);
    t->mutable_tensor_shape();
    t->add_float_val(value);
    return n->name();
  };
  auto op = [&](const std::string& suffix, const std::string& type, std::vector<std::string> inputs) {
    return node(body->add_node(), suffix, type, std::move(inputs));
  };
  std::string inner;
  if (exact) {
    inner = op("erf", "Erf", {op("scaled", mul, {x, constant("rsqrt2", M_SQRT1_2)})});
  } else {
    const std::string cube = op("cube", mul, {op("square", mul, {x, x}), x});
    const std::string sum = op("sum", add, {x, op("cubic", mul, {cube, constant("c", 0.044715f)})});
    inner = op("tanh", "Tanh", {op("scaled", mul, {sum, constant("sqrt_2_over_pi", std::sqrt(2.0 / M_PI))})});
  }
  node(out, "", mul, {op("half_x", mul, {x, constant("half", 0.5f)}), op("one_plus", add, {inner, constant("one", 1.0f)})});
}

}  // namespace

Status UnfuseMatMuls(tensorflow::GraphDef* body, bool activations_only) {
  const int n = body->node_size();
  for (int i = 0; i < n; ++i) {
    if (body->node(i).op() != "_FusedMatMul") continue;
    const tensorflow::NodeDef fused = body->node(i);
    const auto& attrs = fused.attr();
    std::vector<std::string> ops;
    if (attrs.count("fused_ops"))
      for (const std::string& op : attrs.at("fused_ops").list().s()) ops.push_back(op);
    const std::string activation = ops.size() == 2 ? ops[1] : "";
    const bool gelu = activation == "GeluExact" || activation == "GeluApproximate";
    const DType type = attrs.count("T") ? DTypeFromProto(attrs.at("T").type()) : DType::kInvalid;
    if (!UnfusesMatMul(ops, type) || fused.input_size() < 3 || (attrs.count("num_args") && attrs.at("num_args").i() != 1)) {
      std::string list;
      for (const std::string& op : ops) list += (list.empty() ? "" : ", ") + op;
      return Unimplemented("'" + fused.name() + "' (_FusedMatMul) with fused_ops [" + list +
                           "]: only BiasAdd with Relu, Relu6, Elu, Tanh, Sigmoid or (float32) GeluExact or "
                           "GeluApproximate is taken apart");
    }
    // cuBLASLt's epilogues (bias, bias and ReLU) stay in the GEMM.
    if (activations_only && (ops.size() == 1 || ops[1] == "Relu")) continue;
    auto make = [&](tensorflow::NodeDef* node, const std::string& name, const std::string& op, std::vector<std::string> inputs) {
      return WriteNodeLike(fused, node, name, op, inputs);
    };
    // The last op keeps the fused node's name (and its place): its readers read it.
    tensorflow::NodeDef* gemm;
    if (activations_only) {
      gemm = body->add_node();
      *gemm = fused;
      gemm->set_name(fused.name() + "/bias");
      (*gemm->mutable_attr())["fused_ops"].mutable_list()->mutable_s()->RemoveLast();
      if (gelu) AddGelu(body, body->mutable_node(i), fused.name(), gemm->name(), activation == "GeluExact", fused.device());
      else make(body->mutable_node(i), fused.name(), ops[1], {gemm->name()});
      continue;
    }
    gemm = make(body->add_node(), fused.name() + "/matmul", "MatMul", {fused.input(0), fused.input(1)});
    for (const char* t : {"transpose_a", "transpose_b"})
      if (attrs.count(t)) (*gemm->mutable_attr())[t] = attrs.at(t);
    for (int k = 3; k < fused.input_size(); ++k) gemm->add_input(fused.input(k));  // control inputs
    if (ops.size() == 1) {
      make(body->mutable_node(i), fused.name(), "BiasAdd", {gemm->name(), fused.input(2)});
    } else {
      const tensorflow::NodeDef* biased = make(body->add_node(), fused.name() + "/bias", "BiasAdd", {gemm->name(), fused.input(2)});
      if (gelu) AddGelu(body, body->mutable_node(i), fused.name(), biased->name(), activation == "GeluExact", fused.device());
      else make(body->mutable_node(i), fused.name(), ops[1], {biased->name()});
    }
  }
  return Status::Ok();
}

Status UnfuseConvs(tensorflow::GraphDef* body, bool activations_only) {
  const int n = body->node_size();
  for (int i = 0; i < n; ++i) {
    const tensorflow::NodeDef& node = body->node(i);
    if (TraitsOf(node.op()).pattern != OpPattern::kConv || !node.attr().count("fused_ops")) continue;
    const tensorflow::NodeDef fused = node;
    const std::string& op = fused.op();  // _FusedConv2D, _FusedDepthwiseConv2dNative
    const auto& attrs = fused.attr();
    std::vector<std::string> ops;
    if (attrs.count("fused_ops"))
      for (const std::string& o : attrs.at("fused_ops").list().s()) ops.push_back(o);
    const bool residual = ops.size() >= 2 && ops[1] == "Add";
    if (!UnfusesConv(ops) || fused.input_size() < (residual ? 4 : 3)) {
      std::string list;
      for (const std::string& o : ops) list += (list.empty() ? "" : ", ") + o;
      return Unimplemented("'" + fused.name() + "' (" + op + ") with fused_ops [" + list +
                           "]: only BiasAdd, then Add (a residual), then Relu, Relu6, Elu, Tanh or Sigmoid is taken apart");
    }
    const std::string activation = ops.size() == (residual ? 3u : 2u) ? ops.back() : "";
    // cuDNN's fused convolution takes the bias, the residual and a ReLU.
    if (activations_only && (activation.empty() || activation == "Relu")) continue;
    const std::string data_format = attrs.count("data_format") ? attrs.at("data_format").s() : "NHWC";
    auto make = [&](tensorflow::NodeDef* node, const std::string& name, const std::string& type, std::vector<std::string> inputs) {
      return WriteNodeLike(fused, node, name, type, inputs)->name();
    };
    std::string last;
    if (activations_only) {  // the convolution with its bias (and residual), then the activation
      tensorflow::NodeDef* conv = body->add_node();
      *conv = fused;
      conv->set_name(fused.name() + "/conv");
      (*conv->mutable_attr())["fused_ops"].mutable_list()->mutable_s()->RemoveLast();
      last = conv->name();
    } else {  // the convolution, BiasAdd, AddV2 and the activation, each a node
      tensorflow::NodeDef* conv = body->add_node();
      make(conv, fused.name() + "/conv", op.substr(std::string("_Fused").size()), {fused.input(0), fused.input(1)});
      for (const char* a : {"strides", "padding", "explicit_paddings", "dilations", "data_format"})
        if (attrs.count(a)) (*conv->mutable_attr())[a] = attrs.at(a);
      for (int k = residual ? 4 : 3; k < fused.input_size(); ++k) conv->add_input(fused.input(k));  // control inputs
      tensorflow::NodeDef* bias = body->add_node();
      last = make(bias, fused.name() + (residual || !activation.empty() ? "/bias" : ""), "BiasAdd", {conv->name(), fused.input(2)});
      (*bias->mutable_attr())["data_format"].set_s(data_format);
      if (residual) last = make(body->add_node(), fused.name() + (activation.empty() ? "" : "/residual"), "AddV2", {last, fused.input(3)});
    }
    // The last op takes the fused node's place and name: its readers read it.
    if (!activation.empty()) {
      make(body->mutable_node(i), fused.name(), activation, {last});
    } else {
      // (without an activation, the last node made carries the name: move it into place)
      const int made = body->node_size() - 1;
      body->mutable_node(i)->Swap(body->mutable_node(made));
      body->mutable_node()->RemoveLast();
    }
  }
  return Status::Ok();
}

StatusOr<bool> ExpandSmallGemms(AnalyzedGraph* body, int64_t max_multiply_adds) {
  Graph& graph = body->graph;
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    Node* gemm = graph.node(id);
    const bool batched = gemm->op == "BatchMatMulV2";
    if (gemm->op != "MatMul" && !batched) continue;
    const NodeInfo& info = body->info(id);
    const DType dtype = info.dtypes[0];
    // float32 only: a 16-bit Mul would round each product, where the GEMM does not.
    if (dtype != DType::kFloat) continue;
    const Shape& a = StaticShape(*body, gemm->inputs[0]);
    const Shape& out = info.shapes[0];
    if (!a.IsFullyDefined() || !out.IsFullyDefined() || a.rank() < 2) continue;
    const bool ta = GetBoolAttrOr(*gemm, batched ? "adj_x" : "transpose_a", false).value_or(false);
    const bool tb = GetBoolAttrOr(*gemm, batched ? "adj_y" : "transpose_b", false).value_or(false);
    const int64_t k = a.dim(ta ? a.rank() - 2 : a.rank() - 1);
    if (out.num_elements() > max_multiply_adds / std::max<int64_t>(k, 1)) continue;
    // A small GEMM: out[..., i, j] = Sum over k of (a[..., i, k, 1] * b[..., 1, k, j]).
    const std::string name = gemm->name;
    auto add = [&](const std::string& suffix, const std::string& op, std::vector<TensorId> inputs) {
      Node* node = graph.AddNode(UniqueName(graph, name + "/" + suffix), op);
      node->device = graph.node(id)->device;
      node->inputs = std::move(inputs);
      if (op != "Const") node->attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
      return TensorId{node->id, 0};
    };
    auto constant = [&](const std::string& suffix, std::vector<int32_t> values) {
      const TensorId c = add(suffix, "Const", {});
      MakeConst(graph.node(c.node), values.size() == 1 ? Tensor::Scalar(values[0]) : Tensor::Vector(values));
      return c;
    };
    // An operand with its last two dims swapped (`swap`), then a unit dim inserted at `axis`.
    auto operand = [&](int i, bool swap, int32_t axis) {
      TensorId x = graph.node(id)->inputs[i];
      const int rank = StaticShape(*body, x).rank();
      if (swap) {
        std::vector<int32_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[rank - 1], perm[rank - 2]);
        x = add(i == 0 ? "a_transposed" : "b_transposed", "Transpose", {x, constant(i == 0 ? "a_perm" : "b_perm", perm)});
        graph.node(x.node)->attrs["Tperm"].set_type(tensorflow::DT_INT32);
      }
      const TensorId e = add(i == 0 ? "a_expanded" : "b_expanded", "ExpandDims", {x, constant(i == 0 ? "a_axis" : "b_axis", {axis})});
      graph.node(e.node)->attrs["Tdim"].set_type(tensorflow::DT_INT32);
      return e;
    };
    const TensorId products = add("products", "Mul", {operand(0, ta, -1), operand(1, tb, -3)});
    const TensorId axis = constant("k_axis", {-2});
    gemm = graph.node(id);
    AttrMap attrs = InternalAttrs(*gemm);
    attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
    attrs["Tidx"].set_type(tensorflow::DT_INT32);
    attrs["keep_dims"].set_b(false);
    gemm->op = "Sum";
    gemm->inputs = {products, axis};
    gemm->attrs = std::move(attrs);
    changed = true;
  }
  if (changed) {
    GJ_ASSIGN_OR_RETURN(*body, AnalyzeGraph(std::move(graph)));
  }
  return changed;
}

}  // namespace graphjit
