// Shape and data-movement ops: Reshape, ExpandDims, Squeeze, Transpose, ConcatV2,
// Pack, Slice, Shape, Size, Rank, Fill, ZerosLike, OnesLike, BroadcastTo, BroadcastArgs.

#include <cstring>
#include <numeric>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/common.h"

namespace graphjit {
namespace {

Status ExpectIndexType(const InferenceContext& c, int i) { return c.ExpectDType(i, {DType::kInt32, DType::kInt64}); }

// Reshape: `shape` may hold one -1, inferred from the element count.
OpDef ReshapeOp() {
  OpDef def;
  def.name = "Reshape";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    const Tensor* shape_value = c.value(1);
    if (shape_value == nullptr) {
      const Shape& ss = c.shape(1);
      c.AddOutput(t, !ss.unknown_rank() && ss.rank() == 1 && ss.dim(0) >= 0 ? Shape(std::vector<int64_t>(ss.dim(0), -1))
                                                                            : Shape::UnknownRank());
      return Status::Ok();
    }
    if (shape_value->shape().rank() > 1) return c.ShapeError("shape must be a vector, got " + shape_value->shape().ToString());
    std::vector<int64_t> dims = IntValues(*shape_value);
    int unknown = -1;
    int64_t known = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1) {
        if (unknown >= 0) return c.ShapeError("shape " + Shape(dims).ToString() + " has more than one -1");
        unknown = static_cast<int>(i);
      } else if (dims[i] < 0) {
        return c.ShapeError("shape has a negative dimension " + std::to_string(dims[i]));
      } else {
        auto n = CheckedNumElements({known, dims[i]});
        if (!n.ok()) return c.ShapeError(n.status().message());
        known = *n;
      }
    }
    int64_t in_n = c.shape(0).num_elements();
    if (in_n >= 0) {
      if (unknown >= 0) {
        if (known == 0 || in_n % known != 0)
          return c.ShapeError("cannot reshape a tensor of shape " + c.shape(0).ToString() + " (" + std::to_string(in_n) +
                              " elements) into " + Shape(dims).ToString());
        dims[unknown] = in_n / known;
      } else if (known != in_n) {
        return c.ShapeError("cannot reshape a tensor of shape " + c.shape(0).ToString() + " (" + std::to_string(in_n) +
                            " elements) into " + Shape(dims).ToString() + " (" + std::to_string(known) + " elements)");
      }
    }
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    ctx.ForwardOutput(0, ctx.input(0).Reshaped(ctx.output_shapes[0]));
    return Status::Ok();
  };
  return def;
}

OpDef ExpandDimsOp() {
  OpDef def;
  def.name = "ExpandDims";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    if (c.value(1) == nullptr || c.shape(0).unknown_rank()) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    if (c.value(1)->num_elements() != 1) return c.ShapeError("dim must be a single value");
    int rank = c.shape(0).rank();
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, c.value(1)->ValueAsInt(0), rank + 1));
    std::vector<int64_t> dims = c.shape(0).dims();
    dims.insert(dims.begin() + axis, 1);
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    ctx.ForwardOutput(0, ctx.input(0).Reshaped(ctx.output_shapes[0]));
    return Status::Ok();
  };
  return def;
}

OpDef SqueezeOp() {
  OpDef def;
  def.name = "Squeeze";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    std::vector<int64_t> axes;
    if (c.node.FindAttr("squeeze_dims")) {
      GJ_ASSIGN_OR_RETURN(axes, GetIntListAttr(c.node, "squeeze_dims"));
    }
    const Shape& in = c.shape(0);
    if (in.unknown_rank()) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    std::vector<bool> drop(in.rank(), false);
    for (int64_t a : axes) {
      GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, a, in.rank()));
      if (in.dim(axis) != 1 && in.dim(axis) >= 0)
        return c.ShapeError("cannot squeeze dimension " + std::to_string(axis) + " of size " + std::to_string(in.dim(axis)));
      drop[axis] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      if (axes.empty() && in.dim(i) < 0) {
        c.AddOutput(t, Shape::UnknownRank());  // unknown whether it is 1
        return Status::Ok();
      }
      if (axes.empty() ? in.dim(i) == 1 : drop[i]) continue;
      dims.push_back(in.dim(i));
    }
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    ctx.ForwardOutput(0, ctx.input(0).Reshaped(ctx.output_shapes[0]));
    return Status::Ok();
  };
  return def;
}

