#include "ir/dtype.h"

namespace graphjit {

bool IsSupportedDType(DType d) {
  switch (d) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kHalf:
    case DType::kBFloat16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16: return true;
    default: return false;
  }
}

bool IsFloatingPoint(DType d) { return d == DType::kFloat || d == DType::kDouble || d == DType::kHalf || d == DType::kBFloat16; }

bool IsInteger(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kUInt8 || d == DType::kInt8 || d == DType::kInt16;
}

size_t DTypeSize(DType d) {
  switch (d) {
    case DType::kFloat:
    case DType::kInt32: return 4;
    case DType::kDouble:
    case DType::kInt64: return 8;
    case DType::kHalf:
    case DType::kBFloat16:
    case DType::kInt16: return 2;
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8: return 1;
    default: return 0;
  }
}

namespace {
struct NameEntry {
  DType dtype;
  const char* name;
  const char* proto_name;
};
constexpr NameEntry kNames[] = {
    {DType::kFloat, "float32", "DT_FLOAT"},  {DType::kDouble, "float64", "DT_DOUBLE"},
    {DType::kHalf, "float16", "DT_HALF"},    {DType::kBFloat16, "bfloat16", "DT_BFLOAT16"},
    {DType::kInt32, "int32", "DT_INT32"},    {DType::kInt64, "int64", "DT_INT64"},
    {DType::kBool, "bool", "DT_BOOL"},       {DType::kUInt8, "uint8", "DT_UINT8"},
    {DType::kInt8, "int8", "DT_INT8"},       {DType::kInt16, "int16", "DT_INT16"},
    {DType::kString, "string", "DT_STRING"}, {DType::kResource, "resource", "DT_RESOURCE"},
};
}  // namespace

std::string DTypeName(DType d) {
  for (const auto& e : kNames)
    if (e.dtype == d) return e.name;
  return "dtype(" + std::to_string(static_cast<int>(d)) + ")";
}

bool ParseDType(std::string_view name, DType* out) {
  if (name == "float") name = "float32";
  if (name == "double") name = "float64";
  if (name == "half") name = "float16";
  for (const auto& e : kNames) {
    if (name == e.name || name == e.proto_name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

DType DTypeFromProto(int value) {
  if (value > 100) value -= 100;  // *_REF types
  return static_cast<DType>(value);
}

}  // namespace graphjit
