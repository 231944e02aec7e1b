#include "runtime/executor.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "runtime/cuda_device.h"
#include "runtime/op_traits.h"
#include "runtime/placement.h"

namespace graphjit {

StatusOr<ExecutionPlan> BuildExecutionPlan(const AnalyzedGraph& a, const std::vector<TensorId>& feeds,
                                           const std::vector<TensorId>& fetches, const std::vector<int>& targets) {
  const Graph& g = a.graph;
  const int n = g.num_nodes();
  ExecutionPlan plan;
  plan.feeds = feeds;
  plan.fetches = fetches;
  plan.output_base.resize(n);
  for (int id = 0; id < n; ++id) {
    plan.output_base[id] = plan.num_slots;
    plan.num_slots += static_cast<int>(a.info(id).dtypes.size());
  }
  auto slot = [&](TensorId t) { return plan.output_base[t.node] + t.index; };
  auto check = [&](TensorId t, const char* what) -> Status {
    if (t.node < 0 || t.node >= n || t.index < 0 || t.index >= static_cast<int>(a.info(t.node).dtypes.size()))
      return NotFound(std::string(what) + " refers to a tensor that does not exist");
    return Status::Ok();
  };
  plan.input_feed.assign(plan.num_slots, -1);
  for (size_t i = 0; i < feeds.size(); ++i) {
    GJ_RETURN_IF_ERROR(check(feeds[i], "a feed"));
    plan.input_feed[slot(feeds[i])] = static_cast<int>(i);
  }

  // A node whose every output is fed does not run; a control edge from it holds nothing
  // up, as in TensorFlow, where a fed node is replaced by its feed.
  auto fully_fed = [&](int id) {
    const int outputs = static_cast<int>(a.info(id).dtypes.size());
    for (int i = 0; i < outputs; ++i)
      if (plan.input_feed[slot({id, i})] < 0) return false;
    return outputs > 0;
  };
  // 1. Nodes needed: backwards from fetches and targets, not through fed tensors.
  std::vector<bool> needed(n, false);
  std::vector<int> stack;
  for (TensorId t : fetches) {
    GJ_RETURN_IF_ERROR(check(t, "a fetch"));
    if (plan.input_feed[slot(t)] < 0) stack.push_back(t.node);
  }
  for (int t : targets) stack.push_back(t);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = true;
    for (TensorId in : g.node(id)->inputs)
      if (plan.input_feed[slot(in)] < 0) stack.push_back(in.node);
    for (int c : g.node(id)->control_inputs)
      if (!fully_fed(c)) stack.push_back(c);
  }

  // 2. Pending counts, consumer lists and use counts of the needed nodes.
  plan.initial_pending.assign(n, 0);
  plan.consumers.assign(n, {});
  plan.initial_uses.assign(plan.num_slots, 0);
  plan.constant_inputs.assign(n, {});
  for (int id : a.topo_order) {
    if (!needed[id]) continue;
    plan.nodes.push_back(id);
    const Node* node = g.node(id);
    for (TensorId in : node->inputs) {
      const bool fed = plan.input_feed[slot(in)] >= 0;
      plan.constant_inputs[id].push_back(!fed && g.node(in.node)->op == "Const");
      if (fed) continue;
      ++plan.initial_pending[id];
      ++plan.initial_uses[slot(in)];
      plan.consumers[in.node].push_back(id);
    }
    for (int c : node->control_inputs) {
      if (fully_fed(c)) continue;
      ++plan.initial_pending[id];
      plan.consumers[c].push_back(id);
    }
  }
  for (TensorId t : fetches) ++plan.initial_uses[slot(t)];
  return plan;
}

