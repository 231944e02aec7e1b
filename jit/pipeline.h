// The compiler's pipeline, one function per half, used by the JIT (at a cluster's first
// run and at each new signature) and by `graphjit aot`:
//   PrepareBody:  once per cluster: _FusedMatMul taken apart (where asked), the row ops
//                 written as the reductions they are, softmax row shifts marked, and which
//                 inputs decide shapes (their values are part of the signature);
//   BuildProgram: once per signature: specialize on the inputs, expand small GEMMs into
//                 loops (CPU), plan the fusions, emit them for the target: the program a
//                 Backend compiles.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/proto/graph.pb.h"
#include "jit/backend.h"

namespace graphjit {

struct PreparedBody {
  tensorflow::GraphDef graph;        // inputs are the placeholders _arg_0, _arg_1, ...
  std::vector<std::string> outputs;  // its tensors the cluster outputs, in order
  std::vector<bool> value_inputs;    // per input: its value decides a shape or an axis
};

// `unfuse_matmuls`: each _FusedMatMul as its MatMul, BiasAdd and activation (for a target
// that makes no library calls); Unimplemented for an activation that is not taken apart.
StatusOr<PreparedBody> PrepareBody(tensorflow::GraphDef body, std::vector<std::string> outputs, int num_inputs,
                                   bool unfuse_matmuls);

struct PipelineOptions {
  bool fuse = true;  // false: each op a kernel of its own (the unfused baseline)
  // On the CPU, GEMMs of up to this many multiply-adds become loops fused with the rest of
  // the cluster; larger ones are library calls.
  int64_t small_gemm_multiply_adds = 0;
  // Sees each stage's output as it is made: "00_cluster.pbtxt", "01_fusion_plan.txt",
  // "02_fusions.mlir" (may be null).
  std::function<void(const std::string& file, const std::string& text)> dump;
  // Called as each stage ends: "specialize", "plan", "emit" (may be null).
  std::function<void(const char* stage)> stage_done;
  // May rewrite the emitted MLIR before it is compiled (fault injection; may be null).
  std::function<void(std::string* mlir)> rewrite_mlir;
};

// The program of `body` for these inputs (their shapes; the values of value inputs) on
// `target`. Unimplemented for what the emitters do not take.
StatusOr<ClusterProgram> BuildProgram(const PreparedBody& body, const std::vector<Tensor>& inputs,
                                      const TargetDescription& target, const PipelineOptions& options);

}  // namespace graphjit
