#include "clustering/encapsulate.h"

#include <map>
#include <set>

#include "ir/attr.h"
#include "ir/graphdef.h"

namespace graphjit {

StatusOr<bool> EncapsulateClusters(const AnalyzedGraph& a, const Clustering& c, Graph* graph, const std::set<TensorId>& fetched,
                                   const EncapsulationPolicy& policy) {
  auto copied_constant = [&](int id) {
    const Node& n = *a.graph.node(id);
    return n.op == "Const" && policy.CopiesConstant(a.info(id).shapes[0], !n.control_inputs.empty());
  };
  if (c.clusters.empty()) return false;
  const Graph& g = a.graph;
  auto consumers = g.ComputeOutEdges();
  std::vector<int> cluster_of(g.num_nodes(), -1);
  for (size_t k = 0; k < c.clusters.size(); ++k)
    for (int id : c.clusters[k]) cluster_of[id] = static_cast<int>(k);
  // What earlier clusters took over: their members' tensors (now their outputs) and
  // their nodes, so that a later cluster reads them and not the original members.
  std::map<TensorId, TensorId> moved;
  std::vector<int> cluster_node(c.clusters.size(), -1);

  for (size_t k = 0; k < c.clusters.size(); ++k) {
    const std::vector<int>& members = c.clusters[k];
    std::set<int> in_cluster(members.begin(), members.end());

    // 1. Inputs: distinct outside tensors read by members, in member/input order. Small
    // constants are copied into the body instead: the compiler sees their values.
    std::vector<TensorId> inputs;
    std::map<TensorId, int> input_index;
    std::set<int> control_inputs, copied;
    for (int id : members) {
      const Node* n = g.node(id);
      for (const TensorId& t : n->inputs) {
        if (in_cluster.count(t.node)) continue;
        if (copied_constant(t.node)) {
          copied.insert(t.node);
        } else if (!input_index.count(t)) {
          input_index[t] = static_cast<int>(inputs.size());
          inputs.push_back(t);
        }
      }
      for (int ctl : n->control_inputs)
        if (!in_cluster.count(ctl)) control_inputs.insert(ctl);
    }
    // 2. Outputs: member tensors read outside the cluster, fetched, or of graph sinks.
    std::vector<TensorId> outputs;
    std::map<TensorId, int> output_index;
    auto add_output = [&](const TensorId& t) {
      if (output_index.count(t)) return;
      output_index[t] = static_cast<int>(outputs.size());
      outputs.push_back(t);
    };
    for (int id : members) {
      bool has_data_consumer = false;
      for (const OutEdge& e : consumers[id]) {
        if (e.dst_input < 0) continue;
        has_data_consumer = true;
        if (!in_cluster.count(e.dst)) add_output({id, e.src_output});
      }
      for (int i = 0; i < static_cast<int>(a.info(id).dtypes.size()); ++i)
        if (!has_data_consumer || fetched.count({id, i})) add_output({id, i});
    }

    // 3. The body: placeholders for the inputs, then copies of the members.
    tensorflow::GraphDef body;
    *body.mutable_versions() = g.versions();
    tensorflow::AttrValue tin, tout, body_outputs, aliases;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const DType t = a.info(inputs[i].node).dtypes[inputs[i].index];
      tensorflow::NodeDef* p = body.add_node();
      p->set_name("_arg_" + std::to_string(i));
      p->set_op("Placeholder");
      (*p->mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(t));
      ShapeToProto(a.info(inputs[i].node).shapes[inputs[i].index], (*p->mutable_attr())["shape"].mutable_shape());
      tin.mutable_list()->add_type(static_cast<tensorflow::DataType>(t));
    }
    std::vector<int> body_nodes(copied.begin(), copied.end());  // the copied constants have no inputs
    body_nodes.insert(body_nodes.end(), members.begin(), members.end());
    for (int id : body_nodes) {
      const Node* n = g.node(id);
      tensorflow::NodeDef* nd = body.add_node();
      *nd = n->passthrough;
      nd->set_name(n->name);
      nd->set_op(n->op);
      nd->set_device(n->device);
      for (const TensorId& t : n->inputs)
        nd->add_input(in_cluster.count(t.node) || copied.count(t.node) ? g.TensorName(t)
                                                                       : "_arg_" + std::to_string(input_index[t]));
      for (int ctl : n->control_inputs)
        if (in_cluster.count(ctl)) nd->add_input("^" + g.node(ctl)->name);
      for (const auto& [key, value] : n->attrs) (*nd->mutable_attr())[key] = value;
    }
    for (const TensorId& t : outputs) {
      tout.mutable_list()->add_type(static_cast<tensorflow::DataType>(a.info(t.node).dtypes[t.index]));
      body_outputs.mutable_list()->add_s(g.TensorName(t));
      aliases.mutable_list()->add_s(g.TensorName(t));
    }

    // 4. The cluster node, with a name no other node has.
    std::string name = c.names[k];
    while (graph->FindNode(name) != nullptr) name += "_";
    Node* cn = graph->AddNode(name, "_JitCluster");
    cn->device = c.devices[k];
    for (const TensorId& t : inputs) cn->inputs.push_back(moved.count(t) ? moved.at(t) : t);
    for (int ctl : control_inputs)
      cn->control_inputs.push_back(cluster_of[ctl] >= 0 && cluster_node[cluster_of[ctl]] >= 0 ? cluster_node[cluster_of[ctl]]
                                                                                              : ctl);
    cluster_node[k] = cn->id;
    for (size_t i = 0; i < outputs.size(); ++i) moved[outputs[i]] = TensorId{cn->id, static_cast<int>(i)};
    cn->attrs["Tin"] = tin;
    cn->attrs["Tout"] = tout;
    cn->attrs["_body"].set_s(body.SerializeAsString());
    cn->attrs["_body_outputs"] = body_outputs;
    cn->attrs["_aliases"] = aliases;

    // 5. Outside consumers read the cluster; outside control edges wait for it.
    // (Earlier clusters' nodes too: their inputs may come from this cluster.)
    for (int id = 0; id < graph->num_nodes(); ++id) {
      if (in_cluster.count(id) || id == cn->id) continue;
      Node* n = graph->node(id);
      for (TensorId& t : n->inputs)
        if (auto it = output_index.find(t); it != output_index.end() && in_cluster.count(t.node))
          t = TensorId{cn->id, it->second};
      bool waits = false;
      std::vector<int> kept;
      for (int ctl : n->control_inputs) {
        if (in_cluster.count(ctl))
          waits = true;
        else
          kept.push_back(ctl);
      }
      if (waits) {
        kept.push_back(cn->id);
        n->control_inputs = kept;
      }
    }
    for (int id : members) graph->node(id)->attrs["_jit_cluster"].set_s(name);
  }
  return true;
}

}  // namespace graphjit
