// Indexing and layout ops: Unpack, Split, SplitV, StridedSlice, Tile, ReverseV2, Range,
// GatherV2, OneHot, Pad, PadV2, MirrorPad, Where.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/kernels/common.h"
#include "runtime/kernels/indexing.h"

namespace graphjit {

void CopyBlock(const Tensor& in, const std::vector<int64_t>& begin, Tensor* out) {
  const int rank = in.shape().rank();
  const size_t elem = DTypeSize(in.dtype());
  if (out->num_elements() == 0) return;
  if (rank == 0) {
    std::memcpy(out->raw(), in.raw(), elem);
    return;
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dims());
  const auto& od = out->shape().dims();
  const int64_t inner = od[rank - 1], rows = out->num_elements() / inner;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = begin[rank - 1], rem = r;
    for (int k = rank - 2; k >= 0; --k) {
      off += (rem % od[k] + begin[k]) * in_strides[k];
      rem /= od[k];
    }
    std::memcpy(static_cast<char*>(out->raw()) + r * inner * elem, static_cast<const char*>(in.raw()) + off * elem, inner * elem);
  }
}

StatusOr<std::vector<SliceDim>> ResolveStridedSlice(const InferenceContext& c, const Shape& in, const std::vector<int64_t>& begin,
                                                    const std::vector<int64_t>& end, const std::vector<int64_t>& strides) {
  auto mask = [&](const char* name) { return GetIntAttrOr(c.node, name, 0); };
  GJ_ASSIGN_OR_RETURN(int64_t begin_mask, mask("begin_mask"));
  GJ_ASSIGN_OR_RETURN(int64_t end_mask, mask("end_mask"));
  GJ_ASSIGN_OR_RETURN(int64_t ellipsis_mask, mask("ellipsis_mask"));
  GJ_ASSIGN_OR_RETURN(int64_t new_axis_mask, mask("new_axis_mask"));
  GJ_ASSIGN_OR_RETURN(int64_t shrink_mask, mask("shrink_axis_mask"));
  const int m = static_cast<int>(begin.size());
  if (static_cast<int>(end.size()) != m || static_cast<int>(strides.size()) != m)
    return c.ShapeError("begin, end and strides must have the same length");
  if (__builtin_popcountll(static_cast<uint64_t>(ellipsis_mask)) > 1) return c.ShapeError("more than one ellipsis");
  const int rank = in.rank();
  int consumed = 0;  // input dims named by entries other than ellipsis/new axis
  for (int i = 0; i < m; ++i)
    if (!((ellipsis_mask >> i) & 1) && !((new_axis_mask >> i) & 1)) ++consumed;
  if (consumed > rank)
    return c.ShapeError("slice spec names " + std::to_string(consumed) + " dims of a rank " + std::to_string(rank) + " input");
  std::vector<SliceDim> dims;
  int in_dim = 0;
  bool saw_ellipsis = false;
  auto full = [&](int d) {
    SliceDim s;
    s.in_dim = d;
    s.size = in.dim(d);
    dims.push_back(s);
  };
  for (int i = 0; i < m; ++i) {
    if ((ellipsis_mask >> i) & 1) {
      saw_ellipsis = true;
      for (int k = 0; k < rank - consumed; ++k) full(in_dim++);
      continue;
    }
    if ((new_axis_mask >> i) & 1) {
      SliceDim s;
      s.size = 1;
      dims.push_back(s);
      continue;
    }
    SliceDim s;
    s.in_dim = in_dim++;
    const int64_t d = in.dim(s.in_dim);
    const int64_t st = strides[i];
    if (st == 0) return c.ShapeError("stride " + std::to_string(i) + " is zero");
    if (st == std::numeric_limits<int64_t>::min()) return c.ShapeError("stride " + std::to_string(i) + " is out of range");
    if ((shrink_mask >> i) & 1) {
      int64_t b = begin[i];
      if (d >= 0) {
        if (b < 0) b += d;
        if (b < 0 || b >= d)
          return c.ShapeError("index " + std::to_string(begin[i]) + " is out of bounds for dimension " +
                              std::to_string(s.in_dim) + " of size " + std::to_string(d));
      }
      s.begin = b;
      s.size = 1;
      s.keep = false;
      dims.push_back(s);
      continue;
    }
    s.stride = st;
    if (d < 0) {
      s.size = -1;
      dims.push_back(s);
      continue;
    }
    auto canonical = [&](int64_t v, bool masked, bool is_begin) {
      if (masked) {
        if (is_begin) return st > 0 ? int64_t{0} : d - 1;
        return st > 0 ? d : int64_t{-1};
      }
      if (v < 0) v += d;
      return st > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, -1, d - 1);
    };
    int64_t b = canonical(begin[i], (begin_mask >> i) & 1, true);
    int64_t e = canonical(end[i], (end_mask >> i) & 1, false);
    int64_t span = st > 0 ? e - b : b - e;
    int64_t ast = st > 0 ? st : -st;
    s.begin = b;
    s.size = span <= 0 ? 0 : 1 + (span - 1) / ast;
    dims.push_back(s);
  }
  if (!saw_ellipsis)
    while (in_dim < rank) full(in_dim++);
  return dims;
}

