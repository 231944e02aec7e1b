#include "runtime/session.h"

#include <charconv>
#include <mutex>

#include "ir/device.h"
#include "ir/graphdef.h"
#include "ir/logging.h"
#include "runtime/control_flow.h"
#include "runtime/cuda_device.h"
#include "runtime/op_traits.h"
#include "runtime/pass_registry.h"
#include "runtime/placement.h"

namespace graphjit {

StatusOr<std::unique_ptr<Session>> Session::Create(const SessionOptions& options, const tensorflow::GraphDef& graph_def) {
  // Each thread of a pool is an OS thread: a count beyond any machine's is a mistake.
  constexpr int kMaxThreads = 1024;
  if (options.intra_op_threads > kMaxThreads || options.inter_op_threads > kMaxThreads)
    return InvalidArgument("intra_op_parallelism_threads and inter_op_parallelism_threads must be at most " +
                           std::to_string(kMaxThreads) + ", got " + std::to_string(options.intra_op_threads) + " and " +
                           std::to_string(options.inter_op_threads));
  // 1. Import and structural checks.
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(graph_def));
  GJ_RETURN_IF_ERROR(FunctionalizeControlFlow(&graph));
  // The session's GPU, if it has one; where each node runs.
  std::unique_ptr<GpuContext> gpu;
  if (HasGpu(options)) {
    if (!(options.gpu_memory_fraction >= 0 && options.gpu_memory_fraction <= 1))
      return InvalidArgument("gpu_options.per_process_gpu_memory_fraction must be between 0 and 1, got " +
                             std::to_string(options.gpu_memory_fraction));
    auto opened = GpuContext::Open(options.device, options.cuda_driver, options.gpu_memory_fraction, options.gpu_index);
    if (opened.ok()) {
      gpu = std::move(opened).value();
    } else if (options.gpu_compile_only) {
      GJ_LOG(WARNING) << opened.status().message() << ": GPU kernels are compiled, not run; the graph runs on the CPU";
      gpu = std::make_unique<GpuContext>();
      gpu->device = options.device;
    } else {
      return opened.status();
    }
  }
  PlaceNodes(options, &graph);
  // 2. Check every node against the op registry (all unsupported ops at once).
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(std::move(graph)));
  auto session = std::unique_ptr<Session>(new Session(options, std::move(analyzed)));
  session->gpu_ = std::move(gpu);
  return session;
}

Session::Session(const SessionOptions& options, AnalyzedGraph graph)
    : options_(options), graph_(std::make_shared<const AnalyzedGraph>(std::move(graph))) {
  int inter = options.inter_op_threads > 0 ? options.inter_op_threads : ThreadPool::DefaultThreads();
  int intra = options.intra_op_threads > 0 ? options.intra_op_threads : ThreadPool::DefaultThreads();
  inter_op_ = ThreadPool::Shared(ThreadPool::Role::kInterOp, inter);
  intra_op_ = ThreadPool::Shared(ThreadPool::Role::kIntraOp, intra);
}

Session::~Session() = default;

StatusOr<TensorId> Session::ResolveTensor(const std::string& name) const { return graphjit::ResolveTensor(*graph_, name); }

