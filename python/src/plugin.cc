// The TensorFlow plugin's graph optimizer (TF_InitGraph) and the C functions the
// graphjit_tf module calls. Nothing here may fail TensorFlow: an error at load aborts the
// user's process, so every problem leaves the graph as it was, with one warning.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "ir/graphdef.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "python/src/plugin.h"
#include "python/src/rewrite.h"
#include "python/src/tensor_properties.pb.h"
#include "tensorflow/c/experimental/grappler/grappler.h"
#include "tensorflow/c/tf_buffer.h"
#include "tensorflow/c/tf_status.h"

#define GRAPHJIT_TF_EXPORT extern "C" __attribute__((visibility("default")))

namespace graphjit {

namespace {

// The options graphs are optimized and clusters run with: GRAPHJIT_FLAGS when the plugin
// was loaded, then what graphjit_tf.set_options() and set_jit_level() changed.
std::mutex options_mu;
SessionOptions& CurrentOptions() {
  static SessionOptions* options = [] {
    auto* o = new SessionOptions();
    const char* flags = std::getenv("GRAPHJIT_FLAGS");
    if (flags) {
      Status s = ApplyFlags(flags, o);
      if (!s.ok()) {
        Warn(s.message() + " (GRAPHJIT_FLAGS ignored)");
        *o = SessionOptions();
      }
    }
    if (o->jit_level == JitLevel::kDefault) o->jit_level = JitLevel::kOff;
    return o;
  }();
  return *options;
}

// TensorFlow's inferred type and shape of every node output.
TensorFlowGraphFacts ReadFacts(const tensorflow::GraphDef& graph, const TF_GrapplerItem* item) {
  TensorFlowGraphFacts facts;
  TF_Status* status = TF_NewStatus();
  int count = 0;
  size_t bytes = 0;
  TF_GetNodesToPreserveListSize(item, &count, &bytes, status);
  if (TF_GetCode(status) == TF_OK && count > 0) {
    std::vector<char*> values(count);
    std::vector<size_t> lengths(count);
    std::vector<char> storage(bytes);
    TF_GetNodesToPreserveList(item, values.data(), lengths.data(), count, storage.data(), bytes, status);
    if (TF_GetCode(status) == TF_OK)
      for (int i = 0; i < count; ++i) facts.preserve.emplace(values[i], lengths[i]);
  }
  TF_GraphProperties* properties = TF_NewGraphProperties(item);
  TF_InferStatically(properties, /*assume_valid_feeds=*/true, /*aggressive_shape_inference=*/false,
                     /*include_input_tensor_values=*/false, /*include_output_tensor_values=*/false, status);
  if (TF_GetCode(status) == TF_OK) {
    for (const auto& node : graph.node()) {
      int outputs = 0;
      TF_GetOutputPropertiesListSize(properties, node.name().c_str(), &outputs, status);
      if (TF_GetCode(status) != TF_OK || outputs <= 0) continue;
      std::vector<TF_Buffer*> buffers(outputs);
      for (auto& b : buffers) b = TF_NewBuffer();
      TF_GetOutputPropertiesList(properties, node.name().c_str(), buffers.data(), outputs, status);
      if (TF_GetCode(status) == TF_OK) {
        auto& out = facts.outputs[node.name()];
        for (TF_Buffer* b : buffers) {
          graphjit_tf::TensorProperties p;
          p.ParseFromArray(b->data, static_cast<int>(b->length));
          out.push_back({p.dtype(), p.shape()});
        }
      }
      for (TF_Buffer* b : buffers) TF_DeleteBuffer(b);
    }
  }
  TF_DeleteGraphProperties(properties);
  TF_DeleteStatus(status);
  return facts;
}

bool AsksForGraphjit(const tensorflow::GraphDef& graph, const SessionOptions& options) {
  if (options.jit_level != JitLevel::kOff) return true;
  for (const auto& node : graph.node()) {
    auto it = node.attr().find("_XlaCompile");
    if (it != node.attr().end() && it->second.b()) return true;
  }
  return false;
}

void CopyOut(const std::string& bytes, TF_Buffer* out) {
  void* data = std::malloc(bytes.size());
  std::memcpy(data, bytes.data(), bytes.size());
  out->data = data;
  out->length = bytes.size();
  out->data_deallocator = [](void* d, size_t) { std::free(d); };
}

void Optimize(void*, const TF_Buffer* in, const TF_GrapplerItem* item, TF_Buffer* out, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const std::string unchanged(static_cast<const char*>(in->data), in->length);
  PluginCounters& counters = Counters();
  ++counters.graphs;
  const SessionOptions options = PluginOptions();
  // --dump_to=DIR: each graph as TensorFlow handed it, and as it went back.
  std::string dump;
  auto give_back = [&](const std::string& bytes) {
    if (!dump.empty()) {
      tensorflow::GraphDef returned;
      returned.ParseFromString(bytes);
      (void)WriteGraphDefFile(returned, dump + "_after.pbtxt");
    }
    CopyOut(bytes, out);
  };
  try {
    tensorflow::GraphDef graph;
    if (!graph.ParseFromString(unchanged)) throw std::runtime_error("the GraphDef does not parse");
    if (!AsksForGraphjit(graph, options)) return CopyOut(unchanged, out);
    if (!options.dump_to.empty()) {
      static std::atomic<int> graphs{0};
      std::filesystem::create_directories(options.dump_to);
      dump = options.dump_to + "/tf_graph_" + std::to_string(graphs++);
      (void)WriteGraphDefFile(graph, dump + "_before.pbtxt");
    }
    StatusOr<TensorFlowRewrite> rewrite = ClusterForTensorFlow(ReadFacts(graph, item), options, &graph);
    if (!rewrite.ok()) throw std::runtime_error(rewrite.status().message());
    if (!rewrite->skipped.empty()) throw std::runtime_error(rewrite->skipped);
    if (rewrite->clusters == 0) return give_back(unchanged);
    ++counters.graphs_rewritten;
    counters.clusters += rewrite->clusters;
    counters.nodes_clustered += rewrite->nodes_clustered;
    {
      std::lock_guard<std::mutex> lock(counters.ops_mu);
      for (const auto& [op, count] : rewrite->ops) counters.ops[op] += count;
    }
    if (options.jit_verbose)
      Warn("clustered " + std::to_string(rewrite->nodes_clustered) + " nodes into " + std::to_string(rewrite->clusters) +
           " GraphjitCluster ops");
    give_back(graph.SerializeAsString());
  } catch (const std::exception& e) {
    ++counters.graphs_unchanged;
    Warn(std::string("left a graph to TensorFlow: ") + e.what());
    give_back(unchanged);
  }
}

}  // namespace

PluginCounters& Counters() {
  static PluginCounters counters;
  return counters;
}

SessionOptions PluginOptions() {
  std::lock_guard<std::mutex> lock(options_mu);
  return CurrentOptions();
}

void InitGraphjit() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterGraphOptimizer();
    RegisterJit();
  });
}