namespace {

// More outputs than this is not a real model (and would exhaust memory in inference).
constexpr int64_t kMaxOutputs = 1 << 16;

Status ExpectIndexType(const InferenceContext& c, int i) { return c.ExpectDType(i, {DType::kInt32, DType::kInt64}); }

// Splits `in` along `axis` into pieces of the given sizes (outputs 0..n-1).
Status SplitInto(KernelContext& ctx, const Tensor& in, int axis, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> begin(in.shape().rank(), 0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(static_cast<int>(i)));
    CopyBlock(in, begin, out);
    begin[axis] += sizes[i];
  }
  return Status::Ok();
}

OpDef UnpackOp() {
  OpDef def;
  def.name = "Unpack";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_ASSIGN_OR_RETURN(int64_t num, GetIntAttr(c.node, "num"));
    GJ_ASSIGN_OR_RETURN(int64_t axis_attr, GetIntAttrOr(c.node, "axis", 0));
    if (num < 0 || num > kMaxOutputs) return c.TypeError("num must be in [0, " + std::to_string(kMaxOutputs) + "]");
    const Shape& in = c.shape(0);
    Shape piece = Shape::UnknownRank();
    if (!in.unknown_rank()) {
      GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, axis_attr, in.rank()));
      if (in.dim(axis) >= 0 && in.dim(axis) != num)
        return c.ShapeError("dimension " + std::to_string(axis) + " of " + in.ToString() + " is not num=" + std::to_string(num));
      std::vector<int64_t> dims = in.dims();
      dims.erase(dims.begin() + axis);
      piece = Shape(dims);
    }
    for (int64_t i = 0; i < num; ++i) c.AddOutput(t, piece);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const Tensor& in = ctx.input(0);
    int64_t a = GetIntAttrOr(ctx.node, "axis", 0).value();
    int axis = static_cast<int>(a < 0 ? a + in.shape().rank() : a);
    std::vector<int64_t> sizes(ctx.outputs.size(), 1);
    // Each piece is the block with size 1 along `axis`, then viewed without that dim.
    std::vector<int64_t> block = in.shape().dims();
    block[axis] = 1;
    std::vector<int64_t> begin(in.shape().rank(), 0);
    for (size_t i = 0; i < sizes.size(); ++i) {
      GJ_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(in.dtype(), Shape(block), ctx.allocator));
      CopyBlock(in, begin, &t);
      ctx.ForwardOutput(static_cast<int>(i), t.Reshaped(ctx.output_shapes[i]));
      begin[axis] += 1;
    }
    return Status::Ok();
  };
  return def;
}

