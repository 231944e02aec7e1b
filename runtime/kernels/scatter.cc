// Ops that write elements where indices say, and the generators beside them: ScatterNd,
// TensorScatterUpdate and TensorScatterAdd, UnsortedSegmentSum and SegmentSum, Unique,
// Bincount and DenseBincount, LinSpace. As TensorFlow's CPU kernels: sums in the order of
// the updates, an index out of range an error (a negative segment id dropped by
// UnsortedSegmentSum), a later update of the same element the one TensorScatterUpdate keeps.
#include <cstring>
#include <map>

#include "ir/attr.h"
#include "runtime/kernels/common.h"

namespace graphjit {
namespace {

// The elements of a tensor's dims from `from` on, and before it.
int64_t Elements(const Shape& s, int from, int to = -1) {
  int64_t n = 1;
  for (int d = from; d < (to < 0 ? s.rank() : to); ++d) n *= s.dim(d);
  return n;
}

// The row-major slice offset of index row `r` of `indices` ([..., K]) into `shape`, or an
// error naming it.
StatusOr<int64_t> SliceOffset(const KernelContext& ctx, const Tensor& indices, int64_t r, const Shape& shape) {
  const int64_t k = indices.shape().dim(indices.shape().rank() - 1);
  int64_t offset = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t v = indices.ValueAsInt(r * k + j), n = shape.dim(static_cast<int>(j));
    if (v < 0 || v >= n) {
      std::string row;
      for (int64_t q = 0; q < k; ++q) row += (q ? ", " : "") + std::to_string(indices.ValueAsInt(r * k + q));
      return ctx.Error("indices[" + std::to_string(r) + "] = [" + row + "] does not index into shape " + shape.ToString());
    }
    offset = offset * n + v;
  }
  return offset;
}

// ---- ScatterNd, TensorScatterUpdate, TensorScatterAdd --------------------------------------

enum class Scatter { kAdd, kUpdate };

// updates [I..., S...] written at indices [I..., K] of a tensor of `shape` (S = shape[K:]).
Status CheckScatterShapes(const InferenceContext& c, const Shape& indices, const Shape& updates, const Shape& shape) {
  if (indices.unknown_rank() || updates.unknown_rank() || shape.unknown_rank()) return Status::Ok();
  if (indices.rank() < 1) return c.ShapeError("indices must be at least a vector, got " + indices.ToString());
  const int64_t k = indices.dim(indices.rank() - 1);
  if (k < 0) return Status::Ok();
  if (k > shape.rank()) return c.ShapeError("index rows of " + std::to_string(k) + " exceed the rank of " + shape.ToString());
  std::vector<int64_t> want(indices.dims().begin(), indices.dims().end() - 1);
  want.insert(want.end(), shape.dims().begin() + k, shape.dims().end());
  if (updates.rank() != static_cast<int>(want.size()))
    return c.ShapeError("updates must be " + Shape(want).ToString() + ", got " + updates.ToString());
  for (size_t d = 0; d < want.size(); ++d)
    if (want[d] >= 0 && updates.dim(static_cast<int>(d)) >= 0 && want[d] != updates.dim(static_cast<int>(d)))
      return c.ShapeError("updates must be " + Shape(want).ToString() + ", got " + updates.ToString());
  return Status::Ok();
}

template <typename T>
Status ScatterInto(const KernelContext& ctx, const Tensor& indices, const Tensor& updates, Scatter how, Tensor* out) {
  const int64_t rows = Elements(indices.shape(), 0, indices.shape().rank() - 1);
  const int64_t k = indices.shape().dim(indices.shape().rank() - 1);
  const int64_t slice = Elements(out->shape(), static_cast<int>(k));
  for (int64_t r = 0; r < rows; ++r) {
    GJ_ASSIGN_OR_RETURN(const int64_t offset, SliceOffset(ctx, indices, r, out->shape()));
    T* dst = out->data<T>() + offset * slice;
    const T* src = updates.data<T>() + r * slice;
    for (int64_t i = 0; i < slice; ++i) dst[i] = how == Scatter::kUpdate ? src[i] : WrapAdd(dst[i], src[i]);
  }
  return Status::Ok();
}

// ScatterNd(indices, updates, shape): zeros, the updates added. TensorScatterUpdate and
// TensorScatterAdd(tensor, indices, updates): the tensor with them written or added.
OpDef ScatterOp(const char* name, Scatter how, bool into_tensor) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 3;
  if (!into_tensor) def.value_inputs = {2};
  def.infer = [into_tensor](InferenceContext& c) -> Status {
    const int idx = into_tensor ? 1 : 0, upd = into_tensor ? 2 : 1;
    GJ_ASSIGN_OR_RETURN(DType t,
                        c.TypeAttrMatching("T", into_tensor ? std::initializer_list<int>{0, 2} : std::initializer_list<int>{1}));
    GJ_ASSIGN_OR_RETURN(DType index, c.TypeAttrMatching("Tindices", {idx}));
    if (index != DType::kInt32 && index != DType::kInt64) return c.TypeError("Tindices must be int32 or int64");
    Shape shape = Shape::UnknownRank();
    if (into_tensor) {
      shape = c.shape(0);
    } else if (c.value(2)) {
      std::vector<int64_t> dims = IntValues(*c.value(2));
      for (int64_t d : dims)
        if (d < 0) return c.ShapeError("shape must be non-negative, got " + Shape(dims).ToString());
      auto n = CheckedNumElements(dims);
      if (!n.ok()) return c.ShapeError("shape " + Shape(dims).ToString() + ": " + n.status().message());
      shape = Shape(dims);
    }
    GJ_RETURN_IF_ERROR(CheckScatterShapes(c, c.shape(idx), c.shape(upd), shape));
    c.AddOutput(t, shape);
    return Status::Ok();
  };
  def.compute = [how, into_tensor](KernelContext& ctx) -> Status {
    const Tensor& indices = ctx.input(into_tensor ? 1 : 0);
    const Tensor& updates = ctx.input(into_tensor ? 2 : 1);
    GJ_ASSIGN_OR_RETURN(Tensor * out, into_tensor ? ctx.ForwardInputOrAllocateOutput({0}, 0) : ctx.AllocateOutput(0));
    if (into_tensor) {
      if (out->raw() != ctx.input(0).raw()) std::memcpy(out->raw(), ctx.input(0).raw(), ctx.input(0).bytes());
    } else {
      std::memset(out->raw(), 0, out->bytes());
    }
    return VisitTypes<TypeSet::kAll>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        if (how == Scatter::kAdd) return ctx.Error("bool tensors cannot be added");
      }
      return ScatterInto<T>(ctx, indices, updates, how, out);
    });
  };
  return def;
}

