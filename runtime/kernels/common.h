// Helpers shared by the kernel files: compile-time dtype sets and visitors.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/op_registry.h"

// oneDNN parallelizes with OpenMP (libgomp); kernels keep it to one thread per call
// (OneDnnParallelFor in fused.h).
extern "C" void omp_set_num_threads(int num_threads);

namespace graphjit {

enum class TypeSet { kFloat, kNumeric, kBool, kAll };

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <TypeSet S, typename T>
constexpr bool InSet() {
  if constexpr (S == TypeSet::kFloat) return kIsFloat<T>;
  if constexpr (S == TypeSet::kNumeric) return !std::is_same_v<T, bool>;
  if constexpr (S == TypeSet::kBool) return std::is_same_v<T, bool>;
  return true;
}

// Signed integers wrap around, as TensorFlow's kernels do: their arithmetic is done in an
// unsigned type of at least 32 bits (a C++ signed overflow is undefined; an unsigned one
// wraps, and converting back is modular).
template <typename T>
using WrapType =
    std::conditional_t<std::is_integral_v<T> && std::is_signed_v<T>, std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>, T>;

template <typename T>
T WrapAdd(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
T WrapMul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

bool InSet(DType d, TypeSet s);
const char* TypeSetName(TypeSet s);
// A type error unless `t` is in `s`.
Status CheckTypeSet(const InferenceContext& c, DType t, TypeSet s);

// Calls f(T{}) for the C++ type T of `dtype` if it is in S (instantiating f only for
// those types); an Internal error otherwise (inference rejects such types first).
template <TypeSet S, typename F>
Status VisitTypes(DType dtype, F&& f) {
  auto call = [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (InSet<S, T>()) {
      return f(tag);
    } else {
      return Internal("kernel instantiated for unsupported type " + DTypeName(dtype));
    }
  };
  switch (dtype) {
    case DType::kFloat: return call(float{});
    case DType::kDouble: return call(double{});
    case DType::kHalf: return call(half{});
    case DType::kBFloat16: return call(bfloat16{});
    case DType::kInt32: return call(int32_t{});
    case DType::kInt64: return call(int64_t{});
    case DType::kBool: return call(bool{});
    case DType::kUInt8: return call(uint8_t{});
    case DType::kInt8: return call(int8_t{});
    case DType::kInt16: return call(int16_t{});
    default: return Unimplemented("type " + DTypeName(dtype) + " is not supported");
  }
}

// Row-major element strides of `dims`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);
// The same rank as `s` with every dim unknown (or unknown rank).
Shape UnknownDimsLike(const Shape& s);

// Normalises an axis in [-rank, rank) to [0, rank).
StatusOr<int> NormalizeAxis(const InferenceContext& c, int64_t axis, int rank);

// The single value of a scalar-like input (an axis, a depth): a shape error unless the
// known value has exactly one element.
StatusOr<int64_t> ScalarInt(const InferenceContext& c, int i);

// Reads an integer vector (or scalar) input value, e.g. a shape or axes input.
std::vector<int64_t> IntValues(const Tensor& t);

// Building blocks shared by kernels (Einsum composes them):
// out dim k = in dim perm[k] (array.cc).
StatusOr<Tensor> TransposeTensor(const KernelContext& ctx, const Tensor& in, const std::vector<int>& perm);
// Copies the block of `in` that starts at `begin` and has out's shape (indexing.cc).
void CopyBlock(const Tensor& in, const std::vector<int64_t>& begin, Tensor* out);
// [batch, m, k] x [batch, k, n] -> [batch, m, n] for float types (matmul.cc).
StatusOr<Tensor> BatchMatMul3(const KernelContext& ctx, const Tensor& a, const Tensor& b);

}  // namespace graphjit
