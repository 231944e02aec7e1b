// The fusion emitters: each fusion of a plan becomes one MLIR function (scf loops over
// memrefs, arith and math on elements) whose element computations come from the shared
// elemental emitter. No heap allocation and no copy inside a kernel: every value that is
// not stored is computed where it is read, in registers.
//
// A kernel `@fusion_N(%begin: index, %end: index, <buffers>...)` computes rows
// [begin, end) of its fusion, so the caller can split the rows across threads.
#pragma once

#include <string>
#include <vector>

#include "jit/fusion_plan.h"

namespace graphjit {

struct EmittedKernel {
  std::string function;      // empty for a library call
  int library_node = -1;     // a library call: the node to run
  int64_t rows = 1;          // the range [begin, end) splits
  int64_t cost_per_row = 1;  // elements times ops: what a row costs, for the split
  std::vector<int> buffers;  // the plan's buffers, in argument order after (begin, end);
                             // a library call: its inputs, then its output
};

struct EmittedModule {
  std::string mlir;
  std::vector<EmittedKernel> kernels;  // one per fusion, in the plan's order
  int num_ops = 0;                     // elementwise op instances emitted
};

StatusOr<EmittedModule> EmitFusions(const AnalyzedGraph& body, const FusionPlan& plan);

}  // namespace graphjit