// ---- UnsortedSegmentSum, SegmentSum ---------------------------------------------------------

// data [S..., R...] summed into output [num_segments, R...] by segment_ids [S...], in the
// order of the data. UnsortedSegmentSum: num_segments given, a negative id dropped, one past
// it an error. SegmentSum: ids a sorted vector, num_segments one past the last.
OpDef SegmentSumOp(const char* name, bool sorted) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = sorted ? 2 : 3;
  def.value_inputs = sorted ? std::vector<int>{1} : std::vector<int>{2};
  def.infer = [sorted](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    const Shape &data = c.shape(0), &ids = c.shape(1);
    if (sorted && !ids.unknown_rank() && ids.rank() != 1)
      return c.ShapeError("segment_ids must be a vector, got " + ids.ToString());
    int64_t segments = -1;
    if (sorted && c.value(1)) {
      const Tensor& v = *c.value(1);
      for (int64_t i = 0; i < v.num_elements(); ++i) {
        if (v.ValueAsInt(i) < 0) return c.ShapeError("segment ids must be non-negative, got " + std::to_string(v.ValueAsInt(i)));
        if (i > 0 && v.ValueAsInt(i) < v.ValueAsInt(i - 1)) return c.ShapeError("segment ids are not increasing");
      }
      segments = v.num_elements() ? v.ValueAsInt(v.num_elements() - 1) + 1 : 0;
    } else if (!sorted && c.value(2)) {
      GJ_ASSIGN_OR_RETURN(segments, ScalarInt(c, 2));
      if (segments < 0) return c.ShapeError("num_segments must be non-negative, got " + std::to_string(segments));
    }
    if (data.unknown_rank() || ids.unknown_rank()) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    if (ids.rank() > data.rank())
      return c.ShapeError("segment_ids " + ids.ToString() + " must be a prefix of data's shape " + data.ToString());
    for (int d = 0; d < ids.rank(); ++d)
      if (ids.dim(d) >= 0 && data.dim(d) >= 0 && ids.dim(d) != data.dim(d))
        return c.ShapeError("segment_ids " + ids.ToString() + " must be a prefix of data's shape " + data.ToString());
    std::vector<int64_t> dims = {segments};
    dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [sorted](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor &data = ctx.input(0), &ids = ctx.input(1);
    std::memset(out->raw(), 0, out->bytes());
    const int64_t segments = out->shape().dim(0), slice = Elements(out->shape(), 1);
    return VisitTypes<TypeSet::kNumeric>(data.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      std::vector<C> sums(out->num_elements(), C(0));
      for (int64_t i = 0; i < ids.num_elements(); ++i) {
        const int64_t s = ids.ValueAsInt(i);
        if (s < 0 && !sorted) continue;
        if (s < 0 || s >= segments)
          return ctx.Error("segment_ids[" + std::to_string(i) + "] = " + std::to_string(s) + " is out of range [0, " +
                           std::to_string(segments) + ")");
        for (int64_t j = 0; j < slice; ++j)
          sums[s * slice + j] = WrapAdd(sums[s * slice + j], static_cast<C>(data.data<T>()[i * slice + j]));
      }
      for (size_t j = 0; j < sums.size(); ++j) out->data<T>()[j] = static_cast<T>(sums[j]);
      return Status::Ok();
    });
  };
  return def;
}

