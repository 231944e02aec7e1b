// The fusion plan of a specialized cluster body, made the way XLA makes it: which values
// are stored in buffers, and which kernel ("fusion") computes each of them. Everything
// else is computed inside the kernel that reads it, element by element, never stored.
//
//  - loop fusion: elementwise ops, broadcasts, transposes and size-1 reshapes, with
//    one or more outputs of one shape;
//  - row fusion: reductions over the trailing dims of one tensor, per row, with their
//    elementwise producers and consumers (softmax, log-softmax, layer norm, mean and
//    variance: one kernel each, which reads its input once from memory);
//  - reduce fusion: a reduction over other dims (e.g. columns), with its producers;
//  - library call: a GEMM (MatMul, BatchMatMulV2, _FusedMatMul with its bias and
//    activation as the library's epilogue) or a convolution (Conv2D, DepthwiseConv2dNative,
//    their _Fused forms, Conv2DBackpropInput) on stored operands.
//
// A Reshape that is not a size-1 reshape views its input's buffer (no copy).
// Target-neutral: nothing here knows the CPU.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/graph_analysis.h"

namespace graphjit {

// How a fusion emitter sees a body node.
// kIndexed: an element of the node's result is one element of a data input, read at an index
// computed from the result's index (the data movement ops of runtime/op_traits.cc, and
// Fill), or a constant (a pad's value, OneHot's on and off values).
enum class NodeKind {
  kConstant,
  kArgument,
  kElementwise,
  kSizeOneReshape,
  kView,
  kTranspose,
  kConcat,
  kIndexed,
  kReduction,
  kLibrary
};

// Empty if the emitters take `n` with these input and output dtypes (the fact clustering
// asks about, before shapes are known), else why not.
std::string WhyNotCompilable(const Node& n, const std::vector<DType>& input_types, const std::vector<DType>& output_types);
// Whether `op` is run as a library call (a GEMM or a convolution).
bool IsLibraryOp(const std::string& op);
// Whether `op` is ArgMax or ArgMin: a reduction to an index.
bool IsArgReduction(const std::string& op);
// The node's kind; Unimplemented (with the reason) for what no emitter takes.
StatusOr<NodeKind> ClassifyNode(const AnalyzedGraph& body, int id);
// A constant (its value an attr: kConstant), or a value the body is fed (kArgument).
inline bool IsConstant(const Node& n) { return n.op == "Const"; }
inline bool IsPlaceholder(const Node& n) { return n.op == "Placeholder"; }
// The value a computed node reads at input `i` element by element (not axes or shapes).
bool IsDataInput(const Node& node, int i);
// How an elementwise node or a size-1 reshape `n` (output shape `out`) reads its data input
// `i` (shape `in`): for each dim of `in`, the output dim whose index it reads at, or -1 where
// it reads at 0 (a size-1 dim).
std::vector<int> ReadDims(const Node& n, int i, const Shape& in, const Shape& out);

// A reduction's reduced axes (sorted, non-negative) and keep_dims.
struct ReductionAxes {
  std::vector<int> axes;
  bool keep_dims = false;
};
StatusOr<ReductionAxes> GetReductionAxes(const AnalyzedGraph& body, int id);

struct FusionPlan {
  struct Buffer {
    enum class Kind { kArgument, kConstant, kTemp, kView };
    Kind kind = Kind::kTemp;
    TensorId value;
    Shape shape;
    DType dtype = DType::kInvalid;
    int source = -1;  // kArgument: the input index; kConstant: index in `constants`; kView: the viewed buffer
    int fusion = -1;  // kTemp: the fusion that stores it
  };
  enum class Kind { kLoop, kRow, kReduce, kLibrary };
  struct Fusion {
    Kind kind = Kind::kLoop;
    Shape space;                  // loop: the roots' shape; row, reduce: the reduced tensor's shape
    int split = 0;                // row: dims [0, split) index rows, the rest are reduced
    std::vector<int> reductions;  // row: computed per row, in order; reduce: the one
    std::vector<TensorId> roots;  // stored by this fusion, each into its buffer
    int library_node = -1;        // library: the node it runs
  };

  std::vector<Buffer> buffers;
  std::map<TensorId, int> buffer_of;
  std::vector<Fusion> fusions;   // in execution order; a fusion reads buffers of earlier ones only
  std::map<int, int> fusion_of;  // reduction node -> its fusion
  std::vector<Tensor> constants;
  std::vector<int> outputs;  // the buffer of each body output

  // One line per fusion (kind, space, reductions, roots), for dumps.
  std::string ToString(const Graph& graph) const;
};

// Plans the body's kernels. `args` has the placeholder of each input (node -1 for an input
// replaced by its value); every shape the outputs need must be static. Without `fuse`, each
// op is a kernel of its own that stores its result (the unfused baseline).
StatusOr<FusionPlan> PlanFusions(const AnalyzedGraph& body, const std::vector<TensorId>& args,
                                 const std::vector<TensorId>& outputs, bool fuse = true);

}  // namespace graphjit
