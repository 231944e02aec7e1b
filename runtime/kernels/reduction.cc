// Reductions (Sum, Mean, Max, Min, Prod, All, Any, ArgMax, ArgMin), the row-wise ops built
// on them (Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits) and the scans (Cumsum, Cumprod).

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "runtime/kernels/common.h"
#include "runtime/kernels/ieee.h"

namespace graphjit {
namespace {

template <typename T>
using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;

enum class Reducer { kSum, kMean, kMax, kMin, kProd };

// Reduces in[outer, r, inner] -> out[outer, inner] in the compute type C.
template <Reducer R, typename C>
void ReduceBlock(const KernelContext& ctx, const C* in, C* out, int64_t outer, int64_t r, int64_t inner) {
  auto combine = [](auto& acc, const auto& x) {
    if constexpr (R == Reducer::kSum || R == Reducer::kMean) acc += x;
    if constexpr (R == Reducer::kProd) acc *= x;
    if constexpr (R == Reducer::kMax) {
      if constexpr (std::is_floating_point_v<C>)
        acc = acc.binaryExpr(x, IeeeMinMax<C, true>());
      else
        acc = acc.max(x);
    }
    if constexpr (R == Reducer::kMin) {
      if constexpr (std::is_floating_point_v<C>)
        acc = acc.binaryExpr(x, IeeeMinMax<C, false>());
      else
        acc = acc.min(x);
    }
  };
  ctx.ParallelFor(outer, r * inner, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const C* src = in + o * r * inner;
      Eigen::Map<Arr<C>> acc(out + o * inner, inner);
      if (inner == 1) {
        Eigen::Map<const Arr<C>> row(src, r);
        if constexpr (R == Reducer::kSum || R == Reducer::kMean) acc[0] = row.sum();
        if constexpr (R == Reducer::kProd) acc[0] = row.prod();
        if constexpr (R == Reducer::kMax) {
          if constexpr (std::is_floating_point_v<C>)
            acc[0] = IeeeMaxCoeff<true>(row);
          else
            acc[0] = row.maxCoeff();
        }
        if constexpr (R == Reducer::kMin) {
          if constexpr (std::is_floating_point_v<C>)
            acc[0] = IeeeMaxCoeff<false>(row);
          else
            acc[0] = row.minCoeff();
        }
        continue;
      }
      acc = Eigen::Map<const Arr<C>>(src, inner);
      for (int64_t i = 1; i < r; ++i) combine(acc, Eigen::Map<const Arr<C>>(src + i * inner, inner));
    }
  });
}

template <Reducer R, typename C>
C Identity() {
  if constexpr (R == Reducer::kSum || R == Reducer::kMean) return C(0);
  if constexpr (R == Reducer::kProd) return C(1);
  if constexpr (R == Reducer::kMax)
    return std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
  return std::numeric_limits<C>::has_infinity ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max();
}

// Sorted, de-duplicated axes in [0, rank).
StatusOr<std::vector<int>> ReductionAxes(const InferenceContext& c, const Tensor& axes, int rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t a : IntValues(axes)) {
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, a, rank));
    seen[axis] = true;
  }
  std::vector<int> out;
  for (int i = 0; i < rank; ++i)
    if (seen[i]) out.push_back(i);
  return out;
}

// The output of a reduction of input 0 over the axes of input 1 (keep_dims: as 1s).
Status AddReducedOutput(InferenceContext& c, DType t) {
  GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
  GJ_ASSIGN_OR_RETURN(bool keep, GetBoolAttrOr(c.node, "keep_dims", false));
  const Shape& in = c.shape(0);
  if (c.value(1) == nullptr || in.unknown_rank()) {
    c.AddOutput(t, keep && !in.unknown_rank() ? Shape(std::vector<int64_t>(in.rank(), -1)) : Shape::UnknownRank());
    return Status::Ok();
  }
  GJ_ASSIGN_OR_RETURN(std::vector<int> axes, ReductionAxes(c, *c.value(1), in.rank()));
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int i = 0; i < in.rank(); ++i) {
    bool reduced = next < axes.size() && axes[next] == i;
    if (reduced) ++next;
    if (!reduced)
      dims.push_back(in.dim(i));
    else if (keep)
      dims.push_back(1);
  }
  c.AddOutput(t, Shape(dims));
  return Status::Ok();
}