// ---- Unique --------------------------------------------------------------------------------

// Unique(x): x's distinct values in the order they first appear, and for each element of x
// the index of its value among them (out_idx: int32 or int64): equal values are one (-0
// and +0 too), each NaN its own, as TensorFlow's hash map of values has them.
OpDef UniqueOp() {
  OpDef def;
  def.name = "Unique";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    const tensorflow::AttrValue* index = c.node.FindAttr("out_idx");
    const DType index_type = index ? static_cast<DType>(index->type()) : DType::kInt32;
    if (index_type != DType::kInt32 && index_type != DType::kInt64) return c.TypeError("out_idx must be int32 or int64");
    if (!c.shape(0).unknown_rank() && c.shape(0).rank() != 1)
      return c.ShapeError("x must be a vector, got " + c.shape(0).ToString());
    c.AddOutput(t, Shape{-1});
    c.AddOutput(index_type, c.shape(0).unknown_rank() ? Shape{-1} : c.shape(0));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> first, idx(x.num_elements());
    GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kAll>(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      std::map<C, int64_t> seen;  // equal values one (-0 and +0 too), each NaN its own
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        const C v = static_cast<C>(x.data<T>()[i]);
        if (v != v) {
          idx[i] = static_cast<int64_t>(first.size());
          first.push_back(i);
          continue;
        }
        auto [it, added] = seen.emplace(v == C(0) ? C(0) : v, static_cast<int64_t>(first.size()));
        if (added) first.push_back(i);
        idx[i] = it->second;
      }
      return Status::Ok();
    }));
    const size_t elem = DTypeSize(x.dtype());
    GJ_ASSIGN_OR_RETURN(Tensor y, Tensor::Allocate(x.dtype(), Shape{static_cast<int64_t>(first.size())}, ctx.allocator));
    for (size_t j = 0; j < first.size(); ++j)
      std::memcpy(static_cast<char*>(y.raw()) + j * elem, static_cast<const char*>(x.raw()) + first[j] * elem, elem);
    ctx.ForwardOutput(0, std::move(y));
    GJ_ASSIGN_OR_RETURN(Tensor * out_idx, ctx.AllocateOutput(1));
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (out_idx->dtype() == DType::kInt32)
        out_idx->data<int32_t>()[i] = static_cast<int32_t>(idx[i]);
      else
        out_idx->data<int64_t>()[i] = idx[i];
    }
    return Status::Ok();
  };
  return def;
}

// ---- Bincount, DenseBincount ---------------------------------------------------------------

