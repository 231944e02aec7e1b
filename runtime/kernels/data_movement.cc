// Ops that move elements by their indices: DepthToSpace and SpaceToDepth, SpaceToBatchND and
// BatchToSpaceND (TensorFlow writes dilated convolutions with them), MatrixBandPart (causal
// masks), GatherNd, and the image resizes ResizeBilinear and ResizeNearestNeighbor. Each
// output element is an input element (or zero) at an index computed from its own, as
// TensorFlow's CPU kernels define it; the JIT's element generators compute the same index.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "ir/attr.h"
#include "runtime/kernels/common.h"

namespace graphjit {
namespace {

// Fills `out` in row-major order: the element at index `at` is input element source(at) (a
// row-major offset into `in`), or zero where that is negative.
template <typename Source>
void MoveElements(const Tensor& in, Tensor* out, Source source) {
  const size_t elem = DTypeSize(out->dtype());
  const std::vector<int64_t>& dims = out->shape().dims();
  const char* src = static_cast<const char*>(in.raw());
  char* dst = static_cast<char*>(out->raw());
  std::vector<int64_t> at(dims.size(), 0);
  for (int64_t o = 0; o < out->num_elements(); ++o) {
    const int64_t from = source(at);
    if (from < 0)
      std::memset(dst + o * elem, 0, elem);
    else
      std::memcpy(dst + o * elem, src + from * elem, elem);
    for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
      if (++at[k] < dims[k]) break;
      at[k] = 0;
    }
  }
}

// The row-major offset of `at` in a tensor of shape `dims`.
int64_t Offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& at) {
  int64_t offset = 0;
  for (size_t k = 0; k < dims.size(); ++k) offset = offset * dims[k] + at[k];
  return offset;
}

// ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------

// DepthToSpace: [N, H, W, C] -> [N, H * b, W * b, C / b^2]; output (n, y, x, c) is input
// (n, y / b, x / b, ((y % b) * b + x % b) * C / b^2 + c). SpaceToDepth the inverse.
OpDef DepthSpaceOp(const char* name, bool to_space) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [to_space](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_ASSIGN_OR_RETURN(int64_t b, GetIntAttr(c.node, "block_size"));
    GJ_ASSIGN_OR_RETURN(std::string format, GetStringAttrOr(c.node, "data_format", "NHWC"));
    if (b < 2 || b > (int64_t{1} << 20)) return c.TypeError("block_size must be in [2, 2^20], got " + std::to_string(b));
    if (format != "NHWC") return c.TypeError("data_format " + format + " is not supported (NHWC is, as on TensorFlow's CPU)");
    const Shape& in = c.shape(0);
    if (in.unknown_rank()) {
      c.AddOutput(t, Shape{-1, -1, -1, -1});
      return Status::Ok();
    }
    if (in.rank() != 4) return c.ShapeError("input must be rank 4 (NHWC), got " + in.ToString());
    std::vector<int64_t> d = in.dims();
    auto known = [](int64_t v) { return v >= 0; };
    for (int k : {1, 2, 3})
      if (known(d[k]) && d[k] > (int64_t{1} << 40)) return c.ShapeError("input " + in.ToString() + " is too large");
    if (to_space) {
      if (known(d[3]) && d[3] % (b * b) != 0)
        return c.ShapeError("input depth " + std::to_string(d[3]) + " is not divisible by block_size squared (" +
                            std::to_string(b * b) + ")");
      c.AddOutput(t, Shape{d[0], known(d[1]) ? d[1] * b : -1, known(d[2]) ? d[2] * b : -1, known(d[3]) ? d[3] / (b * b) : -1});
    } else {
      for (int k : {1, 2})
        if (known(d[k]) && d[k] % b != 0)
          return c.ShapeError(std::string(k == 1 ? "height " : "width ") + std::to_string(d[k]) +
                              " is not divisible by block_size " + std::to_string(b));
      c.AddOutput(t, Shape{d[0], known(d[1]) ? d[1] / b : -1, known(d[2]) ? d[2] / b : -1, known(d[3]) ? d[3] * b * b : -1});
    }
    return Status::Ok();
  };
  def.compute = [to_space](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const int64_t b = GetIntAttr(ctx.node, "block_size").value();
    const Tensor& in = ctx.input(0);
    const std::vector<int64_t>& id = in.shape().dims();
    const int64_t oc = out->shape().dim(3);
    if (to_space) {
      MoveElements(in, out, [&](const std::vector<int64_t>& at) {
        return Offset(id, {at[0], at[1] / b, at[2] / b, ((at[1] % b) * b + at[2] % b) * oc + at[3]});
      });
    } else {
      const int64_t c = id[3];
      MoveElements(in, out, [&](const std::vector<int64_t>& at) {
        const int64_t block = at[3] / c;
        return Offset(id, {at[0], at[1] * b + block / b, at[2] * b + block % b, at[3] % c});
      });
    }
    return Status::Ok();
  };
  return def;
}

