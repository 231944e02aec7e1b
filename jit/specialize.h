// Specializing a cluster body for one call: the body is a GraphDef whose inputs are the
// placeholders `_arg_0`, `_arg_1`, ...; a compiled kernel is made for the actual input
// shapes and, for the inputs that decide shapes (reduction axes, Reshape's shape,
// Transpose's perm, ConcatV2's axis, ...), the actual values.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph_analysis.h"

namespace graphjit {

// Set (true) on the Max that ExpandSoftmax writes: a row's max that only shifts the row
// before exp, folded without the IEEE order of NaNs and signed zeros.
inline constexpr char kRowShiftAttr[] = "_graphjit_row_shift";

// Rewrites Softmax, LogSoftmax and SoftmaxCrossEntropyWithLogits as the primitive ops
// they are made of (Max, Sub, Exp, Sum, Reciprocal, Mul; Log), so that the fusion planner
// sees their row reductions. The last node keeps the op's name; the cross-entropy's second
// output (backprop) becomes a node of its own, in the body's inputs and in `outputs`.
void ExpandSoftmax(tensorflow::GraphDef* body, std::vector<std::string>* outputs = nullptr);

// Marks (kRowShiftAttr) the Max of a softmax written out, exp(x - max(x)) / sum(exp(x -
// max(x))) with max and sum over the same axes, when its max, difference, exp and sum feed
// nothing else and are not among `outputs`: a NaN in the row reaches every quotient through
// the sum, as through the max.
void MarkRowShifts(tensorflow::GraphDef* body, const std::vector<std::string>& outputs);

// For each of the body's `num_inputs` inputs, whether its value decides a shape, an axis
// or a permutation (then it is part of the signature).
std::vector<bool> ValueInputs(const tensorflow::GraphDef& body, int num_inputs);

// Whether UnfuseMatMuls takes apart a _FusedMatMul with these fused_ops: BiasAdd, then at
// most one of Relu, Relu6, Elu, Tanh, Sigmoid, GeluExact and GeluApproximate (the GELUs as
// the float32 ops they are made of: float32 GEMMs only).
bool UnfusesMatMul(const std::vector<std::string>& fused_ops, DType type);

// Rewrites each _FusedMatMul (TensorFlow's remapper's MatMul + BiasAdd [+ activation]) as
// the MatMul, BiasAdd and activation it fuses, the last keeping its name, so that the GEMM
// can be expanded as loops (ExpandSmallGemms) with its epilogue fused after it; with
// `activations_only`, as a _FusedMatMul with its bias followed by the activation, unless that
// is a Relu (what cuBLASLt fuses stays in the GEMM; the rest is fused into the next kernel).
// Unimplemented for what UnfusesMatMul refuses.
Status UnfuseMatMuls(tensorflow::GraphDef* body, bool activations_only = false);

// Whether UnfuseConvs takes apart a _FusedConv2D or _FusedDepthwiseConv2dNative with these
// fused_ops: BiasAdd, then optionally Add (a residual, the fourth input), then at most one of
// Relu, Relu6, Elu, Tanh and Sigmoid.
bool UnfusesConv(const std::vector<std::string>& fused_ops);

// Rewrites each fused convolution as the convolution, BiasAdd, AddV2 (the residual) and
// activation it fuses, the last keeping its name (the unfused baseline: cuDNN's plain
// convolution, then each epilogue op a kernel); with `activations_only`, as the fused
// convolution with its bias and residual followed by the activation, unless that is a Relu
// (what cuDNN's fused convolution takes stays in it; the rest is fused into the next kernel).
// Unimplemented for what UnfusesConv refuses.
Status UnfuseConvs(tensorflow::GraphDef* body, bool activations_only = false);

// Rewrites each MatMul and BatchMatMulV2 (float32, static shapes) of at most
// `max_multiply_adds` as the reduction it is: Sum over k of a[..., i, k, 1] * b[..., 1, k, j],
// with a transposed operand read through a Transpose, so that the fusion planner makes it a
// kernel of loops (the output row accumulated over k, its columns vectorized) instead of a
// library call whose set-up costs more than the arithmetic. Returns whether it rewrote any.
StatusOr<bool> ExpandSmallGemms(AnalyzedGraph* body, int64_t max_multiply_adds);

struct SpecializedBody {
  AnalyzedGraph graph;
  std::vector<TensorId> args;        // per input: its placeholder, or node -1 if replaced by its value
  std::vector<TensorId> outputs;     // the body's outputs
};

// The body with the inputs' shapes set, the value inputs replaced by constants and what
// decides shapes evaluated into constants.
StatusOr<SpecializedBody> Specialize(const tensorflow::GraphDef& body, const std::vector<std::string>& outputs,
                                     const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs);

}  // namespace graphjit
