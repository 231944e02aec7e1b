// The loop emitter: a fusion of elementwise and indexed ops, every element computed where it
// is stored.
//  - CPU: rows of all dims but the last, each one loop over the last dim (vectorized by
//    LLVM).
//  - GPU: a thread per element, or per 4 consecutive elements when the last dim allows
//    (their loads and stores become 128-bit ones: every buffer is 16-byte aligned), in a
//    grid-stride loop (jit/gpu_launch.h: Launch1D, LoopVectorWidth).
#pragma once

#include "jit/kernel_emitter.h"

namespace graphjit::emitter {

class LoopEmitter : public KernelEmitter {
 public:
  LoopEmitter(const AnalyzedGraph& g, const FusionPlan& p, int f, const TargetDescription& target)
      : KernelEmitter(g, p, f, target) {}

 private:
  StatusOr<int64_t> CpuBody(EmittedKernel* kernel) override;
  Status GpuBody(EmittedKernel* kernel, EmittedModule* module, std::string* functions) override;
};

}  // namespace graphjit::emitter
