#include "clustering/compilability.h"

#include "clustering/op_table.h"

namespace graphjit {

std::string DeclaredCompilability::WhyNotCompilable(const std::string& op, const std::vector<DType>& input_types,
                                                    const std::vector<DType>& output_types,
                                                    const DeviceName& device) const {
  if (FindOpEntry(op) == nullptr) return "op " + op + " is not compilable";
  if (device.type != "CPU" && device.type != "XLA_CPU" && device.type != "XLA_GPU")
    return "no compiler for device " + device.ToString();
  auto ok = [](DType t) {
    return t == DType::kFloat || t == DType::kHalf || t == DType::kBFloat16 || t == DType::kInt32 ||
           t == DType::kInt64 || t == DType::kBool;
  };
  for (const auto* types : {&input_types, &output_types})
    for (DType t : *types)
      if (!ok(t)) return "op " + op + " is not compilable for " + DTypeName(t);
  return "";
}

}  // namespace graphjit