// Split (inputs: axis, value; attr num_split) and SplitV (value, size_splits, axis).
OpDef SplitOp(bool v) {
  OpDef def;
  def.name = v ? "SplitV" : "Split";
  def.value_inputs = v ? std::vector<int>{1, 2} : std::vector<int>{0};
  def.min_inputs = def.max_inputs = v ? 3 : 2;
  def.infer = [v](InferenceContext& c) -> Status {
    const int value = v ? 0 : 1, axis_input = v ? 2 : 0;
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {value}));
    GJ_ASSIGN_OR_RETURN(int64_t num, GetIntAttr(c.node, "num_split"));
    if (num < 1 || num > kMaxOutputs) return c.TypeError("num_split must be in [1, " + std::to_string(kMaxOutputs) + "]");
    GJ_RETURN_IF_ERROR(c.ExpectDType(axis_input, {DType::kInt32, DType::kInt64}));
    const Shape& in = c.shape(value);
    if (in.unknown_rank() || c.value(axis_input) == nullptr || (v && c.value(1) == nullptr)) {
      for (int64_t i = 0; i < num; ++i) c.AddOutput(t, UnknownDimsLike(in));
      return Status::Ok();
    }
    GJ_ASSIGN_OR_RETURN(int64_t axis_raw, ScalarInt(c, axis_input));
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, axis_raw, in.rank()));
    const int64_t d = in.dim(axis);
    std::vector<int64_t> sizes;
    if (!v) {
      if (d >= 0 && d % num != 0)
        return c.ShapeError("dimension " + std::to_string(axis) + " of size " + std::to_string(d) +
                            " is not divisible by num_split=" + std::to_string(num));
      sizes.assign(num, d < 0 ? -1 : d / num);
    } else {
      sizes = IntValues(*c.value(1));
      if (static_cast<int64_t>(sizes.size()) != num)
        return c.ShapeError("size_splits has " + std::to_string(sizes.size()) + " values, num_split is " + std::to_string(num));
      int unknown = -1;
      int64_t total = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] == -1) {
          if (unknown >= 0) return c.ShapeError("size_splits has more than one -1");
          unknown = static_cast<int>(i);
        } else if (sizes[i] < 0) {
          return c.ShapeError("size_splits has a negative size");
        } else if (__builtin_add_overflow(total, sizes[i], &total)) {
          return c.ShapeError("size_splits overflow");
        }
      }
      if (d >= 0) {
        if (unknown >= 0) {
          if (total > d) return c.ShapeError("size_splits add up to more than dimension " + std::to_string(d));
          sizes[unknown] = d - total;
        } else if (total != d) {
          return c.ShapeError("size_splits add up to " + std::to_string(total) + ", not the dimension's " + std::to_string(d));
        }
      }
    }
    for (int64_t s : sizes) {
      std::vector<int64_t> dims = in.dims();
      dims[axis] = s;
      c.AddOutput(t, Shape(dims));
    }
    return Status::Ok();
  };
  def.compute = [v](KernelContext& ctx) -> Status {
    const Tensor& in = ctx.input(v ? 0 : 1);
    int64_t a = ctx.input(v ? 2 : 0).ValueAsInt(0);
    int axis = static_cast<int>(a < 0 ? a + in.shape().rank() : a);
    std::vector<int64_t> sizes;
    for (const Shape& s : ctx.output_shapes) sizes.push_back(s.dim(axis));
    return SplitInto(ctx, in, axis, sizes);
  };
  return def;
}

// ---- StridedSlice --------------------------------------------------------------------

OpDef StridedSliceOp() {
  OpDef def;
  def.name = "StridedSlice";
  def.value_inputs = {1, 2, 3};
  def.min_inputs = def.max_inputs = 4;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    for (int i = 1; i < 4; ++i) GJ_RETURN_IF_ERROR(ExpectIndexType(c, i));
    const Shape& in = c.shape(0);
    if (in.unknown_rank() || !c.value(1) || !c.value(2) || !c.value(3)) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    GJ_ASSIGN_OR_RETURN(auto dims,
                        ResolveStridedSlice(c, in, IntValues(*c.value(1)), IntValues(*c.value(2)), IntValues(*c.value(3))));
    std::vector<int64_t> out;
    for (const SliceDim& s : dims)
      if (s.keep) out.push_back(s.size);
    c.AddOutput(t, Shape(out));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(auto dims, ResolveStridedSlice(ic, in.shape(), IntValues(ctx.input(1)), IntValues(ctx.input(2)),
                                                       IntValues(ctx.input(3))));
    if (out->num_elements() == 0) return Status::Ok();
    // Walk the input dims only (new axes have size 1 and move nothing).
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dims());
    std::vector<int64_t> sizes, steps;
    int64_t base = 0;
    for (const SliceDim& s : dims) {
      if (s.in_dim < 0) continue;
      base += s.begin * in_strides[s.in_dim];
      sizes.push_back(s.size);
      steps.push_back(s.stride * in_strides[s.in_dim]);
    }
    const size_t elem = DTypeSize(in.dtype());
    const char* src = static_cast<const char*>(in.raw());
    char* dst = static_cast<char*>(out->raw());
    const int n = static_cast<int>(sizes.size());
    if (n == 0) {
      std::memcpy(dst, src + base * elem, elem);
      return Status::Ok();
    }
    std::vector<int64_t> idx(n, 0);
    int64_t off = base;
    for (int64_t o = 0; o < out->num_elements(); ++o) {
      std::memcpy(dst + o * elem, src + off * elem, elem);
      for (int k = n - 1; k >= 0; --k) {
        off += steps[k];
        if (++idx[k] < sizes[k]) break;
        off -= steps[k] * sizes[k];
        idx[k] = 0;
      }
    }
    return Status::Ok();
  };
  return def;
}

