#include "clustering/find_clusters.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ir/attr.h"
#include "ir/device.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"

namespace graphjit {

const char* ReasonCode(Reason r) {
  switch (r) {
    case Reason::kClustered: return "clustered";
    case Reason::kNotAnOp: return "not_an_op";
    case Reason::kNotCompilable: return "not_compilable";
    case Reason::kExcludedByAttr: return "excluded_by_attr";
    case Reason::kExcludedOp: return "excluded_op";
    case Reason::kFed: return "fed";
    case Reason::kWouldCreateCycle: return "would_create_cycle";
    case Reason::kDeviceMismatch: return "device_mismatch";
    case Reason::kScopeMismatch: return "scope_mismatch";
    case Reason::kBelowMinSize: return "below_min_size";
    case Reason::kFuelExhausted: return "fuel_exhausted";
  }
  return "?";
}

ClusteringOptions ClusteringOptions::FromSession(const SessionOptions& o) {
  ClusteringOptions c;
  c.level = o.jit_level == JitLevel::kDefault ? JitLevel::kOff : o.jit_level;
  c.min_cluster_size = o.min_cluster_size > 0 ? o.min_cluster_size : c.level == JitLevel::kOn2 ? 1 : 2;
  c.max_cluster_size = o.max_cluster_size;
  c.exclude_ops = o.cluster_exclude_ops;
  c.fuel = o.clustering_fuel;
  return c;
}

namespace {

// The contracted graph: one vertex per cluster (named by a representative node), kept in
// a topological order that is repaired after each contraction (Pearce-Kelly).
class ContractionGraph {
 public:
  explicit ContractionGraph(const AnalyzedGraph& a) : n_(a.graph.num_nodes()), parent_(n_), ord_(n_), out_(n_), in_(n_) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (size_t i = 0; i < a.topo_order.size(); ++i) ord_[a.topo_order[i]] = static_cast<int>(i);
    for (int id = 0; id < n_; ++id) {
      const Node* node = a.graph.node(id);
      for (const TensorId& t : node->inputs) AddEdge(t.node, id);
      for (int c : node->control_inputs) AddEdge(c, id);
    }
  }

  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }

  // Tries to merge the clusters of u and v (u's precedes v's). Fails, filling `path`
  // with a witness, if another path u ~> v exists (the merge would close a cycle).
  bool TryContract(int u, int v, std::vector<int>* path) {
    u = Find(u);
    v = Find(v);
    if (u == v) return true;
    if (ord_[u] > ord_[v]) std::swap(u, v);
    // 1. Forward from u without the direct edge, within ord <= ord[v].
    std::vector<int> forward;
    std::map<int, int> came_from;
    std::vector<int> stack;
    for (int s : out_[u])
      if (s != v && ord_[s] <= ord_[v] && !came_from.count(s)) {
        came_from[s] = u;
        stack.push_back(s);
      }
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (x == v) {
        for (int y = came_from[v]; y != u; y = came_from[y]) path->push_back(y);
        std::reverse(path->begin(), path->end());
        return false;
      }
      forward.push_back(x);
      for (int s : out_[x])
        if (ord_[s] <= ord_[v] && !came_from.count(s)) {
          came_from[s] = x;
          stack.push_back(s);
        }
    }
    // 2. Backward from v within ord > ord[u] (the nodes that must stay before the merge).
    std::vector<int> backward;
    std::set<int> seen{v};
    stack.assign(1, v);
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      for (int p : in_[x])
        if (p != u && ord_[p] > ord_[u] && seen.insert(p).second) {
          backward.push_back(p);
          stack.push_back(p);
        }
    }
    // 3. Merge v into u.
    parent_[v] = u;
    for (int s : out_[v]) {
      in_[s].erase(v);
      if (s != u) {
        out_[u].insert(s);
        in_[s].insert(u);
      }
    }
    for (int p : in_[v]) {
      out_[p].erase(v);
      if (p != u) {
        in_[u].insert(p);
        out_[p].insert(u);
      }
    }
    out_[u].erase(v);
    in_[u].erase(v);
    out_[v].clear();
    in_[v].clear();
    // 4. Reorder: backward set, then u, then the forward set, in the slots they held.
    auto by_ord = [&](int a, int b) { return ord_[a] < ord_[b]; };
    std::sort(backward.begin(), backward.end(), by_ord);
    std::sort(forward.begin(), forward.end(), by_ord);
    std::vector<int> slots;
    for (int x : backward) slots.push_back(ord_[x]);
    for (int x : forward) slots.push_back(ord_[x]);
    slots.push_back(ord_[u]);
    slots.push_back(ord_[v]);
    std::sort(slots.begin(), slots.end());
    size_t k = 0;
    for (int x : backward) ord_[x] = slots[k++];
    ord_[u] = slots[k++];
    for (int x : forward) ord_[x] = slots[k++];
    return true;
  }

 private:
  void AddEdge(int a, int b) {
    if (a == b) return;
    out_[a].insert(b);
    in_[b].insert(a);
  }

  int n_;
  std::vector<int> parent_, ord_;
  std::vector<std::set<int>> out_, in_;
};

