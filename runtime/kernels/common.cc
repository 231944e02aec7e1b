#include "runtime/kernels/common.h"

#include <fstream>

#include "runtime/build_info.h"

namespace graphjit {

const char* KernelsIsa() {
#if defined(__AVX512F__)
  return "x86-64-v4 (AVX-512)";
#elif defined(__AVX2__)
  return "x86-64-v3 (AVX2)";
#elif defined(__SSE4_2__)
  return "x86-64-v2 (SSE4.2)";
#elif defined(__x86_64__)
  return "x86-64 (SSE2)";
#else
  return "not x86-64";
#endif
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t value = line.find_first_not_of(" \t", line.find(':') + 1);
      if (value != std::string::npos) return line.substr(value);
    }
  return "unknown CPU";
}

bool InSet(DType d, TypeSet s) {
  switch (s) {
    case TypeSet::kFloat: return IsFloatingPoint(d);
    case TypeSet::kNumeric: return IsFloatingPoint(d) || IsInteger(d);
    case TypeSet::kBool: return d == DType::kBool;
    case TypeSet::kAll: return IsSupportedDType(d);
  }
  return false;
}

const char* TypeSetName(TypeSet s) {
  switch (s) {
    case TypeSet::kFloat: return "a floating-point type";
    case TypeSet::kNumeric: return "a numeric type";
    case TypeSet::kBool: return "bool";
    case TypeSet::kAll: return "a supported type";
  }
  return "";
}

Status CheckTypeSet(const InferenceContext& c, DType t, TypeSet s) {
  if (!InSet(t, s)) return c.TypeError("type " + DTypeName(t) + " is not supported here; expected " + TypeSetName(s));
  return Status::Ok();
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

Shape UnknownDimsLike(const Shape& s) {
  return s.unknown_rank() ? Shape::UnknownRank() : Shape(std::vector<int64_t>(s.rank(), -1));
}

StatusOr<int> NormalizeAxis(const InferenceContext& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    return c.ShapeError("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

StatusOr<int64_t> ScalarInt(const InferenceContext& c, int i) {
  const Tensor* v = c.value(i);
  if (v == nullptr || v->num_elements() != 1) return c.ShapeError("input " + std::to_string(i) + " must hold a single value");
  return v->ValueAsInt(0);
}

std::vector<int64_t> IntValues(const Tensor& t) {
  std::vector<int64_t> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.ValueAsInt(i);
  return v;
}

}  // namespace graphjit