StatusOr<std::shared_ptr<const Session::Program>> Session::BuildProgram(const std::vector<std::string>& feeds,
                                                                        const std::vector<std::string>& fetches,
                                                                        const std::vector<std::string>& targets) const {
  // 1. The registered graph passes, on a copy, then a fresh analysis of what they made.
  std::shared_ptr<const AnalyzedGraph> graph = graph_;
  std::vector<GraphPass> passes = PassRegistry::Global()->Passes();
  if (!passes.empty()) {
    GraphPassContext context{options_, feeds, fetches, targets};
    Graph copy = graph_->graph.Clone();
    bool changed = false;
    for (const GraphPass& pass : passes) {
      auto r = pass.run(copy, context);
      if (!r.ok()) return r.status().WithContext("graph pass '" + pass.name + "'");
      changed |= *r;
    }
    if (changed) {
      GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(std::move(copy)));
      graph = std::make_shared<const AnalyzedGraph>(std::move(analyzed));
    }
  }
  // 2. The plan. Passes keep fed and fetched names, so they resolve in the new graph.
  std::vector<TensorId> feed_ids, fetch_ids;
  std::vector<int> target_ids;
  for (const std::string& name : feeds) {
    GJ_ASSIGN_OR_RETURN(TensorId id, graphjit::ResolveTensor(*graph, name));
    feed_ids.push_back(id);
  }
  for (const std::string& name : fetches) {
    GJ_ASSIGN_OR_RETURN(TensorId id, graphjit::ResolveTensor(*graph, name));
    fetch_ids.push_back(id);
  }
  for (const std::string& name : targets) {
    const Node* node = graph->graph.FindNode(name);
    if (node == nullptr) return Internal("a graph pass removed the target '" + name + "'");
    target_ids.push_back(node->id);
  }
  GJ_ASSIGN_OR_RETURN(ExecutionPlan plan, BuildExecutionPlan(*graph, feed_ids, fetch_ids, target_ids));
  // On a GPU, what is not compiled runs on the CPU: say which ops, once per session. Views
  // and shape-only ops are left out (they move no data), and loops and conditionals are
  // said apart: their bodies' ops are where their own nodes say, but the CPU drives them.
  if (gpu_) {
    std::call_once(soft_placement_said_, [&] {
      std::map<std::string, int> ops, driven;
      for (int id : plan.nodes) {
        const Node* n = graph->graph.node(id);
        auto device = ParseDeviceName(n->device);
        const OpPattern pattern = TraitsOf(n->op).pattern;
        if (!device.ok() || !device->IsGpu() || device->IsXla() || TraitsOf(n->op).not_an_op() || pattern == OpPattern::kView ||
            pattern == OpPattern::kShapeOnly)
          continue;
        ++(pattern == OpPattern::kControl ? driven : ops)[n->op];
      }
      auto list = [](const std::map<std::string, int>& ops) {
        std::string list;
        for (const auto& [op, count] : ops)
          list += (list.empty() ? "" : ", ") + op + (count > 1 ? " x" + std::to_string(count) : "");
        return list;
      };
      if (!ops.empty())
        GJ_LOG(INFO) << "on " << DeviceKindName(gpu_->device) << ", ops the JIT does not compile run on the CPU: " << list(ops);
      if (!driven.empty())
        GJ_LOG(INFO) << "on " << DeviceKindName(gpu_->device)
                     << ", the CPU drives these loops and conditionals (a condition is read on the host): " << list(driven);
    });
  }
  return std::make_shared<const Program>(Program{std::move(graph), std::move(plan)});
}

StatusOr<std::shared_ptr<const Session::Program>> Session::GetProgram(const std::vector<std::string>& feeds,
                                                                      const std::vector<std::string>& fetches,
                                                                      const std::vector<std::string>& targets) {
  std::string key;
  for (const auto& list : {feeds, fetches, targets}) {
    for (const std::string& name : list) key += name + ",";
    key += "|";
  }
  // Building holds the lock: concurrent first runs of one combination build it once.
  std::lock_guard<std::mutex> lock(programs_mu_);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;
  GJ_ASSIGN_OR_RETURN(auto program, BuildProgram(feeds, fetches, targets));
  programs_.emplace(key, program);
  return program;
}

StatusOr<std::shared_ptr<const AnalyzedGraph>> Session::OptimizedGraph(const std::vector<std::string>& feeds,
                                                                       const std::vector<std::string>& fetches,
                                                                       const std::vector<std::string>& targets) {
  std::vector<std::string> feed_names, fetch_names;
  for (const auto& [names, canonical] : {std::pair{&feeds, &feed_names}, std::pair{&fetches, &fetch_names}})
    for (const std::string& name : *names) {
      GJ_ASSIGN_OR_RETURN(TensorId id, ResolveTensor(name));
      canonical->push_back(graph_->graph.TensorName(id));
    }
  for (const std::string& name : targets)
    if (graph_->graph.FindNode(name) == nullptr) return NotFound("target '" + name + "': no node with that name");
  GJ_ASSIGN_OR_RETURN(auto program, GetProgram(feed_names, fetch_names, targets));
  return program->graph;
}

Status Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, targets, outputs);
}

