#include "tools/optimize_command.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <google/protobuf/text_format.h>

#include "ir/attr.h"
#include "ir/graphdef.h"
#include "jit/passes/cluster_for_tensorflow.h"
#include "jit/passes/jit_passes.h"
#include "jit/passes/specialize_inputs.h"
#include "passes/control_flow.h"
#include "passes/passes.h"
#include "passes/tensorflow_lowerings.h"
#include "runtime/control_flow.h"
#include "runtime/graph_analysis.h"
#include "tools/inputs.h"
#include "tools/options.h"

namespace graphjit {

void AddOptimizeCommand(CLI::App& app, OptimizeArgs* a) {
  CLI::App* c = app.add_subcommand("optimize", "Run the graph optimizations and write the optimized graph");
  c->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  c->add_option("-o,--output", a->output, "Where to write the optimized GraphDef (.pb or .pbtxt; - for text on stdout)")
      ->required();
  c->add_option("--fetch", a->fetches,
                "Tensor the optimized graph must still compute (node or node:i); default: every node without "
                "consumers");
  c->add_option("--disable_pass", a->disable,
                "Passes to skip, comma-separated (prune, constant_folding, arithmetic, "
                "cse, remapper)");
  c->add_option("--pass", a->passes,
                "Run only this pass (repeat for several, run in the order given): one of the default pipeline's, "
                "a control-flow lowering (functionalize_loops, ...), one the JIT runs on a cluster's body "
                "(expand_softmax, lower_cnn_ops, specialize_inputs with --feed/--shape, ...), a TensorFlow lowering "
                "(lower_bias_add_grads, ...) or the TensorFlow plugin's cluster_for_tensorflow (its JIT level from "
                "--config or GRAPHJIT_FLAGS)");
  c->add_flag("--split-input-file", a->split,
              "The text model holds several graphs, separated by lines starting with '# -----': each is optimized "
              "on its own, and the outputs written in order, separated alike");
  c->add_option("--feed", a->feeds,
                "NAME=FILE.npy: for --pass=specialize_inputs, the value of a cluster body's input _arg_i (one that "
                "decides a shape must have one)");
  c->add_option("--shape", a->shapes,
                "NAME=d0,d1,...: for --pass=specialize_inputs, the shape of a cluster body's input _arg_i (its value: "
                "zeros)");
  c->add_flag("--verify", a->verify, "Check the graph after every pass (structure, types, op arity; on in debug builds)");
  c->add_option("--config", a->config, "Text-format TensorFlow ConfigProto (graph_options.rewrite_options)");
  c->add_option("--dump_to", a->dump_to, "Write the graph after each pass to DIR/NN_<pass>.pbtxt");
}

namespace {

constexpr char kSplitMarker[] = "# -----";

// The graphs of a --split-input-file model: its text cut at each line that starts with the
// marker (lines numbered as in the file, so a parse error's line is the file's).
std::vector<std::string> SplitCases(const std::string& text) {
  std::vector<std::string> cases(1);
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    if (line.rfind(kSplitMarker, 0) == 0) {
      cases.emplace_back(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1, '\n');
    } else {
      cases.back() += line + "\n";
    }
    at = end + 1;
  }
  return cases;
}

// The graph analyzes as a Session reads it, and each fetch names one of its outputs.
Status CheckFetches(const Graph& graph, const std::vector<std::string>& fetches) {
  Graph functional = graph.Clone();
  GJ_RETURN_IF_ERROR(FunctionalizeControlFlow(&functional));
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph checked, AnalyzeGraph(std::move(functional)));
  for (const std::string& fetch : fetches) {
    ParsedInput parsed;
    if (!ParseInputString(fetch, &parsed) || parsed.control)
      return InvalidArgument("--fetch " + fetch + ": malformed tensor name");
    const Node* node = graph.FindNode(parsed.node);
    if (node == nullptr) return InvalidArgument("--fetch " + fetch + ": no node with that name");
    const Node* read = checked.graph.FindNode(parsed.node);
    if (read == nullptr) return InvalidArgument("--fetch " + fetch + ": inside a loop or conditional");
    if (parsed.index >= static_cast<int>(checked.info(read->id).dtypes.size()))
      return InvalidArgument("--fetch " + fetch + ": " + node->name + " has no output " + std::to_string(parsed.index));
  }
  return Status::Ok();
}

