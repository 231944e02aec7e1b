#include "clustering/compilability.h"

#include "runtime/op_traits.h"

namespace graphjit {

std::string DeclaredCompilability::WhyNotCompilable(const Node& node, const std::vector<DType>&, const std::vector<DType>&,
                                                    const DeviceName& device) const {
  const OpTraits& traits = TraitsOf(node.op);
  if (traits.gpu_only && device.IsCpu()) return "op " + node.op + " is compiled for GPUs only";
  return traits.compiled() ? "" : "op " + node.op + " is not compilable";
}

}  // namespace graphjit