// Copies in -> out where out dim k walks input dim perm[k]. When the input's
// contiguous last dim does not stay last, the copy goes in square tiles so that both
// the reads and the writes stay within a few cache lines.
template <typename T>
void TransposeCopy(const KernelContext& ctx, const T* in, T* out, const std::vector<int64_t>& in_dims,
                   const std::vector<int>& perm) {
  const int rank = static_cast<int>(perm.size());
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  std::vector<int64_t> out_dims(rank), stride(rank), out_strides(rank, 1);
  for (int k = 0; k < rank; ++k) {
    out_dims[k] = in_dims[perm[k]];
    stride[k] = in_strides[perm[k]];
  }
  for (int k = rank - 2; k >= 0; --k) out_strides[k] = out_strides[k + 1] * out_dims[k + 1];
  const int last = rank - 1;
  int p = 0;  // output position of the input's last dim
  while (perm[p] != last) ++p;

  if (p == last) {
    // The innermost dim stays innermost: contiguous runs.
    const int64_t inner = out_dims[last];
    const int64_t rows =
        out_dims[last]
            ? static_cast<int64_t>(std::accumulate(out_dims.begin(), out_dims.end() - 1, int64_t{1}, std::multiplies<>()))
            : 0;
    ctx.ParallelFor(rows, inner, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t off = 0, rem = r;
        for (int k = rank - 2; k >= 0; --k) {
          off += (rem % out_dims[k]) * stride[k];
          rem /= out_dims[k];
        }
        std::memcpy(out + r * inner, in + off, inner * sizeof(T));
      }
    });
    return;
  }

  // Tiles over output dims p (input stride 1) and last (input stride stride[last]);
  // every other output dim is walked one index at a time ("planes").
  // The strided reads of a tile touch kTileL lines that may all fall into one cache
  // set (power-of-two strides), so kTileL stays within the L1's associativity.
  constexpr int64_t kTile = 64, kTileL = 8;
  const int64_t P = out_dims[p], L = out_dims[last];
  int64_t planes = 1;
  for (int k = 0; k < last; ++k)
    if (k != p) planes *= out_dims[k];
  const int64_t tiles_p = (P + kTile - 1) / kTile, tiles_l = (L + kTileL - 1) / kTileL;
  ctx.ParallelFor(planes * tiles_p, kTile * L, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t plane = item / tiles_p, tp = (item % tiles_p) * kTile;
      int64_t in_off = 0, out_off = 0, rem = plane;
      for (int k = last - 1; k >= 0; --k) {
        if (k == p) continue;
        int64_t idx = rem % out_dims[k];
        rem /= out_dims[k];
        in_off += idx * stride[k];
        out_off += idx * out_strides[k];
      }
      const int64_t p_end = std::min(P, tp + kTile);
      for (int64_t tl = 0; tl < tiles_l; ++tl) {
        const int64_t l0 = tl * kTileL, l_end = std::min(L, l0 + kTileL);
        for (int64_t i = tp; i < p_end; ++i) {
          T* o = out + out_off + i * out_strides[p];
          const T* src = in + in_off + i;
          for (int64_t l = l0; l < l_end; ++l) o[l] = src[l * stride[last]];
        }
      }
    }
  });
}

}  // namespace

StatusOr<Tensor> TransposeTensor(const KernelContext& ctx, const Tensor& in, const std::vector<int>& perm) {
  std::vector<int64_t> dims;
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) {
    dims.push_back(in.shape().dim(perm[k]));
    identity &= perm[k] == static_cast<int>(k);
  }
  if (identity || in.num_elements() <= 1) return in.Reshaped(Shape(dims));
  GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(in.dtype(), Shape(dims), ctx.allocator));
  GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kAll>(in.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    TransposeCopy<T>(ctx, in.data<T>(), out.data<T>(), in.shape().dims(), perm);
    return Status::Ok();
  }));
  return out;
}

namespace {

OpDef TransposeOp() {
  OpDef def;
  def.name = "Transpose";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    const Shape& in = c.shape(0);
    if (c.value(1) == nullptr || in.unknown_rank()) {
      c.AddOutput(t, UnknownDimsLike(in));
      return Status::Ok();
    }
    std::vector<int64_t> perm = IntValues(*c.value(1));
    if (static_cast<int>(perm.size()) != in.rank())
      return c.ShapeError("perm " + Shape(perm).ToString() + " does not match rank " + std::to_string(in.rank()));
    std::vector<bool> seen(in.rank(), false);
    std::vector<int64_t> dims;
    for (int64_t p : perm) {
      if (p < 0 || p >= in.rank() || seen[p]) return c.ShapeError("perm " + Shape(perm).ToString() + " is not a permutation");
      seen[p] = true;
      dims.push_back(in.dim(p));
    }
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    std::vector<int> perm;
    for (int64_t p : IntValues(ctx.input(1))) perm.push_back(static_cast<int>(p));
    GJ_ASSIGN_OR_RETURN(Tensor out, TransposeTensor(ctx, ctx.input(0), perm));
    ctx.ForwardOutput(0, std::move(out));
    return Status::Ok();
  };
  return def;
}

