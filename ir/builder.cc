#include "ir/builder.h"

#include <cstring>

#include "ir/attr.h"

namespace graphjit {

std::string GraphBuilder::UniqueName(const std::string& base) {
  auto taken = [&](const std::string& n) {
    for (const auto& node : gd_.node())
      if (node.name() == n) return true;
    return false;
  };
  if (!taken(base)) return base;
  for (int i = 1;; ++i)
    if (!taken(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

tensorflow::NodeDef* GraphBuilder::NewNode(const std::string& op, const std::string& name) {
  tensorflow::NodeDef* n = gd_.add_node();
  n->set_name(UniqueName(name.empty() ? op : name));
  n->set_op(op);
  if (!scopes_.empty() && op != "Placeholder" && op != "Const") {
    (*n->mutable_attr())["_XlaCompile"].set_b(true);
    (*n->mutable_attr())["_XlaScope"].set_s(scopes_.back());
  }
  return n;
}

DType GraphBuilder::TypeOf(const Output& o) const {
  for (const auto& n : gd_.node()) {
    if (n.name() != o.node) continue;
    for (const char* attr : {"T", "dtype"})
      if (auto it = n.attr().find(attr); it != n.attr().end()) return DTypeFromProto(it->second.type());
  }
  return DType::kFloat;
}

Output GraphBuilder::Placeholder(const std::string& name, DType dtype, const Shape& shape) {
  tensorflow::NodeDef* n = NewNode("Placeholder", name);
  (*n->mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(dtype));
  ShapeToProto(shape, (*n->mutable_attr())["shape"].mutable_shape());
  return {n->name()};
}

Output GraphBuilder::Const(const std::string& name, DType dtype, const Shape& shape, const std::vector<double>& values) {
  tensorflow::NodeDef* n = NewNode("Const", name);
  (*n->mutable_attr())["dtype"].set_type(static_cast<tensorflow::DataType>(dtype));
  tensorflow::TensorProto* t = (*n->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(static_cast<tensorflow::DataType>(dtype));
  ShapeToProto(shape, t->mutable_tensor_shape());
  for (double v : values) {
    switch (dtype) {
      case DType::kFloat: t->add_float_val(static_cast<float>(v)); break;
      case DType::kDouble: t->add_double_val(v); break;
      case DType::kInt64: t->add_int64_val(static_cast<int64_t>(v)); break;
      case DType::kBool: t->add_bool_val(v != 0); break;
      default: t->add_int_val(static_cast<int32_t>(v)); break;
    }
  }
  return {n->name()};
}

Output GraphBuilder::ScalarInt(const std::string& name, int32_t value) {
  return Const(name, DType::kInt32, Shape{}, {static_cast<double>(value)});
}

Output GraphBuilder::Op(const std::string& op, const std::vector<Output>& inputs, const std::string& name) {
  DType t = inputs.empty() ? DType::kFloat : TypeOf(inputs[0]);
  tensorflow::NodeDef* n = NewNode(op, name);
  for (const Output& in : inputs) n->add_input(in.ToString());
  (*n->mutable_attr())["T"].set_type(static_cast<tensorflow::DataType>(t));
  return {n->name()};
}

Output GraphBuilder::MatMul(Output a, Output b, bool transpose_a, bool transpose_b) {
  Output out = Op("MatMul", {a, b});
  (*last_node()->mutable_attr())["transpose_a"].set_b(transpose_a);
  (*last_node()->mutable_attr())["transpose_b"].set_b(transpose_b);
  return out;
}

Output GraphBuilder::Sum(Output x, int axis, bool keep_dims) { return Reduce("Sum", x, axis, keep_dims); }

Output GraphBuilder::Max(Output x, int axis, bool keep_dims) { return Reduce("Max", x, axis, keep_dims); }

Output GraphBuilder::Reduce(const std::string& op, Output x, int axis, bool keep_dims) {
  Output ax = ScalarInt(x.node + "/axis", axis);
  Output out = Op(op, {x, ax});
  (*last_node()->mutable_attr())["Tidx"].set_type(tensorflow::DT_INT32);
  (*last_node()->mutable_attr())["keep_dims"].set_b(keep_dims);
  return out;
}

JitScope::JitScope(GraphBuilder& builder, std::string scope) : builder_(builder) {
  if (scope.empty()) scope = "jit_scope_" + std::to_string(builder.next_scope_++);
  builder_.scopes_.push_back(std::move(scope));
}

JitScope::~JitScope() { builder_.scopes_.pop_back(); }

}  // namespace graphjit