// ---- Tile, Pad, MirrorPad --------------------------------------------------------------

OpDef TileOp() {
  OpDef def;
  def.name = "Tile";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    const Shape& in = c.shape(0);
    if (in.unknown_rank() || !c.value(1)) {
      c.AddOutput(t, UnknownDimsLike(in));
      return Status::Ok();
    }
    std::vector<int64_t> mult = IntValues(*c.value(1));
    if (static_cast<int>(mult.size()) != in.rank())
      return c.ShapeError("multiples has " + std::to_string(mult.size()) + " values for a rank " + std::to_string(in.rank()) +
                          " input");
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      if (mult[i] < 0) return c.ShapeError("multiples must be non-negative");
      auto d = in.dim(i) >= 0 ? CheckedMul(in.dim(i), mult[i]) : StatusOr<int64_t>(-1);
      if (!d.ok()) return c.ShapeError("tiled dimension " + std::to_string(i) + ": " + d.status().message());
      dims.push_back(*d);
    }
    auto n = CheckedNumElements(Shape(dims).IsFullyDefined() ? dims : std::vector<int64_t>{});
    if (!n.ok()) return c.ShapeError(n.status().message());
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    const int rank = in.shape().rank();
    const size_t elem = DTypeSize(in.dtype());
    if (out->num_elements() == 0) return Status::Ok();
    if (rank == 0) {
      std::memcpy(out->raw(), in.raw(), elem);
      return Status::Ok();
    }
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dims());
    const auto& od = out->shape().dims();
    const int64_t inner = od[rank - 1], in_inner = in.shape().dim(rank - 1), rows = out->num_elements() / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0, rem = r;
      for (int k = rank - 2; k >= 0; --k) {
        off += (rem % od[k]) % in.shape().dim(k) * in_strides[k];
        rem /= od[k];
      }
      char* dst = static_cast<char*>(out->raw()) + r * inner * elem;
      for (int64_t j = 0; j < inner; j += in_inner)
        std::memcpy(dst + j * elem, static_cast<const char*>(in.raw()) + off * elem, in_inner * elem);
    }
    return Status::Ok();
  };
  return def;
}

enum class PadMode { kConstant, kReflect, kSymmetric };

