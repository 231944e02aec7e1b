// _JitCluster: a cluster of ops that the clustering pass encapsulated. Its body is a
// GraphDef (attr `_body`) whose inputs are the placeholders `_arg_0`, `_arg_1`, ... and
// whose outputs are the body tensors listed in `_body_outputs`. Without a compiler, the
// body runs op by op on the caller's threads and allocator, so results are exactly those
// of the unclustered graph.

#include "runtime/kernels/common.h"
#include "runtime/kernels/subgraph.h"

namespace graphjit {
namespace {

StatusOr<std::shared_ptr<const void>> PrepareCluster(const Node& node) {
  GJ_ASSIGN_OR_RETURN(tensorflow::GraphDef gd, GraphAttr(node, "_body"));
  GJ_ASSIGN_OR_RETURN(std::vector<DType> tin, GetTypeListAttr(node, "Tin"));
  GJ_ASSIGN_OR_RETURN(std::vector<DType> tout, GetTypeListAttr(node, "Tout"));
  const tensorflow::AttrValue* outs = node.FindAttr("_body_outputs");
  if (outs == nullptr) return InvalidArgument(NodeLabel(node) + ": attr '_body_outputs' is missing");
  auto body = std::make_shared<Subgraph>();
  GJ_ASSIGN_OR_RETURN(
      *body, MakeSubgraph(gd, NodeLabel(node) + " body", tin.size(), {outs->list().s().begin(), outs->list().s().end()}));
  // The node's declared types must be what the body takes and makes.
  const std::vector<TensorId>& feeds = body->plan.feeds;
  const std::vector<TensorId>& fetches = body->plan.fetches;
  if (tout.size() != fetches.size())
    return InvalidArgument(NodeLabel(node) + ": Tout lists " + std::to_string(tout.size()) + " types for " +
                           std::to_string(fetches.size()) + " body outputs");
  for (size_t i = 0; i < fetches.size(); ++i)
    if (body->graph.info(fetches[i].node).dtypes[fetches[i].index] != tout[i])
      return InvalidArgument(NodeLabel(node) + ": body output " + std::to_string(i) + " does not have type " +
                             DTypeName(tout[i]));
  for (size_t i = 0; i < feeds.size(); ++i)
    if (body->graph.info(feeds[i].node).dtypes[feeds[i].index] != tin[i])
      return InvalidArgument(NodeLabel(node) + ": body input " + std::to_string(i) + " does not have type " + DTypeName(tin[i]));
  return std::shared_ptr<const void>(body);
}

OpDef JitClusterOp() {
  OpDef def;
  def.name = "_JitCluster";
  def.min_inputs = 0;
  def.max_inputs = -1;
  def.prepare = PrepareCluster;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(std::vector<DType> tin, GetTypeListAttr(c.node, "Tin"));
    GJ_ASSIGN_OR_RETURN(std::vector<DType> tout, GetTypeListAttr(c.node, "Tout"));
    if (static_cast<int>(tin.size()) != c.num_inputs())
      return c.TypeError("attr Tin lists " + std::to_string(tin.size()) + " types for " + std::to_string(c.num_inputs()) +
                         " inputs");
    for (int i = 0; i < c.num_inputs(); ++i)
      if (tin[i] != c.dtype(i)) return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)));
    // Shapes come from the body when it runs.
    for (DType t : tout) c.AddOutput(t, Shape::UnknownRank());
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const auto* body = static_cast<const Subgraph*>(ctx.state);
    const ExecutorOptions options = NestedExecutorOptions(ctx);
    std::vector<Tensor> outputs;
    GJ_RETURN_IF_ERROR(Execute(body->graph, body->plan, ctx.inputs, options, &outputs));
    for (size_t i = 0; i < outputs.size(); ++i) ctx.ForwardOutput(static_cast<int>(i), std::move(outputs[i]));
    return Status::Ok();
  };
  return def;
}

const bool kRegistered = RegisterOps({JitClusterOp()});

}  // namespace
}  // namespace graphjit
