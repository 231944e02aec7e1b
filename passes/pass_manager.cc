#include "passes/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "ir/graphdef.h"
#include "runtime/graph_analysis.h"

namespace graphjit {

std::string GraphBytes(const Graph& graph) { return SerializeDeterministically(ExportGraphDef(graph)); }

PassContext::PassContext(std::vector<std::string> feeds, std::vector<std::string> fetches, std::vector<std::string> targets)
    : feeds_(std::move(feeds)), fetches_(std::move(fetches)), targets_(std::move(targets)) {
  auto node_of = [](const std::string& tensor) {
    ParsedInput parsed;
    return ParseInputString(tensor, &parsed) ? std::string(parsed.node) : tensor;
  };
  for (const std::string& t : feeds_) fed_.insert(node_of(t));
  preserved_ = fed_;
  for (const std::string& t : fetches_) preserved_.insert(node_of(t));
  for (const std::string& t : targets_) preserved_.insert(t);
}

std::vector<std::string> ModelOutputsAndInputs(const Graph& graph) {
  std::vector<bool> read(graph.num_nodes(), false), waited_for(graph.num_nodes(), false);
  for (int id = 0; id < graph.num_nodes(); ++id) {
    for (const TensorId& in : graph.node(id)->inputs) read[in.node] = true;
    for (int c : graph.node(id)->control_inputs) waited_for[c] = true;
  }
  std::vector<std::string> names;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = *graph.node(id);
    // A NoOp that others wait for only relays a dependency; it is not an output.
    const bool output = !read[id] && !(node.op == "NoOp" && waited_for[id]);
    if (output || node.op == "Placeholder") names.push_back(node.name);
  }
  return names;
}

void PassManager::Add(std::string name, PassFunction run) { passes_.emplace_back(std::move(name), std::move(run)); }

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& [name, run] : passes_) out.push_back(name);
  return out;
}

StatusOr<PassManager> PassManager::Only(const std::vector<std::string>& names) const {
  PassManager only(options_);
  for (const std::string& name : names) {
    auto it = std::find_if(passes_.begin(), passes_.end(), [&](const auto& pass) { return pass.first == name; });
    if (it == passes_.end()) {
      std::string known;
      for (const std::string& n : this->names()) known += (known.empty() ? "" : ", ") + n;
      return InvalidArgument("'" + name + "' is not a graph pass (the passes: " + known + ")");
    }
    only.Add(it->first, it->second);
  }
  return only;
}

namespace {

Status Dump(const Graph& graph, const std::string& dir, int index, const std::string& stage) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument("cannot create dump directory '" + dir + "': " + ec.message());
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02d_", index);
  return WriteGraphDefFile(ExportGraphDef(graph), dir + "/" + prefix + stage + ".pbtxt");
}

Status Verify(const Graph& graph) {
  GJ_RETURN_IF_ERROR(ValidateGraphStructure(graph));
  return AnalyzeGraph(graph.Clone()).status();
}

}  // namespace

StatusOr<bool> PassManager::Run(Graph& graph, const PassContext& context, std::vector<PassRecord>* records) const {
  for (const std::string& name : options_.disabled) {
    bool known = false;
    for (const auto& [pass, run] : passes_) known |= pass == name;
    if (!known) {
      std::string list;
      for (const auto& [pass, run] : passes_) list += (list.empty() ? "" : ", ") + pass;
      return InvalidArgument("no graph pass named '" + name + "' (the passes are: " + list + ")");
    }
  }
  if (!options_.dump_to.empty()) GJ_RETURN_IF_ERROR(Dump(graph, options_.dump_to, 0, "input"));
  bool changed = false;
  int index = 0;
  for (const auto& [name, run] : passes_) {
    ++index;
    PassRecord record;
    record.name = name;
    record.nodes_before = record.nodes_after = graph.num_nodes();
    if (!options_.disabled.count(name)) {
      auto start = std::chrono::steady_clock::now();
      StatusOr<bool> r = run(graph, context);
      if (!r.ok()) return r.status().WithContext("graph pass '" + name + "'");
      record.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      record.ran = true;
      record.changed = *r;
      record.nodes_after = graph.num_nodes();
      changed |= *r;
      if (options_.verify && *r) {
        Status s = Verify(graph);
        if (!s.ok()) return Internal("graph pass '" + name + "' left an invalid graph: " + s.message());
      }
      if (!options_.dump_to.empty()) GJ_RETURN_IF_ERROR(Dump(graph, options_.dump_to, index, name));
    }
    if (records) records->push_back(record);
  }
  return changed;
}

}  // namespace graphjit
