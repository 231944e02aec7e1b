#include "clustering/explain.h"

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace graphjit {

std::string ClusteringTable(const AnalyzedGraph& a, const Clustering& c) {
  std::ostringstream out;
  out << c.clusters.size() << " cluster" << (c.clusters.size() == 1 ? "" : "s") << ", " << c.merges << " merge"
      << (c.merges == 1 ? "" : "s") << "\n";
  for (size_t k = 0; k < c.clusters.size(); ++k) {
    std::map<std::string, int> ops;
    for (int id : c.clusters[k]) ops[a.graph.node(id)->op]++;
    out << "  " << c.names[k] << "  " << c.clusters[k].size() << " nodes  ";
    bool first = true;
    for (const auto& [op, count] : ops) {
      out << (first ? "" : ", ") << op << (count > 1 ? " x" + std::to_string(count) : "");
      first = false;
    }
    out << "\n";
  }
  std::vector<int> left;
  for (int id : a.topo_order)
    if (c.nodes[id].cluster < 0) left.push_back(id);
  out << left.size() << " node" << (left.size() == 1 ? "" : "s") << " left out\n";
  for (int id : left) {
    const Node* n = a.graph.node(id);
    out << "  " << n->name << " (" << n->op << ")  " << ReasonCode(c.nodes[id].reason);
    if (!c.nodes[id].detail.empty()) out << ": " << c.nodes[id].detail;
    out << "\n";
  }
  return out.str();
}

std::string ClusteringJson(const AnalyzedGraph& a, const Clustering& c) {
  nlohmann::json clusters = nlohmann::json::array(), unclustered = nlohmann::json::array();
  for (size_t k = 0; k < c.clusters.size(); ++k) {
    nlohmann::json nodes = nlohmann::json::array();
    for (int id : c.clusters[k]) nodes.push_back(a.graph.node(id)->name);
    clusters.push_back({{"name", c.names[k]}, {"nodes", nodes}});
  }
  for (int id : a.topo_order) {
    if (c.nodes[id].cluster >= 0) continue;
    unclustered.push_back(
        {{"node", a.graph.node(id)->name}, {"reason", ReasonCode(c.nodes[id].reason)}, {"detail", c.nodes[id].detail}});
  }
  return nlohmann::json({{"clusters", clusters}, {"unclustered", unclustered}}).dump(2) + "\n";
}

std::string ClusteringDot(const AnalyzedGraph& a, const Clustering& c) {
  static const char* kColours[] = {"#fde0c5", "#c6e2ff", "#d5f5d5", "#f5d5f5", "#fff3b0", "#d0f0f0"};
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\\\"") : std::string(1, ch);
    return q + "\"";
  };
  std::ostringstream out;
  out << "digraph graphjit {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  for (size_t k = 0; k < c.clusters.size(); ++k) {
    out << "  subgraph " << quote("cluster_" + std::to_string(k)) << " {\n    label=" << quote(c.names[k])
        << ";\n    style=filled;\n    color=" << quote(kColours[k % 6]) << ";\n";
    for (int id : c.clusters[k]) {
      const Node* n = a.graph.node(id);
      out << "    " << quote(n->name) << " [label=" << quote(n->name + "\\n" + n->op) << "];\n";
    }
    out << "  }\n";
  }
  for (int id = 0; id < a.graph.num_nodes(); ++id) {
    const Node* n = a.graph.node(id);
    if (c.nodes[id].cluster < 0)
      out << "  " << quote(n->name) << " [label=" << quote(n->name + "\\n" + n->op + "\\n" + ReasonCode(c.nodes[id].reason))
          << ", style=dashed];\n";
    for (const TensorId& t : n->inputs) out << "  " << quote(a.graph.node(t.node)->name) << " -> " << quote(n->name) << ";\n";
    for (int ctl : n->control_inputs)
      out << "  " << quote(a.graph.node(ctl)->name) << " -> " << quote(n->name) << " [style=dotted];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace graphjit