// ---- SpaceToBatchND, BatchToSpaceND --------------------------------------------------------

// The block shape (input 1) and the paddings or crops (input 2, [M, 2]) of a
// SpaceToBatchND/BatchToSpaceND, checked against the input's rank.
struct Blocks {
  std::vector<int64_t> shape, before, after;
  int64_t count = 1;  // the product of the block shape
};

StatusOr<Blocks> ReadBlocks(const InferenceContext& c, const Tensor& block, const Tensor& pads, int rank, bool crops) {
  Blocks b;
  b.shape = IntValues(block);
  const std::vector<int64_t> p = IntValues(pads);
  const int m = static_cast<int>(b.shape.size());
  const char* what = crops ? "crops" : "paddings";
  if (block.shape().rank() != 1) return c.ShapeError("block_shape must be a vector, got " + block.shape().ToString());
  if (pads.shape() != Shape{m, 2})
    return c.ShapeError(std::string(what) + " must be [" + std::to_string(m) + ", 2], got " + pads.shape().ToString());
  if (rank >= 0 && rank < m + 1)
    return c.ShapeError("input of rank " + std::to_string(rank) + " has fewer than " + std::to_string(m) +
                        " spatial dims after its batch");
  for (int i = 0; i < m; ++i) {
    if (b.shape[i] < 1) return c.ShapeError("block_shape must be positive, got " + std::to_string(b.shape[i]));
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) return c.ShapeError(std::string(what) + " must be non-negative");
    b.before.push_back(p[2 * i]);
    b.after.push_back(p[2 * i + 1]);
    GJ_ASSIGN_OR_RETURN(b.count, CheckedMul(b.count, b.shape[i]));
  }
  return b;
}

