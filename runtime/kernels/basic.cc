// Sources and pass-through ops: Placeholder, PlaceholderWithDefault, Const, Identity,
// IdentityN, StopGradient, NoOp, CheckNumerics.

#include <cmath>

#include "runtime/kernels/common.h"

namespace graphjit {
namespace {

StatusOr<Shape> DeclaredShape(const Node& node) {
  if (node.FindAttr("shape") == nullptr) return Shape::UnknownRank();
  return GetShapeAttr(node, "shape");
}

OpDef PlaceholderOp() {
  OpDef def;
  def.name = "Placeholder";
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, GetTypeAttr(c.node, "dtype"));
    if (!IsSupportedDType(t)) return c.TypeError("type " + DTypeName(t) + " is not supported");
    GJ_ASSIGN_OR_RETURN(Shape s, DeclaredShape(c.node));
    c.AddOutput(t, s);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    return ctx.Error("a value must be fed for placeholder '" + ctx.node.name + "' of type " + DTypeName(ctx.output_dtypes[0]) +
                     " and shape " + DeclaredShape(ctx.node).value().ToString());
  };
  return def;
}

OpDef PlaceholderWithDefaultOp() {
  OpDef def;
  def.name = "PlaceholderWithDefault";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("dtype", {0}));
    GJ_ASSIGN_OR_RETURN(Shape s, DeclaredShape(c.node));
    if (!IsCompatible(s, c.shape(0)))
      return c.ShapeError("default value of shape " + c.shape(0).ToString() + " does not match the declared shape " +
                          s.ToString());
    // The declared shape: a feed may replace the default with any compatible value.
    c.AddOutput(t, s.unknown_rank() ? c.shape(0) : s);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    ctx.ForwardOutput(0, ctx.input(0));
    return Status::Ok();
  };
  return def;
}

OpDef ConstOp() {
  OpDef def;
  def.name = "Const";
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, GetTypeAttr(c.node, "dtype"));
    const tensorflow::AttrValue* v = c.node.FindAttr("value");
    if (v == nullptr || !v->has_tensor()) return c.TypeError("attr 'value' must be a tensor");
    if (DTypeFromProto(v->tensor().dtype()) != t)
      return c.TypeError("attr 'value' has type " + DTypeName(DTypeFromProto(v->tensor().dtype())) + " but attr 'dtype' is " +
                         DTypeName(t));
    if (!IsSupportedDType(t)) return c.TypeError("type " + DTypeName(t) + " is not supported");
    c.AddOutput(t, ShapeFromProto(v->tensor().tensor_shape()));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    auto t = TensorFromProto(ctx.node.FindAttr("value")->tensor(), ctx.allocator);
    if (!t.ok()) return InvalidArgument(NodeLabel(ctx.node) + ": " + t.status().message());
    ctx.ForwardOutput(0, std::move(t).value());
    return Status::Ok();
  };
  return def;
}

OpDef ForwardOp(const char* name) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    ctx.ForwardOutput(0, ctx.input(0));
    return Status::Ok();
  };
  return def;
}

OpDef IdentityNOp() {
  OpDef def;
  def.name = "IdentityN";
  def.min_inputs = 1;
  def.max_inputs = -1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(std::vector<DType> types, GetTypeListAttr(c.node, "T"));
    if (static_cast<int>(types.size()) != c.num_inputs())
      return c.TypeError("attr T lists " + std::to_string(types.size()) + " types for " + std::to_string(c.num_inputs()) +
                         " inputs");
    for (int i = 0; i < c.num_inputs(); ++i) {
      if (types[i] != c.dtype(i))
        return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)) + ", attr T says " +
                           DTypeName(types[i]));
      c.AddOutput(c.dtype(i), c.shape(i));
    }
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    for (int i = 0; i < ctx.num_inputs(); ++i) ctx.ForwardOutput(i, ctx.input(i));
    return Status::Ok();
  };
  return def;
}

OpDef NoOpOp() {
  OpDef def;
  def.name = "NoOp";
  def.infer = [](InferenceContext&) { return Status::Ok(); };
  def.compute = [](KernelContext&) { return Status::Ok(); };
  return def;
}

OpDef CheckNumericsOp() {
  OpDef def;
  def.name = "CheckNumerics";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const Tensor& in = ctx.input(0);
    bool nan = false, inf = false;
    GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        auto v = static_cast<ComputeType<T>>(in.data<T>()[i]);
        nan |= std::isnan(v);
        inf |= std::isinf(v);
      }
      return Status::Ok();
    }));
    if (nan || inf) {
      std::string message = GetStringAttrOr(ctx.node, "message", "").value();
      return ctx.Error(message + (message.empty() ? "" : ": ") + "tensor had " +
                       (nan && inf ? "NaN and Inf"
                        : nan      ? "NaN"
                                   : "Inf") +
                       " values");
    }
    ctx.ForwardOutput(0, in);
    return Status::Ok();
  };
  return def;
}

const bool kRegistered = RegisterOps({PlaceholderOp(), PlaceholderWithDefaultOp(), ConstOp(), ForwardOp("Identity"),
                                      ForwardOp("StopGradient"), IdentityNOp(), NoOpOp(), CheckNumericsOp()});

}  // namespace
}  // namespace graphjit