// Concatenates `parts` (all of rank r) along `axis` into out: every part contributes
// one contiguous chunk per outer index.
void ConcatCopy(const KernelContext& ctx, const std::vector<const Tensor*>& parts, int axis, Tensor* out) {
  const size_t elem = DTypeSize(out->dtype());
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= out->shape().dim(i);
  std::vector<int64_t> chunk(parts.size());
  int64_t row = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    int64_t n = parts[k]->num_elements();
    chunk[k] = outer == 0 ? 0 : n / outer * elem;
    row += chunk[k];
  }
  char* dst = static_cast<char*>(out->raw());
  ctx.ParallelFor(outer, row / static_cast<int64_t>(elem) + 1, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      char* d = dst + o * row;
      for (size_t k = 0; k < parts.size(); ++k) {
        if (chunk[k] == 0) continue;
        std::memcpy(d, static_cast<const char*>(parts[k]->raw()) + o * chunk[k], chunk[k]);
        d += chunk[k];
      }
    }
  });
}

OpDef ConcatV2Op() {
  OpDef def;
  def.name = "ConcatV2";
  def.value_inputs = {-1};
  def.min_inputs = 2;
  def.max_inputs = -1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(int64_t n, GetIntAttr(c.node, "N"));
    if (n + 1 != c.num_inputs())
      return c.TypeError("attr N=" + std::to_string(n) + " needs " + std::to_string(n + 1) + " inputs, got " +
                         std::to_string(c.num_inputs()));
    GJ_ASSIGN_OR_RETURN(DType t, GetTypeAttr(c.node, "T"));
    for (int i = 0; i < n; ++i)
      if (c.dtype(i) != t) return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, static_cast<int>(n)));
    const Tensor* axis_value = c.value(static_cast<int>(n));
    int rank = -1;
    for (int i = 0; i < n; ++i)
      if (!c.shape(i).unknown_rank()) rank = c.shape(i).rank();
    if (axis_value == nullptr || rank < 0) {
      c.AddOutput(t, rank < 0 ? Shape::UnknownRank() : Shape(std::vector<int64_t>(rank, -1)));
      return Status::Ok();
    }
    if (rank == 0) return c.ShapeError("cannot concatenate scalars");
    GJ_ASSIGN_OR_RETURN(int64_t axis_raw, ScalarInt(c, static_cast<int>(n)));
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, axis_raw, rank));
    std::vector<int64_t> dims(rank, -1);
    dims[axis] = 0;
    for (int i = 0; i < n; ++i) {
      const Shape& s = c.shape(i);
      if (s.unknown_rank()) {
        dims[axis] = -1;
        continue;
      }
      if (s.rank() != rank)
        return c.ShapeError("input " + std::to_string(i) + " has shape " + s.ToString() + ", expected rank " +
                            std::to_string(rank));
      for (int d = 0; d < rank; ++d) {
        if (d == axis) {
          if (dims[d] >= 0 && s.dim(d) >= 0) {
            if (__builtin_add_overflow(dims[d], s.dim(d), &dims[d])) return c.ShapeError("concatenated dimension overflows");
          } else {
            dims[d] = -1;
          }
        } else if (s.dim(d) >= 0) {
          if (dims[d] >= 0 && dims[d] != s.dim(d))
            return c.ShapeError("input " + std::to_string(i) + " has shape " + s.ToString() +
                                ", which does not match the others outside axis " + std::to_string(axis));
          dims[d] = s.dim(d);
        }
      }
    }
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    int n = ctx.num_inputs() - 1;
    int64_t a = ctx.input(n).ValueAsInt(0);
    int axis = static_cast<int>(a < 0 ? a + out->shape().rank() : a);
    std::vector<const Tensor*> parts;
    for (int i = 0; i < n; ++i) parts.push_back(&ctx.input(i));
    ConcatCopy(ctx, parts, axis, out);
    return Status::Ok();
  };
  return def;
}

