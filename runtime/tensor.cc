#include "runtime/tensor.h"

#include <cstring>
#include <limits>
#include <sstream>

#include "ir/attr.h"

namespace graphjit {

StatusOr<Tensor> Tensor::Allocate(DType dtype, const Shape& shape, Allocator* allocator) {
  if (!IsSupportedDType(dtype)) return Unimplemented("tensors of type " + DTypeName(dtype) + " are not supported");
  if (!shape.IsFullyDefined()) return Internal("allocating a tensor of partial shape " + shape.ToString());
  auto bytes = CheckedBytes(shape.dims(), static_cast<int64_t>(DTypeSize(dtype)));
  if (!bytes.ok()) return ResourceExhausted("tensor of shape " + shape.ToString() + " is too large");
  GJ_ASSIGN_OR_RETURN(auto buffer, Buffer::Create(allocator ? allocator : Allocator::Default(), *bytes));
  return Tensor(dtype, shape, std::move(buffer));
}

StatusOr<Tensor> Tensor::Clone(Allocator* allocator) const {
  GJ_ASSIGN_OR_RETURN(Tensor t, Allocate(dtype_, shape_, allocator));
  if (bytes() > 0) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

double Tensor::ValueAsDouble(int64_t i) const {
  return VisitDType(dtype_, [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(static_cast<ComputeType<T>>(data<T>()[i]));
  });
}

int64_t Tensor::ValueAsInt(int64_t i) const {
  return VisitDType(dtype_, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    return static_cast<int64_t>(static_cast<ComputeType<T>>(data<T>()[i]));
  });
}

std::string Tensor::DebugString(int max_values) const {
  std::ostringstream ss;
  ss << DTypeName(dtype_) << shape_.ToString() << " {";
  int64_t n = num_elements();
  for (int64_t i = 0; i < n && i < max_values; ++i) ss << (i ? ", " : "") << ValueAsDouble(i);
  if (n > max_values) ss << ", ...";
  ss << "}";
  return ss.str();
}

namespace {

// Copies `count` typed proto values into `n` elements, repeating the last value.
template <typename T, typename Values, typename Convert>
void FillFromValues(T* out, int64_t n, const Values& values, Convert convert) {
  int count = values.size();
  for (int64_t i = 0; i < n; ++i) out[i] = i < count ? convert(values.Get(i)) : convert(values.Get(count - 1));
}

}  // namespace

StatusOr<Tensor> TensorFromProto(const tensorflow::TensorProto& proto, Allocator* allocator) {
  DType dtype = DTypeFromProto(proto.dtype());
  if (!IsSupportedDType(dtype)) return Unimplemented("constant tensors of type " + DTypeName(dtype) + " are not supported");
  Shape shape = ShapeFromProto(proto.tensor_shape());
  if (!shape.IsFullyDefined()) return InvalidArgument("constant tensor has a partial shape " + shape.ToString());
  auto n_or = CheckedNumElements(shape.dims());
  if (!n_or.ok()) return n_or.status().WithContext("constant tensor");
  int64_t n = *n_or;
  size_t elem = DTypeSize(dtype);
  if (!proto.tensor_content().empty()) {
    if (n > 0 && proto.tensor_content().size() / elem != static_cast<size_t>(n))
      return InvalidArgument("constant tensor of shape " + shape.ToString() + " and type " + DTypeName(dtype) + " needs " +
                             std::to_string(n * elem) + " bytes of content, has " +
                             std::to_string(proto.tensor_content().size()));
    if (proto.tensor_content().size() != static_cast<size_t>(n) * elem)
      return InvalidArgument("constant tensor content size " + std::to_string(proto.tensor_content().size()) +
                             " does not match its shape " + shape.ToString());
    GJ_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, shape, allocator));
    if (n > 0) std::memcpy(t.raw(), proto.tensor_content().data(), n * elem);
    return t;
  }

  int count = 0;
  switch (dtype) {
    case DType::kFloat: count = proto.float_val_size(); break;
    case DType::kDouble: count = proto.double_val_size(); break;
    case DType::kHalf:
    case DType::kBFloat16: count = proto.half_val_size(); break;
    case DType::kInt32:
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16: count = proto.int_val_size(); break;
    case DType::kInt64: count = proto.int64_val_size(); break;
    case DType::kBool: count = proto.bool_val_size(); break;
    default: break;
  }
  if (count > n)
    return InvalidArgument("constant tensor of shape " + shape.ToString() + " has " + std::to_string(count) +
                           " values, more than its " + std::to_string(n) + " elements");
  GJ_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, shape, allocator));
  if (n == 0) return t;
  if (count == 0) {
    std::memset(t.raw(), 0, t.bytes());
    return t;
  }
  switch (dtype) {
    case DType::kFloat: FillFromValues(t.data<float>(), n, proto.float_val(), [](float v) { return v; }); break;
    case DType::kDouble: FillFromValues(t.data<double>(), n, proto.double_val(), [](double v) { return v; }); break;
    case DType::kHalf:
      FillFromValues(t.data<half>(), n, proto.half_val(),
                     [](int32_t v) { return Eigen::numext::bit_cast<half>(static_cast<uint16_t>(v)); });
      break;
    case DType::kBFloat16:
      FillFromValues(t.data<bfloat16>(), n, proto.half_val(),
                     [](int32_t v) { return Eigen::numext::bit_cast<bfloat16>(static_cast<uint16_t>(v)); });
      break;
    case DType::kInt32: FillFromValues(t.data<int32_t>(), n, proto.int_val(), [](int32_t v) { return v; }); break;
    case DType::kUInt8:
      FillFromValues(t.data<uint8_t>(), n, proto.int_val(), [](int32_t v) { return static_cast<uint8_t>(v); });
      break;
    case DType::kInt8:
      FillFromValues(t.data<int8_t>(), n, proto.int_val(), [](int32_t v) { return static_cast<int8_t>(v); });
      break;
    case DType::kInt16:
      FillFromValues(t.data<int16_t>(), n, proto.int_val(), [](int32_t v) { return static_cast<int16_t>(v); });
      break;
    case DType::kInt64: FillFromValues(t.data<int64_t>(), n, proto.int64_val(), [](int64_t v) { return v; }); break;
    case DType::kBool: FillFromValues(t.data<bool>(), n, proto.bool_val(), [](bool v) { return v; }); break;
    default: break;
  }
  return t;
}