// SpaceToBatchND: [B, S_1..S_M, rest] padded to P_i = S_i + before_i + after_i (each a
// multiple of block_i), then each block offset (o_1..o_M, row-major) a batch of its own:
// output (o * B + n, s_1..s_M, r) is padded input (n, s_i * block_i + o_i, r).
// BatchToSpaceND the inverse, cropped: output (n, x_i, r) with y_i = x_i + before_i is
// input ((y_i % block_i, row-major) * B + n, y_i / block_i, r).
OpDef SpaceBatchOp(const char* name, bool to_batch) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 3;
  def.value_inputs = {1, 2};
  def.infer = [to_batch](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    GJ_RETURN_IF_ERROR(c.ExpectDType(2, {DType::kInt32, DType::kInt64}));
    const Shape& in = c.shape(0);
    if (!c.value(1) || !c.value(2) || in.unknown_rank()) {
      c.AddOutput(t, in.unknown_rank() ? Shape::UnknownRank() : UnknownDimsLike(in));
      return Status::Ok();
    }
    GJ_ASSIGN_OR_RETURN(Blocks b, ReadBlocks(c, *c.value(1), *c.value(2), in.rank(), !to_batch));
    std::vector<int64_t> d = in.dims();
    if (to_batch) {
      if (d[0] >= 0) {
        GJ_ASSIGN_OR_RETURN(d[0], CheckedMul(d[0], b.count));
      }
    } else if (d[0] >= 0) {
      if (d[0] % b.count != 0)
        return c.ShapeError("input batch " + std::to_string(d[0]) + " is not divisible by the product of block_shape (" +
                            std::to_string(b.count) + ")");
      d[0] /= b.count;
    }
    for (size_t i = 0; i < b.shape.size(); ++i) {
      int64_t& s = d[i + 1];
      if (s < 0) continue;
      if (b.before[i] > (int64_t{1} << 40) || b.after[i] > (int64_t{1} << 40) || s > (int64_t{1} << 40))
        return c.ShapeError(std::string(!to_batch ? "crops" : "paddings") + " or spatial dim " + std::to_string(i) +
                            " too large");
      if (to_batch) {
        const int64_t padded = s + b.before[i] + b.after[i];
        if (padded % b.shape[i] != 0)
          return c.ShapeError("padded spatial dim " + std::to_string(i) + " (" + std::to_string(padded) +
                              ") is not divisible by its block size " + std::to_string(b.shape[i]));
        s = padded / b.shape[i];
      } else {
        GJ_ASSIGN_OR_RETURN(const int64_t full, CheckedMul(s, b.shape[i]));
        if (b.before[i] + b.after[i] > full)
          return c.ShapeError("crops of spatial dim " + std::to_string(i) + " (" + std::to_string(b.before[i]) + " + " +
                              std::to_string(b.after[i]) + ") exceed its size " + std::to_string(full));
        s = full - b.before[i] - b.after[i];
      }
    }
    c.AddOutput(t, Shape(d));
    return Status::Ok();
  };
  def.compute = [to_batch](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    const Tensor& in = ctx.input(0);
    GJ_ASSIGN_OR_RETURN(Blocks b, ReadBlocks(ic, ctx.input(1), ctx.input(2), in.shape().rank(), !to_batch));
    const std::vector<int64_t>& id = in.shape().dims();
    const size_t m = b.shape.size();
    std::vector<int64_t> from(id.size());
    if (to_batch) {
      const int64_t batch = id[0];
      MoveElements(in, out, [&](const std::vector<int64_t>& at) -> int64_t {
        int64_t block = at[0] / batch;
        from = at;
        from[0] = at[0] % batch;
        for (size_t i = m; i-- > 0;) {
          const int64_t p = at[i + 1] * b.shape[i] + block % b.shape[i] - b.before[i];
          block /= b.shape[i];
          if (p < 0 || p >= id[i + 1]) return -1;
          from[i + 1] = p;
        }
        return Offset(id, from);
      });
    } else {
      const int64_t batch = out->shape().dim(0);
      MoveElements(in, out, [&](const std::vector<int64_t>& at) -> int64_t {
        int64_t block = 0;
        from = at;
        for (size_t i = 0; i < m; ++i) {
          const int64_t y = at[i + 1] + b.before[i];
          block = block * b.shape[i] + y % b.shape[i];
          from[i + 1] = y / b.shape[i];
        }
        from[0] = block * batch + at[0];
        return Offset(id, from);
      });
    }
    return Status::Ok();
  };
  return def;
}

// ---- MatrixBandPart ------------------------------------------------------------------------

// The band of each innermost matrix: (m, n) kept where num_lower < 0 or m - n <= num_lower,
// and num_upper < 0 or n - m <= num_upper; zero elsewhere.
OpDef MatrixBandPartOp() {
  OpDef def;
  def.name = "MatrixBandPart";
  def.min_inputs = def.max_inputs = 3;
  def.value_inputs = {1, 2};
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_ASSIGN_OR_RETURN(DType index, c.TypeAttrMatching("Tindex", {1, 2}));
    if (index != DType::kInt32 && index != DType::kInt64) return c.TypeError("Tindex must be int32 or int64");
    const Shape& in = c.shape(0);
    if (!in.unknown_rank() && in.rank() < 2) return c.ShapeError("input must be at least rank 2, got " + in.ToString());
    for (int i : {1, 2}) {
      if (!c.value(i)) continue;
      if (c.value(i)->shape().rank() != 0) return c.ShapeError("num_lower and num_upper must be scalars");
      const int64_t v = c.value(i)->ValueAsInt(0);
      const int64_t limit = in.unknown_rank() ? -1 : in.dim(in.rank() - (i == 1 ? 2 : 1));
      if (limit >= 0 && v > limit)
        return c.ShapeError(std::string(i == 1 ? "num_lower" : "num_upper") + " (" + std::to_string(v) +
                            ") must be negative or at most the matrix's " + (i == 1 ? "rows" : "columns") + " (" +
                            std::to_string(limit) + ")");
    }
    c.AddOutput(t, in);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const int64_t lower = ctx.input(1).ValueAsInt(0), upper = ctx.input(2).ValueAsInt(0);
    const int rank = out->shape().rank();
    const std::vector<int64_t>& dims = out->shape().dims();
    MoveElements(ctx.input(0), out, [&](const std::vector<int64_t>& at) -> int64_t {
      const int64_t m = at[rank - 2], n = at[rank - 1];
      if ((lower >= 0 && m - n > lower) || (upper >= 0 && n - m > upper)) return -1;
      return Offset(dims, at);
    });
    return Status::Ok();
  };
  return def;
}

