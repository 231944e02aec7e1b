#include "jit/fusion_emitter.h"

#include "jit/kernel_emitter.h"

namespace graphjit {

StatusOr<EmittedModule> EmitFusions(const AnalyzedGraph& body, const FusionPlan& plan, Schedule schedule) {
  EmittedModule module;
  std::string functions;
  for (size_t f = 0; f < plan.fusions.size(); ++f) {
    if (plan.fusions[f].kind == FusionPlan::Kind::kLibrary) {
      EmittedKernel kernel;
      const int id = plan.fusions[f].library_node;
      kernel.function = "fusion_" + std::to_string(f);
      kernel.library_node = id;
      for (const TensorId& in : body.graph.node(id)->inputs) kernel.buffers.push_back(plan.buffer_of.at(in));
      kernel.buffers.push_back(plan.buffer_of.at({id, 0}));
      module.kernels.push_back(std::move(kernel));
      continue;
    }
    GJ_ASSIGN_OR_RETURN(std::string function, emitter::KernelEmitter(body, plan, static_cast<int>(f)).Emit(schedule, &module));
    functions += function;
  }
  // GPU kernels live in one gpu.module, which the NVPTX backend turns into one PTX module.
  if (schedule == Schedule::kGpu && !functions.empty())
    functions = "module attributes {gpu.container_module} {\ngpu.module @kernels {\n" + functions + "}\n}\n";
  module.mlir = std::move(functions);
  return module;
}

}  // namespace graphjit