Status Session::Run(const RunOptions& run_options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs) {
  // 1. Check the feeds against the model's types and shapes; name every tensor
  //    canonically ("node:i"), so that "x" and "x:0" share one program.
  std::vector<std::string> feed_names, fetch_names;
  std::vector<TensorId> feed_ids;
  std::vector<Tensor> feed_values;
  for (const auto& [name, value] : feeds) {
    auto id = ResolveTensor(name);
    if (!id.ok()) return FailedPrecondition("feed '" + name + "': " + id.status().message());
    for (TensorId seen : feed_ids)
      if (seen == *id) return FailedPrecondition("tensor '" + name + "' is fed twice");
    DType want = graph_->info(id->node).dtypes[id->index];
    const Shape& declared = graph_->info(id->node).shapes[id->index];
    if (value.dtype() != want)
      return FailedPrecondition("feed '" + name + "' has type " + DTypeName(value.dtype()) + ", but the graph expects " +
                                DTypeName(want));
    if (!IsCompatible(declared, value.shape()))
      return FailedPrecondition("feed '" + name + "' has shape " + value.shape().ToString() +
                                ", which does not match the graph's " + declared.ToString());
    if (OnDeviceOnly(value) && !(gpu_ && gpu_->cuda && value.buffer()->DeviceCopy(gpu_->cuda.get())))
      return FailedPrecondition("feed '" + name + "' is on another device than the session's GPU");
    feed_ids.push_back(*id);
    feed_names.push_back(graph_->graph.TensorName(*id));
    feed_values.push_back(value);
  }
  for (const std::string& name : fetches) {
    auto id = ResolveTensor(name);
    if (!id.ok()) return FailedPrecondition("fetch '" + name + "': " + id.status().message());
    fetch_names.push_back(graph_->graph.TensorName(*id));
  }
  for (const std::string& name : targets)
    if (graph_->graph.FindNode(name) == nullptr) return FailedPrecondition("target '" + name + "': no node with that name");
  if (run_options.stream) {  // the session's stream waits for the caller's, on the device
    if (!gpu_ || !gpu_->cuda) return FailedPrecondition("RunOptions::stream is set, but the session has no GPU");
    std::lock_guard<std::mutex> lock(gpu_->mu);
    GJ_RETURN_IF_ERROR(gpu_->stream->WaitFor(run_options.stream));
  }
  // 2. The program for this combination (cached), then run it.
  GJ_ASSIGN_OR_RETURN(auto program, GetProgram(feed_names, fetch_names, targets));
  ExecutorOptions eo;
  eo.inter_op = inter_op_.get();
  eo.intra_op = intra_op_.get();
  eo.allocator = allocator_.get();
  eo.tracer = run_options.tracer;
  eo.session_options = &options_;
  eo.gpu = gpu_.get();
  eo.fetch_on_device = run_options.fetch_on_device;
  const StreamCounts before = gpu_ ? gpu_->counts() : StreamCounts{};
  Status s = Execute(*program->graph, program->plan, feed_values, eo, outputs);
  if (gpu_) {
    std::lock_guard<std::mutex> lock(transfers_mu_);
    last_run_counts_ = gpu_->counts() - before;
  }
  return s;
}

StatusOr<Tensor> Session::DeviceTensor(DType dtype, const Shape& shape, uint64_t address, std::shared_ptr<void> keep) const {
  if (!gpu_ || !gpu_->cuda) return FailedPrecondition("a device tensor needs a session with a GPU (device gpu or gpu-emu)");
  if (!shape.IsFullyDefined()) return InvalidArgument("a device tensor's shape must be known: " + shape.ToString());
  GJ_ASSIGN_OR_RETURN(const int64_t bytes, CheckedBytes(shape.dims(), static_cast<int64_t>(DTypeSize(dtype))));
  if (bytes > 0) GJ_RETURN_IF_ERROR(gpu_->cuda->CheckDeviceMemory(address, static_cast<size_t>(bytes)));
  return Tensor(dtype, shape,
                Buffer::OnDevice(DeviceMemory::Borrow(gpu_->cuda, address, std::move(keep)), static_cast<size_t>(bytes),
                                 gpu_->cuda->host_allocator()));
}

std::shared_ptr<DeviceMemory> Session::DeviceMemoryOf(const Tensor& t) const {
  return gpu_ && gpu_->cuda && t.buffer() ? t.buffer()->DeviceCopy(gpu_->cuda.get()) : nullptr;
}

StatusOr<uint64_t> Session::DeviceAddress(const Tensor& t) const {
  std::shared_ptr<DeviceMemory> memory = DeviceMemoryOf(t);
  if (!memory) return NotFound("the tensor has no bytes on the session's GPU");
  return memory->address();
}

StreamCounts Session::LastRunCounts() const {
  std::lock_guard<std::mutex> lock(transfers_mu_);
  return last_run_counts_;
}

}  // namespace graphjit
