// The GraphjitCluster op (TF_InitKernel): its definition, shape function and CPU kernel.
// The kernel holds a graphjit Session over the cluster's body, whose nodes carry a JIT
// scope: the first run per input signature compiles them (graphjit's kernel cache), every
// run feeds TensorFlow's input tensors and copies the results into TensorFlow's outputs.
#include <cstring>
#include <memory>

#include "python/src/plugin.h"
#include "python/src/rewrite.h"
#include "runtime/session.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#define GRAPHJIT_TF_EXPORT extern "C" __attribute__((visibility("default")))

namespace graphjit {

namespace {

struct ClusterKernel {
  std::unique_ptr<Session> session;
  std::vector<std::string> inputs, outputs;
};

std::vector<std::string> Strings(const tensorflow::NodeDef& node, const char* attr) {
  std::vector<std::string> out;
  auto it = node.attr().find(attr);
  if (it != node.attr().end())
    for (const auto& s : it->second.list().s()) out.push_back(s);
  return out;
}

void* Create(TF_OpKernelConstruction* ctx) {
  TF_Status* status = TF_NewStatus();
  auto fail = [&](const std::string& message) -> void* {
    TF_SetStatus(status, TF_INTERNAL, ("graphjit: " + message).c_str());
    TF_OpKernelConstruction_Failure(ctx, status);
    TF_DeleteStatus(status);
    return nullptr;
  };
  TF_Buffer* buffer = TF_OpKernelConstruction_GetNodeDef(ctx, status);
  if (TF_GetCode(status) != TF_OK) return fail(TF_Message(status));
  tensorflow::NodeDef node;
  bool parsed = node.ParseFromArray(buffer->data, static_cast<int>(buffer->length));
  TF_DeleteBuffer(buffer);
  tensorflow::GraphDef body;
  auto it = node.attr().find("body");
  if (!parsed || it == node.attr().end() || !body.ParseFromString(it->second.s()))
    return fail("GraphjitCluster '" + node.name() + "' has no body");
  auto kernel = std::make_unique<ClusterKernel>();
  kernel->inputs = Strings(node, "inputs");
  kernel->outputs = Strings(node, "outputs");
  // The body's nodes carry a JIT scope: they compile at every level.
  SessionOptions options = PluginOptions();
  options.jit_level = JitLevel::kOff;
  StatusOr<std::unique_ptr<Session>> session = Session::Create(options, body);
  if (!session.ok()) return fail("GraphjitCluster '" + node.name() + "': " + session.status().message());
  kernel->session = std::move(*session);
  ++Counters().kernels;
  TF_DeleteStatus(status);
  return kernel.release();
}

void Compute(void* opaque, TF_OpKernelContext* ctx) {
  auto* kernel = static_cast<ClusterKernel*>(opaque);
  TF_Status* status = TF_NewStatus();
  auto fail = [&](const std::string& message) {
    ++Counters().cluster_errors;
    TF_SetStatus(status, TF_INVALID_ARGUMENT, ("graphjit: " + message).c_str());
    TF_OpKernelContext_Failure(ctx, status);
    TF_DeleteStatus(status);
  };
  // 1. TensorFlow's inputs, copied into graphjit tensors.
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (int i = 0; i < TF_NumInputs(ctx); ++i) {
    TF_Tensor* input = nullptr;
    TF_GetInput(ctx, i, &input, status);
    if (TF_GetCode(status) != TF_OK) return fail(TF_Message(status));
    std::vector<int64_t> dims(TF_NumDims(input));
    for (size_t d = 0; d < dims.size(); ++d) dims[d] = TF_Dim(input, static_cast<int>(d));
    StatusOr<Tensor> tensor =
        Tensor::Allocate(DTypeFromProto(TF_TensorType(input)), Shape(std::move(dims)), kernel->session->allocator());
    if (!tensor.ok()) {
      TF_DeleteTensor(input);
      return fail(tensor.status().message());
    }
    std::memcpy(tensor->raw(), TF_TensorData(input), std::min(tensor->bytes(), TF_TensorByteSize(input)));
    TF_DeleteTensor(input);
    feeds.emplace_back(kernel->inputs.at(i), std::move(*tensor));
  }
  // 2. The cluster, compiled on its first run per signature.
  std::vector<Tensor> outputs;
  Status run = kernel->session->Run(feeds, kernel->outputs, {}, &outputs);
  if (!run.ok()) return fail(run.message());
  // 3. Its results, copied into TensorFlow's outputs.
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& result = outputs[j];
    std::vector<int64_t> dims = result.shape().dims();
    TF_Tensor* output = TF_AllocateOutput(ctx, static_cast<int>(j), static_cast<TF_DataType>(result.dtype()), dims.data(),
                                          static_cast<int>(dims.size()), result.bytes(), status);
    if (TF_GetCode(status) != TF_OK) return fail(TF_Message(status));
    if (result.bytes()) std::memcpy(TF_TensorData(output), result.raw(), result.bytes());
    TF_DeleteTensor(output);
  }
  ++Counters().cluster_runs;
  TF_DeleteStatus(status);
}

void Delete(void* kernel) { delete static_cast<ClusterKernel*>(kernel); }

// The outputs' shapes are the body's, known only when it runs.
void UnknownShapes(TF_ShapeInferenceContext* ctx, TF_Status* status) { TF_ShapeInferenceContextSetUnknownShape(ctx, status); }

}  // namespace

}  // namespace graphjit

using namespace graphjit;

GRAPHJIT_TF_EXPORT void TF_InitKernel() {
  InitGraphjit();
  TF_Status* status = TF_NewStatus();
  TF_OpDefinitionBuilder* op = TF_NewOpDefinitionBuilder(kClusterOp);
  TF_OpDefinitionBuilderAddInput(op, "args: Tin");
  TF_OpDefinitionBuilderAddOutput(op, "results: Tout");
  TF_OpDefinitionBuilderAddAttr(op, "Tin: list(type) >= 0");
  TF_OpDefinitionBuilderAddAttr(op, "Tout: list(type) >= 0");
  TF_OpDefinitionBuilderAddAttr(op, "body: string");
  TF_OpDefinitionBuilderAddAttr(op, "inputs: list(string)");
  TF_OpDefinitionBuilderAddAttr(op, "outputs: list(string)");
  TF_OpDefinitionBuilderSetShapeInferenceFunction(op, UnknownShapes);
  TF_RegisterOpDefinition(op, status);
  if (TF_GetCode(status) != TF_OK) Warn(std::string("cannot register GraphjitCluster: ") + TF_Message(status));
  TF_KernelBuilder* builder = TF_NewKernelBuilder(kClusterOp, "CPU", Create, Compute, Delete);
  TF_RegisterKernelBuilder(kClusterOp, builder, status);
  if (TF_GetCode(status) != TF_OK) Warn(std::string("cannot register GraphjitCluster's kernel: ") + TF_Message(status));
  TF_DeleteStatus(status);
}
