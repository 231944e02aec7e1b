// The fusion emitters: each fusion of a plan becomes one MLIR function (scf loops over
// memrefs, arith and math on elements) whose element computations come from the shared
// elemental emitter. No heap allocation and no copy inside a kernel: every value that is
// not stored is computed where it is read, in registers.
//
// Each fusion kind has a schedule per target:
//  - CPU: `func.func @fusion_N(%begin: index, %end: index, <buffers>...)` computes rows
//    [begin, end) of its fusion, so the caller can split the rows across threads;
//  - GPU: `gpu.func @fusion_N(<buffers>...) kernel` in one `gpu.module @kernels`, launched
//    on a 1-D grid: loops a thread per element (or per 4), rows a warp or a block per row.
#pragma once

#include <string>
#include <vector>

#include "jit/fusion_plan.h"

namespace graphjit {

enum class Schedule { kCpu, kGpu };

struct EmittedKernel {
  std::string function;      // empty for a library call
  int library_node = -1;     // a library call: the node to run
  int64_t rows = 1;          // CPU: the range [begin, end) splits
  int64_t cost_per_row = 1;  // CPU: elements times ops: what a row costs, for the split
  int64_t grid = 0, block = 0;  // GPU: blocks (0: nothing to do) and threads per block
  std::vector<int> buffers;  // the plan's buffers, in argument order (CPU: after begin, end);
                             // a library call: its inputs, then its output
};

struct EmittedModule {
  std::string mlir;
  std::vector<EmittedKernel> kernels;  // one per fusion, in the plan's order
  int num_ops = 0;                     // elementwise op instances emitted
};

StatusOr<EmittedModule> EmitFusions(const AnalyzedGraph& body, const FusionPlan& plan, Schedule schedule);

}  // namespace graphjit
