// The graph IR: nodes with typed attributes, data edges (producer output -> consumer
// input) and control edges, in the order the GraphDef listed them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/proto/attr_value.pb.h"
#include "ir/proto/function.pb.h"
#include "ir/proto/graph.pb.h"
#include "ir/proto/node_def.pb.h"
#include "ir/status.h"

namespace graphjit {

using AttrMap = std::map<std::string, tensorflow::AttrValue, std::less<>>;

// One output of one node: "name:index".
struct TensorId {
  int node = -1;
  int index = 0;
  bool operator==(const TensorId&) const = default;
  auto operator<=>(const TensorId&) const = default;
};

struct Node {
  int id = -1;  // index in Graph::nodes(); stable until nodes are removed
  std::string name;
  std::string op;
  std::string device;               // as written in the GraphDef
  std::vector<TensorId> inputs;     // data inputs, in order
  std::vector<int> control_inputs;  // nodes that must run first
  AttrMap attrs;
  // NodeDef fields graphjit carries through but does not read
  // (experimental_debug_info, experimental_type).
  tensorflow::NodeDef passthrough;

  const tensorflow::AttrValue* FindAttr(std::string_view attr) const {
    auto it = attrs.find(attr);
    return it == attrs.end() ? nullptr : &it->second;
  }
};

// A consumer of a node output (or of the node itself, for control edges: index -1).
struct OutEdge {
  int dst = -1;
  int dst_input = -1;  // -1 for a control edge
  int src_output = -1;
};

class Graph {
 public:
  Graph() = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  // A deep copy with the same node ids.
  Graph Clone() const;

  // Adds a node; its name must be new (checked by the importer and by validation).
  Node* AddNode(std::string name, std::string op);
  Node* node(int id) { return nodes_[id].get(); }
  const Node* node(int id) const { return nodes_[id].get(); }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  Node* FindNode(std::string_view name);
  const Node* FindNode(std::string_view name) const;

  // Removes the nodes for which `remove[id]` is true; edges into them must be gone.
  // Ids are renumbered in order.
  void RemoveNodes(const std::vector<bool>& remove);

  // For every node, its consumers (data and control), in node order.
  std::vector<std::vector<OutEdge>> ComputeOutEdges() const;

  tensorflow::VersionDef& versions() { return versions_; }
  const tensorflow::VersionDef& versions() const { return versions_; }
  tensorflow::FunctionDefLibrary& library() { return library_; }
  const tensorflow::FunctionDefLibrary& library() const { return library_; }
  tensorflow::GraphDebugInfo& debug_info() { return debug_info_; }
  const tensorflow::GraphDebugInfo& debug_info() const { return debug_info_; }

  std::string TensorName(TensorId t) const;  // "node" or "node:i"

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, int> by_name_;
  tensorflow::VersionDef versions_;
  tensorflow::FunctionDefLibrary library_;
  tensorflow::GraphDebugInfo debug_info_;
};

// The attrs that belong to graphjit and TensorFlow's runtime, not to the op ("_aliases",
// "_XlaCompile", "_XlaScope", "_class"): they stay when a node changes op.
AttrMap InternalAttrs(const Node& node);

// `base`, or `base/_N` with the smallest N that makes it unique in `graph`.
std::string UniqueName(const Graph& graph, const std::string& base);

// Parses "node", "node:3" or "^node". Returns false on a malformed string.
struct ParsedInput {
  std::string_view node;
  int index = 0;
  bool control = false;
};
bool ParseInputString(std::string_view s, ParsedInput* out);

// Nodes in an order where every node comes after its data and control inputs;
// ties keep graph order. Fails on a cycle, naming the nodes on it.
StatusOr<std::vector<int>> TopologicalOrder(const Graph& graph);

}  // namespace graphjit
