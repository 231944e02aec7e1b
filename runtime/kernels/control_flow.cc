// _GraphjitWhile, a TensorFlow while loop made one node (runtime/control_flow.h), and
// _GraphjitSetRow, a TensorList's SetItem on its dense form.

#include <cstring>
#include <memory>
#include <mutex>

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
    auto loop = std::make_shared<Loop>();
    loop->vars_ = static_cast<int>(vars);
    loop->args_ = types.size();
    loop->body_outputs_.assign(outputs->list().s().begin(), outputs->list().s().end());
    GJ_ASSIGN_OR_RETURN(tensorflow::GraphDef cond, GraphAttr(node, "cond"));
    GJ_ASSIGN_OR_RETURN(loop->body_def_, GraphAttr(node, "body"));
    GJ_ASSIGN_OR_RETURN(loop->cond_, MakeSubgraph(cond, NodeLabel(node) + " cond", types.size(), {cond_output}, nullptr));
    // The body as it is, to find its errors now; optimized on the first run.
    GJ_RETURN_IF_ERROR(MakeSubgraph(loop->body_def_, NodeLabel(node) + " body", loop->args_, loop->body_outputs_, nullptr)
                           .status());
    return std::shared_ptr<const void>(loop);
  }

  int vars() const { return vars_; }
  const Subgraph& cond() const { return cond_; }
  StatusOr<std::shared_ptr<const Subgraph>> Body(const KernelContext& ctx) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!body_) {
      GJ_ASSIGN_OR_RETURN(Subgraph body, MakeSubgraph(body_def_, NodeLabel(ctx.node) + " body", args_, body_outputs_,
                                                      ctx.options));
      body_ = std::make_shared<const Subgraph>(std::move(body));
    }
    return body_;
  }

 private:
  int vars_ = 0;
  size_t args_ = 0;
  Subgraph cond_;
  tensorflow::GraphDef body_def_;
  std::vector<std::string> body_outputs_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Subgraph> body_;
};

// Runs cond, then body while cond is true: each iteration's variables are the body's
// outputs; the invariants stay. A variable must keep its dtype and shape.
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
    const ExecutorOptions options = NestedExecutorOptions(ctx);
    GJ_ASSIGN_OR_RETURN(std::shared_ptr<const Subgraph> body, loop->Body(ctx));
    std::vector<Tensor> values = ctx.inputs;
    for (int64_t iteration = 0;; ++iteration) {
      std::vector<Tensor> go;
      GJ_RETURN_IF_ERROR(Execute(loop->cond().graph, loop->cond().plan, values, options, &go));
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

const bool kRegistered = RegisterOps({WhileOp(), SetRowOp()});

}  // namespace
}  // namespace graphjit
