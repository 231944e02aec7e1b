#include "jit/fusion_emitter.h"

#include <map>

#include "jit/kernel_emitter.h"

namespace graphjit {

StatusOr<EmittedModule> EmitFusions(const AnalyzedGraph& body, const FusionPlan& plan, const TargetDescription& target) {
  const Schedule schedule = target.schedule;
  EmittedModule module;
  std::string functions;
  std::map<std::string, std::string> first_with_code;  // CPU: a kernel's canonical form -> its function
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
    std::string canonical;
    GJ_ASSIGN_OR_RETURN(std::unique_ptr<emitter::KernelEmitter> emitter,
                        emitter::KernelEmitter::For(body, plan, static_cast<int>(f), target));
    GJ_ASSIGN_OR_RETURN(std::string function, emitter->Emit(&module, &canonical));
    if (schedule == Schedule::kCpu) {
      // A kernel with the same code as an earlier one (over other buffers: a transformer's
      // Q, K and V projections, its two layer norms) calls the earlier one's function,
      // which is compiled once.
      EmittedKernel& kernel = module.kernels.back();
      auto [first, is_new] = first_with_code.emplace(canonical, kernel.function);
      if (!is_new) {
        functions += "// " + kernel.function + ": the code of " + first->second + "\n";
        kernel.function = first->second;
        continue;
      }
    }
    functions += function;
  }
  // GPU kernels live in one gpu.module, which the NVPTX backend turns into one PTX module.
  if (schedule == Schedule::kGpu && !functions.empty()) functions = emitter::Builder::GpuModule(functions);
  module.mlir = std::move(functions);
  return module;
}

}  // namespace graphjit
