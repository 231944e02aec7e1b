#include "passes/lower_bias_add_grads.h"

#include "runtime/const_node.h"
#include "runtime/graph_analysis.h"

namespace graphjit {

namespace {

bool HasBiasAddGrad(const Graph& graph) {
  for (int id = 0; id < graph.num_nodes(); ++id)
    if (graph.node(id)->op == "BiasAddGrad") return true;
  return false;
}

}  // namespace

bool LowerBiasAddGrad(Graph& graph, int id, int rank) {
  const tensorflow::AttrValue* format = graph.node(id)->FindAttr("data_format");
  const bool nchw = format != nullptr && format->s() == "NCHW";
  if (rank < 2 || (nchw && rank < 3)) return false;
  const int channels = nchw ? 1 : rank - 1;
  std::vector<int32_t> axes;
  for (int a = 0; a < rank; ++a)
    if (a != channels) axes.push_back(a);
  const std::string& name = graph.node(id)->name;
  const Node* value = AddConst(graph, name + "/graphjit_axes", Tensor::Vector(axes), graph.node(id)->device);
  Node* node = graph.node(id);
  node->op = "Sum";
  node->attrs.erase("data_format");
  node->attrs["Tidx"].set_type(tensorflow::DT_INT32);
  node->attrs["keep_dims"].set_b(false);
  node->inputs.push_back({value->id, 0});
  return true;
}

bool LowerBiasAddGrads(Graph& graph, const RankOf& rank_of) {
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    const Node& node = *graph.node(id);
    if (node.op != "BiasAddGrad" || node.inputs.size() != 1) continue;
    changed |= LowerBiasAddGrad(graph, id, rank_of(graph, node.inputs[0]));
  }
  return changed;
}

PassFunction LowerBiasAddGradsPass(RankOf rank_of) {
  return [rank_of = std::move(rank_of)](Graph& graph, const PassContext&) -> StatusOr<bool> {
    if (rank_of) return LowerBiasAddGrads(graph, rank_of);
    if (!HasBiasAddGrad(graph)) return false;
    GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(graph.Clone()));
    return LowerBiasAddGrads(graph, [&analyzed](const Graph&, TensorId t) {
      const Shape& shape = StaticShape(analyzed, t);
      return shape.unknown_rank() ? -1 : shape.rank();
    });
  };
}

}  // namespace graphjit