// Bincount(arr, size, weights): out[v] counts (or sums the weights of) the elements of arr
// equal to v, for v in [0, size); larger values are dropped, a negative one is an error.
// DenseBincount(input, size, weights, binary_output): the same per row of a matrix input,
// 1 where any is with binary_output.
OpDef BincountOp(const char* name, bool dense) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 3;
  def.value_inputs = {1};
  def.infer = [dense](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {2}));
    if (t != DType::kInt32 && t != DType::kInt64 && t != DType::kFloat && t != DType::kDouble)
      return c.TypeError("T must be int32, int64, float32 or float64");
    GJ_RETURN_IF_ERROR(c.ExpectDType(
        0, dense ? std::initializer_list<DType>{DType::kInt32, DType::kInt64} : std::initializer_list<DType>{DType::kInt32}));
    const Shape &in = c.shape(0), &weights = c.shape(2);
    int64_t size = -1;
    if (c.value(1)) {
      GJ_ASSIGN_OR_RETURN(size, ScalarInt(c, 1));
      if (size < 0) return c.ShapeError("size must be non-negative, got " + std::to_string(size));
    }
    if (!weights.unknown_rank() && weights.num_elements() != 0 && !in.unknown_rank() && weights.IsFullyDefined() &&
        in.IsFullyDefined() && weights != in)
      return c.ShapeError("weights must be empty or of the input's shape " + in.ToString() + ", got " + weights.ToString());
    if (dense && !in.unknown_rank() && in.rank() > 2)
      return c.ShapeError("input must be a vector or a matrix, got " + in.ToString());
    c.AddOutput(t, dense && !in.unknown_rank() && in.rank() == 2 ? Shape{in.dim(0), size} : Shape{size});
    return Status::Ok();
  };
  def.compute = [dense](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    std::memset(out->raw(), 0, out->bytes());
    const Tensor &in = ctx.input(0), &weights = ctx.input(2);
    const bool binary = dense && GetBoolAttrOr(ctx.node, "binary_output", false).value();
    const int64_t size = out->shape().dim(out->shape().rank() - 1);
    const int64_t row = in.shape().rank() == 2 ? in.shape().dim(1) : in.num_elements();
    return VisitTypes<TypeSet::kNumeric>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        const int64_t v = in.ValueAsInt(i);
        if (v < 0) return ctx.Error("input must be non-negative, got " + std::to_string(v) + " at " + std::to_string(i));
        if (v >= size) continue;
        T& bin = out->data<T>()[(in.shape().rank() == 2 ? i / row * size : 0) + v];
        if (binary)
          bin = T(1);
        else
          bin = WrapAdd(bin, weights.num_elements() ? weights.data<T>()[i] : T(1));
      }
      return Status::Ok();
    });
  };
  return def;
}

// ---- LinSpace ------------------------------------------------------------------------------

// num values from start to stop: start + i * step (step = (stop - start) / (num - 1) in the
// type), the last exactly stop, as TensorFlow's kernel writes them.
OpDef LinSpaceOp() {
  OpDef def;
  def.name = "LinSpace";
  def.min_inputs = def.max_inputs = 3;
  def.value_inputs = {2};
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    GJ_RETURN_IF_ERROR(c.ExpectDType(2, {DType::kInt32, DType::kInt64}));
    for (int i = 0; i < 3; ++i)
      if (!c.shape(i).unknown_rank() && c.shape(i).rank() != 0) return c.ShapeError("start, stop and num must be scalars");
    int64_t num = -1;
    if (c.value(2)) {
      GJ_ASSIGN_OR_RETURN(num, ScalarInt(c, 2));
      if (num <= 0) return c.ShapeError("num must be positive, got " + std::to_string(num));
    }
    c.AddOutput(t, Shape{num});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    return VisitTypes<TypeSet::kFloat>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      const int64_t num = out->num_elements();
      const T start = ctx.input(0).data<T>()[0], stop = ctx.input(1).data<T>()[0];
      T* y = out->data<T>();
      if (num == 1) {
        y[0] = start;
        return Status::Ok();
      }
      const T step = static_cast<T>((stop - start) / static_cast<T>(num - 1));
      for (int64_t i = 0; i < num - 1; ++i) y[i] = static_cast<T>(start + step * static_cast<T>(i));
      y[num - 1] = stop;
      return Status::Ok();
    });
  };
  return def;
}

const bool kRegistered =
    RegisterOps({ScatterOp("ScatterNd", Scatter::kAdd, false), ScatterOp("TensorScatterUpdate", Scatter::kUpdate, true),
                 ScatterOp("TensorScatterAdd", Scatter::kAdd, true), SegmentSumOp("UnsortedSegmentSum", false),
                 SegmentSumOp("SegmentSum", true), UniqueOp(), BincountOp("Bincount", false), BincountOp("DenseBincount", true),
                 LinSpaceOp()});

}  // namespace
}  // namespace graphjit
