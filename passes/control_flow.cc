#include "passes/control_flow.h"

#include "ir/graphdef.h"
#include "runtime/control_flow.h"

namespace graphjit {

namespace {

StatusOr<bool> InlineFunctionCallsPass(Graph& graph, const PassContext&) { return InlineFunctionCalls(&graph); }

StatusOr<bool> LowerTensorListsPass(Graph& graph, const PassContext&) { return LowerTensorLists(&graph); }

StatusOr<bool> FunctionalizeConditionalsPass(Graph& graph, const PassContext&) { return FunctionalizeConditionals(&graph); }

StatusOr<bool> FunctionalizeLoopsPass(Graph& graph, const PassContext&) { return FunctionalizeLoops(&graph); }

// The whole rewrite, as a Session reads a graph; "changed": the exported graph differs.
StatusOr<bool> FunctionalizeControlFlowPass(Graph& graph, const PassContext&) {
  const std::string before = GraphBytes(graph);
  GJ_RETURN_IF_ERROR(FunctionalizeControlFlow(&graph));
  return GraphBytes(graph) != before;
}

}  // namespace

void AddControlFlowPasses(PassManager& pm) {
  pm.Add("inline_function_calls", InlineFunctionCallsPass);
  pm.Add("lower_tensor_lists", LowerTensorListsPass);
  pm.Add("functionalize_conditionals", FunctionalizeConditionalsPass);
  pm.Add("functionalize_loops", FunctionalizeLoopsPass);
  pm.Add("functionalize_control_flow", FunctionalizeControlFlowPass);
}

}  // namespace graphjit
