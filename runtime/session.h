// Session: TensorFlow's Session semantics on top of the executor.
//
//   auto session = Session::Create(options, graph_def);
//   session->Run({{"x", x}}, {"y", "loss:0"}, {}, &outputs);
//
// Run() may be called from several threads at once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ir/proto/graph.pb.h"
#include "runtime/cuda_device.h"
#include "runtime/executor.h"
#include "runtime/session_options.h"

namespace graphjit {

struct GpuContext;

struct RunOptions {
  Tracer* tracer = nullptr;  // receives one event per kernel when set
  // In a session with a GPU: the fetched tensors the GPU made are handed out there (their
  // bytes on the device alone: Session::DeviceAddress), not copied to the host. Fetches
  // made on the host are host tensors as always.
  bool fetch_on_device = false;
  // A CUDA stream of the caller's (a CUstream, or CU_STREAM_LEGACY / CU_STREAM_PER_THREAD
  // for work on a default stream) whose work so far makes the device tensors fed: the
  // session's stream waits for it on the device (the host does not). Null: none. (The run's
  // own device results are complete when Run returns, ready for any stream.)
  void* stream = nullptr;
};

class Session {
 public:
  // Imports and validates the graph and infers types and shapes. Errors are about the
  // model (InvalidArgument, Unimplemented). The registered graph passes run later, on a
  // copy per combination of feeds, fetches and targets (as Grappler does).
  static StatusOr<std::unique_ptr<Session>> Create(const SessionOptions& options, const tensorflow::GraphDef& graph_def);
  ~Session();

  // Feeds replace any tensor ("name" or "name:i"); fetches name tensors; targets name
  // nodes to run without fetching. Only what they need is run.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs);
  Status Run(const RunOptions& run_options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets, std::vector<Tensor>* outputs);

  // The copies between the host and the session's GPU in the last run (of concurrent
  // runs, their sum over the last one's time); zeros without a GPU.
  StreamCounts LastRunCounts() const;

  // Device tensors, in a session with a GPU. A tensor of `dtype` and `shape` (dense, row
  // major) whose bytes are the caller's device memory at `address` on the session's GPU:
  // fed, it is read in place (a cluster on the GPU takes it with no copy; a CPU op gets a
  // copy for its run). The memory must stay valid, and unchanged until the run that reads it
  // returns; the session never frees it. `keep` goes with the tensor's last reference (every
  // tensor that views the memory: a fetch may be the feed itself).
  StatusOr<Tensor> DeviceTensor(DType dtype, const Shape& shape, uint64_t address, std::shared_ptr<void> keep = nullptr) const;
  // Where a tensor's bytes are on the session's GPU (a fetch with
  // RunOptions::fetch_on_device, or a DeviceTensor); NotFound for one with none there. A
  // fetched tensor's device memory is the caller's for as long as it holds the tensor.
  StatusOr<uint64_t> DeviceAddress(const Tensor& t) const;
  // The same as the memory itself (null for none): see DeviceMemory::RecordUse.
  std::shared_ptr<DeviceMemory> DeviceMemoryOf(const Tensor& t) const;

  // The graph as the model wrote it (analyzed, before any graph pass).
  const AnalyzedGraph& graph() const { return *graph_; }
  const SessionOptions& options() const { return options_; }
  Allocator* allocator() { return allocator_.get(); }
  // Resolves "node" / "node:i" against the model's graph.
  StatusOr<TensorId> ResolveTensor(const std::string& name) const;

  // The graph that runs for these feeds, fetches and targets, after the graph passes
  // (what Run uses; built once and cached). Names are resolved as Run does.
  StatusOr<std::shared_ptr<const AnalyzedGraph>> OptimizedGraph(const std::vector<std::string>& feeds,
                                                                const std::vector<std::string>& fetches,
                                                                const std::vector<std::string>& targets = {});

 private:
  // The optimized graph and the execution plan of one (feeds, fetches, targets).
  struct Program {
    std::shared_ptr<const AnalyzedGraph> graph;
    ExecutionPlan plan;
  };

  Session(const SessionOptions& options, AnalyzedGraph graph);
  StatusOr<std::shared_ptr<const Program>> GetProgram(const std::vector<std::string>& feeds,
                                                      const std::vector<std::string>& fetches,
                                                      const std::vector<std::string>& targets);
  StatusOr<std::shared_ptr<const Program>> BuildProgram(const std::vector<std::string>& feeds,
                                                        const std::vector<std::string>& fetches,
                                                        const std::vector<std::string>& targets) const;

  SessionOptions options_;
  std::shared_ptr<const AnalyzedGraph> graph_;
  std::shared_ptr<Allocator> allocator_ = std::make_shared<Allocator>();  // outlived by fetched tensors
  std::shared_ptr<ThreadPool> inter_op_;                                  // shared with the process's other sessions
  std::shared_ptr<ThreadPool> intra_op_;
  std::unique_ptr<GpuContext> gpu_;  // with --device gpu|gpu-emu
  mutable std::once_flag soft_placement_said_;
  mutable std::mutex transfers_mu_;
  StreamCounts last_run_counts_;
  std::mutex programs_mu_;
  std::map<std::string, std::shared_ptr<const Program>> programs_;
};

}  // namespace graphjit
