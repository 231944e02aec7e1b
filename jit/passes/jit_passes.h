// The JIT's graph passes as PassManager passes: each a thin wrapper of its transform (see
// its header), under the name `graphjit optimize --pass=NAME` knows it by.
#pragma once

#include <string>
#include <vector>

#include "passes/pass_manager.h"
#include "runtime/tensor.h"

namespace graphjit {

// expand_softmax; the tensors named in `outputs` (may be null) follow the rewrite.
PassFunction ExpandSoftmaxPass(std::vector<std::string>* outputs);
// lower_logical_reductions.
StatusOr<bool> LowerLogicalReductionsPass(Graph& graph, const PassContext& context);
// mark_row_shifts; `outputs` (may be null: the context's preserved nodes) are not marked.
PassFunction MarkRowShiftsPass(const std::vector<std::string>* outputs);
// unfuse_matmuls, or with `activations_only` unfuse_matmul_activations.
PassFunction UnfuseMatMulsPass(bool activations_only);
// unfuse_convs, or with `activations_only` unfuse_conv_activations.
PassFunction UnfuseConvsPass(bool activations_only);
// specialize_inputs: one call's inputs (not run alone: it needs them).
PassFunction SpecializeInputsPass(const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs);
// fold_shape_values, fed the non-value inputs of one call (null: zeros of the placeholders'
// static shapes).
PassFunction FoldShapeValuesPass(const std::vector<Tensor>* inputs, const std::vector<bool>* value_inputs);
// lower_cnn_ops; the tensors named in `outputs` (may be null) follow the rewrite.
PassFunction LowerCnnOpsPass(std::vector<std::string>* outputs);
// expand_small_gemms, up to `max_multiply_adds`.
PassFunction ExpandSmallGemmsPass(int64_t max_multiply_adds);

// Adds each JIT pass that runs alone on a graph (all but specialize_inputs), in the order
// the JIT runs them: expand_softmax, lower_logical_reductions, mark_row_shifts, unfuse_matmuls,
// unfuse_matmul_activations, unfuse_convs, unfuse_conv_activations, fold_shape_values,
// lower_cnn_ops, expand_small_gemms (up to kSmallGemmMultiplyAdds).
void AddJitPasses(PassManager& pm);

}  // namespace graphjit
