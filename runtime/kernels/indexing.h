// What the reference kernels and the JIT both need to know of an indexing op.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/op_registry.h"

namespace graphjit {

// One dimension of a StridedSlice's result before shrinking: it walks input dimension
// `in_dim` (-1 for a new axis) from `begin` by `stride`, `size` steps.
struct SliceDim {
  int64_t begin = 0, stride = 1, size = 0;
  int in_dim = -1;
  bool keep = true;  // false for a shrunk dimension
};

// Resolves TensorFlow's sparse slice spec (begin, end, strides and the node's masks)
// against the input shape, as StridedSlice does.
StatusOr<std::vector<SliceDim>> ResolveStridedSlice(const InferenceContext& c, const Shape& in, const std::vector<int64_t>& begin,
                                                    const std::vector<int64_t>& end, const std::vector<int64_t>& strides);

}  // namespace graphjit