// Reduces `in` (of shape `dims`) over `axes` in C, a contiguous block of axes at a time
// from the last to the first. Returns the result, and the count of elements reduced into
// each output in `count`.
template <Reducer R, typename C>
std::vector<C> ReduceAxes(const KernelContext& ctx, const C* in, std::vector<int64_t> dims, const std::vector<int>& axes,
                          int64_t* count) {
  std::vector<C> cur;
  std::vector<bool> reduced(dims.size(), false);
  for (int a : axes) reduced[a] = true;
  const C* cur_ptr = in;
  *count = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0;) {
    if (!reduced[i]) {
      --i;
      continue;
    }
    int hi = i;
    while (i >= 0 && reduced[i]) --i;
    int lo = i + 1;  // block [lo, hi]
    int64_t outer = 1, r = 1, inner = 1;
    for (int d = 0; d < lo; ++d) outer *= dims[d];
    for (int d = lo; d <= hi; ++d) r *= dims[d];
    for (int d = hi + 1; d < static_cast<int>(dims.size()); ++d) inner *= dims[d];
    *count *= r;
    std::vector<C> next(outer * inner);
    if (r == 0) {
      std::fill(next.begin(), next.end(), Identity<R, C>());
    } else {
      ReduceBlock<R, C>(ctx, cur_ptr, next.data(), outer, r, inner);
    }
    cur.swap(next);
    cur_ptr = cur.data();
    dims.erase(dims.begin() + lo, dims.begin() + hi + 1);
    reduced.erase(reduced.begin() + lo, reduced.begin() + hi + 1);
  }
  if (cur_ptr == in) cur.assign(in, in + std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>()));
  return cur;
}

template <Reducer R>
OpDef ReductionOp(const char* name, TypeSet types) {
  OpDef def;
  def.name = name;
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [types](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, types));
    return AddReducedOutput(c, t);
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(std::vector<int> axes, ReductionAxes(ic, ctx.input(1), in.shape().rank()));
    return VisitTypes<TypeSet::kNumeric>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using CT = ComputeType<T>;
      // Sums and products of int32 and int64 wrap (see WrapType): they are reduced as
      // their unsigned type, which has the same size.
      constexpr bool kWraps = (R == Reducer::kSum || R == Reducer::kMean || R == Reducer::kProd) && std::is_integral_v<CT> &&
                              std::is_signed_v<CT> && sizeof(CT) >= 4;
      using C = std::conditional_t<kWraps, WrapType<CT>, CT>;
      const int64_t n_out = out->num_elements();
      std::vector<C> converted;
      const C* data;
      if constexpr (sizeof(T) == sizeof(C) && std::is_integral_v<T> == std::is_integral_v<C>) {
        data = reinterpret_cast<const C*>(in.data<T>());
      } else {
        converted.resize(in.num_elements());
        for (int64_t i = 0; i < in.num_elements(); ++i) converted[i] = static_cast<C>(in.data<T>()[i]);
        data = converted.data();
      }
      int64_t count = 0;
      const std::vector<C> result = ReduceAxes<R, C>(ctx, data, in.shape().dims(), axes, &count);
      const C* cur_ptr = result.data();
      for (int64_t i = 0; i < n_out; ++i) {
        CT v = static_cast<CT>(cur_ptr[i]);
        if constexpr (R == Reducer::kMean) {
          if (count > 0)
            v = v / static_cast<CT>(count);
          else if constexpr (std::is_floating_point_v<CT>)
            v = std::numeric_limits<CT>::quiet_NaN();
        }
        out->data<T>()[i] = static_cast<T>(v);
      }
      return Status::Ok();
    });
  };
  return def;
}

