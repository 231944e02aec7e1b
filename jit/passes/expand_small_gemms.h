// The pass `expand_small_gemms`: small GEMMs written as the reductions they are.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace graphjit {

// On the CPU, GEMMs of up to this many multiply-adds are compiled as loops with the rest
// of their cluster; larger ones are library calls (oneDNN, Eigen).
inline constexpr int64_t kSmallGemmMultiplyAdds = 32 * 1024;

// Rewrites each MatMul and BatchMatMulV2 (float32, static shapes) of at most
// `max_multiply_adds` as the reduction it is: Sum over k of a[..., i, k, 1] * b[..., 1, k, j],
// with a transposed operand read through a Transpose, so that the fusion planner makes it a
// kernel of loops (the output row accumulated over k, its columns vectorized) instead of a
// library call whose set-up costs more than the arithmetic. Returns whether it rewrote any.
StatusOr<bool> ExpandSmallGemms(Graph& graph, int64_t max_multiply_adds);

}  // namespace graphjit
