#include "ir/graph.h"

#include <charconv>
#include <queue>

namespace graphjit {

Node* Graph::AddNode(std::string name, std::string op) {
  auto n = std::make_unique<Node>();
  n->id = num_nodes();
  n->name = std::move(name);
  n->op = std::move(op);
  by_name_.emplace(n->name, n->id);
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

Graph Graph::Clone() const {
  Graph copy;
  for (const auto& n : nodes_) copy.nodes_.push_back(std::make_unique<Node>(*n));
  copy.by_name_ = by_name_;
  copy.versions_ = versions_;
  copy.library_ = library_;
  copy.debug_info_ = debug_info_;
  return copy;
}

Node* Graph::FindNode(std::string_view name) {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : nodes_[it->second].get();
}

const Node* Graph::FindNode(std::string_view name) const { return const_cast<Graph*>(this)->FindNode(name); }

void Graph::RemoveNodes(const std::vector<bool>& remove) {
  std::vector<int> new_id(nodes_.size(), -1);
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& n : nodes_) {
    if (remove[n->id]) continue;
    new_id[n->id] = static_cast<int>(kept.size());
    kept.push_back(std::move(n));
  }
  by_name_.clear();
  for (auto& n : kept) {
    n->id = new_id[n->id];
    for (TensorId& in : n->inputs) {
      assert(new_id[in.node] >= 0 && "removed node still has data consumers");
      in.node = new_id[in.node];
    }
    for (int& c : n->control_inputs) {
      assert(new_id[c] >= 0 && "removed node still has control consumers");
      c = new_id[c];
    }
    by_name_.emplace(n->name, n->id);
  }
  nodes_ = std::move(kept);
}

std::vector<std::vector<OutEdge>> Graph::ComputeOutEdges() const {
  std::vector<std::vector<OutEdge>> out(nodes_.size());
  for (const auto& n : nodes_) {
    for (int i = 0; i < static_cast<int>(n->inputs.size()); ++i) out[n->inputs[i].node].push_back({n->id, i, n->inputs[i].index});
    for (int c : n->control_inputs) out[c].push_back({n->id, -1, -1});
  }
  return out;
}

std::string Graph::TensorName(TensorId t) const {
  const std::string& name = nodes_[t.node]->name;
  return t.index == 0 ? name : name + ":" + std::to_string(t.index);
}

AttrMap InternalAttrs(const Node& node) {
  AttrMap kept;
  for (const auto& [name, value] : node.attrs)
    if (!name.empty() && name[0] == '_') kept.emplace(name, value);
  return kept;
}

std::string UniqueName(const Graph& graph, const std::string& base) {
  if (graph.FindNode(base) == nullptr) return base;
  for (int i = 1;; ++i) {
    std::string name = base + "/_" + std::to_string(i);
    if (graph.FindNode(name) == nullptr) return name;
  }
}

bool ParseInputString(std::string_view s, ParsedInput* out) {
  *out = ParsedInput();
  if (!s.empty() && s[0] == '^') {
    out->control = true;
    s.remove_prefix(1);
  }
  size_t colon = s.rfind(':');
  if (colon != std::string_view::npos && !out->control) {
    std::string_view digits = s.substr(colon + 1);
    int index = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || index < 0) return false;
    out->index = index;
    s = s.substr(0, colon);
  }
  if (s.empty()) return false;
  out->node = s;
  return true;
}

StatusOr<std::vector<int>> TopologicalOrder(const Graph& graph) {
  const int n = graph.num_nodes();
  std::vector<int> pending(n, 0);
  auto out = graph.ComputeOutEdges();
  for (int i = 0; i < n; ++i) pending[i] = static_cast<int>(graph.node(i)->inputs.size() + graph.node(i)->control_inputs.size());
  // A min-heap on node id keeps the order deterministic and close to graph order.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int id = ready.top();
    ready.pop();
    order.push_back(id);
    for (const OutEdge& e : out[id])
      if (--pending[e.dst] == 0) ready.push(e.dst);
  }
  if (static_cast<int>(order.size()) == n) return order;

  // Name a cycle: walk backwards from an unfinished node through unfinished inputs
  // until a node repeats.
  int start = -1;
  for (int i = 0; i < n && start < 0; ++i)
    if (pending[i] > 0) start = i;
  std::vector<int> seen_at(n, -1), path;
  int cur = start;
  while (seen_at[cur] < 0) {
    seen_at[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    const Node* node = graph.node(cur);
    int next = -1;
    for (const TensorId& in : node->inputs)
      if (pending[in.node] > 0) {
        next = in.node;
        break;
      }
    if (next < 0)
      for (int c : node->control_inputs)
        if (pending[c] > 0) {
          next = c;
          break;
        }
    cur = next;
  }
  std::string cycle;
  for (size_t i = seen_at[cur]; i < path.size(); ++i) {
    cycle += "'" + graph.node(path[i])->name + "' <- ";
  }
  cycle += "'" + graph.node(cur)->name + "'";
  return InvalidArgument("graph has a cycle: " + cycle);
}

}  // namespace graphjit