// The body inputs _arg_0, _arg_1, ... as one call gives them, for specialize_inputs: each
// from --feed (its value) or --shape (zeros of its placeholder's dtype), and which decide a
// shape (those must be fed).
struct BodyInputs {
  std::vector<Tensor> values;
  std::vector<bool> decide_shapes;
};
StatusOr<BodyInputs> ReadBodyInputs(const Graph& graph, const OptimizeArgs& a) {
  std::map<std::string, Tensor> given;
  for (const std::string& f : a.feeds) {
    GJ_ASSIGN_OR_RETURN(auto feed, ReadFeedFlag(f));
    given[feed.first] = std::move(feed.second);
  }
  std::set<std::string> shaped;
  for (const std::string& s : a.shapes) {
    GJ_ASSIGN_OR_RETURN(auto named, ParseShapeFlag(s));
    shaped.insert(named.first);
    const Node* arg = graph.FindNode(named.first);
    if (arg == nullptr || arg->op != "Placeholder") return InvalidArgument("--shape " + named.first + ": no such placeholder");
    GJ_ASSIGN_OR_RETURN(DType dtype, GetTypeAttr(*arg, "dtype"));
    GJ_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Allocate(dtype, named.second));
    if (zeros.bytes() > 0) std::memset(zeros.raw(), 0, zeros.bytes());
    given[named.first] = std::move(zeros);
  }
  BodyInputs inputs;
  while (graph.FindNode(BodyInputName(inputs.values.size())) != nullptr) {
    const std::string name = BodyInputName(inputs.values.size());
    auto it = given.find(name);
    if (it == given.end()) return InvalidArgument("specialize_inputs: give " + name + " with --feed or --shape");
    inputs.values.push_back(std::move(it->second));
    given.erase(it);
  }
  if (!given.empty()) return InvalidArgument(given.begin()->first + " is not an input of the body (_arg_0, _arg_1, ...)");
  inputs.decide_shapes = ValueInputs(graph, static_cast<int>(inputs.values.size()));
  for (size_t i = 0; i < inputs.values.size(); ++i)
    if (inputs.decide_shapes[i] && shaped.count(BodyInputName(i)))
      return InvalidArgument(BodyInputName(i) + " decides a shape: give its value with --feed");
  return inputs;
}

// One graph through the passes: the table of what each did on `report`; the graph optimized
// and its nodes before and after.
// What cluster_for_tensorflow did: its clusters, or why it left the graph as it is.
void ReportClustering(const TensorFlowRewrite& r, FILE* report) {
  if (!r.skipped.empty()) {
    std::fprintf(report, "  left as it is: %s\n", r.skipped.c_str());
    return;
  }
  if (r.clusters == 0) {
    std::fprintf(report, "  no cluster\n");
    return;
  }
  std::fprintf(report, "  %d %s of %d nodes:", r.clusters, r.clusters == 1 ? "cluster" : "clusters", r.nodes_clustered);
  for (const auto& [op, count] : r.ops) std::fprintf(report, " %s x%d", op.c_str(), count);
  std::fprintf(report, "\n");
}

