#include "jit/numerics_guard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

namespace graphjit {

namespace {

// The JIT's relative tolerance for floats of `dtype` (jit.h, JitStats).
double RelativeTolerance(DType dtype) { return dtype == DType::kHalf ? 1e-2 : dtype == DType::kBFloat16 ? 3e-2 : 1e-4; }

// "element 5 [1, 2" for the flat index `i` of `shape`.
std::string ElementAt(const Shape& shape, int64_t i) {
  std::string where = "element " + std::to_string(i) + " [";
  int64_t flat = i;
  std::vector<int64_t> index(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = shape.dim(d) ? flat % shape.dim(d) : 0;
    flat = shape.dim(d) ? flat / shape.dim(d) : 0;
  }
  for (size_t d = 0; d < index.size(); ++d) where += (d ? ", " : "") + std::to_string(index[d]);
  return where;
}

}  // namespace

std::string FirstMismatch(const Tensor& got, const Tensor& want, DType computed_in) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "it is " + DTypeName(got.dtype()) + got.shape().ToString() + ", op by op's " + DTypeName(want.dtype()) +
           want.shape().ToString();
  const bool exact = !IsFloatingPoint(got.dtype());
  const double rtol = std::max(RelativeTolerance(got.dtype()), RelativeTolerance(computed_in));
  const int64_t n = got.num_elements();
  double largest = 0;
  for (int64_t i = 0; !exact && i < n; ++i) {
    const double w = std::fabs(want.ValueAsDouble(i));
    if (std::isfinite(w)) largest = std::max(largest, w);
  }
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    double a = 0, w = 0, tolerance = 0;
    if (exact) {
      ok = got.ValueAsInt(i) == want.ValueAsInt(i);
    } else {
      a = got.ValueAsDouble(i), w = want.ValueAsDouble(i);
      tolerance = rtol * (std::fabs(w) + largest);
      if (std::isnan(w) || std::isinf(w))
        ok = std::isnan(w) ? std::isnan(a) : a == w;
      else
        ok = std::isfinite(a) && std::fabs(a - w) <= tolerance;
    }
    if (ok) continue;
    char values[160];
    if (exact)
      std::snprintf(values, sizeof values, "]: compiled %lld, op by op %lld", static_cast<long long>(got.ValueAsInt(i)),
                    static_cast<long long>(want.ValueAsInt(i)));
    else
      std::snprintf(values, sizeof values, "]: compiled %.9g, op by op %.9g (tolerance %.3g)", a, w, tolerance);
    return ElementAt(got.shape(), i) + values;
  }
  return "";
}

std::string FirstOutputMismatch(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                const std::vector<std::string>& names, DType computed_in) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::string why = FirstMismatch(got[i], want[i], computed_in); !why.empty())
      return "output " + std::to_string(i) + " ('" + names[i] + "' of its body), " + why;
  return "";
}

std::string NumericsDumpDir(const SessionOptions* options, const std::string& cluster) {
  const std::string base =
      options && !options->dump_to.empty()
          ? options->dump_to
          : (std::filesystem::temp_directory_path() / ("graphjit-numerics-" + std::to_string(getpid()))).string();
  return base + "/" + cluster;
}

}  // namespace graphjit
