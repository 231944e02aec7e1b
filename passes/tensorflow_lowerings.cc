#include "passes/tensorflow_lowerings.h"

#include "passes/lower_bias_add_grads.h"
#include "passes/lower_unary_ops_compositions.h"

namespace graphjit {

void AddTensorFlowLoweringPasses(PassManager& pm) {
  pm.Add("lower_bias_add_grads", LowerBiasAddGradsPass(nullptr));
  pm.Add("lower_unary_ops_compositions", LowerUnaryOpsCompositionsPass(nullptr));
}

bool IsTensorFlowLoweringPass(const std::string& pass) {
  return pass == "lower_bias_add_grads" || pass == "lower_unary_ops_compositions";
}

}  // namespace graphjit