// ---- GatherNd ------------------------------------------------------------------------------

// params [P_1..P_N], indices [I..., K] (K <= N): output [I..., P_K+1..P_N], the slice of
// params at each index row. An index out of range is an error, as on TensorFlow's CPU.
OpDef GatherNdOp() {
  OpDef def;
  def.name = "GatherNd";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("Tparams", {0}));
    GJ_ASSIGN_OR_RETURN(DType index, c.TypeAttrMatching("Tindices", {1}));
    if (index != DType::kInt32 && index != DType::kInt64) return c.TypeError("Tindices must be int32 or int64");
    const Shape &p = c.shape(0), &i = c.shape(1);
    if (p.unknown_rank() || i.unknown_rank() || i.rank() == 0 || i.dim(i.rank() - 1) < 0) {
      if (!i.unknown_rank() && i.rank() == 0) return c.ShapeError("indices must be at least a vector");
      c.AddOutput(t, Shape::UnknownRank());
      return Status::Ok();
    }
    const int64_t k = i.dim(i.rank() - 1);
    if (k > p.rank())
      return c.ShapeError("index rows of " + std::to_string(k) + " exceed params' rank " + std::to_string(p.rank()));
    std::vector<int64_t> dims(i.dims().begin(), i.dims().end() - 1);
    dims.insert(dims.end(), p.dims().begin() + k, p.dims().end());
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor &p = ctx.input(0), &idx = ctx.input(1);
    const int64_t k = idx.shape().dim(idx.shape().rank() - 1);
    int64_t rows = 1, slice = 1;
    for (int d = 0; d + 1 < idx.shape().rank(); ++d) rows *= idx.shape().dim(d);
    for (int d = static_cast<int>(k); d < p.shape().rank(); ++d) slice *= p.shape().dim(d);
    if (rows == 0 || slice == 0) return Status::Ok();
    const size_t bytes = slice * DTypeSize(p.dtype());
    for (int64_t r = 0; r < rows; ++r) {
      int64_t offset = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t v = idx.ValueAsInt(r * k + j), n = p.shape().dim(static_cast<int>(j));
        if (v < 0 || v >= n) {
          std::string row;
          for (int64_t q = 0; q < k; ++q) row += (q ? ", " : "") + std::to_string(idx.ValueAsInt(r * k + q));
          return ctx.Error("index row " + std::to_string(r) + " = [" + row + "] does not index into params of shape " +
                           p.shape().ToString());
        }
        offset = offset * n + v;
      }
      std::memcpy(static_cast<char*>(out->raw()) + r * bytes, static_cast<const char*>(p.raw()) + offset * bytes, bytes);
    }
    return Status::Ok();
  };
  return def;
}

// ---- ResizeBilinear, ResizeNearestNeighbor -------------------------------------------------

// The output size (input 1: int32 [2], positive) and the two flags, checked.
StatusOr<std::pair<int64_t, int64_t>> ResizeSize(const InferenceContext& c, const Tensor& size) {
  if (size.shape() != Shape{2}) return c.ShapeError("size must be a vector of 2 elements, got " + size.shape().ToString());
  const int64_t h = size.ValueAsInt(0), w = size.ValueAsInt(1);
  if (h <= 0 || w <= 0)
    return c.ShapeError("output dimensions must be positive, got " + std::to_string(h) + "x" + std::to_string(w));
  return std::pair{h, w};
}

// in / out, or with align_corners (and more than one output) (in - 1) / (out - 1), in float
// as TensorFlow computes it.
float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