// Per node, whether it computes a shape value: an op of one output computed from shapes
// (Shape, Size, Rank) and constants, whose output is read only as value inputs (Reshape's
// shape, a reduction's axes, ...) or by other such nodes.
std::vector<bool> ShapeValues(const AnalyzedGraph& a, const std::vector<std::vector<OutEdge>>& consumers) {
  const Graph& g = a.graph;
  std::vector<bool> from_shapes(g.num_nodes(), false), shape_value(g.num_nodes(), false);
  for (int id : a.topo_order) {
    const Node& n = *g.node(id);
    bool all = n.op != "Placeholder" && !a.info(id).op->stateful;
    if (TraitsOf(n.op).pattern != OpPattern::kShapeOnly)
      for (const TensorId& in : n.inputs) all = all && from_shapes[in.node];
    from_shapes[id] = all;
  }
  for (auto it = a.topo_order.rbegin(); it != a.topo_order.rend(); ++it) {
    const int id = *it;
    if (!from_shapes[id] || TraitsOf(g.node(id)->op).not_an_op() || a.info(id).dtypes.size() != 1) continue;
    bool read = false, only_as_values = true;
    for (const OutEdge& e : consumers[id]) {
      if (e.dst_input < 0) continue;
      read = true;
      const Node& dst = *g.node(e.dst);
      const OpDef* def = a.info(e.dst).op;
      const bool value = def && def->IsValueInput(e.dst_input, static_cast<int>(dst.inputs.size()));
      only_as_values = only_as_values && (value || shape_value[e.dst]);
    }
    shape_value[id] = read && only_as_values;
  }
  return shape_value;
}

struct Candidate {
  bool ok = false;
  std::string device;        // normalized
  std::string scope;         // _XlaScope, or "" for auto-clustering
  bool scoped = false;       // requested by _XlaCompile=true, an XLA device or a GPU: no min size
  bool shape_value = false;  // computed by the compiler when it specializes (free at run time)
};

}  // namespace

