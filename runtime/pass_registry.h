// Graph optimization passes that other folders register (graph rewrites, the JIT's
// clustering); the Session runs them, in priority order, on its own copy of the graph for
// each combination of feeds, fetches and targets it is asked to run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session_options.h"

namespace graphjit {

// What a pass prepares the graph for: the session's options and one Run's feeds,
// fetches and targets. Passes keep fed and fetched tensors and targets under their
// names, and may drop whatever those do not need.
struct GraphPassContext {
  SessionOptions options;
  std::vector<std::string> feeds;    // tensor names: "node" or "node:i"
  std::vector<std::string> fetches;  // tensor names
  std::vector<std::string> targets;  // node names
};

struct GraphPass {
  std::string name;
  int priority = 0;  // lower runs first
  // Rewrites the graph; returns whether it changed anything.
  std::function<StatusOr<bool>(Graph& graph, const GraphPassContext& context)> run;
};

class PassRegistry {
 public:
  static PassRegistry* Global();
  void Register(GraphPass pass);
  std::vector<GraphPass> Passes() const;  // sorted by priority, then name

 private:
  std::vector<GraphPass> passes_;
};

}  // namespace graphjit
