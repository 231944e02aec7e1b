// Checks a graph against the op registry and infers the dtype and (partial) shape of
// every node output.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/op_registry.h"

namespace graphjit {

struct NodeInfo {
  const OpDef* op = nullptr;
  std::vector<DType> dtypes;          // one per output
  std::vector<Shape> shapes;          // partial where unknown before run time
  std::shared_ptr<const void> state;  // from the op's prepare hook
};

struct AnalyzedGraph {
  Graph graph;
  std::vector<NodeInfo> nodes;  // by node id
  std::vector<int> topo_order;
  std::vector<Tensor> constants;  // by node id; the value of each Const node
  // Original tensor names that a graph pass moved elsewhere (e.g. into a cluster's
  // outputs), so fetches and feeds by the old name keep working.
  std::map<std::string, TensorId> aliases;

  const NodeInfo& info(int id) const { return nodes[id]; }
};

// A tensor's static shape (partial where unknown before run time) and dtype.
inline const Shape& StaticShape(const AnalyzedGraph& graph, TensorId t) { return graph.info(t.node).shapes[t.index]; }
inline DType StaticDType(const AnalyzedGraph& graph, TensorId t) { return graph.info(t.node).dtypes[t.index]; }

// Fails with:
//  - Unimplemented listing every op the registry lacks (with the nodes using it), all at once;
//  - InvalidArgument for a cycle, a wrong input count, a reference to a missing output,
//    a bad or missing attr, or mismatched dtypes, naming the node.
// Shape mismatches do not fail here: they depend on the feeds and are run-time errors.
StatusOr<AnalyzedGraph> AnalyzeGraph(Graph graph, const OpRegistry& registry = *OpRegistry::Global());

// Resolves "node" / "node:i" in `graph`; a tensor a graph pass moved (e.g. into a
// cluster's outputs) resolves to its new home.
StatusOr<TensorId> ResolveTensor(const AnalyzedGraph& graph, const std::string& name);

}  // namespace graphjit
