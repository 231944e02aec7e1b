#include "jit/passes/expand_small_gemms.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "ir/attr.h"
#include "runtime/const_node.h"
#include "runtime/graph_analysis.h"

namespace graphjit {

namespace {

// The GEMMs it expands, by op: the attrs that transpose (adjoint) each operand.
struct GemmForm {
  const char* transpose_a;
  const char* transpose_b;
};

const GemmForm* FormOf(std::string_view op) {
  static const std::map<std::string, GemmForm, std::less<>> kForms = {
      {"MatMul", {"transpose_a", "transpose_b"}},
      {"BatchMatMulV2", {"adj_x", "adj_y"}},
  };
  auto it = kForms.find(op);
  return it == kForms.end() ? nullptr : &it->second;
}

// Writes the GEMM `id` (of `dtype`, operands a and b transposed as `ta` and `tb`) as
// Sum over k of (a[..., i, k, 1] * b[..., 1, k, j]).
void Expand(Graph& graph, const AnalyzedGraph& analyzed, int id, DType dtype, bool ta, bool tb) {
  const std::string name = graph.node(id)->name, device = graph.node(id)->device;
  auto add = [&](const std::string& suffix, const std::string& op, std::vector<TensorId> inputs) {
    Node* node = graph.AddNode(UniqueName(graph, name + "/" + suffix), op);
    node->device = device;
    node->inputs = std::move(inputs);
    node->attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
    return TensorId{node->id, 0};
  };
  auto constant = [&](const std::string& suffix, std::vector<int32_t> values) {
    const Tensor value = values.size() == 1 ? Tensor::Scalar(values[0]) : Tensor::Vector(values);
    return TensorId{AddConst(graph, name + "/" + suffix, value, device)->id, 0};
  };
  // An operand with its last two dims swapped (`swap`), then a unit dim inserted at `axis`.
  auto operand = [&](int i, bool swap, int32_t axis) {
    TensorId x = graph.node(id)->inputs[i];
    const int rank = StaticShape(analyzed, x).rank();
    const std::string which = i == 0 ? "a" : "b";
    if (swap) {
      std::vector<int32_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[rank - 1], perm[rank - 2]);
      x = add(which + "_transposed", "Transpose", {x, constant(which + "_perm", perm)});
      graph.node(x.node)->attrs["Tperm"].set_type(tensorflow::DT_INT32);
    }
    const TensorId e = add(which + "_expanded", "ExpandDims", {x, constant(which + "_axis", {axis})});
    graph.node(e.node)->attrs["Tdim"].set_type(tensorflow::DT_INT32);
    return e;
  };
  const TensorId products = add("products", "Mul", {operand(0, ta, -1), operand(1, tb, -3)});
  const TensorId axis = constant("k_axis", {-2});
  Node* gemm = graph.node(id);
  AttrMap attrs = InternalAttrs(*gemm);
  attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
  attrs["Tidx"].set_type(tensorflow::DT_INT32);
  attrs["keep_dims"].set_b(false);
  gemm->op = "Sum";
  gemm->inputs = {products, axis};
  gemm->attrs = std::move(attrs);
}

}  // namespace

StatusOr<bool> ExpandSmallGemms(Graph& graph, int64_t max_multiply_adds) {
  const int n = graph.num_nodes();
  bool any = false;
  for (int id = 0; id < n && !any; ++id) any = FormOf(graph.node(id)->op) != nullptr;
  if (!any) return false;
  GJ_ASSIGN_OR_RETURN(const AnalyzedGraph analyzed, AnalyzeGraph(graph.Clone()));
  bool changed = false;
  for (int id = 0; id < n; ++id) {
    const Node& gemm = *graph.node(id);
    const GemmForm* form = FormOf(gemm.op);
    if (form == nullptr) continue;
    const NodeInfo& info = analyzed.info(id);
    const DType dtype = info.dtypes[0];
    // float32 only: a 16-bit Mul would round each product, where the GEMM does not.
    if (dtype != DType::kFloat) continue;
    const Shape& a = StaticShape(analyzed, gemm.inputs[0]);
    const Shape& out = info.shapes[0];
    if (!a.IsFullyDefined() || !out.IsFullyDefined() || a.rank() < 2) continue;
    const bool ta = GetBoolAttrOr(gemm, form->transpose_a, false).value_or(false);
    const bool tb = GetBoolAttrOr(gemm, form->transpose_b, false).value_or(false);
    const int64_t k = a.dim(ta ? a.rank() - 2 : a.rank() - 1);
    if (out.num_elements() > max_multiply_adds / std::max<int64_t>(k, 1)) continue;
    Expand(graph, analyzed, id, dtype, ta, tb);
    changed = true;
  }
  return changed;
}

}  // namespace graphjit