OpDef PadOp(const char* name, PadMode fixed_mode, bool has_value) {
  OpDef def;
  def.name = name;
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = has_value ? 3 : 2;
  const bool mirror = std::string(name) == "MirrorPad";
  def.infer = [mirror, has_value](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t,
                        c.TypeAttrMatching("T", has_value ? std::initializer_list<int>{0, 2} : std::initializer_list<int>{0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    if (mirror) {
      GJ_ASSIGN_OR_RETURN(std::string mode, GetStringAttr(c.node, "mode"));
      if (mode != "REFLECT" && mode != "SYMMETRIC") return c.TypeError("mode must be REFLECT or SYMMETRIC");
    }
    const Shape& in = c.shape(0);
    if (in.unknown_rank() || !c.value(1)) {
      c.AddOutput(t, UnknownDimsLike(in));
      return Status::Ok();
    }
    const Tensor& p = *c.value(1);
    if (p.shape() != Shape{in.rank(), 2})
      return c.ShapeError("paddings must have shape [" + std::to_string(in.rank()) + ",2], got " + p.shape().ToString());
    std::vector<int64_t> pads = IntValues(p), dims;
    bool reflect = mirror && GetStringAttr(c.node, "mode").value() == "REFLECT";
    for (int i = 0; i < in.rank(); ++i) {
      int64_t b = pads[2 * i], a = pads[2 * i + 1], d = in.dim(i);
      if (b < 0 || a < 0) return c.ShapeError("paddings must be non-negative");
      int64_t padded = 0;
      if (__builtin_add_overflow(a, b, &padded) || (d >= 0 && __builtin_add_overflow(padded, d, &padded)))
        return c.ShapeError("padded dimension " + std::to_string(i) + " overflows");
      if (mirror && d >= 0 && (b > d - reflect || a > d - reflect))
        return c.ShapeError("paddings of dimension " + std::to_string(i) + " must be " + (reflect ? "less than" : "at most") +
                            " its size " + std::to_string(d));
      dims.push_back(d < 0 ? -1 : d + a + b);
    }
    auto n = CheckedNumElements(Shape(dims).IsFullyDefined() ? dims : std::vector<int64_t>{});
    if (!n.ok()) return c.ShapeError(n.status().message());
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [fixed_mode, mirror, has_value](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    PadMode mode = fixed_mode;
    if (mirror) mode = GetStringAttr(ctx.node, "mode").value() == "REFLECT" ? PadMode::kReflect : PadMode::kSymmetric;
    const int rank = in.shape().rank();
    const size_t elem = DTypeSize(in.dtype());
    std::vector<int64_t> pads = IntValues(ctx.input(1));
    std::vector<char> fill(elem, 0);
    if (has_value) std::memcpy(fill.data(), ctx.input(2).raw(), elem);
    if (out->num_elements() == 0) return Status::Ok();
    if (rank == 0) {
      std::memcpy(out->raw(), in.raw(), elem);
      return Status::Ok();
    }
    // Trailing dimensions without padding make one block of `block` bytes, copied whole:
    // NHWC padding of H and W copies C values at a time, and runs of W * C along a row.
    int last = rank - 1;
    int64_t block = static_cast<int64_t>(elem);
    while (last >= 0 && pads[2 * last] == 0 && pads[2 * last + 1] == 0) block *= in.shape().dim(last--);
    const char* src = static_cast<const char*>(in.raw());
    char* dst = static_cast<char*>(out->raw());
    if (last < 0) {
      std::memcpy(dst, src, in.num_elements() * elem);
      return Status::Ok();
    }
    // The fill value's bytes, repeated over n blocks.
    const bool zero_fill = std::all_of(fill.begin(), fill.end(), [](char c) { return c == 0; });
    auto fill_blocks = [&](char* d, int64_t n) {
      const int64_t bytes = n * block;
      if (zero_fill || bytes == 0) return void(std::memset(d, 0, bytes));
      std::memcpy(d, fill.data(), elem);
      for (int64_t done = elem; done < bytes; done *= 2) std::memcpy(d + done, d, std::min(done, bytes - done));
    };
    // Input index along dim k for output index o, or -1 for padding.
    auto source = [&](int k, int64_t o) -> int64_t {
      const int64_t d = in.shape().dim(k);
      int64_t i = o - pads[2 * k];
      if (i >= 0 && i < d) return i;
      if (mode == PadMode::kConstant) return -1;
      if (mode == PadMode::kReflect) return i < 0 ? -i : 2 * (d - 1) - i;
      return i < 0 ? -i - 1 : 2 * d - 1 - i;
    };
    // Byte strides of the input along dims 0..last (dim `last` in blocks).
    std::vector<int64_t> in_strides(last + 1);
    in_strides[last] = block;
    for (int k = last - 1; k >= 0; --k) in_strides[k] = in_strides[k + 1] * in.shape().dim(k + 1);
    const auto& od = out->shape().dims();
    const int64_t d_last = in.shape().dim(last), before = pads[2 * last], row_blocks = od[last];
    int64_t rows = 1;
    for (int k = 0; k < last; ++k) rows *= od[k];
    ctx.ParallelFor(rows, row_blocks * block / 64 + 1, [&](int64_t begin, int64_t end) {
      // Output index over dims 0..last-1 of row `begin`.
      std::vector<int64_t> idx(last);
      for (int64_t r = begin, k = last - 1; k >= 0; --k) {
        idx[k] = r % od[k];
        r /= od[k];
      }
      for (int64_t r = begin; r < end; ++r) {
        char* row = dst + r * row_blocks * block;
        int64_t off = 0;
        bool pad = false;
        for (int k = 0; k < last && !pad; ++k) {
          const int64_t s = source(k, idx[k]);
          pad = s < 0;
          off += s * in_strides[k];
        }
        if (pad) {
          fill_blocks(row, row_blocks);
        } else {
          // The input row in the middle; on each side the fill, or the mirrored blocks.
          const char* in_row = src + off;
          auto side = [&](int64_t from, int64_t to) {
            if (mode == PadMode::kConstant) return fill_blocks(row + from * block, to - from);
            for (int64_t o = from; o < to; ++o) std::memcpy(row + o * block, in_row + source(last, o) * block, block);
          };
          side(0, before);
          std::memcpy(row + before * block, in_row, d_last * block);
          side(before + d_last, row_blocks);
        }
        for (int k = last - 1; k >= 0; --k) {
          if (++idx[k] < od[k]) break;
          idx[k] = 0;
        }
      }
    });
    return Status::Ok();
  };
  return def;
}

// ---- ReverseV2 ---------------------------------------------------------------------------

OpDef ReverseOp() {
  OpDef def;
  def.name = "ReverseV2";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    if (!c.shape(1).unknown_rank() && c.shape(1).rank() != 1)
      return c.ShapeError("axis must be a vector, got shape " + c.shape(1).ToString());
    const Shape& in = c.shape(0);
    if (!in.unknown_rank() && c.value(1)) {
      std::vector<bool> reversed(in.rank(), false);
      for (int64_t raw : IntValues(*c.value(1))) {
        GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, raw, in.rank()));
        if (reversed[axis]) return c.ShapeError("axis " + std::to_string(axis) + " is given more than once");
        reversed[axis] = true;
      }
    }
    c.AddOutput(t, in);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    const std::vector<int64_t>& dims = in.shape().dims();
    const int rank = static_cast<int>(dims.size());
    std::vector<bool> reversed(rank, false);
    for (int64_t a : IntValues(ctx.input(1))) reversed[a < 0 ? a + rank : a] = true;
    // Rows of the last dim, each copied whole or element by element backwards.
    const size_t elem = DTypeSize(in.dtype());
    const int64_t inner = rank == 0 ? 1 : dims[rank - 1];
    if (out->num_elements() == 0) return Status::Ok();
    const std::vector<int64_t> strides = RowMajorStrides(dims);
    const char* src = static_cast<const char*>(in.raw());
    char* dst = static_cast<char*>(out->raw());
    for (int64_t row = 0; row < in.num_elements() / inner; ++row) {
      int64_t from = 0, rest = row * inner;
      for (int d = 0; d < rank - 1; ++d) {
        const int64_t i = rest / strides[d];
        rest %= strides[d];
        from += (reversed[d] ? dims[d] - 1 - i : i) * strides[d];
      }
      char* to = dst + row * inner * elem;
      if (rank == 0 || !reversed[rank - 1]) {
        std::memcpy(to, src + from * elem, inner * elem);
      } else {
        for (int64_t j = 0; j < inner; ++j) std::memcpy(to + j * elem, src + (from + inner - 1 - j) * elem, elem);
      }
    }
    return Status::Ok();
  };
  return def;
}

