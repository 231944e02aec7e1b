#include "jit/passes/jit_passes.h"

#include <set>

#include "jit/passes/expand_small_gemms.h"
#include "jit/passes/expand_softmax.h"
#include "jit/passes/fold_shape_values.h"
#include "jit/passes/lower_cnn_ops.h"
#include "jit/passes/lower_logical_reductions.h"
#include "jit/passes/mark_row_shifts.h"
#include "jit/passes/specialize_inputs.h"
#include "jit/passes/unfuse_convs.h"
#include "jit/passes/unfuse_matmuls.h"

namespace graphjit {

PassFunction ExpandSoftmaxPass(std::vector<std::string>* outputs) {
  return [outputs](Graph& graph, const PassContext&) -> StatusOr<bool> { return ExpandSoftmax(graph, outputs); };
}

PassFunction MarkRowShiftsPass(const std::vector<std::string>* outputs) {
  return [outputs](Graph& graph, const PassContext& context) -> StatusOr<bool> {
    std::set<std::string> fetched;
    if (outputs != nullptr) {
      for (const std::string& out : *outputs) {
        ParsedInput parsed;
        fetched.insert(ParseInputString(out, &parsed) ? std::string(parsed.node) : out);
      }
    } else {
      for (int id = 0; id < graph.num_nodes(); ++id)
        if (context.IsPreserved(*graph.node(id))) fetched.insert(graph.node(id)->name);
    }
    return MarkRowShifts(graph, fetched);
  };
}

PassFunction UnfuseMatMulsPass(bool activations_only) {
  return [activations_only](Graph& graph, const PassContext&) { return UnfuseMatMuls(graph, activations_only); };
}

PassFunction UnfuseConvsPass(bool activations_only) {
  return [activations_only](Graph& graph, const PassContext&) { return UnfuseConvs(graph, activations_only); };
}

PassFunction SpecializeInputsPass(const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs) {
  return [&inputs, &value_inputs](Graph& graph, const PassContext&) { return SpecializeInputs(graph, inputs, value_inputs); };
}

PassFunction FoldShapeValuesPass(const std::vector<Tensor>* inputs, const std::vector<bool>* value_inputs) {
  return [inputs, value_inputs](Graph& graph, const PassContext&) -> StatusOr<bool> {
    if (inputs == nullptr) {
      // Alone, without a call's inputs: what the static shapes do not decide stays as it is.
      StatusOr<bool> folded = FoldShapeValues(graph, ZeroFeeds(graph));
      if (!folded.ok()) return false;
      return folded;
    }
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs->size(); ++i)
      if (!(*value_inputs)[i]) feeds.emplace(BodyInputName(i), (*inputs)[i]);
    return FoldShapeValues(graph, feeds);
  };
}

PassFunction LowerCnnOpsPass(std::vector<std::string>* outputs) {
  return [outputs](Graph& graph, const PassContext&) { return LowerCnnOps(graph, outputs); };
}

PassFunction ExpandSmallGemmsPass(int64_t max_multiply_adds) {
  return [max_multiply_adds](Graph& graph, const PassContext&) { return ExpandSmallGemms(graph, max_multiply_adds); };
}

StatusOr<bool> LowerLogicalReductionsPass(Graph& graph, const PassContext&) { return LowerLogicalReductions(graph); }

void AddJitPasses(PassManager& pm) {
  pm.Add("expand_softmax", ExpandSoftmaxPass(nullptr));
  pm.Add("lower_logical_reductions", LowerLogicalReductionsPass);
  pm.Add("mark_row_shifts", MarkRowShiftsPass(nullptr));
  pm.Add("unfuse_matmuls", UnfuseMatMulsPass(false));
  pm.Add("unfuse_matmul_activations", UnfuseMatMulsPass(true));
  pm.Add("unfuse_convs", UnfuseConvsPass(false));
  pm.Add("unfuse_conv_activations", UnfuseConvsPass(true));
  pm.Add("fold_shape_values", FoldShapeValuesPass(nullptr, nullptr));
  pm.Add("lower_cnn_ops", LowerCnnOpsPass(nullptr));
  pm.Add("expand_small_gemms", ExpandSmallGemmsPass(kSmallGemmMultiplyAdds));
}

}  // namespace graphjit
