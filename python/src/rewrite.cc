#include "python/src/rewrite.h"

#include <algorithm>
#include <unordered_map>

#include "clustering/pass.h"
#include "ir/graph.h"
#include "runtime/graph_analysis.h"
#include "runtime/op_registry.h"

namespace graphjit {

namespace {

// TensorFlow 1's control flow: its frames are not something clustering can see through.
bool IsV1ControlFlow(const std::string& op) {
  static const std::set<std::string> ops = {"Enter",    "Exit",     "NextIteration", "Switch",    "Merge",
                                            "LoopCond", "RefEnter", "RefExit",       "RefSwitch", "RefMerge",
                                            "RefNextIteration"};
  return ops.count(op) > 0;
}

// Ops graphjit runs too, but whose state belongs to TensorFlow (its seeds, its outputs).
bool StaysWithTensorFlow(const std::string& op) {
  return op.find("Random") != std::string::npos || op.find("Variable") != std::string::npos || op == "Assert" ||
         op == "Print" || op == "PrintV2";
}

bool OnCpu(const std::string& device) {
  if (device.empty()) return true;
  std::string lower = device;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("cpu") != std::string::npos;
}

struct Input {
  std::string node;
  int index = 0;
  bool control = false;
  std::string Tensor() const { return node + ":" + std::to_string(index); }
};

Input ParseInput(const std::string& s) {
  ParsedInput parsed;
  if (!ParseInputString(s, &parsed)) return {s, 0, false};
  return {std::string(parsed.node), parsed.index, parsed.control};
}

std::string Fresh(const std::unordered_map<std::string, int>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

void SetTypeList(tensorflow::NodeDef* node, const std::string& attr, const std::vector<int>& types) {
  auto* list = (*node->mutable_attr())[attr].mutable_list();
  for (int t : types) list->add_type(static_cast<tensorflow::DataType>(t));
}

}  // namespace

StatusOr<TensorFlowRewrite> ClusterForTensorFlow(const TensorFlowGraphFacts& facts, const SessionOptions& options,
                                                 tensorflow::GraphDef* graph) {
  TensorFlowRewrite result;
  const int n = graph->node_size();
  std::unordered_map<std::string, int> index;
  for (int i = 0; i < n; ++i) index[graph->node(i).name()] = i;
  for (const auto& node : graph->node())
    if (IsV1ControlFlow(node.op())) {
      result.skipped = "it holds TensorFlow 1 control flow (" + node.op() + " '" + node.name() + "')";
      return result;
    }
  auto producer = [&](const Input& in) -> int {
    auto it = index.find(in.node);
    return it == index.end() ? -1 : it->second;
  };
  auto properties = [&](const Input& in) -> const TensorProperties* {
    auto it = facts.outputs.find(in.node);
    if (it == facts.outputs.end() || in.index >= static_cast<int>(it->second.size())) return nullptr;
    return &it->second[in.index];
  };

  // 1. The nodes clustering may see: ops graphjit knows, on the CPU, not TensorFlow's to
  //    keep, whose inputs from TensorFlow's nodes have a known, non-reference type.
  std::vector<bool> known(n, false);
  for (int i = 0; i < n; ++i) {
    const auto& node = graph->node(i);
    auto must = node.attr().find("_XlaMustCompile");
    known[i] = OpRegistry::Global()->Find(node.op()) != nullptr && !facts.preserve.count(node.name()) &&
               OnCpu(node.device()) && !StaysWithTensorFlow(node.op()) &&
               !(must != node.attr().end() && must->second.b());
    for (const std::string& s : node.input())
      if (producer(ParseInput(s)) < 0) known[i] = false;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < n; ++i) {
      if (!known[i]) continue;
      for (const std::string& s : graph->node(i).input()) {
        Input in = ParseInput(s);
        if (in.control || known[producer(in)]) continue;
        const TensorProperties* p = properties(in);
        if (!p || p->dtype <= 0 || p->dtype >= 100) {
          known[i] = false;
          changed = true;
          break;
        }
      }
    }
  }

