// The clustering pass for the runtime's pass registry: at Session creation it finds
// clusters (per the session's JIT level and clustering options) and encapsulates them.
#pragma once

#include "clustering/compilability.h"
#include "clustering/find_clusters.h"

namespace graphjit {

// Registers the pass once; `oracle` must outlive every session (the JIT passes its own,
// until then DeclaredCompilability is used).
void RegisterClusteringPass(const CompilabilityOracle* oracle = nullptr);

// What the pass would decide for `graph_def` under `options` (for `graphjit clusters`).
StatusOr<std::pair<AnalyzedGraph, Clustering>> ExplainClustering(const tensorflow::GraphDef& graph_def,
                                                                 const SessionOptions& options);

}  // namespace graphjit
