#include "jit/pipeline.h"

#include <google/protobuf/text_format.h>

#include "ir/graphdef.h"
#include "jit/fusion_emitter.h"
#include "jit/fusion_plan.h"
#include "jit/passes/specialize_inputs.h"
#include "jit/specialize.h"

namespace graphjit {

StatusOr<PreparedBody> PrepareBody(tensorflow::GraphDef body, std::vector<std::string> outputs, int num_inputs,
                                   bool unfuse_matmuls) {
  PreparedBody prepared;
  prepared.outputs = std::move(outputs);
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(body));
  std::vector<std::string> feeds;
  for (int i = 0; i < num_inputs; ++i) feeds.push_back(BodyInputName(i));
  const PassContext context(feeds, prepared.outputs, {});
  GJ_RETURN_IF_ERROR(PreparationPasses(unfuse_matmuls, &prepared.outputs).Run(graph, context).status());
  prepared.value_inputs = ValueInputs(graph, num_inputs);
  prepared.graph = ExportGraphDef(graph);
  return prepared;
}

StatusOr<ClusterProgram> BuildProgram(const PreparedBody& prepared, const std::vector<Tensor>& inputs,
                                      const TargetDescription& target, const PipelineOptions& options) {
  auto dump = [&](const std::string& file, const std::string& text) {
    if (options.dump) options.dump(file, text);
  };
  auto done = [&](const char* stage) {
    if (options.stage_done) options.stage_done(stage);
  };
  // 1. Specialize: static shapes, the values that decide shapes, the target's lowerings
  //    (see SpecializationPasses).
  SpecializationOptions specialization;
  specialization.gpu = target.schedule == Schedule::kGpu;
  specialization.fuse = options.fuse;
  specialization.small_gemm_multiply_adds = options.small_gemm_multiply_adds;
  GJ_ASSIGN_OR_RETURN(SpecializedBody body,
                      Specialize(prepared.graph, prepared.outputs, inputs, prepared.value_inputs, specialization));
  if (options.dump) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(ExportGraphDef(body.graph.graph), &text);
    dump("00_cluster.pbtxt", text);
  }
  done("specialize");
  // 2. Plan the fusions, 3. emit one function per fusion.
  GJ_ASSIGN_OR_RETURN(FusionPlan plan, PlanFusions(body.graph, body.args, body.outputs, options.fuse));
  if (options.dump) dump("01_fusion_plan.txt", plan.ToString(body.graph.graph));
  done("plan");
  GJ_ASSIGN_OR_RETURN(EmittedModule module, EmitFusions(body.graph, plan, target));
  if (options.rewrite_mlir) options.rewrite_mlir(&module.mlir);
  dump("02_fusions.mlir", module.mlir);
  done("emit");
  // 4. The program: the module, the library calls its kernels make, the buffers.
  ClusterProgram program;
  for (const EmittedKernel& k : module.kernels) {
    LibraryCall call;
    if (k.library_node >= 0) {
      const NodeInfo& info = body.graph.info(k.library_node);
      call = {info.op, std::make_shared<const Node>(*body.graph.graph.node(k.library_node)), info.state, info.dtypes,
              info.shapes};
    }
    program.calls.push_back(std::move(call));
  }
  program.module = std::move(module);
  program.buffers = std::move(plan.buffers);
  program.constants = std::move(plan.constants);
  program.outputs = std::move(plan.outputs);
  return program;
}

}  // namespace graphjit
