// _GraphjitWhile and _GraphjitIf, a TensorFlow while loop or conditional made one node
// (runtime/control_flow.h), and _GraphjitSetRow, a TensorList's SetItem on its dense form.

#include <cstring>
#include <memory>
#include <mutex>

#include "runtime/cuda_device.h"
#include "runtime/kernels/common.h"
#include "runtime/kernels/subgraph.h"

namespace graphjit {
namespace {

// The cond runs op by op; the body, where the time goes, is optimized and compiled for
// the session that first runs the loop.
class Loop {
 public:
  static StatusOr<std::shared_ptr<const void>> Prepare(const Node& node) {
    GJ_ASSIGN_OR_RETURN(std::vector<DType> types, GetTypeListAttr(node, "T"));
    GJ_ASSIGN_OR_RETURN(int64_t vars, GetIntAttr(node, "num_vars"));
    GJ_ASSIGN_OR_RETURN(std::string cond_output, GetStringAttr(node, "cond_output"));
    const tensorflow::AttrValue* outputs = node.FindAttr("body_outputs");
    if (outputs == nullptr || outputs->list().s_size() != vars || vars < 0 || vars > static_cast<int64_t>(types.size()))
      return InvalidArgument(NodeLabel(node) + ": body_outputs must list num_vars tensors");
    GJ_ASSIGN_OR_RETURN(tensorflow::GraphDef cond, GraphAttr(node, "cond"));
    GJ_ASSIGN_OR_RETURN(tensorflow::GraphDef body, GraphAttr(node, "body"));
    auto loop = std::make_shared<Loop>(static_cast<int>(vars), std::move(body), NodeLabel(node) + " body", types.size(),
                                       std::vector<std::string>(outputs->list().s().begin(), outputs->list().s().end()));
    GJ_ASSIGN_OR_RETURN(loop->cond_, MakeSubgraph(cond, NodeLabel(node) + " cond", types.size(), {cond_output}, nullptr));
    GJ_RETURN_IF_ERROR(loop->body_.Check());
    return std::shared_ptr<const void>(loop);
  }

  Loop(int vars, tensorflow::GraphDef body, std::string what, size_t args, std::vector<std::string> outputs)
      : vars_(vars), body_(std::move(body), std::move(what), args, std::move(outputs)) {}
  int vars() const { return vars_; }
  const Subgraph& cond() const { return cond_; }
  const LazySubgraph& body() const { return body_; }

 private:
  int vars_ = 0;
  Subgraph cond_;
  LazySubgraph body_;
};

// Runs cond, then body while cond is true: each iteration's variables are the body's
// outputs; the invariants stay. A variable must keep its dtype and shape. In a session with
// a GPU, tensors the body's clusters make stay on the device from one iteration to the next
// (a CPU op in the body copies what it reads): only the condition comes to the host.
OpDef WhileOp() {
  OpDef def;
  def.name = "_GraphjitWhile";
  def.min_inputs = 0;
  def.max_inputs = -1;
  def.prepare = Loop::Prepare;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(std::vector<DType> types, GetTypeListAttr(c.node, "T"));
    GJ_ASSIGN_OR_RETURN(int64_t vars, GetIntAttr(c.node, "num_vars"));
    if (static_cast<int>(types.size()) != c.num_inputs() || vars < 0 || vars > c.num_inputs())
      return c.TypeError("attr T lists " + std::to_string(types.size()) + " types for " + std::to_string(c.num_inputs()) +
                         " inputs");
    for (int i = 0; i < c.num_inputs(); ++i)
      if (types[i] != c.dtype(i)) return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)));
    for (int i = 0; i < vars; ++i) c.AddOutput(types[i], c.shape(i));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const auto* loop = static_cast<const Loop*>(ctx.state);
    ExecutorOptions options = NestedExecutorOptions(ctx);
    options.fetch_on_device = true;
    GJ_ASSIGN_OR_RETURN(std::shared_ptr<const Subgraph> body, loop->body().Get(ctx.options));
    std::vector<Tensor> values = ctx.inputs;
    for (int64_t iteration = 0;; ++iteration) {
      std::vector<Tensor> go;
      GJ_RETURN_IF_ERROR(Execute(loop->cond().graph, loop->cond().plan, values, options, &go));
      if (OnDeviceOnly(go[0])) GJ_RETURN_IF_ERROR(ctx.gpu->CopyToHost(go[0], ctx.tracer, ctx.node.name + "/cond/to_host"));
      if (go[0].dtype() != DType::kBool || go[0].num_elements() != 1)
        return ctx.Error("the loop condition is not a boolean scalar: " + DTypeName(go[0].dtype()) + go[0].shape().ToString());
      if (!go[0].data<bool>()[0]) break;
      std::vector<Tensor> next;
      GJ_RETURN_IF_ERROR(Execute(body->graph, body->plan, values, options, &next));
      for (int i = 0; i < loop->vars(); ++i) {
        if (next[i].dtype() != values[i].dtype() || next[i].shape() != values[i].shape())
          return ctx.Error("loop variable " + std::to_string(i) + " changes from " + DTypeName(values[i].dtype()) +
                           values[i].shape().ToString() + " to " + DTypeName(next[i].dtype()) + next[i].shape().ToString() +
                           " in iteration " + std::to_string(iteration));
        values[i] = std::move(next[i]);
      }
    }
    for (int i = 0; i < loop->vars(); ++i) ctx.ForwardOutput(i, std::move(values[i]));
    return Status::Ok();
  };
  return def;
}