// ---- Range, GatherV2, OneHot, Where ----------------------------------------------------

OpDef RangeOp() {
  OpDef def;
  def.name = "Range";
  def.value_inputs = {0, 1, 2};
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("Tidx", {0, 1, 2}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    for (int i = 0; i < 3; ++i)
      if (!c.shape(i).unknown_rank() && c.shape(i).rank() != 0) return c.ShapeError("start, limit and delta must be scalars");
    if (!c.value(0) || !c.value(1) || !c.value(2)) {
      c.AddOutput(t, Shape{-1});
      return Status::Ok();
    }
    double start = c.value(0)->ValueAsDouble(0), limit = c.value(1)->ValueAsDouble(0), delta = c.value(2)->ValueAsDouble(0);
    if (delta == 0) return c.ShapeError("delta must not be zero");
    if ((delta > 0 && start > limit) || (delta < 0 && start < limit))
      return c.ShapeError("requires start <= limit when delta > 0, and start >= limit when delta < 0");
    if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
      return c.ShapeError("start, limit and delta must be finite");
    double n = std::ceil(std::fabs((limit - start) / delta));
    if (IsInteger(t)) {  // exactly: int64 values near the extremes are not doubles
      const __int128 a = c.value(0)->ValueAsInt(0), d = c.value(2)->ValueAsInt(0), span = c.value(1)->ValueAsInt(0) - a;
      if ((d > 0 && span < 0) || (d < 0 && span > 0))
        return c.ShapeError("requires start <= limit when delta > 0, and start >= limit when delta < 0");
      n = static_cast<double>((span < 0 ? -span : span) / (d < 0 ? -d : d) + ((span % d) != 0));
    }
    if (!(n <= 1e12)) return c.ShapeError("range of " + std::to_string(n) + " elements is too large");
    c.AddOutput(t, Shape{static_cast<int64_t>(n)});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    return VisitTypes<TypeSet::kNumeric>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using CT = ComputeType<T>;
      CT start = static_cast<CT>(ctx.input(0).data<T>()[0]), delta = static_cast<CT>(ctx.input(2).data<T>()[0]);
      CT v = start;
      for (int64_t i = 0; i < out->num_elements(); ++i, v = WrapAdd(v, delta)) out->data<T>()[i] = static_cast<T>(v);
      return Status::Ok();
    });
  };
  return def;
}