void TensorToProto(const Tensor& tensor, tensorflow::TensorProto* proto) {
  proto->Clear();
  proto->set_dtype(static_cast<tensorflow::DataType>(tensor.dtype()));
  ShapeToProto(tensor.shape(), proto->mutable_tensor_shape());
  proto->set_tensor_content(tensor.raw(), tensor.bytes());
}

namespace {

// Float -> integer as x86 does it (and so TensorFlow on x86): truncation toward zero;
// NaN and values outside the range give the "integer indefinite" (the minimum) for 32 and
// 64 bits; narrower types take the low bits of the 32-bit result. Defined behaviour
// everywhere, unlike a plain static_cast.
template <typename Out>
Out FloatToInt(double v) {
  using Wide = std::conditional_t<sizeof(Out) == 8, int64_t, int32_t>;
  constexpr double lo = static_cast<double>(std::numeric_limits<Wide>::min());
  constexpr double hi = -lo;  // 2^31 or 2^63
  Wide w = (v != v || v < lo || v >= hi) ? std::numeric_limits<Wide>::min() : static_cast<Wide>(v);
  return static_cast<Out>(w);
}

}  // namespace

StatusOr<Tensor> CastTensor(const Tensor& input, DType to, Allocator* allocator) {
  if (input.dtype() == to) return input;
  GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(to, input.shape(), allocator));
  const int64_t n = input.num_elements();
  VisitDType(input.dtype(), [&](auto in_tag) {
    using In = decltype(in_tag);
    VisitDType(to, [&](auto out_tag) {
      using Out = decltype(out_tag);
      const In* src = input.data<In>();
      Out* dst = out.data<Out>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<Out, bool>) {
          dst[i] = static_cast<ComputeType<In>>(src[i]) != ComputeType<In>(0);
        } else if constexpr (std::is_same_v<In, bool>) {
          dst[i] = static_cast<Out>(src[i] ? 1 : 0);
        } else if constexpr (std::is_integral_v<Out> && !std::is_integral_v<ComputeType<In>>) {
          dst[i] = FloatToInt<Out>(static_cast<double>(static_cast<ComputeType<In>>(src[i])));
        } else {
          dst[i] = static_cast<Out>(static_cast<ComputeType<Out>>(static_cast<ComputeType<In>>(src[i])));
        }
      }
    });
  });
  return out;
}

}  // namespace graphjit
