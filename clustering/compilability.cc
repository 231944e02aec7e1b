#include "clustering/compilability.h"

#include "runtime/op_traits.h"

namespace graphjit {

std::string DeclaredCompilability::WhyNotCompilable(const Node& node, const std::vector<DType>&,
                                                    const std::vector<DType>&, const DeviceName&) const {
  return TraitsOf(node.op).compiled() ? "" : "op " + node.op + " is not compilable";
}

}  // namespace graphjit
