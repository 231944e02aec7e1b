// The TensorFlow plugin's state: the options its rewrites and kernels use, and what it
// counts (graphjit_tf.stats()).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "runtime/session_options.h"

namespace graphjit {

struct PluginCounters {
  std::atomic<int64_t> graphs{0};            // graphs TensorFlow handed the optimizer
  std::atomic<int64_t> graphs_rewritten{0};  // ... that got at least one cluster
  std::atomic<int64_t> graphs_unchanged{0};  // ... left as they were, with a warning
  std::atomic<int64_t> clusters{0};          // GraphjitCluster nodes made
  std::atomic<int64_t> nodes_clustered{0};
  std::atomic<int64_t> kernels{0};       // GraphjitCluster kernels TensorFlow created
  std::atomic<int64_t> cluster_runs{0};  // ... and their runs
  std::atomic<int64_t> cluster_errors{0};
  std::mutex ops_mu;
  std::map<std::string, int64_t> ops;  // clustered nodes, by op
};

PluginCounters& Counters();

// GRAPHJIT_FLAGS as read when the plugin was loaded, with the level set through
// graphjit_tf.set_jit_level() (which wins over --jit_level). Without either: off, as
// TensorFlow's auto-clustering is off by default (jit_scope() still compiles).
SessionOptions PluginOptions();

// Registers graphjit's graph passes and its JIT with graphjit's runtime, once.
void InitGraphjit();

// One line on stderr, prefixed "graphjit: ".
void Warn(const std::string& message);

}  // namespace graphjit