namespace {

// Whether `node` reads input i's bytes on the host, when that tensor is on the GPU alone.
// A cluster placed on the session's GPU takes its inputs where they are, a view (Reshape,
// Identity, ...) passes its data on as it is, a shape-only op reads shapes, and a loop or
// conditional hands its inputs to the nodes of its body or branches (an If's condition is
// read on the host).
bool ReadsOnHost(const Node& node, const OpDef& op, int i, bool session_has_gpu) {
  switch (TraitsOf(node.op).pattern) {
    case OpPattern::kCluster: return !(session_has_gpu && PlacedOnGpu(node));
    case OpPattern::kShapeOnly: return false;
    case OpPattern::kControl: return node.op == "_GraphjitIf" && i == 0;
    case OpPattern::kView: return op.IsValueInput(i, static_cast<int>(node.inputs.size()));
    default: return true;
  }
}

// Whether `node` computes on the CPU in a session with a GPU (GpuContext::cpu_ops).
bool ComputesOnHost(const Node& node) {
  switch (TraitsOf(node.op).pattern) {
    case OpPattern::kSource:
    case OpPattern::kView:
    case OpPattern::kShapeOnly:
    case OpPattern::kControl: return false;
    case OpPattern::kCluster: return !PlacedOnGpu(node);
    default: return true;
  }
}

class Run {
 public:
  Run(const AnalyzedGraph& a, const ExecutionPlan& p, const std::vector<Tensor>& feeds, const ExecutorOptions& o)
      : a_(a), plan_(p), feeds_(feeds), options_(o), values_(p.num_slots), uses_(p.num_slots), pending_(a.graph.num_nodes()) {
    // With a GPU, the nodes read each tensor the caller feeds under an alias of its buffer,
    // which holds its copy on the device (made once, for every cluster that reads it) for
    // this run alone; a tensor fed on the device, under a buffer of its device memory whose
    // host copy (made for a CPU op) is this run's alone. (The caller may change either
    // between runs.) A nested graph's feeds keep their copies with them.
    if (o.gpu && !o.nested) {
      for (const Tensor& t : feeds) {
        std::shared_ptr<DeviceMemory> on_device = OnDeviceOnly(t) ? t.buffer()->DeviceCopy(o.gpu->cuda.get()) : nullptr;
        if (on_device)
          aliased_feeds_.push_back(
              Tensor(t.dtype(), t.shape(), Buffer::OnDevice(on_device, t.buffer()->size(), o.gpu->cuda->host_allocator())));
        else
          aliased_feeds_.push_back(t.raw() ? Tensor(t.dtype(), t.shape(), Buffer::Alias(t.buffer())) : t);
      }
      node_feeds_ = &aliased_feeds_;
    }
    for (int i = 0; i < p.num_slots; ++i) uses_[i].store(p.initial_uses[i], std::memory_order_relaxed);
    for (int id = 0; id < a.graph.num_nodes(); ++id) pending_[id].store(p.initial_pending[id], std::memory_order_relaxed);
    remaining_ = static_cast<int>(p.nodes.size());
  }

  Status Go(std::vector<Tensor>* outputs) {
    // Big inputs mean kernels that split: the intra-op workers wake while this thread
    // prepares the first one.
    if (options_.intra_op != nullptr && FedBytes() >= kHandOffBytes) options_.intra_op->Wake();
    if (!plan_.nodes.empty()) {
      std::vector<int> roots;
      for (int id : plan_.nodes)
        if (plan_.initial_pending[id] == 0) roots.push_back(id);
      for (size_t i = 1; i < roots.size(); ++i) Schedule(roots[i]);
      Process(roots[0]);
      std::unique_lock<std::mutex> lock(done_mu_);
      done_cv_.wait(lock, [&] { return remaining_ == 0; });
    }
    if (!status_.ok()) return status_;
    outputs->clear();
    for (TensorId t : plan_.fetches) outputs->push_back(ValueOf(t));
    // A fetched buffer that something besides this run holds (a Const's value, a compiled
    // kernel's constant, a fed tensor) is handed out as a copy: writing into a fetched
    // tensor must not change the session. So is one with device memory (its bytes copied
    // to the host once): a fetch holds host memory alone, unless asked for on the device
    // and made there (then the run hands its device memory out).
    for (size_t i = 0; i < outputs->size(); ++i) {
      Tensor& out = (*outputs)[i];
      if (out.buffer() == nullptr) continue;
      if (options_.fetch_on_device && OnDeviceOnly(out)) continue;
      if (out.buffer()->HasDeviceCopy()) {
        GJ_RETURN_IF_ERROR(ToHost(out, "fetch_" + std::to_string(i)));
        GJ_ASSIGN_OR_RETURN(out, out.Clone(options_.allocator));
        continue;
      }
      long held = 0;
      for (const Tensor& t : *outputs) held += t.buffer() == out.buffer();
      if (out.buffer().use_count() <= held + 1) continue;  // the outputs and its own slot: the common case
      for (const Tensor& t : values_) held += t.buffer() == out.buffer();
      if (out.buffer().use_count() > held) {
        GJ_ASSIGN_OR_RETURN(out, out.Clone(options_.allocator));
      }
    }
    return Status::Ok();
  }

