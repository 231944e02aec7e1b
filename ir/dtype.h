// Element types. The numeric values are TensorFlow's DataType enum values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace graphjit {

enum class DType : int {
  kInvalid = 0,
  kFloat = 1,
  kDouble = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 5,
  kInt8 = 6,
  kString = 7,
  kInt64 = 9,
  kBool = 10,
  kBFloat16 = 14,
  kHalf = 19,
  kResource = 20,
};

// True for the types graphjit's tensors hold: f32, f64, f16, bf16, i32, i64, bool,
// and the small integer types u8, i8, i16.
bool IsSupportedDType(DType dtype);
bool IsFloatingPoint(DType dtype);  // f16, bf16, f32, f64
bool IsInteger(DType dtype);
size_t DTypeSize(DType dtype);  // bytes per element; 0 for unsupported types

// TensorFlow's Python-side names: "float32", "int64", "bfloat16", "bool", ...
std::string DTypeName(DType dtype);
// Accepts TensorFlow's names ("float32", "float") and DataType names ("DT_FLOAT").
bool ParseDType(std::string_view name, DType* out);
// DType from a raw DataType enum value; reference types (DT_FLOAT_REF = 101, ...) map to
// their base type.
DType DTypeFromProto(int value);

}  // namespace graphjit
