// A graph a kernel runs as part of its work: a cluster's body, a loop's cond and body.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/proto/graph.pb.h"
#include "runtime/executor.h"
#include "runtime/session_options.h"

namespace graphjit {

// The graph analyzed, with its plan from the placeholders _arg_0, _arg_1, ... to `outputs`.
struct Subgraph {
  AnalyzedGraph graph;
  ExecutionPlan plan;
};

// Imports `gd` and prepares it to run fed `args` inputs; errors say `what` it is. With
// session options, it is first placed and goes through the session's graph passes (the
// optimizer, the JIT's clustering), as a Run of the session's own graph does.
StatusOr<Subgraph> MakeSubgraph(const tensorflow::GraphDef& gd, const std::string& what, size_t args,
                                const std::vector<std::string>& outputs, const SessionOptions* options = nullptr);

// A graph a kernel runs on every call (a loop's body, a conditional's branch), prepared
// for the session that first runs it: placed, optimized and compiled with its options.
class LazySubgraph {
 public:
  LazySubgraph(tensorflow::GraphDef gd, std::string what, size_t args, std::vector<std::string> outputs)
      : gd_(std::move(gd)), what_(std::move(what)), args_(args), outputs_(std::move(outputs)) {}

  // The graph as it is, analyzed: its errors are known before it first runs.
  Status Check() const { return MakeSubgraph(gd_, what_, args_, outputs_).status(); }
  StatusOr<std::shared_ptr<const Subgraph>> Get(const SessionOptions* options) const;

 private:
  const tensorflow::GraphDef gd_;
  const std::string what_;
  const size_t args_;
  const std::vector<std::string> outputs_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Subgraph> made_;
};

// The GraphDef in a node's string attr.
StatusOr<tensorflow::GraphDef> GraphAttr(const Node& node, const std::string& attr);

}  // namespace graphjit