Clustering FindClusters(const AnalyzedGraph& a, const ClusteringOptions& options, const CompilabilityOracle& oracle) {
  const Graph& g = a.graph;
  const int n = g.num_nodes();
  Clustering result;
  result.nodes.resize(n);
  std::vector<Candidate> cand(n);
  std::set<std::string> excluded(options.exclude_ops.begin(), options.exclude_ops.end());
  std::set<std::string> fed(options.fed_nodes.begin(), options.fed_nodes.end());
  auto consumers = g.ComputeOutEdges();
  const std::vector<bool> shape_values = oracle.ComputesShapeValues() ? ShapeValues(a, consumers) : std::vector<bool>(n, false);

  // 1. Mark: which nodes may be compiled, or why not.
  for (int id = 0; id < n; ++id) {
    const Node& node = *g.node(id);
    NodeDecision& d = result.nodes[id];
    auto device = ParseDeviceName(node.device);
    const DeviceName dev = device.ok() ? *device : DeviceName();
    const bool xla_device = dev.IsXla();
    // On a GPU every op the JIT compiles runs as a GPU kernel (else it runs on the CPU),
    // whatever the level: the level says whether they are fused (see jit/jit.h).
    const bool gpu = dev.IsGpu() && !xla_device;
    const tensorflow::AttrValue* compile = node.FindAttr("_XlaCompile");
    const bool attr_true = compile && compile->value_case() == tensorflow::AttrValue::kB && compile->b();
    const bool attr_false = compile && compile->value_case() == tensorflow::AttrValue::kB && !compile->b();
    const OpTraits& traits = TraitsOf(node.op);
    if (traits.not_an_op()) {
      d = {-1, Reason::kNotAnOp, node.op};
      continue;
    }
    if (attr_false) {
      d = {-1, Reason::kExcludedByAttr, "_XlaCompile=false"};
      continue;
    }
    if (excluded.count(node.op)) {
      d = {-1, Reason::kExcludedOp, node.op + " is in --cluster_exclude_ops"};
      continue;
    }
    if (fed.count(node.name)) {
      d = {-1, Reason::kFed, "an output of " + node.name + " is fed"};
      continue;
    }
    if (a.info(id).op->stateful) {
      d = {-1, Reason::kNotCompilable, node.op + " is stateful"};
      continue;
    }
    const bool requested = attr_true || xla_device || gpu;
    if (!requested) {
      if (options.level == JitLevel::kOff) {
        d = {-1, Reason::kNotCompilable, "JIT level OFF and no _XlaCompile=true"};
        continue;
      }
      if (traits.compiled() && static_cast<int>(traits.jit_level) > static_cast<int>(options.level)) {
        d = {-1, Reason::kNotCompilable, node.op + " is clustered from " + JitLevelName(traits.jit_level)};
        continue;
      }
    }
    std::vector<DType> in_types;
    for (const TensorId& t : node.inputs) in_types.push_back(a.info(t.node).dtypes[t.index]);
    std::string why = oracle.WhyNotCompilable(node, in_types, a.info(id).dtypes, dev);
    cand[id].shape_value = shape_values[id] && !why.empty();
    if (cand[id].shape_value) why.clear();
    if (!why.empty()) {
      d = {-1, Reason::kNotCompilable, why};
      continue;
    }
    cand[id].ok = true;
    cand[id].device = dev.ToString();
    cand[id].scoped = requested;
    if (attr_true) {
      if (const auto* scope = node.FindAttr("_XlaScope")) cand[id].scope = scope->s();
      if (cand[id].scope.empty()) cand[id].scope = "_XlaCompile";
    } else if (xla_device) {
      cand[id].scope = "device " + dev.ToString();
    }
    d = {-1, Reason::kBelowMinSize, ""};
  }

  // 2. Contract data edges between candidates, in topological order of the producer and
  //    input order of the consumer, until nothing changes. Each merge costs one fuel.
  ContractionGraph cg(a);
  std::vector<int> size(n, 0);
  for (int id = 0; id < n; ++id) {
    // Views weigh nothing; a softmax, five ops in one (max, sub, exp, sum, div), is a kernel alone.
    size[id] = cand[id].ok && !cand[id].shape_value ? TraitsOf(g.node(id)->op).weight : 0;
  }
  std::vector<int> members(n, 1);
  int64_t fuel = options.fuel;
  auto refuse = [&](int id, Reason r, std::string detail) {
    NodeDecision& d = result.nodes[id];
    if (d.reason == Reason::kBelowMinSize && d.detail.empty()) d = {-1, r, std::move(detail)};
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (int u : a.topo_order) {
      if (!cand[u].ok) continue;
      for (const OutEdge& e : consumers[u]) {
        const int v = e.dst;
        if (e.dst_input < 0 || !cand[v].ok) continue;
        int cu = cg.Find(u), cv = cg.Find(v);
        if (cu == cv) continue;
        if (cand[u].device != cand[v].device) {
          refuse(v, Reason::kDeviceMismatch,
                 "on " + cand[v].device + ", its producer '" + g.node(u)->name + "' on " + cand[u].device);
          refuse(u, Reason::kDeviceMismatch,
                 "on " + cand[u].device + ", its consumer '" + g.node(v)->name + "' on " + cand[v].device);
          continue;
        }
        if (cand[u].scope != cand[v].scope) {
          auto label = [](const std::string& s) { return s.empty() ? std::string("(auto)") : "'" + s + "'"; };
          refuse(v, Reason::kScopeMismatch,
                 "scope " + label(cand[v].scope) + ", producer '" + g.node(u)->name + "' in " + label(cand[u].scope));
          refuse(u, Reason::kScopeMismatch,
                 "scope " + label(cand[u].scope) + ", consumer '" + g.node(v)->name + "' in " + label(cand[v].scope));
          continue;
        }
        if (options.max_cluster_size > 0 && members[cu] + members[cv] > options.max_cluster_size) {
          refuse(v, Reason::kBelowMinSize, "cluster size limit " + std::to_string(options.max_cluster_size) + " reached");
          continue;
        }
        if (fuel == 0) {
          refuse(u, Reason::kFuelExhausted, "no fuel left to merge with '" + g.node(v)->name + "'");
          refuse(v, Reason::kFuelExhausted, "no fuel left to merge with '" + g.node(u)->name + "'");
          continue;
        }
        std::vector<int> path;
        if (!cg.TryContract(cu, cv, &path)) {
          std::string via;
          for (int x : path) via += (via.empty() ? "" : " -> ") + g.node(x)->name;
          refuse(v, Reason::kWouldCreateCycle, "merging with '" + g.node(u)->name + "' would close a cycle via " + via);
          refuse(u, Reason::kWouldCreateCycle, "merging with '" + g.node(v)->name + "' would close a cycle via " + via);
          continue;
        }
        int root = cg.Find(u);
        members[root] = members[cu] + members[cv];
        size[root] = size[cu] + size[cv];
        if (fuel > 0) --fuel;
        ++result.merges;
        changed = true;
      }
    }
  }

  // 3. Keep clusters that are big enough (scoped clusters have no minimum), name them in
  //    topological order, and give every other candidate its reason.
  std::map<int, std::vector<int>> by_root;
  for (int id : a.topo_order)
    if (cand[id].ok) by_root[cg.Find(id)].push_back(id);
  std::vector<std::pair<int, int>> order;  // (first topo position, root)
  std::vector<int> pos(n);
  for (size_t i = 0; i < a.topo_order.size(); ++i) pos[a.topo_order[i]] = static_cast<int>(i);
  for (auto& [root, ids] : by_root) {
    const bool scoped = cand[root].scoped;
    if (!scoped && size[root] < options.min_cluster_size) {
      for (int id : ids) {
        NodeDecision& d = result.nodes[id];
        if (d.reason == Reason::kBelowMinSize && d.detail.empty())
          d.detail = "cluster of " + std::to_string(size[root]) + " effective op" + (size[root] == 1 ? "" : "s") + ", minimum " +
                     std::to_string(options.min_cluster_size);
      }
      continue;
    }
    if (size[root] == 0) continue;  // only shape ops: nothing to compile
    order.emplace_back(pos[ids.front()], root);
  }
  std::sort(order.begin(), order.end());
  for (auto& [p, root] : order) {
    const int index = static_cast<int>(result.clusters.size());
    result.names.push_back("cluster_" + std::to_string(index));
    result.clusters.push_back(by_root[root]);
    result.devices.push_back(g.node(root)->device);
    for (int id : by_root[root]) result.nodes[id] = {index, Reason::kClustered, result.names.back()};
  }
  return result;
}

}  // namespace graphjit
