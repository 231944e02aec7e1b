#include "jit/pipeline.h"

#include <google/protobuf/text_format.h>

#include "ir/graphdef.h"
#include "jit/cnn_lowering.h"
#include "jit/fusion_emitter.h"
#include "jit/fusion_plan.h"
#include "jit/specialize.h"

namespace graphjit {

StatusOr<PreparedBody> PrepareBody(tensorflow::GraphDef body, std::vector<std::string> outputs, int num_inputs,
                                   bool unfuse_matmuls) {
  PreparedBody prepared;
  prepared.graph = std::move(body);
  prepared.outputs = std::move(outputs);
  if (unfuse_matmuls) GJ_RETURN_IF_ERROR(UnfuseMatMuls(&prepared.graph));
  ExpandSoftmax(&prepared.graph, &prepared.outputs);
  MarkRowShifts(&prepared.graph, prepared.outputs);
  prepared.value_inputs = ValueInputs(prepared.graph, num_inputs);
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
  // 1. Specialize: static shapes, the values that decide shapes. On a GPU, a GEMM's or a
  //    convolution's activation that cuBLASLt or cuDNN does not fuse becomes a node after
  //    it (unfused: every epilogue op does), and pools, batch norms and the padding cuDNN
  //    lacks are written out as the ops they are made of.
  const bool gpu = target.schedule == Schedule::kGpu;
  const tensorflow::GraphDef* graph = &prepared.graph;
  tensorflow::GraphDef split;
  if (gpu) {
    split = prepared.graph;
    GJ_RETURN_IF_ERROR(UnfuseMatMuls(&split, /*activations_only=*/true));
    GJ_RETURN_IF_ERROR(UnfuseConvs(&split, /*activations_only=*/options.fuse));
    graph = &split;
  }
  GJ_ASSIGN_OR_RETURN(SpecializedBody body, Specialize(*graph, prepared.outputs, inputs, prepared.value_inputs));
  if (gpu) GJ_RETURN_IF_ERROR(LowerCnnOps(&body.graph, &body.outputs).status());
  if (target.schedule == Schedule::kCpu && options.fuse && options.small_gemm_multiply_adds > 0)
    GJ_RETURN_IF_ERROR(ExpandSmallGemms(&body.graph, options.small_gemm_multiply_adds).status());
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
