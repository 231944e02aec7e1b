// What every layer may ask about an op, beside its kernel: its pattern (what kind of
// computation it is), the lowest global JIT level that clusters it, how much it weighs
// in a cluster, and whether a compiler computes it approximately or at a high cost. One
// table (op_traits.cc) answers for every registered op; clustering reads its policy here
// and names no op, and `graphjit clusters --list-ops` prints it.
#pragma once

#include <string_view>

#include "runtime/session_options.h"

namespace graphjit {

enum class OpPattern {
  kOther,         // none of the below (pooling, batch norm, generators, ...)
  kSource,        // no computation: Const, Placeholder, NoOp
  kElementwise,   // one output element from the same element of each input (broadcasting)
  kBroadcast,     // an input broadcast into a larger output (BiasAdd, BroadcastTo)
  kReduction,     // a reduction over axes given as a value input (see OpTraits::reducer)
  kRowOp,         // row reductions written as one op (Softmax, LogSoftmax, cross-entropies)
  kGemm,          // a matrix product (MatMul, BatchMatMulV2, Einsum)
  kConv,          // a convolution
  kView,          // the input's data, another shape: no data moved (Reshape, Identity, ...)
  kDataMovement,  // data moved, not computed (Transpose, ConcatV2, Pack, Slice, Gather, ...)
  kShapeOnly,     // reads its input's shape, not its data (Shape, Size, Rank)
  kControl,       // control flow (graphjit's While and If)
  kCluster,       // a compiled cluster (_JitCluster)
};

enum class OpReducer { kNone, kSum, kMean, kMax, kMin, kProd, kArgMax, kArgMin };

struct OpTraits {
  OpPattern pattern = OpPattern::kOther;
  // The lowest global JIT level at which auto-clustering takes it; kOff: no compiler
  // takes it (it runs its reference kernel).
  JitLevel jit_level = JitLevel::kOff;
  OpReducer reducer = OpReducer::kNone;  // kReduction: what it computes
  // Towards a cluster's minimum size: 0 for views (free in a fused kernel), 2 for the row
  // ops (several ops in one, a kernel worth making alone), else 1.
  int weight = 1;
  bool expensive = false;    // a transcendental or a division: computed once, kept
  bool approximate = false;  // compiled as a polynomial fit, not as the reference computes it
  // Compiled for GPUs only, and why not for the CPU (nullptr: for both).
  const char* gpu_only = nullptr;
  // Compiled with an integer output anywhere, with a floating-point one only as float32 on
  // GPUs, and why not otherwise (nullptr: whatever its output's type).
  const char* float_as_float32_on_gpus_only = nullptr;

  bool compiled() const { return jit_level != JitLevel::kOff; }
  // No computation to compile: sources and clusters.
  bool not_an_op() const { return pattern == OpPattern::kSource || pattern == OpPattern::kCluster; }
};

// The traits of `op`; the defaults (kOther, never compiled) for an op the table lacks.
const OpTraits& TraitsOf(std::string_view op);

// Each op the table describes, with its traits, in name order (for --list-ops and tests).
struct OpTraitsEntry {
  const char* op;
  OpTraits traits;
};
const OpTraitsEntry* OpTraitsTable(int* size);

const char* OpPatternName(OpPattern pattern);  // "elementwise", "row-op", ...
const char* OpReducerName(OpReducer reducer);  // "", "sum", "argmax", ...

}  // namespace graphjit