OpDef PackOp() {
  OpDef def;
  def.name = "Pack";
  def.min_inputs = 1;
  def.max_inputs = -1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(int64_t n, GetIntAttr(c.node, "N"));
    if (n != c.num_inputs())
      return c.TypeError("attr N=" + std::to_string(n) + " but the node has " + std::to_string(c.num_inputs()) + " inputs");
    GJ_ASSIGN_OR_RETURN(DType t, GetTypeAttr(c.node, "T"));
    GJ_ASSIGN_OR_RETURN(int64_t axis_attr, GetIntAttrOr(c.node, "axis", 0));
    Shape s = c.shape(0);
    for (int i = 0; i < n; ++i) {
      if (c.dtype(i) != t) return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)));
      if (!IsCompatible(s, c.shape(i)))
        return c.ShapeError("inputs must have the same shape, got " + s.ToString() + " and " + c.shape(i).ToString());
      if (s.unknown_rank()) s = c.shape(i);
    }
    if (s.unknown_rank()) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, axis_attr, s.rank() + 1));
    std::vector<int64_t> dims = s.dims();
    dims.insert(dims.begin() + axis, n);
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    int64_t a = GetIntAttrOr(ctx.node, "axis", 0).value();
    int axis = static_cast<int>(a < 0 ? a + out->shape().rank() : a);
    std::vector<const Tensor*> parts;
    for (int i = 0; i < ctx.num_inputs(); ++i) parts.push_back(&ctx.input(i));
    ConcatCopy(ctx, parts, axis, out);
    return Status::Ok();
  };
  return def;
}

OpDef SliceOp() {
  OpDef def;
  def.name = "Slice";
  def.value_inputs = {1, 2};
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 2));
    const Shape& in = c.shape(0);
    if (c.value(1) == nullptr || c.value(2) == nullptr || in.unknown_rank()) {
      c.AddOutput(t, UnknownDimsLike(in));
      return Status::Ok();
    }
    std::vector<int64_t> begin = IntValues(*c.value(1)), size = IntValues(*c.value(2));
    if (static_cast<int>(begin.size()) != in.rank() || static_cast<int>(size.size()) != in.rank())
      return c.ShapeError("begin and size must have " + std::to_string(in.rank()) + " values");
    std::vector<int64_t> dims(in.rank());
    for (int i = 0; i < in.rank(); ++i) {
      const int64_t d = in.dim(i);
      // begin is checked first: d - begin[i] is formed only for 0 <= begin[i] <= d.
      if (begin[i] < 0 || size[i] < -1 || (d >= 0 && (begin[i] > d || size[i] > d - begin[i])))
        return c.ShapeError("slice begin " + Shape(begin).ToString() + " size " + Shape(size).ToString() +
                            " is out of bounds for shape " + in.ToString());
      dims[i] = size[i] != -1 ? size[i] : d < 0 ? -1 : d - begin[i];
    }
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    CopyBlock(ctx.input(0), IntValues(ctx.input(1)), out);
    return Status::Ok();
  };
  return def;
}

// Shape, Size, Rank: metadata of the input as an int32/int64 tensor.
OpDef MetadataOp(const char* name) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  std::string op = name;
  def.infer = [op](InferenceContext& c) -> Status {
    DType out = DType::kInt32;
    if (op != "Rank") {
      GJ_ASSIGN_OR_RETURN(out, GetTypeAttr(c.node, "out_type"));
      if (out != DType::kInt32 && out != DType::kInt64) return c.TypeError("out_type must be int32 or int64");
    }
    const Shape& in = c.shape(0);
    if (op == "Shape") {
      c.AddOutput(out, in.unknown_rank() ? Shape{-1} : Shape{in.rank()});
    } else {
      c.AddOutput(out, Shape{});
    }
    return Status::Ok();
  };
  def.compute = [op](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Shape& in = ctx.input(0).shape();
    std::vector<int64_t> values;
    if (op == "Shape") values = in.dims();
    if (op == "Size") values = {in.num_elements()};
    if (op == "Rank") values = {in.rank()};
    for (size_t i = 0; i < values.size(); ++i) {
      if (out->dtype() == DType::kInt32) {
        if (values[i] > INT32_MAX) return ctx.Error("value " + std::to_string(values[i]) + " does not fit in int32");
        out->data<int32_t>()[i] = static_cast<int32_t>(values[i]);
      } else {
        out->data<int64_t>()[i] = values[i];
      }
    }
    return Status::Ok();
  };
  return def;
}