// ArgMax or ArgMin: the first index of the largest (smallest) value along the axis.
OpDef ArgOp(bool max) {
  OpDef def;
  def.name = max ? "ArgMax" : "ArgMin";
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [max](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    DType out_type = DType::kInt64;
    if (c.node.FindAttr("output_type")) {
      GJ_ASSIGN_OR_RETURN(out_type, GetTypeAttr(c.node, "output_type"));
    }
    if (out_type != DType::kInt32 && out_type != DType::kInt64) return c.TypeError("output_type must be int32 or int64");
    const Shape& in = c.shape(0);
    if (c.value(1) == nullptr || in.unknown_rank()) {
      c.AddOutput(out_type, Shape::UnknownRank());
      return Status::Ok();
    }
    if (c.value(1)->num_elements() != 1) return c.ShapeError("dimension must be a scalar");
    if (in.rank() == 0) return c.ShapeError("input must have rank >= 1");
    GJ_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c, c.value(1)->ValueAsInt(0), in.rank()));
    if (in.dim(axis) == 0)
      return c.ShapeError(std::string("cannot take the ") + (max ? "argmax" : "argmin") + " of an empty dimension");
    std::vector<int64_t> dims = in.dims();
    dims.erase(dims.begin() + axis);
    c.AddOutput(out_type, Shape(dims));
    return Status::Ok();
  };
  def.compute = [max](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    int64_t a = ctx.input(1).ValueAsInt(0);
    int rank = in.shape().rank();
    int axis = static_cast<int>(a < 0 ? a + rank : a);
    int64_t outer = 1, r = in.shape().dim(axis), inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.shape().dim(d);
    for (int d = axis + 1; d < rank; ++d) inner *= in.shape().dim(d);
    return VisitTypes<TypeSet::kNumeric>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          const T* p = in.data<T>() + o * r * inner + j;
          int64_t best = 0;
          C best_v = static_cast<C>(p[0]);
          for (int64_t i = 1; i < r; ++i) {
            C v = static_cast<C>(p[i * inner]);
            if (max ? v > best_v : v < best_v) {
              best_v = v;
              best = i;
            }
          }
          if (out->dtype() == DType::kInt32)
            out->data<int32_t>()[o * inner + j] = static_cast<int32_t>(best);
          else
            out->data<int64_t>()[o * inner + j] = best;
        }
      }
      return Status::Ok();
    });
  };
  return def;
}

// Softmax and LogSoftmax over the last dimension.
OpDef SoftmaxOp(const char* name, bool log) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    if (!c.shape(0).unknown_rank() && c.shape(0).rank() < 1) return c.ShapeError("logits must have rank >= 1, got a scalar");
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [log](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    const int64_t d = in.shape().dim(in.shape().rank() - 1);
    if (d == 0 || in.num_elements() == 0) return Status::Ok();
    const int64_t rows = in.num_elements() / d;
    return VisitTypes<TypeSet::kFloat>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      ctx.ParallelFor(rows, d * 8, [&](int64_t b, int64_t e) {
        Arr<C> buf(d), row(d);
        for (int64_t r = b; r < e; ++r) {
          const T* src = in.data<T>() + r * d;
          T* dst = out->data<T>() + r * d;
          for (int64_t i = 0; i < d; ++i) row[i] = static_cast<C>(src[i]);
          C m = row.maxCoeff();
          buf = ZeroBelowNormal((row - m).exp());
          C sum = buf.sum();
          if (log) {
            buf = (row - m) - std::log(sum);
          } else {
            buf /= sum;
          }
          for (int64_t i = 0; i < d; ++i) dst[i] = static_cast<T>(buf[i]);
        }
      });
      return Status::Ok();
    });
  };
  return def;
}

