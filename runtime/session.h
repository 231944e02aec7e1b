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
#include "runtime/executor.h"
#include "runtime/session_options.h"

namespace graphjit {

struct RunOptions {
  Tracer* tracer = nullptr;  // receives one event per kernel when set
};

class Session {
 public:
  // Imports and validates the graph, runs the registered graph passes, and infers
  // types and shapes. Errors are about the model (InvalidArgument, Unimplemented).
  static StatusOr<std::unique_ptr<Session>> Create(const SessionOptions& options, const tensorflow::GraphDef& graph_def);
  ~Session();

  // Feeds replace any tensor ("name" or "name:i"); fetches name tensors; targets name
  // nodes to run without fetching. Only what they need is run.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs);
  Status Run(const RunOptions& run_options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs);

  const AnalyzedGraph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }
  Allocator* allocator() { return &allocator_; }
  // Resolves "node" / "node:i" against the (optimized) graph.
  StatusOr<TensorId> ResolveTensor(const std::string& name) const;

 private:
  Session(const SessionOptions& options, AnalyzedGraph graph);
  StatusOr<std::shared_ptr<const ExecutionPlan>> GetPlan(const std::vector<TensorId>& feeds,
                                                         const std::vector<TensorId>& fetches,
                                                         const std::vector<int>& targets);

  SessionOptions options_;
  AnalyzedGraph graph_;
  Allocator allocator_;
  std::unique_ptr<ThreadPool> inter_op_;
  std::unique_ptr<ThreadPool> intra_op_;
  std::mutex plans_mu_;
  std::map<std::string, std::shared_ptr<const ExecutionPlan>> plans_;
};

}  // namespace graphjit
