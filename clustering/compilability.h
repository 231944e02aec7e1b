// "Can this be compiled?": the question clustering asks and the JIT answers. Until the
// compiler exists, DeclaredCompilability answers from the op table: the ops and dtypes
// the CPU JIT is specified to compile (f32, with f16/bf16 computed in f32; index inputs
// of int32/int64; bool for predicates), on CPU and XLA devices.
#pragma once

#include <string>
#include <vector>

#include "ir/device.h"
#include "ir/dtype.h"

namespace graphjit {

class CompilabilityOracle {
 public:
  virtual ~CompilabilityOracle() = default;
  // Empty if the op can be compiled for these types on this device, else why not.
  virtual std::string WhyNotCompilable(const std::string& op, const std::vector<DType>& input_types,
                                       const std::vector<DType>& output_types, const DeviceName& device) const = 0;
};

class DeclaredCompilability : public CompilabilityOracle {
 public:
  std::string WhyNotCompilable(const std::string& op, const std::vector<DType>& input_types,
                               const std::vector<DType>& output_types, const DeviceName& device) const override;
};

}  // namespace graphjit