 private:
  // A ready node goes to another thread only when its inputs are big enough for
  // the hand-off (a wake-up costs microseconds, more than most small kernels take) to
  // pay, and only when the intra-op pool has a single thread: a big node is split across
  // the intra-op threads already, and two of them at once would compete for the same
  // cores (a 1024x1024 layer norm at 2 threads was 0.96x of 1 thread that way).
  // Otherwise a thread of this run picks it up when its current chain ends.
  static constexpr int64_t kHandOffBytes = 256 * 1024;

  // Gives a tensor on the GPU alone its bytes on the host (once, for every reader).
  Status ToHost(const Tensor& t, const std::string& what) {
    if (!OnDeviceOnly(t)) return Status::Ok();
    if (options_.gpu == nullptr) return Internal("a tensor on a GPU in a run without one");
    return options_.gpu->CopyToHost(t, options_.tracer, options_.trace_prefix + what + "/to_host");
  }

  int64_t FedBytes() const {
    int64_t bytes = 0;
    for (const Tensor& t : feeds_) bytes += t.bytes();
    return bytes;
  }

  void Schedule(int id) {
    if (options_.inter_op != nullptr && options_.inter_op->num_threads() > 1 &&
        (options_.intra_op == nullptr || options_.intra_op->num_threads() == 1) && InputBytes(id) >= kHandOffBytes) {
      options_.inter_op->Schedule([this, id] { Process(id); });
      return;
    }
    std::lock_guard<std::mutex> lock(local_mu_);
    local_queue_.push_back(id);
  }

  int64_t InputBytes(int id) const {
    int64_t bytes = 0;
    for (TensorId in : a_.graph.node(id)->inputs) {
      const Tensor& t = ValueOf(in);
      if (t.valid()) bytes += static_cast<int64_t>(t.bytes());
    }
    return bytes;
  }

  // A tensor's value in this run: its feed (as the nodes read it, or as fed), or what its
  // node computed.
  const Tensor& ValueOf(TensorId t, bool for_a_node = false) const {
    const int s = plan_.output_base[t.node] + t.index;
    if (plan_.input_feed[s] < 0) return values_[s];
    return (for_a_node ? *node_feeds_ : feeds_)[plan_.input_feed[s]];
  }

  // Runs `id`, then whatever became ready: one right away, the others scheduled; and
  // when nothing did, a node from the local queue.
  void Process(int id) {
    while (id >= 0) {
      if (!failed_.load(std::memory_order_acquire)) {
        Status s = RunNode(id);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(status_mu_);
          if (status_.ok()) status_ = s;
          failed_.store(true, std::memory_order_release);
        }
      }
      int next = -1;
      for (int c : plan_.consumers[id]) {
        if (pending_[c].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          if (next < 0)
            next = c;
          else
            Schedule(c);
        }
      }
      if (next < 0) {
        std::lock_guard<std::mutex> lock(local_mu_);
        if (!local_queue_.empty()) {
          next = local_queue_.back();
          local_queue_.pop_back();
        }
      }
      // After the last FinishNode the run may be destroyed: touch no member after it.
      FinishNode();
      id = next;
    }
  }

  void FinishNode() {
    std::lock_guard<std::mutex> lock(done_mu_);
    if (--remaining_ == 0) done_cv_.notify_all();
  }

