#include "jit/fusion_emitter.h"

#include <map>
#include <regex>

#include "jit/kernel_emitter.h"

namespace graphjit {

namespace {

// A CPU kernel's code without its names: the function is @kernel, the buffers are numbered
// by their place among the parameters.
std::string Anonymous(const std::string& function, const EmittedKernel& kernel) {
  std::map<std::string, size_t> place;
  for (size_t i = 0; i < kernel.buffers.size(); ++i) place["%b" + std::to_string(kernel.buffers[i])] = i;
  static const std::regex kNames("@\\w+|%b[0-9]+\\b");
  std::string text;
  auto last = function.cbegin();
  for (std::sregex_iterator it(function.begin(), function.end(), kNames), end; it != end; ++it) {
    text.append(last, (*it)[0].first);
    const std::string name = it->str();
    if (name == "@" + kernel.function) text += "@kernel";
    else if (auto p = place.find(name); p != place.end()) text += "%p" + std::to_string(p->second);
    else text += name;
    last = (*it)[0].second;
  }
  return text.append(last, function.cend());
}

}  // namespace

StatusOr<EmittedModule> EmitFusions(const AnalyzedGraph& body, const FusionPlan& plan, const TargetDescription& target) {
  const Schedule schedule = target.schedule;
  EmittedModule module;
  std::string functions;
  std::map<std::string, std::string> first_with_code;  // CPU: a kernel's Anonymous code -> its function
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
    GJ_ASSIGN_OR_RETURN(std::string function, emitter::KernelEmitter(body, plan, static_cast<int>(f), target).Emit(&module));
    if (schedule == Schedule::kCpu) {
      // A kernel with the same code as an earlier one (over other buffers: a transformer's
      // Q, K and V projections, its two layer norms) calls the earlier one's function,
      // which is compiled once.
      EmittedKernel& kernel = module.kernels.back();
      auto [first, is_new] = first_with_code.emplace(Anonymous(function, kernel), kernel.function);
      if (!is_new) {
        functions += "// " + kernel.function + ": the code of " + first->second + "\n";
        kernel.function = first->second;
        continue;
      }
    }
    functions += function;
  }
  // GPU kernels live in one gpu.module, which the NVPTX backend turns into one PTX module.
  if (schedule == Schedule::kGpu && !functions.empty())
    functions = "module attributes {gpu.container_module} {\ngpu.module @kernels {\n" + functions + "}\n}\n";
  module.mlir = std::move(functions);
  return module;
}

}  // namespace graphjit