OpDef GatherOp() {
  OpDef def;
  def.name = "GatherV2";
  def.value_inputs = {2};
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("Tparams", {0}));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 1));
    GJ_RETURN_IF_ERROR(ExpectIndexType(c, 2));
    GJ_ASSIGN_OR_RETURN(int64_t batch_dims, GetIntAttrOr(c.node, "batch_dims", 0));
    const Shape& p = c.shape(0);
    const Shape& idx = c.shape(1);
    if (p.unknown_rank() || idx.unknown_rank() || !c.value(2)) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    if (batch_dims < 0) batch_dims += idx.rank();
    if (batch_dims < 0 || batch_dims > idx.rank()) return c.ShapeError("batch_dims is out of range");
    GJ_ASSIGN_OR_RETURN(int64_t axis_raw, ScalarInt(c, 2));
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, axis_raw, p.rank()));
    if (axis < batch_dims) return c.ShapeError("axis must be >= batch_dims");
    for (int i = 0; i < batch_dims; ++i)
      if (p.dim(i) >= 0 && idx.dim(i) >= 0 && p.dim(i) != idx.dim(i))
        return c.ShapeError("params " + p.ToString() + " and indices " + idx.ToString() + " differ in batch dimension " +
                            std::to_string(i));
    std::vector<int64_t> dims(p.dims().begin(), p.dims().begin() + axis);
    dims.insert(dims.end(), idx.dims().begin() + batch_dims, idx.dims().end());
    dims.insert(dims.end(), p.dims().begin() + axis + 1, p.dims().end());
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& p = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    int64_t batch_dims = GetIntAttrOr(ctx.node, "batch_dims", 0).value();
    if (batch_dims < 0) batch_dims += idx.shape().rank();
    int64_t a = ctx.input(2).ValueAsInt(0);
    const int axis = static_cast<int>(a < 0 ? a + p.shape().rank() : a);
    int64_t batch = 1, outer = 1, inner = 1;
    for (int i = 0; i < batch_dims; ++i) batch *= p.shape().dim(i);
    for (int i = static_cast<int>(batch_dims); i < axis; ++i) outer *= p.shape().dim(i);
    for (int i = axis + 1; i < p.shape().rank(); ++i) inner *= p.shape().dim(i);
    const int64_t n = p.shape().dim(axis);
    const int64_t per_batch = batch == 0 ? 0 : idx.num_elements() / batch;
    const size_t row = inner * DTypeSize(p.dtype());
    const char* src = static_cast<const char*>(p.raw());
    char* dst = static_cast<char*>(out->raw());
    for (int64_t i = 0; i < idx.num_elements(); ++i) {
      int64_t v = idx.ValueAsInt(i);
      if (v < 0 || v >= n)
        return ctx.Error("indices[" + std::to_string(i) + "] = " + std::to_string(v) + " is not in [0, " + std::to_string(n) +
                         ")");
    }
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < per_batch; ++i) {
          int64_t v = idx.ValueAsInt(b * per_batch + i);
          std::memcpy(dst + ((b * outer + o) * per_batch + i) * row, src + ((b * outer + o) * n + v) * row, row);
        }
    return Status::Ok();
  };
  return def;
}

