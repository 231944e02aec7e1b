// The activations a fused GEMM or convolution carries (its fused_ops after BiasAdd), and
// how the passes that take such an op apart write each as ops of its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace graphjit {

// How one activation is written out.
struct FusedActivation {
  // The node `out` becomes the activation of `x` (its name kept; named parts below it).
  void (*write)(Graph& graph, int out, TensorId x, const std::string& activation);
  bool float_only;   // written as float32 ops: taken apart for float32 only
  bool convolution;  // a convolution's fused_ops may carry it too
};

// The activation named `name` (a fused_ops entry), or null for one no pass takes apart.
const FusedActivation* FindFusedActivation(std::string_view name);

// The fused_ops of a node (empty without the attr).
std::vector<std::string> FusedOps(const Node& node);

// "'name' (op) with fused_ops [a, b]": what an error about a fused op names.
std::string FusedOpLabel(const Node& node);

// Resets `node` to `op` over `inputs` with only the type attr T `type` (a fused op's part that
// takes its place: its name and device stay, its control inputs go to the part that runs
// first).
void RewriteAs(Node* node, const std::string& op, std::vector<TensorId> inputs, const tensorflow::AttrValue& type);

// A copy of the fused node `id` without its last fused op (its activation), named
// UniqueName(name/suffix): what the library computes in one call (cuBLASLt's GEMM and
// bias, cuDNN's fused convolution).
TensorId AddWithoutActivation(Graph& graph, int id, const std::string& suffix);

// Adds `op` over `inputs` named UniqueName(base), on `like`'s device, of type `type`.
Node* AddPart(Graph& graph, const Node& like, const std::string& base, const std::string& op, std::vector<TensorId> inputs,
              const tensorflow::AttrValue& type);

}  // namespace graphjit
