// Specializing a cluster body, in two pipelines of the JIT's passes (jit/passes/), each run
// by a PassManager. The body is a GraphDef whose inputs are the placeholders `_arg_0`,
// `_arg_1`, ...:
//   once per cluster, the preparation: the row ops written out, softmax row shifts marked;
//   once per call signature, the specialization: a compiled kernel is made for the actual
//   input shapes and, for the inputs that decide shapes (reduction axes, Reshape's shape,
//   Transpose's perm, ConcatV2's axis, ...), the actual values.
#pragma once

#include <string>
#include <vector>

#include "passes/pass_manager.h"
#include "runtime/graph_analysis.h"

namespace graphjit {

// The preparation, in order:
//   1. unfuse_matmuls (with `unfuse_matmuls`: for a target that makes no library calls);
//   2. expand_softmax;
//   3. mark_row_shifts.
// The tensors named in `outputs` (the body's) follow the rewrites.
PassManager PreparationPasses(bool unfuse_matmuls, std::vector<std::string>* outputs);

struct SpecializationOptions {
  bool gpu = false;
  bool fuse = true;  // false: each op a kernel of its own (the unfused baseline)
  // On the CPU, when fusing, GEMMs of up to this many multiply-adds become loops (0: none).
  int64_t small_gemm_multiply_adds = 0;
};

// The specialization, in order:
//   1. on a GPU, a GEMM's or a convolution's activation that cuBLASLt or cuDNN does not
//      fuse becomes a node after it (unfuse_matmul_activations, then
//      unfuse_conv_activations; unfused, unfuse_convs: every epilogue op a node);
//   2. specialize_inputs: the inputs' shapes, the value inputs' values;
//   3. fold_shape_values: what decides shapes, computed;
//   4. on a GPU, lower_cnn_ops (pools, batch norms, the padding cuDNN lacks);
//   5. on the CPU, expand_small_gemms (when fusing and asked).
// `inputs` and `value_inputs` must outlive the PassManager.
PassManager SpecializationPasses(const SpecializationOptions& options, const std::vector<Tensor>& inputs,
                                 const std::vector<bool>& value_inputs, std::vector<std::string>* outputs);

struct SpecializedBody {
  AnalyzedGraph graph;
  std::vector<TensorId> args;     // per input: its placeholder, or node -1 if replaced by its value
  std::vector<TensorId> outputs;  // the body's outputs
};

// The body through the specialization: the inputs' shapes set, the value inputs replaced
// by constants and what decides shapes evaluated into constants, then lowered for the
// target.
StatusOr<SpecializedBody> Specialize(const tensorflow::GraphDef& body, const std::vector<std::string>& outputs,
                                     const std::vector<Tensor>& inputs, const std::vector<bool>& value_inputs,
                                     const SpecializationOptions& options);

}  // namespace graphjit
