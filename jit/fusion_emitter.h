// The fusion emitters: each fusion of a plan becomes one MLIR function (scf loops over
// memrefs, arith and math on elements) whose element computations come from the shared
// elemental emitter. No heap allocation and no copy inside a kernel: every value that is
// not stored is computed where it is read, in registers.
//
// Each fusion kind has a schedule per target:
//  - CPU: `func.func @fusion_N(%begin: index, %end: index, <buffers>...)` computes rows
//    [begin, end) of its fusion, so the caller can split the rows across threads;
//  - GPU: `gpu.func @fusion_N(<buffers>...) kernel` in one `gpu.module @kernels`, launched
//    on a 1-D grid: loops a thread per element (or per 4), rows a warp or a block per row;
//    a reduction of few outputs over many elements is two kernels (fusion_N, then
//    fusion_N_finish) passing partial results through per-call scratch memory.
#pragma once

#include <string>
#include <vector>

#include "jit/fusion_plan.h"
#include "jit/target.h"

namespace graphjit {

struct EmittedKernel {
  std::string function;         // a library call: its fusion's name (no function is emitted)
  int library_node = -1;        // a library call: the node to run
  int64_t rows = 1;             // CPU: the range [begin, end) splits
  int64_t cost_per_row = 1;     // CPU: elements times ops: what a row costs, for the split
  int64_t grid = 0, block = 0;  // GPU: blocks (0: nothing to do) and threads per block
  int64_t shared_bytes = 0;     // GPU: dynamic shared memory per block
  int64_t cluster = 1;          // GPU: blocks per thread-block cluster (sm_90), along the grid
  std::vector<int> buffers;     // the plan's buffers, in argument order (CPU: after begin, end);
                                // a library call: its inputs, then its output
  std::vector<int> scratch;     // GPU: per-call scratch areas (EmittedModule::scratch), after the buffers
};

struct EmittedModule {
  std::string mlir;
  std::vector<EmittedKernel> kernels;  // per fusion, in the plan's order: its kernels in launch order
  std::vector<int64_t> scratch;        // GPU: the bytes of each scratch area, allocated per call
  int num_ops = 0;                     // elementwise op instances emitted
};

// The plan's kernels for `target` (its schedule, and on a GPU its grid limits).
StatusOr<EmittedModule> EmitFusions(const AnalyzedGraph& body, const FusionPlan& plan, const TargetDescription& target);

}  // namespace graphjit
