#include "jit/specialize.h"

#include "ir/graphdef.h"
#include "jit/passes/jit_passes.h"
#include "jit/passes/specialize_inputs.h"

namespace graphjit {

PassManager PreparationPasses(bool unfuse_matmuls, std::vector<std::string>* outputs) {
  PassManager pm;
  if (unfuse_matmuls) pm.Add("unfuse_matmuls", UnfuseMatMulsPass(false));
  pm.Add("expand_softmax", ExpandSoftmaxPass(outputs));
  pm.Add("lower_logical_reductions", LowerLogicalReductionsPass);
  pm.Add("mark_row_shifts", MarkRowShiftsPass(outputs));
  return pm;
}

PassManager SpecializationPasses(const SpecializationOptions& options, const std::vector<Tensor>& inputs,
                                 const std::vector<bool>& value_inputs, std::vector<std::string>* outputs) {
  PassManager pm;
  // 1. What the GPU libraries do not fuse, as nodes of its own.
  if (options.gpu) {
    pm.Add("unfuse_matmul_activations", UnfuseMatMulsPass(true));
    pm.Add(options.fuse ? "unfuse_conv_activations" : "unfuse_convs", UnfuseConvsPass(options.fuse));
  }
  // 2. The inputs, 3. what decides shapes.
  pm.Add("specialize_inputs", SpecializeInputsPass(inputs, value_inputs));
  pm.Add("fold_shape_values", FoldShapeValuesPass(&inputs, &value_inputs));
  // 4. GPU: the CNN ops written out; 5. CPU: small GEMMs as loops.
  if (options.gpu) pm.Add("lower_cnn_ops", LowerCnnOpsPass(outputs));
  if (!options.gpu && options.fuse && options.small_gemm_multiply_adds > 0)
    pm.Add("expand_small_gemms", ExpandSmallGemmsPass(options.small_gemm_multiply_adds));
  return pm;
}

StatusOr<SpecializedBody> Specialize(const tensorflow::GraphDef& body, const std::vector<std::string>& body_outputs,
                                     const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs,
                                     const SpecializationOptions& options) {
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(body));
  std::vector<std::string> outputs = body_outputs;
  std::vector<std::string> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.push_back(BodyInputName(i));
  const PassContext context(feeds, outputs, {});
  GJ_RETURN_IF_ERROR(SpecializationPasses(options, inputs, value_inputs, &outputs).Run(graph, context).status());
  SpecializedBody result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node* arg = graph.FindNode(BodyInputName(i));
    result.args.push_back(value_inputs[i] ? TensorId{-1, 0} : TensorId{arg->id, 0});
  }
  GJ_ASSIGN_OR_RETURN(result.graph, AnalyzeGraph(std::move(graph)));
  for (const std::string& name : outputs) {
    ParsedInput p;
    const Node* n = ParseInputString(name, &p) ? result.graph.graph.FindNode(p.node) : nullptr;
    if (n == nullptr) return Internal("the body lacks " + name);
    result.outputs.push_back({n->id, p.index});
  }
  return result;
}

}  // namespace graphjit
