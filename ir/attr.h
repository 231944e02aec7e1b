// Typed access to node attributes. Errors name the node, the op and the attr.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/shape.h"

namespace graphjit {

// Required attrs: an error if missing or of the wrong kind.
StatusOr<DType> GetTypeAttr(const Node& node, std::string_view attr);
StatusOr<int64_t> GetIntAttr(const Node& node, std::string_view attr);
StatusOr<float> GetFloatAttr(const Node& node, std::string_view attr);
StatusOr<bool> GetBoolAttr(const Node& node, std::string_view attr);
StatusOr<std::string> GetStringAttr(const Node& node, std::string_view attr);
StatusOr<std::vector<int64_t>> GetIntListAttr(const Node& node, std::string_view attr);
StatusOr<std::vector<DType>> GetTypeListAttr(const Node& node, std::string_view attr);
StatusOr<Shape> GetShapeAttr(const Node& node, std::string_view attr);

// Optional attrs: the default if missing, an error if present with the wrong kind.
StatusOr<int64_t> GetIntAttrOr(const Node& node, std::string_view attr, int64_t dflt);
StatusOr<float> GetFloatAttrOr(const Node& node, std::string_view attr, float dflt);
StatusOr<bool> GetBoolAttrOr(const Node& node, std::string_view attr, bool dflt);
StatusOr<std::string> GetStringAttrOr(const Node& node, std::string_view attr, std::string dflt);

Shape ShapeFromProto(const tensorflow::TensorShapeProto& proto);
void ShapeToProto(const Shape& shape, tensorflow::TensorShapeProto* proto);

// "node 'name' (Op)": the prefix every error about a node starts with.
std::string NodeLabel(const Node& node);

}  // namespace graphjit