// Logits and labels broadcast against each other (TensorFlow 2 semantics); both are
// matrices [batch, classes]. Outputs: loss [batch] and backprop [batch, classes].
OpDef SoftmaxXentOp() {
  OpDef def;
  def.name = "SoftmaxCrossEntropyWithLogits";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    for (int i : {0, 1})
      if (!c.shape(i).unknown_rank() && c.shape(i).rank() != 2)
        return c.ShapeError("logits and labels must be matrices, got " + c.shape(i).ToString());
    auto s = BroadcastShapes(c.shape(0), c.shape(1));
    if (!s.ok())
      return c.ShapeError("logits " + c.shape(0).ToString() + " and labels " + c.shape(1).ToString() + " do not broadcast");
    c.AddOutput(t, s->unknown_rank() ? Shape{-1} : Shape{s->dim(0)});
    c.AddOutput(t, s->unknown_rank() ? Shape{-1, -1} : *s);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * loss, ctx.AllocateOutput(0));
    GJ_ASSIGN_OR_RETURN(Tensor * grad, ctx.AllocateOutput(1));
    const Tensor& logits = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    const int64_t rows = grad->shape().dim(0), d = grad->shape().dim(1);
    // Element (r, i) of a [rows, d] operand that may be broadcast along either dim.
    auto index = [](const Tensor& t, int64_t r, int64_t i) {
      return (t.shape().dim(0) == 1 ? 0 : r) * t.shape().dim(1) + (t.shape().dim(1) == 1 ? 0 : i);
    };
    return VisitTypes<TypeSet::kFloat>(logits.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      Arr<C> x(d), y(d);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < d; ++i) {
          x[i] = static_cast<C>(logits.data<T>()[index(logits, r, i)]);
          y[i] = static_cast<C>(labels.data<T>()[index(labels, r, i)]);
        }
        Arr<C> shifted = x - (d > 0 ? x.maxCoeff() : C(0));
        Arr<C> e = shifted.exp();
        C sum = e.sum();
        loss->data<T>()[r] = static_cast<T>((y * (std::log(sum) - shifted)).sum());
        Arr<C> g = e / sum - y;
        for (int64_t i = 0; i < d; ++i) grad->data<T>()[r * d + i] = static_cast<T>(g[i]);
      }
      return Status::Ok();
    });
  };
  return def;
}

// BiasAddGrad: BiasAdd's gradient for its bias, out_backprop summed over every dim but the
// channels' (the last in NHWC, dim 1 in NCHW), in order, in float32 for float16 and
// bfloat16. (TensorFlow's takes integers too; graphjit's floats only.) The graph passes make
// it a Sum where its rank is known (passes/arithmetic.cc), which the JIT compiles.
OpDef BiasAddGradOp() {
  OpDef def;
  def.name = "BiasAddGrad";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    GJ_ASSIGN_OR_RETURN(std::string format, GetStringAttrOr(c.node, "data_format", "NHWC"));
    if (format != "NHWC" && format != "NCHW") return c.TypeError("unknown data_format '" + format + "'");
    const Shape& g = c.shape(0);
    if (g.unknown_rank()) {
      c.AddOutput(t, Shape{-1});
      return Status::Ok();
    }
    if (g.rank() < 2) return c.ShapeError("out_backprop must have rank >= 2, got " + g.ToString());
    c.AddOutput(t, Shape{g.dim(format == "NHWC" ? g.rank() - 1 : 1)});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& g = ctx.input(0);
    const std::vector<int64_t>& dims = g.shape().dims();
    const int channel = GetStringAttrOr(ctx.node, "data_format", "NHWC").value() == "NHWC" ? g.shape().rank() - 1 : 1;
    const int64_t channels = dims[channel];
    int64_t inner = 1;  // the elements of one channel between two of the next (NCHW: H x W)
    for (size_t i = channel + 1; i < dims.size(); ++i) inner *= dims[i];
    const int64_t outer = channels * inner == 0 ? 0 : g.num_elements() / (channels * inner);
    return VisitTypes<TypeSet::kFloat>(g.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      std::vector<C> sums(channels, C(0));
      const T* x = g.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t i = 0; i < inner; ++i) sums[c] += static_cast<C>(x[(o * channels + c) * inner + i]);
      for (int64_t c = 0; c < channels; ++c) out->data<T>()[c] = static_cast<T>(sums[c]);
      return Status::Ok();
    });
  };
  return def;
}