struct Optimized {
  tensorflow::GraphDef graph;
  int before = 0, after = 0;
};
StatusOr<Optimized> Optimize(const tensorflow::GraphDef& graph_def, const OptimizeArgs& a, const SessionOptions& options,
                             FILE* report) {
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(graph_def));
  // The passes need a graph the runtime accepts as a Session reads it (its control flow
  // made graphjit's, ops known, types consistent); the TensorFlow plugin's passes alone take
  // the graphs TensorFlow hands over, with its own ops.
  auto plugin_pass = [](const std::string& pass) { return IsTensorFlowLoweringPass(pass) || pass == kClusterForTensorFlow; };
  const bool plugin_only = !a.passes.empty() && std::all_of(a.passes.begin(), a.passes.end(), plugin_pass);
  if (!plugin_only) GJ_RETURN_IF_ERROR(CheckFetches(graph, a.fetches));
  // Keep the fetches (or the model's outputs) and every placeholder.
  std::vector<std::string> targets;
  for (int id = 0; id < graph.num_nodes(); ++id)
    if (graph.node(id)->op == "Placeholder") targets.push_back(graph.node(id)->name);
  if (a.fetches.empty()) targets = ModelOutputsAndInputs(graph);
  PassContext context({}, a.fetches, targets);
  PassManager pipeline = DefaultPipeline(options);
  BodyInputs body_inputs;       // outlives the pipeline, whose specialize_inputs reads it
  TensorFlowRewrite clustered;  // what cluster_for_tensorflow did
  if (!a.passes.empty()) {
    // Any pass that runs alone: the default pipeline's, the control flow's, the JIT's,
    // TensorFlow's lowerings.
    PassManager all = DefaultPipeline(options);
    AddControlFlowPasses(all);
    AddJitPasses(all);
    AddTensorFlowLoweringPasses(all);
    all.Add(kClusterForTensorFlow, ClusterForTensorFlowPass(nullptr, options, &clustered));
    if (std::count(a.passes.begin(), a.passes.end(), "specialize_inputs")) {
      GJ_ASSIGN_OR_RETURN(body_inputs, ReadBodyInputs(graph, a));
    }
    all.Add("specialize_inputs", SpecializeInputsPass(body_inputs.values, body_inputs.decide_shapes));
    GJ_ASSIGN_OR_RETURN(pipeline, all.Only(a.passes));
  } else if (!a.feeds.empty() || !a.shapes.empty()) {
    return InvalidArgument("--feed and --shape are for --pass=specialize_inputs");
  }
  if (a.verify) pipeline.set_verify(true);
  // GraphjitCluster is the plugin's op in TensorFlow, not one of graphjit's: the verifier
  // (on by default in debug builds) cannot check the graph cluster_for_tensorflow leaves.
  if (std::count(a.passes.begin(), a.passes.end(), kClusterForTensorFlow)) {
    if (a.verify)
      return InvalidArgument(std::string("--verify does not apply to ") + kClusterForTensorFlow + ": the " + kClusterOp +
                             " nodes it makes are TensorFlow's, which graphjit's verifier does not know");
    pipeline.set_verify(false);
  }
  std::vector<PassRecord> records;
  const int before = graph.num_nodes();
  GJ_RETURN_IF_ERROR(pipeline.Run(graph, context, &records).status());
  std::fprintf(report, "%-18s %8s %8s %9s\n", "pass", "before", "after", "ms");
  for (const PassRecord& r : records) {
    if (r.ran)
      std::fprintf(report, "%-18s %8d %8d %9.2f%s\n", r.name.c_str(), r.nodes_before, r.nodes_after, r.ms,
                   r.changed ? "" : "  (unchanged)");
    else
      std::fprintf(report, "%-18s %8s %8s %9s\n", r.name.c_str(), "-", "-", "disabled");
    if (r.ran && r.name == kClusterForTensorFlow) ReportClustering(clustered, report);
  }
  return Optimized{ExportGraphDef(graph), before, graph.num_nodes()};
}

}  // namespace

int OptimizeCommand(const OptimizeArgs& a) {
  auto options = LoadSessionOptions(a.config, "");
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  for (const std::string& name : SplitList(a.disable)) options->disabled_passes.push_back(name);
  Status names = CheckPassNames(options->disabled_passes);
  if (!names.ok()) return Fail(kExitBadInput, names.message());
  if (!a.dump_to.empty()) options->dump_to = a.dump_to;
  // The graphs: the model, or its cases.
  std::vector<tensorflow::GraphDef> graphs;
  if (a.split) {
    std::ifstream in(a.model);
    if (!in) return Fail(kExitBadInput, a.model + ": cannot be read");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const std::string& one : SplitCases(text)) {
      graphs.emplace_back();
      Status parsed = ParseBinaryOrText(one, a.model + " (case " + std::to_string(graphs.size()) + ")", &graphs.back());
      if (!parsed.ok()) return Fail(kExitBadInput, parsed.message());
    }
  } else {
    auto graph_def = ReadGraphDefFile(a.model);
    if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
    graphs.push_back(*std::move(graph_def));
  }
  // Each optimized; the report on stdout, or on stderr when stdout has the graphs.
  const bool to_stdout = a.output == "-";
  FILE* report = to_stdout ? stderr : stdout;
  std::string text;
  for (size_t i = 0; i < graphs.size(); ++i) {
    auto optimized = Optimize(graphs[i], a, *options, report);
    const std::string which = graphs.size() > 1 ? " (case " + std::to_string(i + 1) + ")" : "";
    if (!optimized.ok()) return Fail(kExitBadInput, a.model + which + ": " + optimized.status().message());
    std::fprintf(report, "%s%s: %d -> %d nodes%s", a.model.c_str(), which.c_str(), optimized->before, optimized->after,
                 to_stdout || a.split ? "\n" : "");
    graphs[i] = std::move(optimized->graph);
    if (to_stdout || a.split) {
      std::string one;
      google::protobuf::TextFormat::PrintToString(graphs[i], &one);
      text += (i ? std::string(kSplitMarker) + "\n" : "") + one;
    }
  }
  if (to_stdout) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (a.split) {
    std::ofstream out(a.output);
    if (!(out << text)) return Fail(kExitBadInput, a.output + ": cannot be written");
    std::fprintf(report, "written to %s\n", a.output.c_str());
    return 0;
  }
  if (Status written = WriteGraphDefFile(graphs[0], a.output); !written.ok()) return Fail(kExitBadInput, written.message());
  std::fprintf(report, ", written to %s\n", a.output.c_str());
  return 0;
}

}  // namespace graphjit