// A conditional's two branches, each prepared for the session that first takes it.
class Branches {
 public:
  static StatusOr<std::shared_ptr<const void>> Prepare(const Node& node) {
    GJ_ASSIGN_OR_RETURN(std::vector<DType> types, GetTypeListAttr(node, "Tout"));
    auto branches = std::make_shared<Branches>();
    for (int b = 0; b < 2; ++b) {
      const std::string name = b == 0 ? "else" : "then";
      GJ_ASSIGN_OR_RETURN(tensorflow::GraphDef gd, GraphAttr(node, name));
      const tensorflow::AttrValue* outputs = node.FindAttr(name + "_outputs");
      if (outputs == nullptr || outputs->list().s_size() != static_cast<int>(types.size()))
        return InvalidArgument(NodeLabel(node) + ": " + name + "_outputs must list one tensor per type of Tout");
      branches->branch_[b] =
          std::make_unique<LazySubgraph>(std::move(gd), NodeLabel(node) + " " + name + " branch", node.inputs.size() - 1,
                                         std::vector<std::string>(outputs->list().s().begin(), outputs->list().s().end()));
      GJ_RETURN_IF_ERROR(branches->branch_[b]->Check());
    }
    return std::shared_ptr<const void>(branches);
  }

  const LazySubgraph& branch(bool taken) const { return *branch_[taken ? 1 : 0]; }

 private:
  std::unique_ptr<LazySubgraph> branch_[2];
};

// TensorFlow's truth of an If's condition: a scalar is true when it is nonzero, any other
// tensor when it has elements.
StatusOr<bool> Truth(const KernelContext& ctx, const Tensor& cond) {
  if (cond.shape().rank() != 0) return cond.num_elements() > 0;
  if (cond.dtype() == DType::kBool) return cond.data<bool>()[0];
  if (IsFloatingPoint(cond.dtype())) return cond.ValueAsDouble(0) != 0;
  if (IsInteger(cond.dtype())) return cond.ValueAsInt(0) != 0;
  return ctx.Error("a condition of type " + DTypeName(cond.dtype()));
}

// _GraphjitIf(cond, args...): the then branch's outputs when cond is true, else the else
// branch's; each branch is fed the args.
OpDef IfOp() {
  OpDef def;
  def.name = "_GraphjitIf";
  def.min_inputs = 1;
  def.max_inputs = -1;
  def.prepare = Branches::Prepare;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(std::vector<DType> types, GetTypeListAttr(c.node, "Tout"));
    const tensorflow::AttrValue* shapes = c.node.FindAttr("output_shapes");
    const bool known = shapes != nullptr && shapes->list().shape_size() == static_cast<int>(types.size());
    for (size_t i = 0; i < types.size(); ++i)
      c.AddOutput(types[i], known ? ShapeFromProto(shapes->list().shape(static_cast<int>(i))) : Shape::UnknownRank());
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const auto* branches = static_cast<const Branches*>(ctx.state);
    GJ_ASSIGN_OR_RETURN(bool taken, Truth(ctx, ctx.input(0)));
    GJ_ASSIGN_OR_RETURN(std::shared_ptr<const Subgraph> branch, branches->branch(taken).Get(ctx.options));
    const std::vector<Tensor> args(ctx.inputs.begin() + 1, ctx.inputs.end());
    std::vector<Tensor> outputs;
    ExecutorOptions options = NestedExecutorOptions(ctx);
    options.fetch_on_device = true;  // (a GPU's results stay there)
    GJ_RETURN_IF_ERROR(Execute(branch->graph, branch->plan, args, options, &outputs));
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].dtype() != ctx.output_dtypes[i] || !IsCompatible(ctx.output_shapes[i], outputs[i].shape()))
        return ctx.Error(std::string(taken ? "then" : "else") + " branch's output " + std::to_string(i) + " is " +
                         DTypeName(outputs[i].dtype()) + outputs[i].shape().ToString() + ", not " +
                         DTypeName(ctx.output_dtypes[i]) + ctx.output_shapes[i].ToString());
      ctx.ForwardOutput(static_cast<int>(i), std::move(outputs[i]));
    }
    return Status::Ok();
  };
  return def;
}

// _GraphjitSetRow(list [n, ...], index, item [...]): the list with row `index` replaced.
OpDef SetRowOp() {
  OpDef def;
  def.name = "_GraphjitSetRow";
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 2}));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    const Shape& list = c.shape(0);
    const Shape& item = c.shape(2);
    if (!list.unknown_rank() && !item.unknown_rank() && list.IsFullyDefined() && item.IsFullyDefined()) {
      std::vector<int64_t> row(list.dims().begin() + (list.rank() > 0 ? 1 : 0), list.dims().end());
      if (list.rank() == 0 || Shape(row) != item)
        return c.ShapeError("item " + item.ToString() + " is not a row of " + list.ToString());
    }
    c.AddOutput(t, list);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const Tensor& list = ctx.input(0);
    const Tensor& item = ctx.input(2);
    const auto& dims = list.shape().dims();
    if (dims.empty() || Shape(std::vector<int64_t>(dims.begin() + 1, dims.end())) != item.shape())
      return ctx.Error("item " + item.shape().ToString() + " is not a row of " + list.shape().ToString());
    if (ctx.input(1).num_elements() != 1) return ctx.Error("the index must be a scalar");
    const int64_t rows = dims[0], index = ctx.input(1).ValueAsInt(0);
    if (index < 0 || index >= rows)
      return ctx.Error("index " + std::to_string(index) + " is outside the list of " + std::to_string(rows));
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.ForwardInputOrAllocateOutput({0}, 0));
    if (out->raw() != list.raw()) std::memcpy(out->raw(), list.raw(), list.bytes());
    std::memcpy(static_cast<char*>(out->raw()) + index * item.bytes(), item.raw(), item.bytes());
    return Status::Ok();
  };
  return def;
}

const bool kRegistered = RegisterOps({WhileOp(), IfOp(), SetRowOp()});

}  // namespace
}  // namespace graphjit
