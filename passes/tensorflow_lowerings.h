// TensorFlow's own fused ops (what its Grappler makes, which graphjit does not run) written
// as the ops they are made of: the passes the TensorFlow plugin runs before it clusters.
#pragma once

#include <string>

#include "passes/pass_manager.h"

namespace graphjit {

// lower_bias_add_grads (ranks from graphjit's shape inference) and
// lower_unary_ops_compositions.
void AddTensorFlowLoweringPasses(PassManager& pm);

// Whether `pass` is one of them: they read graphs with TensorFlow's own ops, which graphjit's
// shape inference does not know, so `graphjit optimize` runs them alone on any graph.
bool IsTensorFlowLoweringPass(const std::string& pass);

}  // namespace graphjit
