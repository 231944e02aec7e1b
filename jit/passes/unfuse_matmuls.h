// The passes `unfuse_matmuls` and `unfuse_matmul_activations`: TensorFlow's _FusedMatMul
// (its remapper's MatMul + BiasAdd [+ activation]) taken apart.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace graphjit {

// Whether UnfuseMatMuls takes apart a _FusedMatMul with these fused_ops: BiasAdd, then at
// most one of Relu, Relu6, Elu, Tanh, Sigmoid, GeluExact and GeluApproximate (the GELUs as
// the float32 ops they are made of: float32 GEMMs only).
bool UnfusesMatMul(const std::vector<std::string>& fused_ops, DType type);

// Rewrites each _FusedMatMul as the MatMul, BiasAdd and activation it fuses, the last
// keeping its name, so that the GEMM can be expanded as loops (ExpandSmallGemms) with its
// epilogue fused after it; with `activations_only`, as a _FusedMatMul with its bias followed
// by the activation, unless that is a Relu (what cuBLASLt fuses stays in the GEMM; the rest
// is fused into the next kernel). Unimplemented for what UnfusesMatMul refuses. Returns
// whether it rewrote any.
StatusOr<bool> UnfuseMatMuls(Graph& graph, bool activations_only);

}  // namespace graphjit
