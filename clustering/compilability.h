// "Can this be compiled?": the question clustering asks and the JIT answers (jit/ passes
// its oracle to RegisterClusteringPass). Without the JIT, DeclaredCompilability takes
// every op the op traits say is compiled (runtime/op_traits.h): such clusters run op by op.
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
  // Whether the compiler computes shape values itself, whatever their ops: values computed
  // from shapes and constants that only decide shapes, axes or permutations (Keras's
  // Tensordot: Shape -> GatherV2 -> Prod -> Pack -> Reshape's shape). The JIT does, when it
  // specializes a cluster for its inputs' shapes.
  virtual bool ComputesShapeValues() const { return false; }
};

class DeclaredCompilability : public CompilabilityOracle {
 public:
  std::string WhyNotCompilable(const Node& node, const std::vector<DType>& input_types, const std::vector<DType>& output_types,
                               const DeviceName& device) const override;
};

}  // namespace graphjit
