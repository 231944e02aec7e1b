#include "python/src/rewrite.h"

#include <algorithm>
#include <unordered_map>

#include "clustering/encapsulate.h"
#include "clustering/pass.h"
#include "ir/attr.h"
#include "ir/graph.h"
#include "ir/proto/tensor.pb.h"
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

// BiasAddGrad of a known rank is a Sum over every axis but the channels': an op TensorFlow
// runs too, which clustering takes (with the gradient's producers) into one reduction.
void LowerBiasAddGrads(const TensorFlowGraphFacts& facts, tensorflow::GraphDef* graph) {
  std::unordered_map<std::string, int> names;
  for (int i = 0; i < graph->node_size(); ++i) names[graph->node(i).name()] = i;
  const int n = graph->node_size();
  for (int i = 0; i < n; ++i) {
    tensorflow::NodeDef* node = graph->mutable_node(i);
    if (node->op() != "BiasAddGrad" || node->input_size() < 1) continue;
    Input in = ParseInput(node->input(0));
    auto it = facts.outputs.find(in.node);
    if (it == facts.outputs.end() || in.index >= static_cast<int>(it->second.size())) continue;
    const tensorflow::TensorShapeProto& shape = it->second[in.index].shape;
    const int rank = shape.unknown_rank() ? -1 : shape.dim_size();
    auto format = node->attr().find("data_format");
    const bool nchw = format != node->attr().end() && format->second.s() == "NCHW";
    if (rank < 2 || (nchw && rank < 3)) continue;
    tensorflow::NodeDef axes;
    axes.set_name(Fresh(names, node->name() + "/graphjit_axes"));
    names[axes.name()] = -1;
    axes.set_op("Const");
    axes.set_device(node->device());
    (*axes.mutable_attr())["dtype"].set_type(tensorflow::DT_INT32);
    tensorflow::TensorProto* value = (*axes.mutable_attr())["value"].mutable_tensor();
    value->set_dtype(tensorflow::DT_INT32);
    const int channels = nchw ? 1 : rank - 1;
    for (int a = 0; a < rank; ++a)
      if (a != channels) value->add_int_val(a);
    value->mutable_tensor_shape()->add_dim()->set_size(rank - 1);
    node->set_op("Sum");
    node->mutable_attr()->erase("data_format");
    (*node->mutable_attr())["Tidx"].set_type(tensorflow::DT_INT32);
    (*node->mutable_attr())["keep_dims"].set_b(false);
    node->mutable_input()->Add(std::string(axes.name()));
    // Data inputs come before control inputs.
    for (int k = node->input_size() - 1; k > 1 && node->input(k - 1)[0] == '^'; --k)
      node->mutable_input()->SwapElements(k, k - 1);
    *graph->add_node() = std::move(axes);
  }
}

// _UnaryOpsComposition (what TensorFlow's arithmetic optimizer makes of a chain of unary
// ops) is that chain again: ops clustering takes one by one. The last keeps the name.
// TensorFlow drops the chain's jit_scope attrs: it gets its input's back. Each step's
// output is typed as the composition's (unary ops keep the dtype and the shape).
void LowerUnaryOpsCompositions(TensorFlowGraphFacts* facts, tensorflow::GraphDef* graph) {
  std::unordered_map<std::string, int> names;
  for (int i = 0; i < graph->node_size(); ++i) names[graph->node(i).name()] = i;
  const int n = graph->node_size();
  for (int i = 0; i < n; ++i) {
    tensorflow::NodeDef* node = graph->mutable_node(i);
    auto ops = node->attr().find("op_names");
    if (node->op() != "_UnaryOpsComposition" || ops == node->attr().end() || ops->second.list().s_size() == 0 ||
        node->input_size() < 1)
      continue;
    std::vector<std::string> chain(ops->second.list().s().begin(), ops->second.list().s().end());
    std::string input = node->input(0);
    auto producer = names.find(ParseInput(input).node);
    if (!node->attr().count("_XlaCompile") && producer != names.end() && producer->second >= 0)
      for (const char* attr : {"_XlaCompile", "_XlaScope"}) {
        auto it = graph->node(producer->second).attr().find(attr);
        if (it != graph->node(producer->second).attr().end()) (*node->mutable_attr())[attr] = it->second;
      }
    for (size_t k = 0; k + 1 < chain.size(); ++k) {
      tensorflow::NodeDef step;
      step.set_name(Fresh(names, node->name() + "/graphjit_" + std::to_string(k)));
      names[step.name()] = -1;
      step.set_op(chain[k]);
      step.set_device(node->device());
      step.add_input(input);
      for (const auto& [name, value] : node->attr())
        if (name != "op_names") (*step.mutable_attr())[name] = value;
      input = step.name();
      if (auto typed = facts->outputs.find(node->name()); typed != facts->outputs.end())
        facts->outputs[step.name()] = typed->second;
      *graph->add_node() = std::move(step);
      node = graph->mutable_node(i);  // add_node may have moved it
    }
    node->set_op(chain.back());
    node->mutable_attr()->erase("op_names");
    *node->mutable_input(0) = input;
  }
}

}  // namespace

