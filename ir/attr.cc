#include "ir/attr.h"

namespace graphjit {

std::string NodeLabel(const Node& node) { return "node '" + node.name + "' (" + node.op + ")"; }

namespace {

Status AttrError(const Node& node, std::string_view attr, const std::string& what) {
  return InvalidArgument(NodeLabel(node) + ": attr '" + std::string(attr) + "' " + what);
}

StatusOr<const tensorflow::AttrValue*> Find(const Node& node, std::string_view attr, tensorflow::AttrValue::ValueCase want,
                                            const char* kind) {
  const tensorflow::AttrValue* v = node.FindAttr(attr);
  if (v == nullptr) return AttrError(node, attr, "is missing");
  if (v->value_case() != want) {
    // An empty list is written with no value at all by some producers.
    if (want == tensorflow::AttrValue::kList && v->value_case() == tensorflow::AttrValue::VALUE_NOT_SET) return v;
    return AttrError(node, attr, std::string("must be a ") + kind);
  }
  return v;
}

}  // namespace

StatusOr<DType> GetTypeAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kType, "type"));
  return DTypeFromProto(v->type());
}

StatusOr<int64_t> GetIntAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kI, "int"));
  return static_cast<int64_t>(v->i());
}

StatusOr<float> GetFloatAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kF, "float"));
  return v->f();
}

StatusOr<bool> GetBoolAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kB, "bool"));
  return v->b();
}

StatusOr<std::string> GetStringAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kS, "string"));
  return v->s();
}

StatusOr<std::vector<int64_t>> GetIntListAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kList, "list(int)"));
  return std::vector<int64_t>(v->list().i().begin(), v->list().i().end());
}

StatusOr<std::vector<DType>> GetTypeListAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kList, "list(type)"));
  std::vector<DType> out;
  for (int t : v->list().type()) out.push_back(DTypeFromProto(t));
  return out;
}

StatusOr<Shape> GetShapeAttr(const Node& node, std::string_view attr) {
  GJ_ASSIGN_OR_RETURN(auto v, Find(node, attr, tensorflow::AttrValue::kShape, "shape"));
  return ShapeFromProto(v->shape());
}

StatusOr<int64_t> GetIntAttrOr(const Node& node, std::string_view attr, int64_t dflt) {
  return node.FindAttr(attr) ? GetIntAttr(node, attr) : StatusOr<int64_t>(dflt);
}
StatusOr<float> GetFloatAttrOr(const Node& node, std::string_view attr, float dflt) {
  return node.FindAttr(attr) ? GetFloatAttr(node, attr) : StatusOr<float>(dflt);
}
StatusOr<bool> GetBoolAttrOr(const Node& node, std::string_view attr, bool dflt) {
  return node.FindAttr(attr) ? GetBoolAttr(node, attr) : StatusOr<bool>(dflt);
}
StatusOr<std::string> GetStringAttrOr(const Node& node, std::string_view attr, std::string dflt) {
  return node.FindAttr(attr) ? GetStringAttr(node, attr) : StatusOr<std::string>(std::move(dflt));
}

Shape ShapeFromProto(const tensorflow::TensorShapeProto& proto) {
  if (proto.unknown_rank()) return Shape::UnknownRank();
  std::vector<int64_t> dims;
  for (const auto& d : proto.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return Shape(std::move(dims));
}

void ShapeToProto(const Shape& shape, tensorflow::TensorShapeProto* proto) {
  proto->Clear();
  if (shape.unknown_rank()) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : shape.dims()) proto->add_dim()->set_size(d);
}

}  // namespace graphjit