// ResizeBilinear: output (n, y, x, c) from the four input pixels around the sampled point,
// with TensorFlow's rounding: a source coordinate s = (y + 0.5) * scale - 0.5 with
// half_pixel_centers, else y * scale (float); rows floor(s) (at least 0) and ceil(s) (at
// most the last), weight s - floor(s); the result float32. ResizeNearestNeighbor: the pixel
// at floor(s) (round(s) with align_corners), s = (y + 0.5) * scale with half_pixel_centers,
// clamped to the image; the input's type.
OpDef ResizeOp(const char* name, bool bilinear) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 2;
  def.value_inputs = {1};
  def.infer = [bilinear](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    if (t == DType::kBool) return c.TypeError("T must be a number type");
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32}));
    GJ_ASSIGN_OR_RETURN(bool align, GetBoolAttrOr(c.node, "align_corners", false));
    GJ_ASSIGN_OR_RETURN(bool half, GetBoolAttrOr(c.node, "half_pixel_centers", false));
    if (align && half) return c.TypeError("half_pixel_centers and align_corners cannot both be true");
    const Shape& in = c.shape(0);
    if (!in.unknown_rank() && in.rank() != 4) return c.ShapeError("images must be rank 4 (NHWC), got " + in.ToString());
    int64_t h = -1, w = -1;
    if (c.value(1)) {
      GJ_ASSIGN_OR_RETURN(std::tie(h, w), ResizeSize(c, *c.value(1)));
    }
    const DType out = bilinear ? DType::kFloat : t;
    c.AddOutput(out, in.unknown_rank() ? Shape{-1, h, w, -1} : Shape{in.dim(0), h, w, in.dim(3)});
    return Status::Ok();
  };
  def.compute = [bilinear](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    const bool align = GetBoolAttrOr(ctx.node, "align_corners", false).value();
    const bool half = GetBoolAttrOr(ctx.node, "half_pixel_centers", false).value();
    const int64_t N = in.shape().dim(0), H = in.shape().dim(1), W = in.shape().dim(2), C = in.shape().dim(3);
    const int64_t OH = out->shape().dim(1), OW = out->shape().dim(2);
    if (out->num_elements() == 0) return Status::Ok();
    if (H == 0 || W == 0) return ctx.Error("input image must have a positive height and width");
    const float sh = ResizeScale(H, OH, align), sw = ResizeScale(W, OW, align);
    if (!bilinear) {
      auto source = [&](int64_t o, float scale, int64_t n) {
        const float s = half ? (static_cast<float>(o) + 0.5f) * scale : static_cast<float>(o) * scale;
        int64_t i = std::min(static_cast<int64_t>(align ? std::round(s) : std::floor(s)), n - 1);
        return half ? std::max<int64_t>(i, 0) : i;
      };
      MoveElements(in, out, [&](const std::vector<int64_t>& at) {
        return ((at[0] * H + source(at[1], sh, H)) * W + source(at[2], sw, W)) * C + at[3];
      });
      return Status::Ok();
    }
    struct Taps {
      int64_t lower, upper;
      float weight;
    };
    auto taps = [&](int64_t o, float scale, int64_t n) {
      const float s = half ? (static_cast<float>(o) + 0.5f) * scale - 0.5f : static_cast<float>(o) * scale;
      const float f = std::floor(s);
      return Taps{std::max<int64_t>(static_cast<int64_t>(f), 0), std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), n - 1),
                  s - f};
    };
    return VisitTypes<TypeSet::kNumeric>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = in.data<T>();
      float* y = out->data<float>();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t oy = 0; oy < OH; ++oy) {
          const Taps ty = taps(oy, sh, H);
          for (int64_t ox = 0; ox < OW; ++ox) {
            const Taps tx = taps(ox, sw, W);
            auto at = [&](int64_t r, int64_t q, int64_t c) { return static_cast<float>(x[((n * H + r) * W + q) * C + c]); };
            for (int64_t c = 0; c < C; ++c) {
              const float top_left = at(ty.lower, tx.lower, c), top_right = at(ty.lower, tx.upper, c);
              const float bottom_left = at(ty.upper, tx.lower, c), bottom_right = at(ty.upper, tx.upper, c);
              const float top = top_left + (top_right - top_left) * tx.weight;
              const float bottom = bottom_left + (bottom_right - bottom_left) * tx.weight;
              y[((n * OH + oy) * OW + ox) * C + c] = top + (bottom - top) * ty.weight;
            }
          }
        }
      return Status::Ok();
    });
  };
  return def;
}

const bool kRegistered =
    RegisterOps({DepthSpaceOp("DepthToSpace", true), DepthSpaceOp("SpaceToDepth", false), SpaceBatchOp("SpaceToBatchND", true),
                 SpaceBatchOp("BatchToSpaceND", false), MatrixBandPartOp(), GatherNdOp(), ResizeOp("ResizeBilinear", true),
                 ResizeOp("ResizeNearestNeighbor", false)});

}  // namespace
}  // namespace graphjit