  // 2. For each of TensorFlow's nodes, the known nodes that reach it through TensorFlow's
  //    nodes only (its inputs, in topological order).
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i)
    for (const std::string& s : graph->node(i).input()) {
      consumers[producer(ParseInput(s))].push_back(i);
      ++pending[i];
    }
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k)
    for (int c : consumers[order[k]])
      if (--pending[c] == 0) order.push_back(c);
  if (static_cast<int>(order.size()) != n) {
    result.skipped = "it has a cycle";
    return result;
  }
  std::vector<std::set<int>> reached_by(n);
  for (int i : order) {
    if (known[i]) continue;
    for (const std::string& s : graph->node(i).input()) {
      int p = producer(ParseInput(s));
      if (known[p]) reached_by[i].insert(p);
      else reached_by[i].insert(reached_by[p].begin(), reached_by[p].end());
    }
  }

  // 3. The graph clustering sees: the known nodes, a Placeholder for each output of
  //    TensorFlow's nodes they read and a NoOp for each such node they wait for, both
  //    after the known nodes that reach that node.
  tensorflow::GraphDef visible;
  *visible.mutable_versions() = graph->versions();
  *visible.mutable_library() = graph->library();
  std::unordered_map<std::string, int> taken = index;
  std::map<std::string, std::string> stand_ins;  // "node:i" or "^node" -> its stand-in
  auto stand_in = [&](const Input& in) -> std::string {
    std::string key = in.control ? "^" + in.node : in.Tensor();
    auto [it, added] = stand_ins.emplace(key, "");
    if (!added) return it->second;
    tensorflow::NodeDef* node = visible.add_node();
    node->set_name(Fresh(taken, in.control ? "graphjit_tf/after" : "graphjit_tf/input"));
    taken[node->name()] = -1;
    if (in.control) {
      node->set_op("NoOp");
    } else {
      const TensorProperties* p = properties(in);
      node->set_op("Placeholder");
      (*node->mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(p->dtype));
      *(*node->mutable_attr())["shape"].mutable_shape() = p->shape;
    }
    for (int r : reached_by[producer(in)]) node->add_input("^" + graph->node(r).name());
    it->second = node->name();
    return it->second;
  };
  for (int i = 0; i < n; ++i) {
    if (!known[i]) continue;
    tensorflow::NodeDef* node = visible.add_node();
    *node = graph->node(i);
    node->clear_device();
    for (std::string& s : *node->mutable_input()) {
      Input in = ParseInput(s);
      if (!known[producer(in)]) s = in.control ? "^" + stand_in(in) : stand_in(in);
    }
  }

  // 4. Clustering, as graphjit's own sessions cluster.
  auto explained = ExplainClustering(visible, options);
  if (!explained.ok()) {
    result.skipped = explained.status().message();
    return result;
  }
  const AnalyzedGraph& analyzed = explained->first;
  const Clustering& clustering = explained->second;
  auto dtype_of = [&](const std::string& visible_input) {
    Input in = ParseInput(visible_input);
    const Node* node = analyzed.graph.FindNode(in.node);
    return static_cast<int>(StaticDType(analyzed, TensorId{node->id, in.index}));
  };

  // 5. Each cluster becomes a GraphjitCluster node; its consumers read its outputs.
  std::vector<int> cluster_of(n, -1);
  for (size_t c = 0; c < clustering.clusters.size(); ++c)
    for (int id : clustering.clusters[c]) cluster_of[index.at(analyzed.graph.node(id)->name)] = static_cast<int>(c);
  std::map<std::string, std::string> moved;  // "member:i" -> "cluster:j", "^member" -> "^cluster"
  std::vector<tensorflow::NodeDef> replacements;
  for (size_t c = 0; c < clustering.clusters.size(); ++c) {
    std::set<std::string> members;
    for (int id : clustering.clusters[c]) members.insert(analyzed.graph.node(id)->name);
    tensorflow::GraphDef body;
    *body.mutable_versions() = graph->versions();
    *body.mutable_library() = graph->library();
    std::unordered_map<std::string, int> body_taken;
    for (const std::string& m : members) body_taken[m] = 0;
    std::vector<std::string> args, controls;
    std::vector<int> arg_types;
    std::map<std::string, std::string> arg_of;  // "node:i" -> body placeholder
    std::vector<tensorflow::NodeDef> placeholders;
    for (int id : clustering.clusters[c]) {
      const tensorflow::NodeDef& original = graph->node(index.at(analyzed.graph.node(id)->name));
      tensorflow::NodeDef* node = body.add_node();
      *node = original;
      node->clear_device();
      node->mutable_attr()->erase("_class");
      (*node->mutable_attr())["_XlaCompile"].set_b(true);
      (*node->mutable_attr())["_XlaScope"].set_s("graphjit_tf");
      node->clear_input();
      for (const std::string& s : original.input()) {
        Input in = ParseInput(s);
        if (members.count(in.node)) {
          node->add_input(s);
        } else if (in.control) {
          if (std::find(controls.begin(), controls.end(), s) == controls.end()) controls.push_back(s);
        } else {
          auto [it, added] = arg_of.emplace(in.Tensor(), "");
          if (added) {
            it->second = Fresh(body_taken, "graphjit_arg_" + std::to_string(args.size()));
            body_taken[it->second] = 0;
            // The input's type as clustering saw it (through its stand-in, if TensorFlow's).
            std::string visible_input = known[producer(in)] ? in.Tensor() : stand_ins.at(in.Tensor());
            if (!known[producer(in)]) visible_input += ":0";
            arg_types.push_back(dtype_of(visible_input));
            args.push_back(in.Tensor());
            tensorflow::NodeDef& p = placeholders.emplace_back();
            p.set_name(it->second);
            p.set_op("Placeholder");
            (*p.mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(arg_types.back()));
          }
          node->add_input(it->second);
        }
      }
    }
    for (auto& p : placeholders) *body.add_node() = std::move(p);

    // The outputs: member tensors read by any node outside the cluster.
    std::vector<std::string> outputs;
    std::vector<int> output_types;
    std::map<std::string, int> output_of;
    bool waited_for = false;
    for (int i = 0; i < n; ++i) {
      if (cluster_of[i] == static_cast<int>(c)) continue;
      for (const std::string& s : graph->node(i).input()) {
        Input in = ParseInput(s);
        if (!members.count(in.node)) continue;
        if (in.control) {
          waited_for = true;
        } else if (output_of.emplace(in.Tensor(), static_cast<int>(outputs.size())).second) {
          outputs.push_back(in.Tensor());
          output_types.push_back(dtype_of(in.Tensor()));
        }
      }
    }
    if (outputs.empty() && !waited_for) continue;  // nothing reads it: TensorFlow prunes it

    tensorflow::NodeDef& call = replacements.emplace_back();
    call.set_name(Fresh(taken, "graphjit_cluster_" + std::to_string(c)));
    taken[call.name()] = -1;
    call.set_op(kClusterOp);
    call.set_device(graph->node(index.at(*members.begin())).device());
    for (const std::string& a : args) call.add_input(a);
    for (const std::string& s : controls) call.add_input(s);
    SetTypeList(&call, "Tin", arg_types);
    SetTypeList(&call, "Tout", output_types);
    (*call.mutable_attr())["body"].set_s(body.SerializeAsString());
    auto* names = (*call.mutable_attr())["inputs"].mutable_list();
    for (const auto& p : body.node())
      if (!members.count(p.name())) names->add_s(p.name());
    names = (*call.mutable_attr())["outputs"].mutable_list();
    for (const std::string& o : outputs) names->add_s(o);
    for (size_t j = 0; j < outputs.size(); ++j) moved[outputs[j]] = call.name() + ":" + std::to_string(j);
    for (const std::string& m : members) moved["^" + m] = "^" + call.name();
    ++result.clusters;
    result.nodes_clustered += static_cast<int>(members.size());
  }
  if (replacements.empty()) return result;

  // 6. The new graph: TensorFlow's nodes and the unclustered ones, reading the clusters'
  //    outputs (data inputs before control inputs, each control input once), then the
  //    GraphjitCluster nodes, whose inputs may themselves be other clusters' outputs.
  std::set<std::string> replaced;
  for (const auto& [from, to] : moved)
    if (from[0] == '^') replaced.insert(from.substr(1));
  auto rewire = [&](tensorflow::NodeDef* node) {
    std::vector<std::string> data, control;
    for (const std::string& s : node->input()) {
      Input in = ParseInput(s);
      auto it = moved.find(in.control ? "^" + in.node : in.Tensor());
      std::string now = it == moved.end() ? s : it->second;
      if (!in.control) data.push_back(now);
      else if (now != "^" + node->name() && std::find(control.begin(), control.end(), now) == control.end())
        control.push_back(now);
    }
    node->clear_input();
    for (const auto& s : data) node->add_input(s);
    for (const auto& s : control) node->add_input(s);
  };
  tensorflow::GraphDef rewritten;
  *rewritten.mutable_versions() = graph->versions();
  *rewritten.mutable_library() = std::move(*graph->mutable_library());
  for (auto& node : *graph->mutable_node()) {
    if (replaced.count(node.name())) continue;
    tensorflow::NodeDef* kept = rewritten.add_node();
    *kept = std::move(node);
    rewire(kept);
  }
  for (auto& call : replacements) {
    tensorflow::NodeDef* added = rewritten.add_node();
    *added = std::move(call);
    rewire(added);
  }
  *graph = std::move(rewritten);
  return result;
}

}  // namespace graphjit