// Shape from a shape input's value; unknown dims where the value is unknown.
StatusOr<Shape> ShapeFromInput(const InferenceContext& c, int i) {
  if (c.value(i) == nullptr) {
    const Shape& s = c.shape(i);
    if (!s.unknown_rank() && s.rank() == 1 && s.dim(0) >= 0) return Shape(std::vector<int64_t>(s.dim(0), -1));
    return Shape::UnknownRank();
  }
  if (c.value(i)->shape().rank() > 1) return c.ShapeError("shape must be a vector");
  std::vector<int64_t> dims = IntValues(*c.value(i));
  for (int64_t d : dims)
    if (d < 0) return c.ShapeError("shape " + Shape(dims).ToString() + " has a negative dimension");
  auto n = CheckedNumElements(dims);
  if (!n.ok()) return c.ShapeError(n.status().message());
  return Shape(dims);
}

// Writes `value` (a scalar of the output's type) into every element of out.
void FillWith(const KernelContext& ctx, Tensor* out, const void* value) {
  const size_t elem = DTypeSize(out->dtype());
  char* d = static_cast<char*>(out->raw());
  ctx.ParallelFor(out->num_elements(), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memcpy(d + i * elem, value, elem);
  });
}

OpDef FillOp() {
  OpDef def;
  def.name = "Fill";
  def.value_inputs = {0};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {1}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 0));
    if (!c.shape(1).unknown_rank() && c.shape(1).rank() != 0)
      return c.ShapeError("value must be a scalar, got " + c.shape(1).ToString());
    GJ_ASSIGN_OR_RETURN(Shape s, ShapeFromInput(c, 0));
    c.AddOutput(t, s);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    FillWith(ctx, out, ctx.input(1).raw());
    return Status::Ok();
  };
  return def;
}

OpDef LikeOp(const char* name, int value) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [value](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    return VisitTypes<TypeSet::kAll>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      T v = static_cast<T>(value);
      FillWith(ctx, out, &v);
      return Status::Ok();
    });
  };
  return def;
}

OpDef BroadcastToOp() {
  OpDef def;
  def.name = "BroadcastTo";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    GJ_ASSIGN_OR_RETURN(Shape target, ShapeFromInput(c, 1));
    auto b = BroadcastShapes(c.shape(0), target);
    if (!b.ok()) return c.ShapeError("cannot broadcast " + c.shape(0).ToString() + " to " + target.ToString());
    if (!target.unknown_rank() && b->rank() != target.rank())
      return c.ShapeError("cannot broadcast " + c.shape(0).ToString() + " to the lower-rank " + target.ToString());
    if (target.IsFullyDefined() && *b != target)
      return c.ShapeError("cannot broadcast " + c.shape(0).ToString() + " to " + target.ToString());
    c.AddOutput(t, target.IsFullyDefined() ? target : *b);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    BroadcastPlan plan({in.shape()}, out->shape());
    const size_t elem = DTypeSize(in.dtype());
    plan.Run(ctx, 1, [&](const int64_t* off, int64_t o, int64_t n) {
      const char* src = static_cast<const char*>(in.raw()) + off[0] * elem;
      char* dst = static_cast<char*>(out->raw()) + o * elem;
      if (plan.inner_stride(0)) {
        std::memcpy(dst, src, n * elem);
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * elem, src, elem);
      }
    });
    return Status::Ok();
  };
  return def;
}

OpDef BroadcastArgsOp() {
  OpDef def;
  def.name = "BroadcastArgs";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 0));
    if (c.value(0) && c.value(1)) {
      auto b = BroadcastShapes(Shape(IntValues(*c.value(0))), Shape(IntValues(*c.value(1))));
      if (!b.ok()) return c.ShapeError(b.status().message());
      c.AddOutput(t, Shape{b->rank()});
    } else {
      c.AddOutput(t, Shape{-1});
    }
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    Shape b = BroadcastShapes(Shape(IntValues(ctx.input(0))), Shape(IntValues(ctx.input(1)))).value();
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    for (int i = 0; i < b.rank(); ++i) {
      if (out->dtype() == DType::kInt32) {
        out->data<int32_t>()[i] = static_cast<int32_t>(b.dim(i));
      } else {
        out->data<int64_t>()[i] = b.dim(i);
      }
    }
    return Status::Ok();
  };
  return def;
}

const bool kRegistered = RegisterOps({ReshapeOp(), ExpandDimsOp(), SqueezeOp(), TransposeOp(), ConcatV2Op(), PackOp(), SliceOp(),
                                      MetadataOp("Shape"), MetadataOp("Size"), MetadataOp("Rank"), FillOp(),
                                      LikeOp("ZerosLike", 0), LikeOp("OnesLike", 1), BroadcastToOp(), BroadcastArgsOp()});

}  // namespace
}  // namespace graphjit
