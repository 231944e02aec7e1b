#include "runtime/kernels/subgraph.h"

#include "ir/attr.h"
#include "ir/graphdef.h"
#include "runtime/control_flow.h"
#include "runtime/pass_registry.h"
#include "runtime/placement.h"

namespace graphjit {

StatusOr<Subgraph> MakeSubgraph(const tensorflow::GraphDef& gd, const std::string& what, size_t args,
                                const std::vector<std::string>& outputs, const SessionOptions* options) {
  // A branch or body holds graphs of its own; a function that names itself would never end.
  constexpr int kMaxDepth = 32;
  thread_local int depth = 0;
  if (depth >= kMaxDepth)
    return Unimplemented(what + ": loops and conditionals nested more than " + std::to_string(kMaxDepth) +
                         " deep (a function that calls itself?)");
  ++depth;
  struct Leave {
    ~Leave() { --depth; }
  } leave;
  auto graph = ImportGraphDef(gd);
  if (!graph.ok()) return graph.status().WithContext(what);
  GJ_RETURN_IF_ERROR(FunctionalizeControlFlow(&*graph).WithContext(what));
  std::vector<std::string> feeds;
  for (size_t i = 0; i < args; ++i) feeds.push_back("_arg_" + std::to_string(i));
  if (options != nullptr) {
    PlaceNodes(*options, &*graph);  // on the session's device, as its own graph's nodes
    const GraphPassContext context{*options, feeds, outputs, {}};
    for (const GraphPass& pass : PassRegistry::Global()->Passes()) {
      auto r = pass.run(*graph, context);
      if (!r.ok()) return r.status().WithContext(what + ": graph pass '" + pass.name + "'");
    }
  }
  auto analyzed = AnalyzeGraph(std::move(graph).value());
  if (!analyzed.ok()) return analyzed.status().WithContext(what);
  Subgraph sub{std::move(analyzed).value(), {}};
  std::vector<TensorId> feed_ids, fetch_ids;
  auto resolve = [&](const std::vector<std::string>& names, std::vector<TensorId>* ids) -> Status {
    for (const std::string& name : names) {
      auto id = ResolveTensor(sub.graph, name);
      if (!id.ok()) return id.status().WithContext(what);
      ids->push_back(*id);
    }
    return Status::Ok();
  };
  GJ_RETURN_IF_ERROR(resolve(feeds, &feed_ids));
  GJ_RETURN_IF_ERROR(resolve(outputs, &fetch_ids));
  GJ_ASSIGN_OR_RETURN(sub.plan, BuildExecutionPlan(sub.graph, feed_ids, fetch_ids, {}));
  return sub;
}

StatusOr<std::shared_ptr<const Subgraph>> LazySubgraph::Get(const SessionOptions* options) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!made_) {
    GJ_ASSIGN_OR_RETURN(Subgraph sub, MakeSubgraph(gd_, what_, args_, outputs_, options));
    made_ = std::make_shared<const Subgraph>(std::move(sub));
  }
  return made_;
}

StatusOr<tensorflow::GraphDef> GraphAttr(const Node& node, const std::string& attr) {
  GJ_ASSIGN_OR_RETURN(std::string bytes, GetStringAttr(node, attr));
  tensorflow::GraphDef gd;
  if (!gd.ParseFromString(bytes)) return InvalidArgument(NodeLabel(node) + ": attr '" + attr + "' is not a GraphDef");
  return gd;
}

}  // namespace graphjit
