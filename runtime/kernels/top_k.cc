// TopKV2: the k largest elements of each row (the last dim), sorted descending, and their
// indices; of equal values the lower index first, as TensorFlow's CPU kernel orders them.
// (Where a row holds NaNs, TensorFlow's order is its sort's accident; graphjit's takes NaN
// as smaller than every number.)
#include <algorithm>
#include <numeric>

#include "ir/attr.h"
#include "runtime/kernels/common.h"

namespace graphjit {
namespace {

OpDef TopKOp() {
  OpDef def;
  def.name = "TopKV2";
  def.min_inputs = def.max_inputs = 2;
  def.value_inputs = {1};
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    const tensorflow::AttrValue* index = c.node.FindAttr("index_type");
    const DType index_type = index ? static_cast<DType>(index->type()) : DType::kInt32;
    if (index_type != DType::kInt32 && index_type != DType::kInt64) return c.TypeError("index_type must be int32 or int64");
    const Shape& in = c.shape(0);
    if (!in.unknown_rank() && in.rank() < 1) return c.ShapeError("input must be at least a vector");
    int64_t k = -1;
    if (c.value(1)) {
      GJ_ASSIGN_OR_RETURN(k, ScalarInt(c, 1));
      if (k < 0) return c.ShapeError("k must be non-negative, got " + std::to_string(k));
      const int64_t n = in.unknown_rank() ? -1 : in.dim(in.rank() - 1);
      if (n >= 0 && n < k)
        return c.ShapeError("input must have at least k = " + std::to_string(k) + " columns, got " + std::to_string(n));
    }
    Shape out = Shape::UnknownRank();
    if (!in.unknown_rank()) {
      std::vector<int64_t> dims = in.dims();
      dims.back() = k;
      out = Shape(dims);
    }
    c.AddOutput(t, out);
    c.AddOutput(index_type, out);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * values, ctx.AllocateOutput(0));
    GJ_ASSIGN_OR_RETURN(Tensor * indices, ctx.AllocateOutput(1));
    const Tensor& in = ctx.input(0);
    const int64_t n = in.shape().dim(in.shape().rank() - 1), k = values->shape().dim(values->shape().rank() - 1);
    if (k == 0 || n == 0) return Status::Ok();
    const int64_t rows = in.num_elements() / n;
    return VisitTypes<TypeSet::kNumeric>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      ctx.ParallelFor(rows, n * 8, [&](int64_t b, int64_t e) {
        std::vector<int64_t> order(n);
        for (int64_t r = b; r < e; ++r) {
          const T* row = in.data<T>() + r * n;
          std::iota(order.begin(), order.end(), 0);
          auto before = [row](int64_t a, int64_t c) {
            const C x = static_cast<C>(row[a]), y = static_cast<C>(row[c]);
            const bool x_nan = x != x, y_nan = y != y;
            if (x_nan || y_nan) return y_nan && (!x_nan || a < c);
            return x > y || (x == y && a < c);
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            values->data<T>()[r * k + j] = row[order[j]];
            if (indices->dtype() == DType::kInt32)
              indices->data<int32_t>()[r * k + j] = static_cast<int32_t>(order[j]);
            else
              indices->data<int64_t>()[r * k + j] = order[j];
          }
        }
      });
      return Status::Ok();
    });
  };
  return def;
}

const bool kRegistered = RegisterOps({TopKOp()});

}  // namespace
}  // namespace graphjit
