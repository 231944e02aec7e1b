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
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs);

  // The copies between the host and the session's GPU in the last run (of concurrent
  // runs, their sum over the last one's time); zeros without a GPU.
  StreamCounts LastRunCounts() const;

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
  std::shared_ptr<ThreadPool> inter_op_;  // shared with the process's other sessions
  std::shared_ptr<ThreadPool> intra_op_;
  std::unique_ptr<GpuContext> gpu_;  // with --device gpu|gpu-emu
  mutable std::once_flag soft_placement_said_;
  mutable std::mutex transfers_mu_;
  StreamCounts last_run_counts_;
  std::mutex programs_mu_;
  std::map<std::string, std::shared_ptr<const Program>> programs_;
};

}  // namespace graphjit
