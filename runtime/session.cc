#include "runtime/session.h"

#include <charconv>
#include <cstdio>
#include <mutex>

#include "ir/device.h"
#include "ir/graphdef.h"
#include "runtime/pass_registry.h"

namespace graphjit {

StatusOr<std::unique_ptr<Session>> Session::Create(const SessionOptions& options, const tensorflow::GraphDef& graph_def) {
  // 1. Import and structural checks.
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(graph_def));
  // Everything runs on the CPU; say so once if the model asks for a GPU.
  for (int id = 0; id < graph.num_nodes(); ++id) {
    auto device = ParseDeviceName(graph.node(id)->device);
    if (device.ok() && (device->type == "GPU" || device->type == "XLA_GPU")) {
      static std::once_flag warned;
      std::call_once(warned, [&] {
        std::fprintf(stderr, "graphjit: warning: no GPU backend yet; nodes placed on %s run on the CPU\n",
                     device->ToString().c_str());
      });
      break;
    }
  }
  // 2. Check every node against the op registry (all unsupported ops at once).
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(std::move(graph)));
  // 3. Registered graph passes, then a fresh analysis of what they produced.
  bool changed = false;
  for (const GraphPass& pass : PassRegistry::Global()->Passes()) {
    auto r = pass.run(analyzed.graph, options);
    if (!r.ok()) return r.status().WithContext("graph pass '" + pass.name + "'");
    changed |= *r;
  }
  if (changed) {
    GJ_ASSIGN_OR_RETURN(analyzed, AnalyzeGraph(std::move(analyzed.graph)));
  }
  return std::unique_ptr<Session>(new Session(options, std::move(analyzed)));
}

Session::Session(const SessionOptions& options, AnalyzedGraph graph) : options_(options), graph_(std::move(graph)) {
  int inter = options.inter_op_threads > 0 ? options.inter_op_threads : ThreadPool::DefaultThreads();
  int intra = options.intra_op_threads > 0 ? options.intra_op_threads : ThreadPool::DefaultThreads();
  inter_op_ = std::make_unique<ThreadPool>(inter);
  intra_op_ = std::make_unique<ThreadPool>(intra);
}

Session::~Session() = default;

StatusOr<TensorId> Session::ResolveTensor(const std::string& name) const {
  // A tensor a graph pass moved (e.g. into a cluster's outputs) resolves to its new home.
  auto alias = graph_.aliases.find(name);
  if (alias == graph_.aliases.end() && name.size() > 2 && name.compare(name.size() - 2, 2, ":0") == 0)
    alias = graph_.aliases.find(name.substr(0, name.size() - 2));
  if (alias != graph_.aliases.end()) return alias->second;
  ParsedInput parsed;
  if (!ParseInputString(name, &parsed) || parsed.control) return InvalidArgument("malformed tensor name '" + name + "'");
  const Node* node = graph_.graph.FindNode(parsed.node);
  if (node == nullptr) return NotFound("no node named '" + std::string(parsed.node) + "' in the graph");
  int outputs = static_cast<int>(graph_.info(node->id).dtypes.size());
  if (parsed.index >= outputs)
    return NotFound("node '" + node->name + "' has " + std::to_string(outputs) + " output" + (outputs == 1 ? "" : "s") +
                    ", so '" + name + "' does not exist");
  return TensorId{node->id, parsed.index};
}

StatusOr<std::shared_ptr<const ExecutionPlan>> Session::GetPlan(const std::vector<TensorId>& feeds,
                                                                const std::vector<TensorId>& fetches,
                                                                const std::vector<int>& targets) {
  std::string key;
  for (TensorId t : feeds) key += std::to_string(t.node) + ":" + std::to_string(t.index) + ",";
  key += "|";
  for (TensorId t : fetches) key += std::to_string(t.node) + ":" + std::to_string(t.index) + ",";
  key += "|";
  for (int t : targets) key += std::to_string(t) + ",";
  std::lock_guard<std::mutex> lock(plans_mu_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  GJ_ASSIGN_OR_RETURN(ExecutionPlan plan, BuildExecutionPlan(graph_, feeds, fetches, targets));
  auto shared = std::make_shared<const ExecutionPlan>(std::move(plan));
  plans_.emplace(key, shared);
  return shared;
}

Status Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, targets, outputs);
}

Status Session::Run(const RunOptions& run_options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs) {
  // 1. Resolve names and check the feeds against the graph's types and shapes.
  std::vector<TensorId> feed_ids, fetch_ids;
  std::vector<Tensor> feed_values;
  for (const auto& [name, value] : feeds) {
    auto id = ResolveTensor(name);
    if (!id.ok()) return FailedPrecondition("feed '" + name + "': " + id.status().message());
    for (TensorId seen : feed_ids)
      if (seen == *id) return FailedPrecondition("tensor '" + name + "' is fed twice");
    DType want = graph_.info(id->node).dtypes[id->index];
    const Shape& declared = graph_.info(id->node).shapes[id->index];
    if (value.dtype() != want)
      return FailedPrecondition("feed '" + name + "' has type " + DTypeName(value.dtype()) + ", but the graph expects " +
                                DTypeName(want));
    if (!IsCompatible(declared, value.shape()))
      return FailedPrecondition("feed '" + name + "' has shape " + value.shape().ToString() +
                                ", which does not match the graph's " + declared.ToString());
    feed_ids.push_back(*id);
    feed_values.push_back(value);
  }
  for (const std::string& name : fetches) {
    auto id = ResolveTensor(name);
    if (!id.ok()) return FailedPrecondition("fetch '" + name + "': " + id.status().message());
    fetch_ids.push_back(*id);
  }
  std::vector<int> target_ids;
  for (const std::string& name : targets) {
    const Node* node = graph_.graph.FindNode(name);
    if (node == nullptr) return FailedPrecondition("target '" + name + "': no node with that name");
    target_ids.push_back(node->id);
  }
  // 2. The plan for this combination (cached), then run it.
  GJ_ASSIGN_OR_RETURN(auto plan, GetPlan(feed_ids, fetch_ids, target_ids));
  ExecutorOptions eo;
  eo.inter_op = inter_op_.get();
  eo.intra_op = intra_op_.get();
  eo.allocator = &allocator_;
  eo.tracer = run_options.tracer;
  return Execute(graph_, *plan, feed_values, eo, outputs);
}

}  // namespace graphjit
