#include "jit/passes/unfuse_matmuls.h"

#include "ir/attr.h"
#include "jit/passes/fused_activation.h"

namespace graphjit {

namespace {

// The MatMul and the BiasAdd the _FusedMatMul `id` fuses; the BiasAdd is the fused node
// itself when no activation follows (`last`).
TensorId AddGemmAndBias(Graph& graph, int id, bool last) {
  const Node& fused = *graph.node(id);
  const tensorflow::AttrValue type = fused.attrs.at("T");
  Node* gemm = AddPart(graph, fused, fused.name + "/matmul", "MatMul", {fused.inputs[0], fused.inputs[1]}, type);
  for (const char* t : {"transpose_a", "transpose_b"})
    if (const tensorflow::AttrValue* value = fused.FindAttr(t)) gemm->attrs[t] = *value;
  gemm->control_inputs = fused.control_inputs;
  const TensorId bias = fused.inputs[2];
  if (last) {
    RewriteAs(graph.node(id), "BiasAdd", {{gemm->id, 0}, bias}, type);
    return {id, 0};
  }
  return {AddPart(graph, fused, fused.name + "/bias", "BiasAdd", {{gemm->id, 0}, bias}, type)->id, 0};
}

}  // namespace

bool UnfusesMatMul(const std::vector<std::string>& fused_ops, DType type) {
  if (fused_ops.empty() || fused_ops[0] != "BiasAdd" || fused_ops.size() > 2) return false;
  if (fused_ops.size() == 1) return true;
  const FusedActivation* activation = FindFusedActivation(fused_ops[1]);
  return activation != nullptr && (!activation->float_only || type == DType::kFloat);
}

StatusOr<bool> UnfuseMatMuls(Graph& graph, bool activations_only) {
  bool changed = false;
  const int n = graph.num_nodes();
  for (int id = 0; id < n; ++id) {
    const Node& fused = *graph.node(id);
    if (fused.op != "_FusedMatMul") continue;
    const std::vector<std::string> ops = FusedOps(fused);
    const DType type = GetTypeAttr(fused, "T").value_or(DType::kInvalid);
    const tensorflow::AttrValue* num_args = fused.FindAttr("num_args");
    if (!UnfusesMatMul(ops, type) || fused.inputs.size() < 3 || (num_args && num_args->i() != 1))
      return Unimplemented(FusedOpLabel(fused) +
                           ": only BiasAdd with Relu, Relu6, Elu, Tanh, Sigmoid or (float32) GeluExact or "
                           "GeluApproximate is taken apart");
    // cuBLASLt's epilogues (bias, bias and ReLU) stay in the GEMM.
    if (activations_only && (ops.size() == 1 || ops[1] == "Relu")) continue;
    changed = true;
    // The last op keeps the fused node's name (and its place): its readers read it.
    if (ops.size() == 1) {
      AddGemmAndBias(graph, id, /*last=*/true);
      continue;
    }
    const TensorId biased =
        activations_only ? AddWithoutActivation(graph, id, "bias") : AddGemmAndBias(graph, id, /*last=*/false);
    FindFusedActivation(ops[1])->write(graph, id, biased, ops[1]);
  }
  return changed;
}

}  // namespace graphjit
