// The loop fusion emitter: a cluster body made of elementwise ops (with broadcasting)
// becomes ONE kernel that computes every output element in one pass, reading each
// input once: a linalg.generic on memrefs whose region is built by the elemental emitter.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph_analysis.h"

namespace graphjit {

struct LoopFusion {
  std::string mlir;  // a module with `func.func @kernel(inputs..., constants..., outputs...)`
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<Tensor> constants;  // non-scalar body constants, passed after the inputs
  int num_ops = 0;                // body ops fused
};

// `body` is a cluster body analyzed with its `_arg_i` placeholders set to the actual
// input shapes (so every shape is static); `args` are those placeholders, `outputs` the
// body's outputs. Unimplemented, with the reason, when the body is not a loop fusion this
// emitter takes (an op it does not know, a non-float type, outputs of different shapes).
StatusOr<LoopFusion> EmitLoopFusion(const AnalyzedGraph& body, const std::vector<TensorId>& args,
                                    const std::vector<TensorId>& outputs);

}  // namespace graphjit
