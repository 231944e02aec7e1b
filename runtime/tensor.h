// Tensor: a dtype, a fully known shape and a reference to a buffer. Copies share the
// buffer; Reshaped() views the same memory with another shape.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include <Eigen/Core>

#include "ir/dtype.h"
#include "ir/proto/tensor.pb.h"
#include "ir/shape.h"
#include "runtime/allocator.h"

namespace graphjit {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

template <typename T>
constexpr DType kDTypeOf = DType::kInvalid;
template <>
inline constexpr DType kDTypeOf<float> = DType::kFloat;
template <>
inline constexpr DType kDTypeOf<double> = DType::kDouble;
template <>
inline constexpr DType kDTypeOf<half> = DType::kHalf;
template <>
inline constexpr DType kDTypeOf<bfloat16> = DType::kBFloat16;
template <>
inline constexpr DType kDTypeOf<int32_t> = DType::kInt32;
template <>
inline constexpr DType kDTypeOf<int64_t> = DType::kInt64;
template <>
inline constexpr DType kDTypeOf<bool> = DType::kBool;
template <>
inline constexpr DType kDTypeOf<uint8_t> = DType::kUInt8;
template <>
inline constexpr DType kDTypeOf<int8_t> = DType::kInt8;
template <>
inline constexpr DType kDTypeOf<int16_t> = DType::kInt16;

// f16 and bf16 are stored as 16 bits and computed in f32.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer)
      : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)) {}

  // Uninitialized storage for a fully defined shape.
  static StatusOr<Tensor> Allocate(DType dtype, const Shape& shape, Allocator* allocator = nullptr);
  // A scalar or vector holding the given values.
  template <typename T>
  static Tensor Scalar(T value);
  template <typename T>
  static Tensor Vector(const std::vector<T>& values);

  bool valid() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t bytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype_); }
  void* raw() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw());
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  // Same buffer, another shape with the same number of elements.
  Tensor Reshaped(Shape shape) const { return Tensor(dtype_, std::move(shape), buffer_); }
  // A deep copy.
  StatusOr<Tensor> Clone(Allocator* allocator = nullptr) const;

  // Value of element i converted to double / int64 (for shape and axis inputs).
  double ValueAsDouble(int64_t i) const;
  int64_t ValueAsInt(int64_t i) const;

  std::string DebugString(int max_values = 8) const;

 private:
  DType dtype_ = DType::kInvalid;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
};

// TensorProto <-> Tensor. Checks that the content matches the declared dtype and shape.
StatusOr<Tensor> TensorFromProto(const tensorflow::TensorProto& proto, Allocator* allocator = nullptr);
void TensorToProto(const Tensor& tensor, tensorflow::TensorProto* proto);

// Converts element types (the semantics of TensorFlow's Cast, without truncation flags).
StatusOr<Tensor> CastTensor(const Tensor& input, DType to, Allocator* allocator = nullptr);

// Calls f(T{}) with T the C++ type of `dtype`, for every supported dtype.
template <typename F>
auto VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat: return f(float{});
    case DType::kDouble: return f(double{});
    case DType::kHalf: return f(half{});
    case DType::kBFloat16: return f(bfloat16{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kBool: return f(bool{});
    case DType::kUInt8: return f(uint8_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kInt16: return f(int16_t{});
    default: break;
  }
  assert(false && "VisitDType: unsupported dtype");
  return f(float{});
}

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t = Allocate(kDTypeOf<T>, Shape{}).value();
  *t.data<T>() = value;
  return t;
}

template <typename T>
Tensor Tensor::Vector(const std::vector<T>& values) {
  Tensor t = Allocate(kDTypeOf<T>, Shape{static_cast<int64_t>(values.size())}).value();
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

}  // namespace graphjit
