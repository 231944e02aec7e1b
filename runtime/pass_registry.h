// Graph optimization passes that other folders register (graph rewrites, the JIT's
// clustering); the Session runs them, in priority order, when it is created.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session_options.h"

namespace graphjit {

struct GraphPass {
  std::string name;
  int priority = 0;  // lower runs first
  // Rewrites the graph; returns whether it changed anything.
  std::function<StatusOr<bool>(Graph& graph, const SessionOptions& options)> run;
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