StatusOr<TensorFlowRewrite> ClusterForTensorFlow(const TensorFlowGraphFacts& tensorflow_facts,
                                                 const SessionOptions& options, tensorflow::GraphDef* graph) {
  TensorFlowRewrite result;
  TensorFlowGraphFacts facts = tensorflow_facts;  // with the nodes lowered below
  LowerBiasAddGrads(facts, graph);
  LowerUnaryOpsCompositions(&facts, graph);
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

  // 1. The nodes clustering may see ("known"): ops graphjit knows, on the CPU, not
  //    TensorFlow's to keep.
  //    A node TensorFlow must keep (a fetch, a feed) is known only if nothing reads its
  //    outputs: then an IdentityN of that name takes its place, reading the cluster's outputs.
  std::vector<bool> read(n, false);
  for (const auto& node : graph->node())
    for (const std::string& s : node.input()) {
      Input in = ParseInput(s);
      auto it = index.find(in.node);
      if (!in.control && it != index.end()) read[it->second] = true;
    }
  std::vector<bool> known(n, false);
  for (int i = 0; i < n; ++i) {
    const auto& node = graph->node(i);
    auto must = node.attr().find("_XlaMustCompile");
    // A stateful op's state (seeds, variables, what it prints) is TensorFlow's.
    const OpDef* def = OpRegistry::Global()->Find(node.op());
    known[i] = def != nullptr && !def->stateful && !(facts.preserve.count(node.name()) && read[i]) &&
               OnCpu(node.device()) && !(must != node.attr().end() && must->second.b());
    for (const std::string& s : node.input())
      if (producer(ParseInput(s)) < 0) known[i] = false;
  }

  // 2. The nodes in topological order.
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
  // 3. Each known node alone, on its inputs as TensorFlow typed them (a constant as itself):
  //    one graphjit's analysis refuses (a type or an attr its op does not take) stays
  //    TensorFlow's. Then known nodes whose inputs from TensorFlow's nodes have no known
  //    type are not.
  for (int i = 0; i < n; ++i) {
    if (!known[i]) continue;
    std::vector<tensorflow::NodeDef> producers;
    for (const std::string& s : graph->node(i).input()) {
      Input in = ParseInput(s);
      if (in.control) continue;
      const tensorflow::NodeDef& from = graph->node(producer(in));
      const TensorProperties* p = properties(in);
      tensorflow::NodeDef& input = producers.emplace_back();
      if (from.op() == "Const" && in.index == 0) {
        input = from;
      } else if (p && p->dtype > 0 && p->dtype < 100) {
        input.set_op("Placeholder");
        (*input.mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(p->dtype));
        *(*input.mutable_attr())["shape"].mutable_shape() = p->shape;
      } else {
        known[i] = false;  // an input of no known type
        break;
      }
    }
    if (known[i] && !WhyNotAnalyzable(graph->node(i), producers).empty()) known[i] = false;
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

  // 4. For each of TensorFlow's nodes, the known nodes that reach it through TensorFlow's.
  std::vector<std::set<int>> reached_by(n);
  for (int i : order) {
    if (known[i]) continue;
    for (const std::string& s : graph->node(i).input()) {
      int p = producer(ParseInput(s));
      if (known[p]) reached_by[i].insert(p);
      else reached_by[i].insert(reached_by[p].begin(), reached_by[p].end());
    }
  }

  // 5. The graph clustering sees: the known nodes, a Placeholder for each output of
  //    TensorFlow's nodes they read and a NoOp for each such node they wait for, both
  //    after the known nodes that reach that node; then clustering, as graphjit's own
  //    sessions cluster.
  tensorflow::GraphDef visible;
  *visible.mutable_versions() = graph->versions();
  *visible.mutable_library() = graph->library();
  std::unordered_map<std::string, int> taken = index;  // node names
  std::map<std::string, std::string> stand_ins;       // "node:i" or "^node" -> its stand-in
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
  auto explained = ExplainClustering(visible, options);
  if (!explained.ok()) {
    result.skipped = explained.status().message();
    return result;
  }
  const AnalyzedGraph& analyzed = explained->first;
  const Clustering& clustering = explained->second;

  // 6. Each cluster encapsulated as graphjit's own sessions encapsulate it (one rule for
  //    what its body holds), its outputs the member tensors read outside it, TensorFlow's
  //    nodes included, and every output of a node TensorFlow must keep; then each
  //    _JitCluster becomes a GraphjitCluster node of TensorFlow's graph.
  std::vector<int> cluster_of(n, -1);
  for (size_t c = 0; c < clustering.clusters.size(); ++c)
    for (int id : clustering.clusters[c]) cluster_of[index.at(analyzed.graph.node(id)->name)] = static_cast<int>(c);
  std::set<TensorId> fetched;
  std::vector<bool> read_outside(clustering.clusters.size(), false);  // or waited for
  for (int i = 0; i < n; ++i)
    for (const std::string& s : graph->node(i).input()) {
      Input in = ParseInput(s);
      const int from = producer(in);
      if (cluster_of[from] < 0 || cluster_of[from] == cluster_of[i]) continue;
      read_outside[cluster_of[from]] = true;
      if (!in.control && !known[i]) fetched.insert({analyzed.graph.FindNode(in.node)->id, in.index});
    }
  for (size_t c = 0; c < clustering.clusters.size(); ++c)
    for (int id : clustering.clusters[c]) {
      if (!facts.preserve.count(analyzed.graph.node(id)->name)) continue;
      read_outside[c] = true;
      for (size_t k = 0; k < analyzed.info(id).dtypes.size(); ++k) fetched.insert({id, static_cast<int>(k)});
    }
  Graph encapsulated = analyzed.graph.Clone();
  if (Status s = EncapsulateClusters(analyzed, clustering, &encapsulated, fetched).status(); !s.ok()) {
    result.skipped = s.message();
    return result;
  }
  std::map<std::string, std::string> original;  // a stand-in's tensor or "^node" -> TensorFlow's
  for (const auto& [tensor, stand] : stand_ins) original[tensor[0] == '^' ? "^" + stand : stand + ":0"] = tensor;
  std::map<int, std::string> call_of;        // cluster node (in `encapsulated`) -> its GraphjitCluster
  std::map<std::string, std::string> moved;  // "member:i" -> "cluster:j", "^member" -> "^cluster"
  std::set<std::string> replaced;            // the clusters' members
  std::vector<tensorflow::NodeDef> replacements, identities;
  auto tensorflow_name = [&](TensorId t, bool control) {
    const Node& from = *encapsulated.node(t.node);
    if (auto it = call_of.find(t.node); it != call_of.end())
      return control ? "^" + it->second : it->second + ":" + std::to_string(t.index);
    const std::string name = control ? "^" + from.name : from.name + ":" + std::to_string(t.index);
    auto it = original.find(name);
    return it == original.end() ? name : it->second;
  };
  int cluster = -1;
  for (int id = 0; id < encapsulated.num_nodes(); ++id) {
    const Node& cn = *encapsulated.node(id);
    if (cn.op != "_JitCluster") continue;
    ++cluster;
    if (!read_outside[cluster]) continue;  // nothing reads it: TensorFlow prunes it
    std::set<std::string> members;
    for (int m : clustering.clusters[cluster]) members.insert(analyzed.graph.node(m)->name);
    tensorflow::GraphDef body;
    if (!body.ParseFromString(cn.FindAttr("_body")->s())) {
      result.skipped = "cluster " + cn.name + " has no body";
      return result;
    }
    *body.mutable_library() = graph->library();
    std::vector<std::string> args;
    for (tensorflow::NodeDef& node : *body.mutable_node()) {
      node.clear_device();
      if (node.op() == "Placeholder" && node.name().rfind("_arg_", 0) == 0) {
        node.mutable_attr()->erase("shape");  // TensorFlow's tensors, whatever graphjit inferred
        args.push_back(node.name());
        continue;
      }
      node.mutable_attr()->erase("_class");
      (*node.mutable_attr())["_XlaCompile"].set_b(true);
      (*node.mutable_attr())["_XlaScope"].set_s("graphjit_tf");
    }
    tensorflow::NodeDef& call = replacements.emplace_back();
    call.set_name(Fresh(taken, "graphjit_cluster_" + std::to_string(cluster)));
    taken[call.name()] = -1;
    call.set_op(kClusterOp);
    call.set_device(graph->node(index.at(*members.begin())).device());
    for (const TensorId& t : cn.inputs) call.add_input(tensorflow_name(t, false));
    for (int c : cn.control_inputs) call.add_input(tensorflow_name({c, 0}, true));
    (*call.mutable_attr())["Tin"] = *cn.FindAttr("Tin");
    (*call.mutable_attr())["Tout"] = *cn.FindAttr("Tout");
    (*call.mutable_attr())["body"].set_s(body.SerializeAsString());
    auto* names = (*call.mutable_attr())["inputs"].mutable_list();
    for (const std::string& a : args) names->add_s(a);
    std::vector<std::string> outputs;  // "member:i"
    for (const std::string& o : cn.FindAttr("_body_outputs")->list().s()) {
      Input out = ParseInput(o);
      outputs.push_back(out.Tensor());
      (*call.mutable_attr())["outputs"].mutable_list()->add_s(o);
    }
    call_of[id] = call.name();
    for (size_t j = 0; j < outputs.size(); ++j) moved[outputs[j]] = call.name() + ":" + std::to_string(j);
    for (const std::string& m : members) {
      replaced.insert(m);
      if (facts.preserve.count(m)) {
        // An IdentityN of the member's name keeps it, reading the cluster's outputs.
        tensorflow::NodeDef& identity = identities.emplace_back();
        identity.set_name(m);
        identity.set_op("IdentityN");
        identity.set_device(graph->node(index.at(m)).device());
        auto* types = (*identity.mutable_attr())["T"].mutable_list();
        for (size_t j = 0; j < outputs.size(); ++j)
          if (ParseInput(outputs[j]).node == m) {
            identity.add_input(call.name() + ":" + std::to_string(j));
            types->add_type(cn.FindAttr("Tout")->list().type(static_cast<int>(j)));
          }
      } else {
        moved["^" + m] = "^" + call.name();
      }
    }
    ++result.clusters;
    result.nodes_clustered += static_cast<int>(members.size());
    for (const std::string& m : members) ++result.ops[graph->node(index.at(m)).op()];
  }
  if (replacements.empty()) return result;

  // 7. The new graph: TensorFlow's nodes and the unclustered ones, reading the clusters'
  //    outputs (data inputs before control inputs, each control input once), then the
  //    GraphjitCluster nodes, whose inputs may themselves be other clusters' outputs, and
  //    the IdentityN nodes that keep the names TensorFlow must keep.
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
  for (auto& identity : identities) *rewritten.add_node() = std::move(identity);
  *graph = std::move(rewritten);
  return result;
}

}  // namespace graphjit
