// A small C++ API for building TensorFlow graphs, with JitScope: the RAII counterpart of
// TensorFlow's Python `jit_scope()`.
//
//   GraphBuilder b;
//   auto x = b.Placeholder("x", DType::kFloat, Shape{-1, 8});
//   {
//     JitScope jit(b);                 // nodes created here get _XlaCompile=true and
//     auto h = b.Relu(b.Add(x, x));    // _XlaScope="jit_scope_0"
//   }
//   tensorflow::GraphDef gd = b.graph_def();
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/proto/graph.pb.h"
#include "ir/shape.h"

namespace graphjit {

// One output of a node under construction: "name" or "name:index".
struct Output {
  std::string node;
  int index = 0;
  std::string ToString() const { return index == 0 ? node : node + ":" + std::to_string(index); }
};

class GraphBuilder {
 public:
  Output Placeholder(const std::string& name, DType dtype, const Shape& shape = Shape::UnknownRank());
  // A constant filled with `values` (one value fills the whole shape).
  Output Const(const std::string& name, DType dtype, const Shape& shape, const std::vector<double>& values);
  Output ScalarInt(const std::string& name, int32_t value);

  // Any op whose type attr is "T" (the dtype of the first input): Relu, AddV2, ...
  Output Op(const std::string& op, const std::vector<Output>& inputs, const std::string& name = "");
  Output Relu(Output x) { return Op("Relu", {x}); }
  Output Tanh(Output x) { return Op("Tanh", {x}); }
  Output Exp(Output x) { return Op("Exp", {x}); }
  Output Add(Output x, Output y) { return Op("AddV2", {x, y}); }
  Output Mul(Output x, Output y) { return Op("Mul", {x, y}); }
  Output Sub(Output x, Output y) { return Op("Sub", {x, y}); }
  Output BiasAdd(Output x, Output b) { return Op("BiasAdd", {x, b}); }
  Output Softmax(Output x) { return Op("Softmax", {x}); }
  Output MatMul(Output a, Output b, bool transpose_a = false, bool transpose_b = false);
  // Reductions over `axis` (an int32 constant).
  Output Sum(Output x, int axis, bool keep_dims = false);
  Output Max(Output x, int axis, bool keep_dims = false);

  tensorflow::NodeDef* last_node() { return gd_.mutable_node(gd_.node_size() - 1); }
  const tensorflow::GraphDef& graph_def() const { return gd_; }

 private:
  Output Reduce(const std::string& op, Output x, int axis, bool keep_dims);
  friend class JitScope;
  tensorflow::NodeDef* NewNode(const std::string& op, const std::string& name);
  std::string UniqueName(const std::string& base);
  DType TypeOf(const Output& o) const;

  tensorflow::GraphDef gd_;
  std::vector<std::string> scopes_;  // innermost last
  int next_scope_ = 0;
};

// Nodes created while a JitScope is alive carry _XlaCompile=true and _XlaScope=<scope>
// (by default a fresh "jit_scope_N" per guard, so separate scopes never fuse together).
class JitScope {
 public:
  explicit JitScope(GraphBuilder& builder, std::string scope = "");
  ~JitScope();
  JitScope(const JitScope&) = delete;
  JitScope& operator=(const JitScope&) = delete;

 private:
  GraphBuilder& builder_;
};

}  // namespace graphjit
