// What clustering decided, for people: a table, Graphviz DOT and JSON.
#pragma once

#include <string>

#include "clustering/find_clusters.h"

namespace graphjit {

// Clusters (name, size, ops) and the nodes left out with their reasons.
std::string ClusteringTable(const AnalyzedGraph& graph, const Clustering& clustering);
// {"clusters": [{"name", "nodes"}], "unclustered": [{"node", "reason", "detail"}]}:
// clusters in name order, nodes in topological order.
std::string ClusteringJson(const AnalyzedGraph& graph, const Clustering& clustering);
// The graph with each cluster as a coloured subgraph.
std::string ClusteringDot(const AnalyzedGraph& graph, const Clustering& clustering);

}  // namespace graphjit
