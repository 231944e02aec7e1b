#include "tools/optimize_command.h"

#include <cstdio>

#include "ir/graphdef.h"
#include "passes/passes.h"
#include "runtime/graph_analysis.h"
#include "tools/options.h"

namespace graphjit {

void AddOptimizeCommand(CLI::App& app, OptimizeArgs* a) {
  CLI::App* c = app.add_subcommand("optimize", "Run the graph optimizations and write the optimized graph");
  c->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  c->add_option("-o,--output", a->output, "Where to write the optimized GraphDef (.pb or .pbtxt)")->required();
  c->add_option("--fetch", a->fetches,
                "Tensor the optimized graph must still compute (node or node:i); default: every node without "
                "consumers");
  c->add_option("--disable_pass", a->disable, "Passes to skip, comma-separated (prune, constant_folding, arithmetic, "
                                              "cse, remapper)");
  c->add_option("--config", a->config, "Text-format TensorFlow ConfigProto (graph_options.rewrite_options)");
  c->add_option("--dump_to", a->dump_to, "Write the graph after each pass to DIR/NN_<pass>.pbtxt");
}

int OptimizeCommand(const OptimizeArgs& a) {
  auto options = LoadSessionOptions(a.config, "");
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  for (const std::string& name : SplitList(a.disable)) options->disabled_passes.push_back(name);
  Status names = CheckPassNames(options->disabled_passes);
  if (!names.ok()) return Fail(kExitBadInput, names.message());
  if (!a.dump_to.empty()) options->dump_to = a.dump_to;

  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  auto graph = ImportGraphDef(*graph_def);
  if (!graph.ok()) return Fail(kExitBadInput, a.model + ": " + graph.status().message());
  // The passes need a graph the runtime accepts (ops known, types consistent).
  auto checked = AnalyzeGraph(graph->Clone());
  if (!checked.ok()) return Fail(kExitBadInput, a.model + ": " + checked.status().message());
  for (const std::string& fetch : a.fetches) {
    ParsedInput parsed;
    if (!ParseInputString(fetch, &parsed) || parsed.control)
      return Fail(kExitBadInput, "--fetch " + fetch + ": malformed tensor name");
    const Node* node = graph->FindNode(parsed.node);
    if (node == nullptr) return Fail(kExitBadInput, "--fetch " + fetch + ": no node with that name");
    if (parsed.index >= static_cast<int>(checked->info(node->id).dtypes.size()))
      return Fail(kExitBadInput, "--fetch " + fetch + ": " + node->name + " has no output " +
                                     std::to_string(parsed.index));
  }

  // Keep the fetches (or the model's outputs) and every placeholder.
  std::vector<std::string> targets;
  for (int id = 0; id < graph->num_nodes(); ++id)
    if (graph->node(id)->op == "Placeholder") targets.push_back(graph->node(id)->name);
  if (a.fetches.empty()) targets = ModelOutputsAndInputs(*graph);
  PassContext context({}, a.fetches, targets);

  std::vector<PassRecord> records;
  const int before = graph->num_nodes();
  auto changed = DefaultPipeline(*options).Run(*graph, context, &records);
  if (!changed.ok()) return Fail(kExitBadInput, a.model + ": " + changed.status().message());
  std::printf("%-18s %8s %8s %9s\n", "pass", "before", "after", "ms");
  for (const PassRecord& r : records) {
    if (r.ran)
      std::printf("%-18s %8d %8d %9.2f%s\n", r.name.c_str(), r.nodes_before, r.nodes_after, r.ms,
                  r.changed ? "" : "  (unchanged)");
    else
      std::printf("%-18s %8s %8s %9s\n", r.name.c_str(), "-", "-", "disabled");
  }
  Status written = WriteGraphDefFile(ExportGraphDef(*graph), a.output);
  if (!written.ok()) return Fail(kExitBadInput, written.message());
  std::printf("%s: %d -> %d nodes, written to %s\n", a.model.c_str(), before, graph->num_nodes(), a.output.c_str());
  return 0;
}

}  // namespace graphjit
