#include "jit/passes/cluster_for_tensorflow.h"

#include <algorithm>
#include <set>

#include "clustering/encapsulate.h"
#include "clustering/pass.h"
#include "ir/attr.h"
#include "ir/graph.h"
#include "ir/graphdef.h"
#include "runtime/graph_analysis.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"

namespace graphjit {

namespace {

// TensorFlow 1's control flow: its frames are not something clustering can see through.
bool IsV1ControlFlow(const std::string& op) {
  static const std::set<std::string> ops = {"Enter",    "Exit",    "NextIteration", "Switch",   "Merge",           "LoopCond",
                                            "RefEnter", "RefExit", "RefSwitch",     "RefMerge", "RefNextIteration"};
  return ops.count(op) > 0;
}

bool OnCpu(const std::string& device) {
  if (device.empty()) return true;
  std::string lower = device;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("cpu") != std::string::npos;
}

// Why clustering cannot see through the graph, or "".
std::string WhyNotClusterable(const Graph& graph) {
  for (int i = 0; i < graph.num_nodes(); ++i)
    if (IsV1ControlFlow(graph.node(i)->op))
      return "it holds TensorFlow 1 control flow (" + graph.node(i)->op + " '" + graph.node(i)->name + "')";
  return "";
}

// A tensor TensorFlow typed with one of its plain dtypes (not a reference, not unknown).
bool Typed(const TensorProperties* p) { return p != nullptr && p->dtype > 0 && p->dtype < 100; }

// Clusters the graph TensorFlow handed over (steps 1-7 below), on graphjit's IR.
class TensorFlowClustering {
 public:
  TensorFlowClustering(const TensorFlowTypes& types, const PassContext& context, Graph& graph)
      : types_(types), context_(context), g_(graph), n_(graph.num_nodes()), known_(n_, false), reached_by_(n_) {}

  // Returns why the graph stays as it is, or "" when `result` says what was clustered (the
  // graph then rewritten if any cluster was).
  std::string Run(const SessionOptions& options, TensorFlowRewrite* result);

 private:
  // A node's output as TensorFlow typed it, or null.
  const TensorProperties* Properties(TensorId t) const {
    auto it = types_.find(g_.node(t.node)->name);
    if (it == types_.end() || t.index >= static_cast<int>(it->second.size())) return nullptr;
    return &it->second[t.index];
  }
  bool Preserved(const std::string& name) const { return context_.IsPreserved(name); }

  void MarkKnown();
  void LeaveOutUnanalyzable();
  void ReachThroughTensorFlow(const std::vector<int>& order);
  Graph Visible();
  void FindOutputs(const AnalyzedGraph& analyzed, const Clustering& clustering);
  TensorId InGraph(const Graph& encapsulated, TensorId t) const;
  std::string Replace(const AnalyzedGraph& analyzed, const Clustering& clustering, const Graph& encapsulated,
                      TensorFlowRewrite* result);
  void AddCall(const Node& cluster, const std::set<std::string>& members, const std::string& body,
               const std::vector<std::string>& args);
  void Rewire();

