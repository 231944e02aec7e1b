// "Can this be compiled?": the question clustering asks and the JIT answers (jit/ passes
// its oracle to RegisterClusteringPass). Without the JIT, DeclaredCompilability takes
// every op of the op table: such clusters run op by op.
#pragma once

#include <string>
#include <vector>

#include "ir/device.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace graphjit {

class CompilabilityOracle {
 public:
  virtual ~CompilabilityOracle() = default;
  // Empty if the node (its op and attrs) can be compiled for these types on this device,
  // else why not.
  virtual std::string WhyNotCompilable(const Node& node, const std::vector<DType>& input_types,
                                       const std::vector<DType>& output_types, const DeviceName& device) const = 0;
};

class DeclaredCompilability : public CompilabilityOracle {
 public:
  std::string WhyNotCompilable(const Node& node, const std::vector<DType>& input_types,
                               const std::vector<DType>& output_types, const DeviceName& device) const override;
};

}  // namespace graphjit
