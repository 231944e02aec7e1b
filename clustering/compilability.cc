#include "clustering/compilability.h"

#include "clustering/op_table.h"

namespace graphjit {

std::string DeclaredCompilability::WhyNotCompilable(const Node& node, const std::vector<DType>&,
                                                    const std::vector<DType>&, const DeviceName&) const {
  return FindOpEntry(node.op) ? "" : "op " + node.op + " is not compilable";
}

}  // namespace graphjit