  const TensorFlowTypes& types_;
  const PassContext& context_;
  Graph& g_;
  const int n_;  // TensorFlow's nodes: those of g_ before the clusters are added
  std::vector<bool> known_;
  std::vector<std::set<int>> reached_by_;
  std::map<std::string, TensorId> stands_for_;  // a stand-in's name -> its tensor (index -1: its node)
  std::set<TensorId> fetched_;                  // of the analyzed graph
  std::vector<bool> read_outside_;              // by cluster
  std::map<int, int> call_of_;                  // cluster node (of the encapsulated graph) -> its call
  std::map<TensorId, TensorId> moved_;          // a member's output -> its call's
  std::map<int, int> control_moved_;            // a member -> its call, for control inputs
  std::vector<bool> remove_, identity_;         // by node of g_
};

// 1. The nodes clustering may see ("known"): ops graphjit knows, on the CPU, not TensorFlow's
//    to keep. A node TensorFlow must keep (a fetch, a feed) is known only if nothing reads its
//    outputs: then an IdentityN of that name takes its place, reading the cluster's outputs.
void TensorFlowClustering::MarkKnown() {
  std::vector<bool> read(n_, false);
  for (int i = 0; i < n_; ++i)
    for (const TensorId& t : g_.node(i)->inputs) read[t.node] = true;
  for (int i = 0; i < n_; ++i) {
    const Node& node = *g_.node(i);
    const tensorflow::AttrValue* must = node.FindAttr("_XlaMustCompile");
    // A stateful op's state (seeds, variables, what it prints) is TensorFlow's.
    const OpDef* def = OpRegistry::Global()->Find(node.op);
    known_[i] = def != nullptr && !def->stateful && !(Preserved(node.name) && read[i]) && OnCpu(node.device) &&
                !(must != nullptr && must->b());
  }
}

// 3. Each known node alone, on its inputs as TensorFlow typed them (a constant as itself): one
//    graphjit's analysis refuses (a type or an attr its op does not take) stays TensorFlow's.
//    Then known nodes whose inputs from TensorFlow's nodes have no known type are not.
void TensorFlowClustering::LeaveOutUnanalyzable() {
  const tensorflow::GraphDef graph_def = ExportGraphDef(g_);
  for (int i = 0; i < n_; ++i) {
    if (!known_[i]) continue;
    std::vector<tensorflow::NodeDef> producers;
    for (const TensorId& t : g_.node(i)->inputs) {
      tensorflow::NodeDef& input = producers.emplace_back();
      const TensorProperties* p = Properties(t);
      if (g_.node(t.node)->op == "Const" && t.index == 0) {
        input = graph_def.node(t.node);
      } else if (Typed(p)) {
        input.set_op("Placeholder");
        (*input.mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(p->dtype));
        *(*input.mutable_attr())["shape"].mutable_shape() = p->shape;
      } else {
        known_[i] = false;  // an input of no known type
        break;
      }
    }
    if (known_[i] && !WhyNotAnalyzable(graph_def.node(i), producers).empty()) known_[i] = false;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < n_; ++i) {
      if (!known_[i]) continue;
      for (const TensorId& t : g_.node(i)->inputs)
        if (!known_[t.node] && !Typed(Properties(t))) {
          known_[i] = false;
          changed = true;
          break;
        }
    }
  }
}

// 4. For each of TensorFlow's nodes, the known nodes that reach it through TensorFlow's.
void TensorFlowClustering::ReachThroughTensorFlow(const std::vector<int>& order) {
  for (int i : order) {
    if (known_[i]) continue;
    std::vector<int> producers;
    for (const TensorId& t : g_.node(i)->inputs) producers.push_back(t.node);
    producers.insert(producers.end(), g_.node(i)->control_inputs.begin(), g_.node(i)->control_inputs.end());
    for (int p : producers)
      if (known_[p])
        reached_by_[i].insert(p);
      else
        reached_by_[i].insert(reached_by_[p].begin(), reached_by_[p].end());
  }
}

// 5. The graph clustering sees: the known nodes, a Placeholder for each output of TensorFlow's
//    nodes they read and a NoOp for each such node they wait for, both after the known nodes
//    that reach that node. Each node's stand-ins follow it.
Graph TensorFlowClustering::Visible() {
  Graph visible;
  visible.versions() = g_.versions();
  visible.library() = g_.library();
  std::vector<int> id_of(n_, -1);    // a known node's id in `visible`
  std::map<TensorId, int> stand_in;  // tensor (index -1: node) -> its stand-in
  auto add_stand_in = [&](TensorId t) {
    if (stand_in.count(t)) return;
    const bool control = t.index < 0;
    Node* node = visible.AddNode(UniqueName(visible, control ? "graphjit_tf/after" : "graphjit_tf/input"),
                                 control ? "NoOp" : "Placeholder");
    if (!control) {
      const TensorProperties* p = Properties(t);
      node->attrs["dtype"].set_type(static_cast<tensorflow::DataType>(p->dtype));
      *node->attrs["shape"].mutable_shape() = p->shape;
    }
    stand_in[t] = node->id;
    stands_for_[node->name] = t;
  };
  for (int i = 0; i < n_; ++i) {
    if (!known_[i]) continue;
    const Node& node = *g_.node(i);
    Node* copy = visible.AddNode(node.name, node.op);
    copy->attrs = node.attrs;
    copy->passthrough = node.passthrough;
    id_of[i] = copy->id;
    for (const TensorId& t : node.inputs)
      if (!known_[t.node]) add_stand_in(t);
    for (int c : node.control_inputs)
      if (!known_[c]) add_stand_in({c, -1});
  }
  for (const auto& [t, id] : stand_in)
    for (int r : reached_by_[t.node]) visible.node(id)->control_inputs.push_back(id_of[r]);
  for (int i = 0; i < n_; ++i) {
    if (!known_[i]) continue;
    Node* copy = visible.node(id_of[i]);
    for (const TensorId& t : g_.node(i)->inputs)
      copy->inputs.push_back(known_[t.node] ? TensorId{id_of[t.node], t.index} : TensorId{stand_in.at(t), 0});
    for (int c : g_.node(i)->control_inputs) copy->control_inputs.push_back(known_[c] ? id_of[c] : stand_in.at({c, -1}));
  }
  return visible;
}

// 6. The clusters' outputs: the member tensors TensorFlow's nodes read, and every output of a
//    node TensorFlow must keep; a cluster nothing reads outside it (nor waits for) is left.
void TensorFlowClustering::FindOutputs(const AnalyzedGraph& analyzed, const Clustering& clustering) {
  std::vector<int> cluster_of(n_, -1);
  for (size_t c = 0; c < clustering.clusters.size(); ++c)
    for (int id : clustering.clusters[c]) cluster_of[g_.FindNode(analyzed.graph.node(id)->name)->id] = static_cast<int>(c);
  read_outside_.assign(clustering.clusters.size(), false);
  for (int i = 0; i < n_; ++i) {
    const Node& node = *g_.node(i);
    for (const TensorId& t : node.inputs) {
      if (cluster_of[t.node] < 0 || cluster_of[t.node] == cluster_of[i]) continue;
      read_outside_[cluster_of[t.node]] = true;
      if (!known_[i]) fetched_.insert({analyzed.graph.FindNode(g_.node(t.node)->name)->id, t.index});
    }
    for (int c : node.control_inputs)
      if (cluster_of[c] >= 0 && cluster_of[c] != cluster_of[i]) read_outside_[cluster_of[c]] = true;
  }
  for (size_t c = 0; c < clustering.clusters.size(); ++c)
    for (int id : clustering.clusters[c]) {
      if (!Preserved(analyzed.graph.node(id)->name)) continue;
      read_outside_[c] = true;
      for (size_t k = 0; k < analyzed.info(id).dtypes.size(); ++k) fetched_.insert({id, static_cast<int>(k)});
    }
}

// A tensor of the encapsulated graph (index -1: its node) as TensorFlow's graph has it.
TensorId TensorFlowClustering::InGraph(const Graph& encapsulated, TensorId t) const {
  if (auto it = call_of_.find(t.node); it != call_of_.end()) return {it->second, t.index};
  const std::string& name = encapsulated.node(t.node)->name;
  if (auto it = stands_for_.find(name); it != stands_for_.end()) return t.index < 0 ? TensorId{it->second.node, -1} : it->second;
  return {g_.FindNode(name)->id, t.index};
}

// The GraphjitCluster node (`call_of_[cluster.id]`) for a _JitCluster of the encapsulated graph;
// the members' outputs and control edges move to it, and each member TensorFlow must keep
// becomes an IdentityN of its outputs.
void TensorFlowClustering::AddCall(const Node& cluster, const std::set<std::string>& members, const std::string& body,
                                   const std::vector<std::string>& args) {
  Node* call = g_.node(call_of_.at(cluster.id));
  call->device = g_.FindNode(*members.begin())->device;
  call->attrs["Tin"] = *cluster.FindAttr("Tin");
  call->attrs["Tout"] = *cluster.FindAttr("Tout");
  call->attrs["body"].set_s(body);
  auto* inputs = call->attrs["inputs"].mutable_list();
  for (const std::string& a : args) inputs->add_s(a);
  auto* outputs = call->attrs["outputs"].mutable_list();
  std::vector<TensorId> results;  // the members' outputs, in the call's order
  for (const std::string& o : cluster.FindAttr("_body_outputs")->list().s()) {
    outputs->add_s(o);
    ParsedInput out;
    ParseInputString(o, &out);
    results.push_back({g_.FindNode(out.node)->id, out.index});
    moved_[results.back()] = {call->id, static_cast<int>(results.size()) - 1};
  }
  for (const std::string& m : members) {
    const int id = g_.FindNode(m)->id;
    if (!Preserved(m)) {
      remove_[id] = true;
      control_moved_[id] = call->id;
      continue;
    }
    // An IdentityN of the member's name keeps it, reading the cluster's outputs.
    Node* identity = g_.node(id);
    identity_[id] = true;
    identity->op = "IdentityN";
    identity->inputs.clear();
    identity->control_inputs.clear();
    identity->attrs.clear();
    identity->passthrough.Clear();
    auto* types = identity->attrs["T"].mutable_list();
    for (size_t j = 0; j < results.size(); ++j)
      if (results[j].node == id) {
        identity->inputs.push_back({call->id, static_cast<int>(j)});
        types->add_type(cluster.FindAttr("Tout")->list().type(static_cast<int>(j)));
      }
  }
}

// 7. TensorFlow's nodes, the unclustered ones and the calls read the clusters' outputs (each
//    control input once); the members go.
void TensorFlowClustering::Rewire() {
  for (int id = 0; id < g_.num_nodes(); ++id) {
    if (remove_[id] || identity_[id]) continue;
    Node* node = g_.node(id);
    for (TensorId& t : node->inputs)
      if (auto it = moved_.find(t); it != moved_.end()) t = it->second;
    std::vector<int> control;
    for (int c : node->control_inputs) {
      auto it = control_moved_.find(c);
      const int now = it == control_moved_.end() ? c : it->second;
      if (now != id && std::find(control.begin(), control.end(), now) == control.end()) control.push_back(now);
    }
    node->control_inputs = std::move(control);
  }
  g_.RemoveNodes(remove_);
}

// 6-7. Each cluster read outside it becomes a GraphjitCluster node of TensorFlow's graph, its
//    body the one graphjit's sessions encapsulate (for TensorFlow: its inputs of any shape, its
//    nodes jit-scoped, on no device). Returns why the graph stays as it is, or "".
std::string TensorFlowClustering::Replace(const AnalyzedGraph& analyzed, const Clustering& clustering, const Graph& encapsulated,
                                          TensorFlowRewrite* result) {
  struct Call {
    const Node* cluster;
    int number;
    std::set<std::string> members;
    std::string body;
    std::vector<std::string> args;
  };
  std::vector<Call> calls;
  int cluster = -1;
  for (int id = 0; id < encapsulated.num_nodes(); ++id) {
    const Node& cn = *encapsulated.node(id);
    if (TraitsOf(cn.op).pattern != OpPattern::kCluster) continue;
    ++cluster;
    if (!read_outside_[cluster]) continue;  // nothing reads it: TensorFlow prunes it
    Call& call = calls.emplace_back();
    call.cluster = &cn;
    for (int m : clustering.clusters[cluster]) call.members.insert(analyzed.graph.node(m)->name);
    tensorflow::GraphDef body;
    if (!body.ParseFromString(cn.FindAttr("_body")->s())) return "cluster " + cn.name + " has no body";
    *body.mutable_library() = g_.library();
    const int num_args = cn.FindAttr("Tin")->list().type_size();  // the body's first nodes
    for (tensorflow::NodeDef& node : *body.mutable_node()) {
      node.clear_device();
      if (static_cast<int>(call.args.size()) < num_args) {
        node.mutable_attr()->erase("shape");  // TensorFlow's tensors, whatever graphjit inferred
        call.args.push_back(node.name());
        continue;
      }
      node.mutable_attr()->erase("_class");
      (*node.mutable_attr())["_XlaCompile"].set_b(true);
      (*node.mutable_attr())["_XlaScope"].set_s("graphjit_tf");
    }
    call.body = SerializeDeterministically(body);
    call.number = cluster;
    ++result->clusters;
    result->nodes_clustered += static_cast<int>(call.members.size());
    for (const std::string& m : call.members) ++result->ops[g_.FindNode(m)->op];
  }
  for (const Call& call : calls)
    call_of_[call.cluster->id] = g_.AddNode(UniqueName(g_, "graphjit_cluster_" + std::to_string(call.number)), kClusterOp)->id;
  remove_.assign(g_.num_nodes(), false);
  identity_.assign(g_.num_nodes(), false);
  for (const Call& call : calls) {
    Node* node = g_.node(call_of_.at(call.cluster->id));
    for (const TensorId& t : call.cluster->inputs) node->inputs.push_back(InGraph(encapsulated, t));
    for (int c : call.cluster->control_inputs) node->control_inputs.push_back(InGraph(encapsulated, {c, -1}).node);
    AddCall(*call.cluster, call.members, call.body, call.args);
  }
  if (!calls.empty()) Rewire();
  return "";
}

std::string TensorFlowClustering::Run(const SessionOptions& options, TensorFlowRewrite* result) {
  MarkKnown();
  // 2. The nodes in topological order.
  StatusOr<std::vector<int>> order = TopologicalOrder(g_);
  if (!order.ok()) return "it has a cycle";
  LeaveOutUnanalyzable();
  ReachThroughTensorFlow(*order);
  // 5. ... then clustering, as graphjit's own sessions cluster.
  auto explained = ExplainClustering(ExportGraphDef(Visible()), options);
  if (!explained.ok()) return explained.status().message();
  const auto& [analyzed, clustering] = *explained;
  FindOutputs(analyzed, clustering);
  Graph encapsulated = analyzed.graph.Clone();
  if (Status s = EncapsulateClusters(analyzed, clustering, &encapsulated, fetched_).status(); !s.ok()) return s.message();
  return Replace(analyzed, clustering, encapsulated, result);
}

// The graph's types as graphjit's shape inference gives them, when TensorFlow gives none.
StatusOr<TensorFlowTypes> InferTypes(const Graph& graph) {
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(graph.Clone()));
  TensorFlowTypes types;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    std::vector<TensorProperties>& outputs = types[graph.node(id)->name];
    const NodeInfo& info = analyzed.info(id);
    for (size_t k = 0; k < info.dtypes.size(); ++k) {
      TensorProperties& p = outputs.emplace_back();
      p.dtype = static_cast<int>(info.dtypes[k]);
      ShapeToProto(info.shapes[k], &p.shape);
    }
  }
  return types;
}

}  // namespace

PassFunction ClusterForTensorFlowPass(const TensorFlowTypes* types, const SessionOptions& options, TensorFlowRewrite* result) {
  return [types, options, result](Graph& graph, const PassContext& context) -> StatusOr<bool> {
    TensorFlowRewrite unread;
    TensorFlowRewrite& rewrite = result != nullptr ? *result : unread;
    rewrite = TensorFlowRewrite();
    rewrite.skipped = WhyNotClusterable(graph);
    if (!rewrite.skipped.empty()) return false;
    TensorFlowTypes inferred;
    if (types == nullptr) {
      StatusOr<TensorFlowTypes> typed = InferTypes(graph);
      if (!typed.ok()) {
        rewrite.skipped = "graphjit's shape inference cannot type it: " + typed.status().message();
        return false;
      }
      inferred = *std::move(typed);
    }
    rewrite.skipped = TensorFlowClustering(types != nullptr ? *types : inferred, context, graph).Run(options, &rewrite);
    return rewrite.skipped.empty() && rewrite.clusters > 0;
  };
}

}  // namespace graphjit
