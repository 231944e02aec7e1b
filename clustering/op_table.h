// Every op the clustering pass knows: its family and the lowest global JIT level at
// which auto-clustering takes it. `graphjit clusters --list-ops` prints this table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/session_options.h"

namespace graphjit {

enum class OpFamily {
  kElementwise,  // unary/binary math, comparisons, Select, Cast
  kBroadcast,    // BiasAdd, BroadcastTo
  kReduction,    // Sum, Mean, Max, Min, Prod, ArgMax, ArgMin
  kSoftmax,      // Softmax, LogSoftmax
  kShape,        // Reshape, ExpandDims, Squeeze, Identity: no data movement
  kDataMovement, // Transpose, ConcatV2, Pack, Slice, StridedSlice, ...
  kGemm,         // MatMul, BatchMatMulV2, _FusedMatMul, Einsum (heroes at ON_2)
};

struct OpTableEntry {
  const char* op;
  OpFamily family;
  JitLevel min_level;  // auto-clustered from this level (kOn1 or kOn2)
  bool counts = true;  // counts towards min_cluster_size (shape-only ops do not)
};

const char* OpFamilyName(OpFamily family);
const std::vector<OpTableEntry>& OpTable();
const OpTableEntry* FindOpEntry(std::string_view op);

}  // namespace graphjit