  Status RunNode(int id) {
    const Node& node = *a_.graph.node(id);
    const NodeInfo& info = a_.info(id);
    const int base = plan_.output_base[id];
    if (node.op == "Const") {
      values_[base] = a_.constants[id];
      ReleaseUnused(id);
      return Status::Ok();
    }
    // 1. Inputs.
    std::vector<Tensor> inputs;
    inputs.reserve(node.inputs.size());
    InferenceContext ic{node, {}, {}, {}, {}, {}};
    for (TensorId in : node.inputs) inputs.push_back(ValueOf(in, /*for_a_node=*/true));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (OnDeviceOnly(inputs[i]) && ReadsOnHost(node, *info.op, static_cast<int>(i), options_.gpu != nullptr))
        GJ_RETURN_IF_ERROR(ToHost(inputs[i], node.name + "/input_" + std::to_string(i)));
    ic.input_dtypes.reserve(inputs.size());
    ic.input_shapes.reserve(inputs.size());
    ic.input_values.reserve(inputs.size());
    ic.output_dtypes.reserve(info.dtypes.size());
    ic.output_shapes.reserve(info.dtypes.size());
    for (const Tensor& t : inputs) {
      ic.input_dtypes.push_back(t.dtype());
      ic.input_shapes.push_back(t.shape());
      ic.input_values.push_back(OnDeviceOnly(t) ? nullptr : &t);
    }
    // 2. Output types and shapes for these inputs.
    GJ_RETURN_IF_ERROR(info.op->infer(ic));
    if (ic.output_dtypes != info.dtypes) return Internal(NodeLabel(node) + ": run-time output types differ from the graph's");
    // 3. The kernel.
    std::vector<Tensor> outputs(info.dtypes.size());
    std::vector<bool> reusable(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      // Held by values_ and `inputs` alone, read by no other node after this one, and with
      // no copy on a device that writing it would leave behind.
      const int s = plan_.output_base[node.inputs[i].node] + node.inputs[i].index;
      reusable[i] = plan_.input_feed[s] < 0 && uses_[s].load(std::memory_order_acquire) == 1 && inputs[i].buffer() != nullptr &&
                    inputs[i].buffer().use_count() == 2 && !inputs[i].buffer()->HasDeviceCopy();
    }
    KernelContext kc{node,
                     inputs,
                     ic.output_dtypes,
                     ic.output_shapes,
                     outputs,
                     options_.allocator,
                     options_.intra_op,
                     info.state.get(),
                     options_.session_options,
                     options_.tracer,
                     &reusable,
                     options_.gpu,
                     &plan_.constant_inputs[id]};
    int64_t start = options_.tracer ? options_.tracer->NowMicros() : 0;
    GJ_RETURN_IF_ERROR(info.op->compute(kc));
    if (options_.gpu && ComputesOnHost(node)) options_.gpu->cpu_ops.fetch_add(1, std::memory_order_relaxed);
    if (options_.tracer) {
      int64_t bytes = 0;
      for (const auto* list : {&inputs, &outputs})
        for (const Tensor& t : *list) bytes += t.valid() ? static_cast<int64_t>(t.bytes()) : 0;
      options_.tracer->Add(
          {options_.trace_prefix + node.name, node.op, start, options_.tracer->NowMicros() - start, CurrentThreadId(), bytes});
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      // Forwarding kernels (PlaceholderWithDefault) may refine a partial inferred shape.
      if (!outputs[i].valid() || !outputs[i].shape().IsFullyDefined() || !IsCompatible(ic.output_shapes[i], outputs[i].shape()))
        return Internal(NodeLabel(node) + ": kernel did not produce output " + std::to_string(i) + " as inferred");
      values_[base + i] = std::move(outputs[i]);
    }
    // 4. Inputs read for the last time are freed; so are outputs nobody reads.
    inputs.clear();
    for (TensorId in : node.inputs) {
      int s = plan_.output_base[in.node] + in.index;
      if (plan_.input_feed[s] < 0 && uses_[s].fetch_sub(1, std::memory_order_acq_rel) == 1) values_[s] = Tensor();
    }
    ReleaseUnused(id);
    return Status::Ok();
  }

  void ReleaseUnused(int id) {
    const int base = plan_.output_base[id];
    for (size_t i = 0; i < a_.info(id).dtypes.size(); ++i)
      if (uses_[base + i].load(std::memory_order_acquire) == 0) values_[base + i] = Tensor();
  }

  const AnalyzedGraph& a_;
  const ExecutionPlan& plan_;
  const std::vector<Tensor>& feeds_;
  const ExecutorOptions& options_;
  std::vector<Tensor> aliased_feeds_;
  const std::vector<Tensor>* node_feeds_ = &feeds_;  // what the nodes read: feeds_ or aliased_feeds_
  std::vector<Tensor> values_;
  std::vector<std::atomic<int>> uses_;
  std::vector<std::atomic<int>> pending_;

  std::mutex local_mu_;
  std::vector<int> local_queue_;  // ready nodes not handed off (Schedule)
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  int remaining_ = 0;
  std::mutex status_mu_;
  Status status_;
  std::atomic<bool> failed_{false};
};

}  // namespace

Status Execute(const AnalyzedGraph& graph, const ExecutionPlan& plan, const std::vector<Tensor>& feeds,
               const ExecutorOptions& options, std::vector<Tensor>* outputs) {
  Run run(graph, plan, feeds, options);
  return run.Go(outputs);
}

ExecutorOptions NestedExecutorOptions(const KernelContext& ctx) {
  ExecutorOptions options;
  options.intra_op = ctx.intra_op;
  options.allocator = ctx.allocator;
  options.session_options = ctx.options;
  options.tracer = ctx.tracer;
  options.trace_prefix = ctx.node.name + "/";
  options.gpu = ctx.gpu;
  options.nested = true;
  return options;
}

}  // namespace graphjit
