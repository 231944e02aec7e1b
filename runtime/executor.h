// The executor: runs the part of an analyzed graph that a set of fetches and targets
// needs, in dataflow order, with inter-op parallelism, freeing each intermediate
// tensor after its last use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/graph_analysis.h"
#include "runtime/thread_pool.h"
#include "runtime/trace.h"

namespace graphjit {

// What one (feeds, fetches, targets) combination needs; built once and reused.
struct ExecutionPlan {
  std::vector<TensorId> feeds;              // the fed tensors, in feed order
  std::vector<TensorId> fetches;            // the fetched tensors, in fetch order
  std::vector<int> nodes;                   // the nodes to run, in topological order
  std::vector<int> initial_pending;         // by node id: inputs to wait for
  std::vector<std::vector<int>> consumers;  // by node id: plan nodes to notify (with repeats)
  std::vector<int> output_base;             // by node id: first slot of its outputs
  std::vector<int> initial_uses;            // by slot: consumers reading it (+1 if fetched)
  std::vector<int> input_feed;              // by slot: feed index or -1
  // By node id, per input: a Const's value, not fed (KernelContext::constant_inputs).
  std::vector<std::vector<bool>> constant_inputs;
  int num_slots = 0;
};

// Builds the plan. Fails (NotFound) if a feed, fetch or target names no tensor/node.
StatusOr<ExecutionPlan> BuildExecutionPlan(const AnalyzedGraph& graph, const std::vector<TensorId>& feeds,
                                           const std::vector<TensorId>& fetches, const std::vector<int>& targets);

struct ExecutorOptions {
  ThreadPool* inter_op = nullptr;  // nullptr: run on the calling thread
  ThreadPool* intra_op = nullptr;
  Allocator* allocator = nullptr;
  Tracer* tracer = nullptr;
  std::string trace_prefix;                         // before each event's node name (a cluster body's: "<cluster>/")
  const SessionOptions* session_options = nullptr;  // handed to kernels
  GpuContext* gpu = nullptr;                        // handed to kernels
  bool fetch_on_device = false;                     // RunOptions::fetch_on_device
  // A kernel's own graph (NestedExecutorOptions): its feeds are tensors of the run, which
  // never change, not the caller's (which may change between runs).
  bool nested = false;
};

// The options a kernel runs a graph of its own with (a cluster's body, a loop's cond and
// body): on the kernel's thread, with its allocator, session options, tracer and GPU, each
// event named after the kernel's node ("<node>/...").
ExecutorOptions NestedExecutorOptions(const KernelContext& ctx);

// Runs the plan. `feeds` are in plan.feeds order; `outputs` receive plan.fetches.
Status Execute(const AnalyzedGraph& graph, const ExecutionPlan& plan, const std::vector<Tensor>& feeds,
               const ExecutorOptions& options, std::vector<Tensor>* outputs);

}  // namespace graphjit