void Warn(const std::string& message) { std::cerr << "graphjit: " << message << std::endl; }

}  // namespace graphjit

using namespace graphjit;

GRAPHJIT_TF_EXPORT void TF_InitGraph(TP_OptimizerRegistrationParams* params, TF_Status* status) {
  InitGraphjit();
  params->struct_size = TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE;
  params->optimizer_configs->struct_size = TP_OPTIMIZER_CONFIGS_STRUCT_SIZE;
  params->optimizer->struct_size = TP_OPTIMIZER_STRUCT_SIZE;
  params->optimizer->optimize_func = Optimize;
  params->device_type = "CPU";
  TF_SetStatus(status, TF_OK, "");
}

// For graphjit_tf (through ctypes). 0 on success.
GRAPHJIT_TF_EXPORT int GraphjitTF_SetJitLevel(const char* level) {
  JitLevel parsed;
  if (!level || !ParseJitLevel(level, &parsed)) return -1;
  std::lock_guard<std::mutex> lock(options_mu);
  CurrentOptions().jit_level = parsed == JitLevel::kDefault ? JitLevel::kOff : parsed;
  return 0;
}

// GRAPHJIT_FLAGS-style flags applied to the options from now on; 0 on success, else -1
// with the error's message in `error` (all or nothing).
GRAPHJIT_TF_EXPORT int GraphjitTF_SetOptions(const char* flags, char* error, size_t error_size) {
  std::lock_guard<std::mutex> lock(options_mu);
  SessionOptions changed = CurrentOptions();
  Status s = ApplyFlags(flags ? flags : "", &changed);
  if (!s.ok()) {
    std::snprintf(error, error_size, "%s", s.message().c_str());
    return -1;
  }
  if (changed.jit_level == JitLevel::kDefault) changed.jit_level = JitLevel::kOff;
  CurrentOptions() = changed;
  return 0;
}

