#include "tools/clusters_command.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "clustering/explain.h"
#include "clustering/pass.h"
#include "ir/graphdef.h"
#include "passes/passes.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"
#include "tools/options.h"

namespace graphjit {

void AddClustersCommand(CLI::App& app, ClustersArgs* a) {
  CLI::App* c = app.add_subcommand("clusters", "Show the clusters the JIT would compile, and why each other node is left out");
  c->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)");
  c->add_option("--jit", a->jit, "Global JIT level: off, on (= on_1), on_2 (default: on)")
      ->check(CLI::IsMember({"off", "on", "on_1", "on_2"}));
  c->add_option("--config", a->config, "Text-format TensorFlow ConfigProto (clustering options)");
  c->add_option("--dot", a->dot, "Write Graphviz DOT with each cluster as a coloured subgraph");
  c->add_option("--json", a->json, "Write the decisions as JSON");
  c->add_flag("--no-optimize", a->no_optimize, "Show the raw graph (no graph optimizations run first)");
  c->add_flag("--list-ops", a->list_ops,
              "Print every registered op with its traits: pattern, lowest clustering level (off: never compiled), weight");
}

namespace {

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return InvalidArgument("cannot write '" + path + "'");
  return Status::Ok();
}

}  // namespace

int ClustersCommand(const ClustersArgs& a) {
  if (a.list_ops) {
    // weight: towards --min_cluster_size; expensive: kept rather than computed twice;
    // approximate: compiled as a polynomial fit; gpu-only: compiled for GPUs only.
    std::printf("%-36s %-14s %-7s %-6s %s\n", "op", "pattern", "level", "weight", "notes");
    for (const std::string& op : OpRegistry::Global()->OpNames()) {
      const OpTraits& t = TraitsOf(op);
      std::string notes = OpReducerName(t.reducer);
      if (t.expensive) notes += notes.empty() ? "expensive" : " expensive";
      if (t.approximate) notes += notes.empty() ? "approximate" : " approximate";
      if (t.gpu_only) notes += notes.empty() ? "gpu-only" : " gpu-only";
      std::printf("%-36s %-14s %-7s %-6d %s\n", op.c_str(), OpPatternName(t.pattern),
                  t.compiled() ? JitLevelName(t.jit_level) : "off", t.weight, notes.c_str());
    }
    return 0;
  }
  if (a.model.empty()) return Fail(kExitBadInput, "clusters: a model is required (or --list-ops)");
  // Options as `graphjit run` reads them.
  auto options = LoadSessionOptions(a.config, a.jit);
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  // The graph optimizations run first, as in a session, keeping the model's outputs.
  if (!a.no_optimize) {
    auto graph = ImportGraphDef(*graph_def);
    if (!graph.ok()) return Fail(kExitBadInput, a.model + ": " + graph.status().message());
    PassContext context({}, {}, ModelOutputsAndInputs(*graph));
    auto optimized = DefaultPipeline(*options).Run(*graph, context);
    if (!optimized.ok()) return Fail(kExitBadInput, a.model + ": " + optimized.status().message());
    *graph_def = ExportGraphDef(*graph);
  }
  auto explained = ExplainClustering(*graph_def, *options);
  if (!explained.ok()) return Fail(kExitBadInput, a.model + ": " + explained.status().message());
  const auto& [analyzed, clustering] = *explained;
  std::printf("%s", ClusteringTable(analyzed, clustering).c_str());
  if (!a.json.empty()) {
    Status s = WriteText(a.json, ClusteringJson(analyzed, clustering));
    if (!s.ok()) return Fail(kExitBadInput, s.message());
  }
  if (!a.dot.empty()) {
    Status s = WriteText(a.dot, ClusteringDot(analyzed, clustering));
    if (!s.ok()) return Fail(kExitBadInput, s.message());
  }
  return 0;
}

}  // namespace graphjit
