// Graph rewrites run in order by a PassManager. Each pass reports whether it changed the
// graph; "unchanged" means the exported GraphDef is byte-identical.
//
//   PassManager pm(options);
//   pm.Add("constant_folding", FoldConstants);
//   GJ_ASSIGN_OR_RETURN(bool changed, pm.Run(graph, context, &records));
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphjit {

// What the passes must keep: fed and fetched tensors stay under their names (their
// nodes keep their names and outputs), targets stay; anything else may be rewritten or
// removed when the fetches and targets do not need it.
class PassContext {
 public:
  PassContext(std::vector<std::string> feeds, std::vector<std::string> fetches, std::vector<std::string> targets);

  const std::vector<std::string>& feeds() const { return feeds_; }
  const std::vector<std::string>& fetches() const { return fetches_; }
  const std::vector<std::string>& targets() const { return targets_; }
  // Fed, fetched or a target: keeps its name, op outputs and presence.
  bool IsPreserved(const Node& node) const { return IsPreserved(node.name); }
  bool IsPreserved(std::string_view node) const { return preserved_.count(node) > 0; }
  // One of the node's outputs is fed: its value is not known from the graph.
  bool IsFed(const Node& node) const { return fed_.count(node.name) > 0; }

  // Folded constants larger than this stay computed (TensorFlow uses 10 MB too).
  int64_t max_constant_bytes = 10 << 20;

 private:
  std::vector<std::string> feeds_, fetches_, targets_;
  std::set<std::string, std::less<>> preserved_, fed_;
};

// What an offline optimization keeps when no fetches are given: every node whose outputs
// no node reads (the model's outputs; not a NoOp that others wait for), and every
// Placeholder (its inputs). Use them as
// targets: a target keeps its node with all its outputs.
std::vector<std::string> ModelOutputsAndInputs(const Graph& graph);

// The exported GraphDef, serialized deterministically: what "unchanged" compares.
std::string GraphBytes(const Graph& graph);

using PassFunction = std::function<StatusOr<bool>(Graph& graph, const PassContext& context)>;

struct PassManagerOptions {
  std::set<std::string> disabled;  // pass names
  std::string dump_to;             // writes DIR/NN_<pass>.pbtxt after each pass when set
#ifdef NDEBUG
  bool verify = false;  // checks structure, types and op arity after every pass
#else
  bool verify = true;
#endif
};

// What one pass did, for reports.
struct PassRecord {
  std::string name;
  bool ran = false;  // false when disabled
  bool changed = false;
  int nodes_before = 0;
  int nodes_after = 0;
  double ms = 0;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}
  void Add(std::string name, PassFunction run);
  std::vector<std::string> names() const;
  // These passes only, in this order (a name may repeat), with this manager's options;
  // InvalidArgument, listing the passes, for a name that is not one of them.
  StatusOr<PassManager> Only(const std::vector<std::string>& names) const;
  // Checks the graph after every pass (on by default in debug builds only).
  void set_verify(bool verify) { options_.verify = verify; }

  // Runs the passes in order. Fails if a disabled name is not a pass here, if a pass
  // fails, or (when verifying) if a pass leaves an invalid graph, naming the pass.
  StatusOr<bool> Run(Graph& graph, const PassContext& context, std::vector<PassRecord>* records = nullptr) const;

 private:
  PassManagerOptions options_;
  std::vector<std::pair<std::string, PassFunction>> passes_;
};

}  // namespace graphjit