OpDef OneHotOp() {
  OpDef def;
  def.name = "OneHot";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 4;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {2, 3}));
    GJ_RETURN_IF_ERROR(c.ExpectDType(0, {DType::kInt32, DType::kInt64, DType::kUInt8}));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32}));
    GJ_ASSIGN_OR_RETURN(int64_t axis, GetIntAttrOr(c.node, "axis", -1));
    const Shape& in = c.shape(0);
    if (in.unknown_rank()) {
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    if (axis < -1 || axis > in.rank()) return c.ShapeError("axis " + std::to_string(axis) + " is out of range");
    int64_t depth = -1;
    if (c.value(1)) {
      GJ_ASSIGN_OR_RETURN(depth, ScalarInt(c, 1));
      if (depth < 0) return c.ShapeError("depth must be non-negative, got " + std::to_string(depth));
    }
    std::vector<int64_t> dims = in.dims();
    dims.insert(dims.begin() + (axis == -1 ? in.rank() : axis), depth);
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    int64_t axis = GetIntAttrOr(ctx.node, "axis", -1).value();
    if (axis == -1) axis = in.shape().rank();
    const int64_t depth = ctx.input(1).ValueAsInt(0);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= in.shape().dim(i);
    for (int i = static_cast<int>(axis); i < in.shape().rank(); ++i) inner *= in.shape().dim(i);
    const size_t elem = DTypeSize(out->dtype());
    const char* on = static_cast<const char*>(ctx.input(2).raw());
    const char* off = static_cast<const char*>(ctx.input(3).raw());
    char* dst = static_cast<char*>(out->raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t d = 0; d < depth; ++d)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = in.ValueAsInt(o * inner + i);
          std::memcpy(dst + ((o * depth + d) * inner + i) * elem, v == d ? on : off, elem);
        }
    return Status::Ok();
  };
  return def;
}

// Where(condition): coordinates of the true (non-zero) elements, [count, rank] int64.
// The output shape depends on the data, so it is known only at run time.
OpDef WhereOp() {
  OpDef def;
  def.name = "Where";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    // The input type is attr T (bool by default).
    if (c.node.FindAttr("T")) GJ_RETURN_IF_ERROR(c.TypeAttrMatching("T", {0}).status());
    const Shape& in = c.shape(0);
    int64_t count = -1;
    if (c.value(0)) {
      count = 0;
      for (int64_t i = 0; i < c.value(0)->num_elements(); ++i) count += c.value(0)->ValueAsDouble(i) != 0;
    }
    c.AddOutput(DType::kInt64, in.unknown_rank() ? Shape{count, -1} : Shape{count, in.rank()});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    const int rank = in.shape().rank();
    int64_t row = 0;
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      if (in.ValueAsDouble(i) == 0) continue;
      int64_t rem = i;
      for (int k = rank - 1; k >= 0; --k) {
        out->data<int64_t>()[row * rank + k] = rem % in.shape().dim(k);
        rem /= in.shape().dim(k);
      }
      ++row;
    }
    return Status::Ok();
  };
  return def;
}

const bool kRegistered =
    RegisterOps({UnpackOp(), SplitOp(false), SplitOp(true), StridedSliceOp(), TileOp(), ReverseOp(),
                 PadOp("Pad", PadMode::kConstant, false), PadOp("PadV2", PadMode::kConstant, true),
                 PadOp("MirrorPad", PadMode::kReflect, false), RangeOp(), GatherOp(), OneHotOp(), WhereOp()});

}  // namespace
}  // namespace graphjit