// The options' main fields as a JSON object; valid until the next call.
GRAPHJIT_TF_EXPORT const char* GraphjitTF_Options() {
  static thread_local std::string text;
  const SessionOptions o = PluginOptions();
  const char* numerics[] = {"off", "warn", "fail"};
  text = nlohmann::json({{"jit_level", JitLevelName(o.jit_level)},
                         {"min_cluster_size", o.min_cluster_size},
                         {"max_cluster_size", o.max_cluster_size},
                         {"cluster_exclude_ops", o.cluster_exclude_ops},
                         {"dump_to", o.dump_to},
                         {"jit_verbose", o.jit_verbose},
                         {"jit_async", o.jit_async},
                         {"cache_dir", o.cache_dir},
                         {"jit_check_numerics", numerics[static_cast<int>(o.jit_check_numerics)]}})
             .dump();
  return text.c_str();
}

GRAPHJIT_TF_EXPORT const char* GraphjitTF_JitLevel() { return JitLevelName(PluginOptions().jit_level); }

// A JSON object of the plugin's and the JIT's counters; valid until the next call.
GRAPHJIT_TF_EXPORT const char* GraphjitTF_Stats() {
  static thread_local std::string text;
  PluginCounters& c = Counters();
  JitStats jit = GetJitStats();
  nlohmann::json stats = {{"graphs", c.graphs.load()},
                          {"graphs_rewritten", c.graphs_rewritten.load()},
                          {"graphs_unchanged", c.graphs_unchanged.load()},
                          {"clusters", c.clusters.load()},
                          {"nodes_clustered", c.nodes_clustered.load()},
                          {"kernels", c.kernels.load()},
                          {"cluster_runs", c.cluster_runs.load()},
                          {"cluster_errors", c.cluster_errors.load()},
                          {"jit_clusters", jit.clusters},
                          {"jit_compiled", jit.compiled},
                          {"jit_fallback", jit.fallback},
                          {"cache_hits", jit.cache_hits},
                          {"cache_misses", jit.cache_misses},
                          {"compile_ms", jit.compile_ms},
                          {"compiles", jit.compiles},
                          {"disk_hits", jit.disk_hits},
                          {"disk_writes", jit.disk_writes},
                          {"disk_dropped", jit.disk_dropped}};
  {
    std::lock_guard<std::mutex> lock(c.ops_mu);
    stats["clustered_ops"] = c.ops;
  }
  text = stats.dump();
  return text.c_str();
}

// graphjit's version and the TensorFlow it was built against: "0.1.0 2.21.0".
GRAPHJIT_TF_EXPORT const char* GraphjitTF_Version() { return GRAPHJIT_VERSION " " GRAPHJIT_TF_BUILT_WITH; }
