// The pass `lower_cnn_ops`. On a GPU, the ops of a convolutional network that are not library calls, written out as
// the ops the fusion planner compiles (after specialization, on static shapes):
//  - MaxPool and AvgPool: the input padded as the window needs (PadV2: the type's lowest
//    value for a max, 0 for a sum), one strided slice per window offset, folded with
//    Maximum (and the lowest value, where TensorFlow's max starts: a window of -inf is the
//    lowest finite value) or AddV2 (in float32 for 16-bit types), an average divided by the
//    count of the window's elements
//    inside the input (a constant per output position where the padding varies): one loop
//    kernel that reads each input element once per window that covers it, fused with its
//    producer and consumers;
//  - FusedBatchNormV3 in inference: x * (scale / sqrt(variance + epsilon)) + (offset -
//    mean * that), computed in float32 per channel and fused with the rest; its other
//    outputs are the mean and variance it was given (and an empty reserve);
//  - FusedBatchNormV3 in training: the batch's mean and (biased) variance as two reductions
//    over every dim but the channels' (column reductions in NHWC), the variance of x less
//    the mean (exact where the mean is large against the spread), then
//    (x - mean) * (scale / sqrt(variance + epsilon)) + offset; the running statistics (the
//    variance unbiased, blended with the given ones by exponential_avg_factor) and the
//    batch's as its other outputs;
//  - FusedBatchNormGradV3: d_offset = sum(dy) and d_scale = sum(dy * x^) per channel
//    (x^ = (x - mean) / sqrt(variance + epsilon)), and dx = scale / sqrt(variance + epsilon)
//    times dy, less, in training, sum(dy) / n + x^ * sum(dy * x^) / n;
//  - a convolution that TensorFlow pads more on one side than the other (SAME with an odd
//    total): cuDNN pads symmetrically, so the input gets the extra row or column first (Pad,
//    fused into its producer's kernel), or, for Conv2DBackpropInput, the gradient is
//    computed for the input that would have had it and sliced.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphjit {

// The most elements a pool's window may have to be written out (a slice each).
inline constexpr int64_t kMaxPoolWindowElements = 64;

// Rewrites the graph as above (its shapes static); `outputs` (tensor names, may be null)
// follow the outputs they name. Returns whether it changed anything. Errors are the nodes'
// own (a window that does not fit).
StatusOr<bool> LowerCnnOps(Graph& graph, std::vector<std::string>* outputs);

}  // namespace graphjit