// All and Any: a logical and (or) of bools over the axes, as the least (greatest) of 0s and 1s.
OpDef LogicalReductionOp(const char* name, bool all) {
  OpDef def;
  def.name = name;
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_RETURN_IF_ERROR(c.ExpectDType(0, {DType::kBool}));
    return AddReducedOutput(c, DType::kBool);
  };
  def.compute = [all](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(std::vector<int> axes, ReductionAxes(ic, ctx.input(1), in.shape().rank()));
    const bool* x = in.data<bool>();
    std::vector<uint8_t> bits(x, x + in.num_elements());
    int64_t count = 0;
    const std::vector<uint8_t> result =
        all ? ReduceAxes<Reducer::kMin, uint8_t>(ctx, bits.data(), in.shape().dims(), axes, &count)
            : ReduceAxes<Reducer::kMax, uint8_t>(ctx, bits.data(), in.shape().dims(), axes, &count);
    for (int64_t i = 0; i < out->num_elements(); ++i) out->data<bool>()[i] = result[i] != 0;
    return Status::Ok();
  };
  return def;
}

// Cumsum and Cumprod: the running sum (product) along `axis`, from its end with `reverse`,
// each output without its own element with `exclusive` (the first is then 0, or 1). Each
// step in the compute type, rounded to the tensor's; int32 and int64 wrap.
OpDef ScanOp(const char* name, bool product) {
  OpDef def;
  def.name = name;
  def.value_inputs = {1};
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    if (!c.shape(1).unknown_rank() && c.shape(1).rank() != 0)
      return c.ShapeError("the axis must be a scalar, got shape " + c.shape(1).ToString());
    if (c.value(1) != nullptr && !c.shape(0).unknown_rank())
      GJ_RETURN_IF_ERROR(NormalizeAxis(c, c.value(1)->ValueAsInt(0), c.shape(0).rank()).status());
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [product](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ic, ctx.input(1).ValueAsInt(0), in.shape().rank()));
    GJ_ASSIGN_OR_RETURN(const bool exclusive, GetBoolAttrOr(ctx.node, "exclusive", false));
    GJ_ASSIGN_OR_RETURN(const bool reverse, GetBoolAttrOr(ctx.node, "reverse", false));
    int64_t outer = 1, n = in.shape().dim(axis), inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.shape().dim(d);
    for (int d = axis + 1; d < in.shape().rank(); ++d) inner *= in.shape().dim(d);
    return VisitTypes<TypeSet::kNumeric>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using CT = ComputeType<T>;
      using C = std::conditional_t<std::is_integral_v<CT> && std::is_signed_v<CT> && sizeof(CT) >= 4, WrapType<CT>, CT>;
      const T* x = in.data<T>();
      T* y = out->data<T>();
      ctx.ParallelFor(outer * inner, n, [&](int64_t b, int64_t e) {
        for (int64_t line = b; line < e; ++line) {
          const int64_t base = line / inner * n * inner + line % inner;
          C acc = product ? C(1) : C(0);
          // Each running value rounded to T, as TensorFlow's kernel (a 16-bit float's too).
          auto step = [&](C v) {
            const C r = product ? static_cast<C>(acc * v) : static_cast<C>(acc + v);
            acc = static_cast<C>(static_cast<CT>(static_cast<T>(static_cast<CT>(r))));
          };
          for (int64_t k = 0; k < n; ++k) {
            const int64_t at = base + (reverse ? n - 1 - k : k) * inner;
            const C v = static_cast<C>(static_cast<CT>(x[at]));
            if (!exclusive) step(v);
            y[at] = static_cast<T>(static_cast<CT>(acc));
            if (exclusive) step(v);
          }
        }
      });
      return Status::Ok();
    });
  };
  return def;
}

const bool kRegistered = RegisterOps({
    BiasAddGradOp(),
    ReductionOp<Reducer::kSum>("Sum", TypeSet::kNumeric),
    ReductionOp<Reducer::kMean>("Mean", TypeSet::kNumeric),
    ReductionOp<Reducer::kMax>("Max", TypeSet::kNumeric),
    ReductionOp<Reducer::kMin>("Min", TypeSet::kNumeric),
    ReductionOp<Reducer::kProd>("Prod", TypeSet::kNumeric),
    ArgOp(true),
    ArgOp(false),
    SoftmaxOp("Softmax", false),
    SoftmaxOp("LogSoftmax", true),
    SoftmaxXentOp(),
    LogicalReductionOp("All", true),
    LogicalReductionOp("Any", false),
    ScanOp("Cumsum", false),
    ScanOp("Cumprod", true),
});

}  // namespace
}  // namespace graphjit
