// The passes `unfuse_convs` and `unfuse_conv_activations`: TensorFlow's fused convolutions
// (_FusedConv2D, _FusedDepthwiseConv2dNative) taken apart.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphjit {

// Whether UnfuseConvs takes apart a _FusedConv2D or _FusedDepthwiseConv2dNative with these
// fused_ops: BiasAdd, then optionally Add (a residual, the fourth input), then at most one of
// Relu, Relu6, Elu, Tanh and Sigmoid.
bool UnfusesConv(const std::vector<std::string>& fused_ops);

// Rewrites each fused convolution as the convolution, BiasAdd, AddV2 (the residual) and
// activation it fuses, the last keeping its name (the unfused baseline: cuDNN's plain
// convolution, then each epilogue op a kernel); with `activations_only`, as the fused
// convolution with its bias and residual followed by the activation, unless that is a Relu
// (what cuDNN's fused convolution takes stays in it; the rest is fused into the next kernel).
// Unimplemented for what UnfusesConv refuses. Returns whether it rewrote any.
StatusOr<bool> UnfuseConvs(Graph& graph, bool activations_only);

}  // namespace graphjit
