// A graph a kernel runs as part of its work: a cluster's body, a loop's cond and body.
#pragma once

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

// The GraphDef in a node's string attr.
StatusOr<tensorflow::GraphDef> GraphAttr(const Node& node, const std::string& attr);

}  // namespace graphjit
