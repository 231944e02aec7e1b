// graphjit's graph optimizations, in the order the default pipeline runs them. Each
// rewrites the graph in place and returns whether it changed it.
#pragma once

#include "passes/pass_manager.h"
#include "runtime/session_options.h"

namespace graphjit {

// Keeps only what the fetches and targets need; bypasses training-only forwarders
// (Identity, StopGradient, CheckNumerics, ...) and NoOps that relay one dependency.
StatusOr<bool> Prune(Graph& graph, const PassContext& context);

// Evaluates nodes whose inputs are all constants (and Shape/Size/Rank of statically
// known shapes) into Const nodes; folds the constant operands of AddN and the adjacent
// constant operands of ConcatV2.
StatusOr<bool> FoldConstants(Graph& graph, const PassContext& context);

// Algebraic identities that keep every shape: x*1, x+0, x-0, x/1 -> x; x*0 -> 0 for a
// finite constant x; 0-y -> Neg(y); 1/y -> Reciprocal(y); constants pushed down chains
// of Add/Mul; transposes folded into MatMul; double Transpose/Reshape collapsed; no-op
// Reshape/Transpose removed.
StatusOr<bool> SimplifyArithmetic(Graph& graph, const PassContext& context);

// Common subexpression elimination: identical pure nodes with identical inputs become one.
StatusOr<bool> EliminateCommonSubexpressions(Graph& graph, const PassContext& context);

// SpaceToBatchND + Conv2D/DepthwiseConv2dNative (VALID) + BatchToSpaceND, as TensorFlow
// writes a dilated convolution (tf.nn.depthwise_conv2d with a rate, with_space_to_batch),
// as one convolution dilated by the block shape, padded explicitly (the paddings less the
// crops), as TensorFlow Lite's converter does.
StatusOr<bool> FuseDilatedConvolutions(Graph& graph, const PassContext& context);

// MatMul/Conv2D + BiasAdd (+ Relu/Relu6/Elu) -> _FusedMatMul/_FusedConv2D; an inference
// FusedBatchNorm after Conv2D/MatMul folded into the weights and a bias.
StatusOr<bool> Remap(Graph& graph, const PassContext& context);

// The default pipeline under the session's rewrite options (TensorFlow's toggles:
// disable_meta_optimizer, disable_model_pruning, constant_folding,
// arithmetic_optimization, common_subgraph_elimination, remapping) and its
// --disable_pass / --dump_to flags.
PassManager DefaultPipeline(const SessionOptions& options);

// Registers the default pipeline with the runtime's pass registry (before clustering).
void RegisterGraphOptimizer();

}  // namespace graphjit
