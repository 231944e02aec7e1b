// The reduction emitter: a column reduction, or one over every axis (or any axes), and
// what it reads.
//  - CPU: the output initialized, then accumulated in place while the input is read in
//    memory order (a 16-bit output: per output element, accumulated in f32).
//  - GPU: a thread per output element folding in order when there are many outputs, else a
//    block per output element (a two-level tree); when that leaves the GPU idle (few
//    outputs, each of many elements), two kernels: the first splits each output's elements
//    among many threads (part p of P takes elements p, p + P, ...), whose partial results a
//    block combines (a column reduction's block: a warp's width of columns over 8 parts) and
//    stores to scratch memory, the second combines each output's partials in a fixed order
//    (ReduceInTwoPhases). Every float reduction combines in a fixed order, so results are
//    the same from run to run. The launch is jit/gpu_launch.h's ChooseReduceLaunch.
#pragma once

#include "jit/kernel_emitter.h"

namespace graphjit::emitter {

class ReduceEmitter : public KernelEmitter {
 public:
  ReduceEmitter(const AnalyzedGraph& g, const FusionPlan& p, int f, const TargetDescription& target)
      : KernelEmitter(g, p, f, target) {}

 private:
  StatusOr<int64_t> CpuBody(EmittedKernel* kernel) override;
  Status GpuBody(EmittedKernel* kernel, EmittedModule* module, std::string* functions) override;

  // A reduction over any axes: the output is initialized, then accumulated in place while
  // the input is read in memory order.
  Status ReduceAll(int r);

  // A reduction into a 16-bit float type: per output element, a loop over what it reduces,
  // accumulated in f32 and rounded once, as the reference kernel does (accumulating in the
  // 16-bit output itself would round every partial result).
  Status ReduceAllPerOutput(const Node& n, int out, const ReductionAxes& axes);
  // Reduction `n`'s output element `at`: a loop over what it reduces (`axes` of its input),
  // in order.
  StatusOr<Value> ReduceOne(const Node& n, const ReductionAxes& axes, const Index& at);
  // The input element of output element `at` and element `reduced` of the reduced axes.
  Index InputIndex(const ReductionAxes& axes, const Index& at, const Index& reduced);
};

}  // namespace graphjit::emitter
