// The clustering pass for the runtime's pass registry: at Session creation it finds
// clusters (per the session's JIT level and clustering options) and encapsulates them.
#pragma once

#include "clustering/compilability.h"
#include "clustering/find_clusters.h"

namespace graphjit {

// Registers the pass once; `oracle` must outlive every session (the JIT passes its own,
// until then DeclaredCompilability is used).
void RegisterClusteringPass(const CompilabilityOracle* oracle = nullptr);

// Why graphjit's analysis refuses `node` (a type or an attr its op does not take) when its
// data inputs are output 0 of `producers` (Placeholders of the types and shapes a host
// inferred, or the Consts that make them), or "" if it takes it. A host that clusters a
// graph of its own (the TensorFlow plugin) leaves such nodes out before clustering.
std::string WhyNotAnalyzable(const tensorflow::NodeDef& node, const std::vector<tensorflow::NodeDef>& producers);

// What the pass would decide for `graph_def` under `options` (for `graphjit clusters`).
StatusOr<std::pair<AnalyzedGraph, Clustering>> ExplainClustering(const tensorflow::GraphDef& graph_def,
                                                                 const SessionOptions& options);

}  // namespace graphjit
