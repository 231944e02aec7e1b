// Mark-for-compilation and cycle-free contraction: which nodes form which clusters,
// and, for every node left out, why.
#pragma once

#include <string>
#include <vector>

#include "clustering/compilability.h"
#include "runtime/graph_analysis.h"
#include "runtime/session_options.h"

namespace graphjit {

enum class Reason {
  kClustered,
  kNotAnOp,           // Placeholder, Const, NoOp and the like
  kNotCompilable,     // op/dtype/device the compiler does not take, or not requested at this level
  kExcludedByAttr,    // _XlaCompile=false
  kExcludedOp,        // --cluster_exclude_ops
  kFed,               // an output is fed: a cluster could not take it from outside
  kWouldCreateCycle,  // every merge with a neighbour would create a cycle
  kDeviceMismatch,
  kScopeMismatch,
  kBelowMinSize,
  kFuelExhausted,
};
const char* ReasonCode(Reason r);  // "would_create_cycle", ...

struct NodeDecision {
  int cluster = -1;  // index into Clustering::clusters, or -1
  Reason reason = Reason::kNotCompilable;
  std::string detail;
};

struct Clustering {
  std::vector<std::string> names;          // cluster_0, cluster_1, ... in topological order
  std::vector<std::vector<int>> clusters;  // node ids, in topological order
  std::vector<std::string> devices;        // per cluster, as written on its nodes
  std::vector<NodeDecision> nodes;         // by node id
  int merges = 0;
};

struct ClusteringOptions {
  JitLevel level = JitLevel::kOff;
  int min_cluster_size = 2;  // effective ops; scoped clusters have no minimum
  int max_cluster_size = 0;  // 0: no limit
  std::vector<std::string> exclude_ops;
  std::vector<std::string> fed_nodes;  // nodes with a fed output
  int64_t fuel = -1;                   // -1: unlimited

  static ClusteringOptions FromSession(const SessionOptions& o);
};

// Deterministic: the same graph and options give the same clusters and names.
Clustering FindClusters(const AnalyzedGraph& graph, const ClusteringOptions& options, const CompilabilityOracle& oracle);

}  // namespace graphjit
