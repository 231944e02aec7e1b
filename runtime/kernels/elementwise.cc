// Elementwise ops with TensorFlow's broadcasting: unary math, binary arithmetic,
// comparisons, logical ops, AddN, Select/SelectV2, BiasAdd, Cast.
//
// Every op is written once as an Eigen array expression; f32/f64/integer tensors are
// mapped directly (vectorized by Eigen), f16/bf16 are converted to f32 in short runs.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include <unsupported/Eigen/SpecialFunctions>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/common.h"
#include "runtime/kernels/ieee.h"

namespace graphjit {
namespace {

template <typename T>
using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
template <typename T>
using MapArr = Eigen::Map<Arr<T>>;
template <typename T>
using CMapArr = Eigen::Map<const Arr<T>>;

template <typename X>
using ScalarOf = typename std::decay_t<X>::Scalar;

constexpr int64_t kConvertRun = 512;

// f(x, y) on Eigen array expressions, wrapping around for signed integers (see WrapType).
template <typename F>
auto Wrapping(F op) {
  return [op](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
      using U = WrapType<C>;
      return x.binaryExpr(y, [op](C a, C b) { return static_cast<C>(op(static_cast<U>(a), static_cast<U>(b))); });
    } else {
      return op(x, y);
    }
  };
}

// ---- unary -------------------------------------------------------------------

// out[0..n) = f(in[0..n)) where f maps an Eigen array expression of ComputeType<T>.
template <typename T, typename F>
void UnaryRun(const T* in, T* out, int64_t n, const F& f) {
  using C = ComputeType<T>;
  if constexpr (std::is_same_v<T, C>) {
    MapArr<T>(out, n) = f(CMapArr<T>(in, n));
  } else {
    Arr<C> buf(kConvertRun), r(kConvertRun);
    for (int64_t s = 0; s < n; s += kConvertRun) {
      int64_t len = std::min(kConvertRun, n - s);
      for (int64_t i = 0; i < len; ++i) buf[i] = static_cast<C>(in[s + i]);
      r.head(len) = f(buf.head(len));
      for (int64_t i = 0; i < len; ++i) out[s + i] = static_cast<T>(r[i]);
    }
  }
}

// A unary op; f(x, alpha) maps an Eigen array expression (alpha: the node's "alpha" attr).
template <TypeSet S, typename F>
OpDef UnaryOp(const char* name, int64_t cost, F f) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, S));
    GJ_RETURN_IF_ERROR(GetFloatAttrOr(c.node, "alpha", 0.2f).status());  // an alpha must be a float
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [f, cost](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.ForwardInputOrAllocateOutput({0}, 0));
    const Tensor& in = ctx.input(0);
    GJ_ASSIGN_OR_RETURN(const float alpha, GetFloatAttrOr(ctx.node, "alpha", 0.2f));  // LeakyRelu's default
    return VisitTypes<S>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T* src = in.data<T>();
      T* dst = out->data<T>();
      ctx.ParallelFor(in.num_elements(), cost, [&](int64_t b, int64_t e) {
        UnaryRun<T>(src + b, dst + b, e - b, [&](const auto& x) { return f(x, static_cast<C>(alpha)); });
      });
      return Status::Ok();
    });
  };
  return def;
}

// ---- binary --------------------------------------------------------------------

// out[0..n) = f(a, b) where a stride of 0 repeats a scalar. Each operand is mapped as a
// contiguous array (a scalar is first repeated into a short run), so f is instantiated
// once per type rather than once per combination of strides, and compiled once rather
// than at each of its callers (the broadcast plan's and the repeated vector's).
template <typename T, typename Out, typename F>
void BinaryRun(const T* a, int64_t sa, const T* b, int64_t sb, Out* o, int64_t n, const F& f) {
  using C = ComputeType<T>;
  using OC = ComputeType<Out>;
  if constexpr (std::is_same_v<T, C> && std::is_same_v<Out, OC>) {
    if (sa && sb) {
      MapArr<Out>(o, n) = f(CMapArr<T>(a, n), CMapArr<T>(b, n));
      return;
    }
    std::array<T, kConvertRun> ra, rb;
    const int64_t run = std::min(kConvertRun, n);
    if (!sa) std::fill_n(ra.data(), run, a[0]);
    if (!sb) std::fill_n(rb.data(), run, b[0]);
    for (int64_t s = 0; s < n; s += kConvertRun) {
      const int64_t len = std::min(kConvertRun, n - s);
      MapArr<Out>(o + s, len) = f(CMapArr<T>(sa ? a + s : ra.data(), len), CMapArr<T>(sb ? b + s : rb.data(), len));
    }
  } else {
    Arr<C> ba(kConvertRun), bb(kConvertRun);
    Arr<OC> r(kConvertRun);
    for (int64_t s = 0; s < n; s += kConvertRun) {
      int64_t len = std::min(kConvertRun, n - s);
      for (int64_t i = 0; i < len; ++i) {
        ba[i] = static_cast<C>(a[sa * (s + i)]);
        bb[i] = static_cast<C>(b[sb * (s + i)]);
      }
      r.head(len) = f(ba.head(len), bb.head(len));
      for (int64_t i = 0; i < len; ++i) o[s + i] = static_cast<Out>(r[i]);
    }
  }
}

// True if `small` is a vector along the last dim of `big` ([C], [1, C], ...), so that
// broadcasting repeats it every C elements: a bias add on NHWC data, for one.
bool IsRepeatedLastDim(const Shape& big, const Shape& small) {
  if (big.rank() == 0 || small.rank() == 0 || small.num_elements() != big.dim(big.rank() - 1)) return false;
  for (int i = 0; i + 1 < small.rank(); ++i)
    if (small.dim(i) != 1) return false;
  return small.rank() <= big.rank() && small.dim(small.rank() - 1) == big.dim(big.rank() - 1);
}

// out = f(big, small repeated) (or f(small repeated, big) if `small_first`) when the
// repeated vector is short: the vector is tiled once into a run of a few hundred
// elements, so the loop runs over long contiguous stretches instead of C at a time.
template <typename T, typename Out, typename F>
void RepeatedVectorRun(const KernelContext& ctx, const T* big, const T* small, int64_t c, bool small_first, Out* out,
                       int64_t total, int64_t cost, const F& f) {
  // (No longer than the output: for a small tensor the tiling would be the cost.)
  const int64_t run = c * std::max<int64_t>(1, std::min(512 / c, total / c));
  std::unique_ptr<T[]> tiled(new T[run]);  // (not std::vector: T may be bool)
  for (int64_t i = 0; i < run; i += c) std::copy(small, small + c, tiled.get() + i);
  const int64_t chunks = (total + run - 1) / run;
  ctx.ParallelFor(chunks, run * cost, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t start = k * run, len = std::min(run, total - start);
      if (small_first) {
        BinaryRun<T, Out>(tiled.get(), 1, big + start, 1, out + start, len, f);
      } else {
        BinaryRun<T, Out>(big + start, 1, tiled.get(), 1, out + start, len, f);
      }
    }
  });
}

// Runs f over the broadcast of a and b into out, taking the repeated-vector path when
// the last dim is short.
template <typename T, typename Out, typename F>
void BroadcastBinary(const KernelContext& ctx, const Tensor& a, const Shape& a_shape, const Tensor& b, const Shape& b_shape,
                     Tensor* out, int64_t cost, const F& f) {
  const Shape& os = out->shape();
  if (out->num_elements() == 0) return;  // (a last dim of 0 would divide by zero below)
  constexpr int64_t kShortRun = 64;
  if (os.rank() > 0 && os.dim(os.rank() - 1) < kShortRun) {
    if (a_shape == os && IsRepeatedLastDim(os, b_shape)) {
      RepeatedVectorRun<T, Out>(ctx, a.data<T>(), b.data<T>(), os.dim(os.rank() - 1), false, out->data<Out>(),
                                out->num_elements(), cost, f);
      return;
    }
    if (b_shape == os && IsRepeatedLastDim(os, a_shape)) {
      RepeatedVectorRun<T, Out>(ctx, b.data<T>(), a.data<T>(), os.dim(os.rank() - 1), true, out->data<Out>(), out->num_elements(),
                                cost, f);
      return;
    }
  }
  BroadcastPlan plan({a_shape, b_shape}, os);
  plan.Run(ctx, cost, [&](const int64_t* off, int64_t o, int64_t n) {
    BinaryRun<T, Out>(a.data<T>() + off[0], plan.inner_stride(0), b.data<T>() + off[1], plan.inner_stride(1),
                      out->data<Out>() + o, n, f);
  });
}

Status InferBroadcast(const InferenceContext& c, std::initializer_list<int> inputs, Shape* out) {
  Shape s = c.shape(*inputs.begin());
  for (int i : inputs) {
    auto r = BroadcastShapes(s, c.shape(i));
    if (!r.ok()) return c.ShapeError(r.status().message());
    s = *r;
  }
  *out = s;
  return Status::Ok();
}

// A binary op with broadcasting; f maps two Eigen array expressions. kBoolOut for
// comparisons.
template <TypeSet S, bool kBoolOut, typename F>
OpDef BinaryOp(const char* name, int64_t cost, F f) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, S));
    Shape s;
    GJ_RETURN_IF_ERROR(InferBroadcast(c, {0, 1}, &s));
    c.AddOutput(kBoolOut ? DType::kBool : t, s);
    return Status::Ok();
  };
  def.compute = [f, cost](KernelContext& ctx) -> Status {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.ForwardInputOrAllocateOutput({0, 1}, 0));
    return VisitTypes<S>(a.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using Out = std::conditional_t<kBoolOut, bool, T>;
      BroadcastBinary<T, Out>(ctx, a, a.shape(), b, b.shape(), out, cost, f);
      return Status::Ok();
    });
  };
  return def;
}

template <bool kMax>
auto MinMax() {
  return [](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    if constexpr (!Eigen::NumTraits<C>::IsInteger) {  // f16 and bf16 too
      return x.binaryExpr(y, IeeeMinMax<C, kMax>());
    } else {
      if constexpr (kMax)
        return x.max(y);
      else
        return x.min(y);
    }
  };
}

// Python's // and % (FloorDiv, FloorMod): the quotient rounded down, and the remainder
// with the divisor's sign. Integer division by -1 wraps (no INT_MIN / -1 trap).
template <bool kMod>
struct FloorDivMod {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (Eigen::NumTraits<C>::IsInteger) {
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return kMod ? C(0) : static_cast<C>(0 - static_cast<std::make_unsigned_t<C>>(a));
      }
      const C r = a % b;
      const bool adjust = r != 0 && ((r < 0) != (b < 0));
      if constexpr (kMod)
        return adjust ? static_cast<C>(r + b) : r;
      else
        return static_cast<C>(a / b - (adjust ? 1 : 0));
    } else {
      using W = std::conditional_t<std::is_same_v<C, double>, double, float>;
      const W x = static_cast<W>(a), y = static_cast<W>(b);
      if constexpr (!kMod) return static_cast<C>(std::floor(x / y));
      const W r = std::fmod(x, y);
      return static_cast<C>(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
    }
  }
};

template <bool kMod>
OpDef FloorDivModOp() {
  OpDef def = BinaryOp<TypeSet::kNumeric, false>(
      kMod ? "FloorMod" : "FloorDiv", 8, [](const auto& x, const auto& y) { return x.binaryExpr(y, FloorDivMod<kMod>()); });
  def.compute = [compute = def.compute](KernelContext& ctx) -> Status {
    const Tensor& y = ctx.input(1);
    if (IsInteger(y.dtype()))
      for (int64_t i = 0; i < y.num_elements(); ++i)
        if (y.ValueAsInt(i) == 0) return ctx.Error("integer division by zero");
    return compute(ctx);
  };
  return def;
}

// ---- AddN, Select, BiasAdd, Cast -------------------------------------------------

OpDef AddNOp() {
  OpDef def;
  def.name = "AddN";
  def.min_inputs = 1;
  def.max_inputs = -1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(int64_t n, GetIntAttr(c.node, "N"));
    if (n != c.num_inputs())
      return c.TypeError("attr N=" + std::to_string(n) + " but the node has " + std::to_string(c.num_inputs()) + " inputs");
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {}));
    for (int i = 0; i < c.num_inputs(); ++i)
      if (c.dtype(i) != t) return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    Shape s = c.shape(0);
    for (int i = 1; i < c.num_inputs(); ++i) {
      if (!IsCompatible(s, c.shape(i)))
        return c.ShapeError("inputs must have the same shape, got " + s.ToString() + " and " + c.shape(i).ToString());
      if (s.unknown_rank()) s = c.shape(i);
    }
    c.AddOutput(t, s);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    return VisitTypes<TypeSet::kNumeric>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      ctx.ParallelFor(out->num_elements(), ctx.num_inputs(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          C acc = static_cast<C>(ctx.input(0).data<T>()[i]);
          for (int k = 1; k < ctx.num_inputs(); ++k) acc = WrapAdd(acc, static_cast<C>(ctx.input(k).data<T>()[i]));
          out->data<T>()[i] = static_cast<T>(acc);
        }
      });
      return Status::Ok();
    });
  };
  return def;
}

// Select (v1): cond is a scalar, the same shape as x, or a vector selecting rows.
// SelectV2: cond, x and y broadcast.
OpDef SelectOp(const char* name, bool v2) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 3;
  def.infer = [v2](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {1, 2}));
    if (c.dtype(0) != DType::kBool) return c.TypeError("condition must be bool, got " + DTypeName(c.dtype(0)));
    Shape s;
    if (v2) {
      GJ_RETURN_IF_ERROR(InferBroadcast(c, {0, 1, 2}, &s));
    } else {
      if (!IsCompatible(c.shape(1), c.shape(2)))
        return c.ShapeError("x and y must have the same shape, got " + c.shape(1).ToString() + " and " + c.shape(2).ToString());
      s = c.shape(1).unknown_rank() ? c.shape(2) : c.shape(1);
      const Shape& cond = c.shape(0);
      if (!cond.unknown_rank() && !s.unknown_rank() && cond.rank() != 0 && !IsCompatible(cond, s) &&
          !(cond.rank() == 1 && s.rank() >= 1 && (cond.dim(0) < 0 || s.dim(0) < 0 || cond.dim(0) == s.dim(0))))
        return c.ShapeError("condition shape " + cond.ToString() + " must be a scalar, match x " + s.ToString() +
                            ", or be a vector of its first dimension");
    }
    c.AddOutput(t, s);
    return Status::Ok();
  };
  def.compute = [v2](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& cond = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    Shape cond_shape = cond.shape();
    if (!v2 && cond_shape.rank() == 1 && out->shape().rank() > 1) {
      // A row selector: view it as [n, 1, ..., 1] and broadcast.
      std::vector<int64_t> dims(out->shape().rank(), 1);
      dims[0] = cond_shape.dim(0);
      cond_shape = Shape(dims);
    }
    BroadcastPlan plan({cond_shape, x.shape(), y.shape()}, out->shape());
    return VisitTypes<TypeSet::kAll>(out->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      plan.Run(ctx, 1, [&](const int64_t* off, int64_t o, int64_t n) {
        const bool* cp = cond.data<bool>() + off[0];
        const T* xp = x.data<T>() + off[1];
        const T* yp = y.data<T>() + off[2];
        T* op = out->data<T>() + o;
        int64_t sc = plan.inner_stride(0), sx = plan.inner_stride(1), sy = plan.inner_stride(2);
        for (int64_t i = 0; i < n; ++i) op[i] = cp[sc * i] ? xp[sx * i] : yp[sy * i];
      });
      return Status::Ok();
    });
  };
  return def;
}

OpDef BiasAddOp() {
  OpDef def;
  def.name = "BiasAdd";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    GJ_ASSIGN_OR_RETURN(std::string format, GetStringAttrOr(c.node, "data_format", "NHWC"));
    if (format != "NHWC" && format != "NCHW") return c.TypeError("unknown data_format '" + format + "'");
    const Shape& v = c.shape(0);
    const Shape& b = c.shape(1);
    if (!b.unknown_rank() && b.rank() != 1) return c.ShapeError("bias must be a vector, got " + b.ToString());
    if (!v.unknown_rank()) {
      if (v.rank() < 2) return c.ShapeError("value must have rank >= 2, got " + v.ToString());
      int channel = format == "NHWC" ? v.rank() - 1 : 1;
      if (!b.unknown_rank() && v.dim(channel) >= 0 && b.dim(0) >= 0 && v.dim(channel) != b.dim(0))
        return c.ShapeError("bias of size " + std::to_string(b.dim(0)) + " does not match dimension " + std::to_string(channel) +
                            " of value " + v.ToString());
    }
    c.AddOutput(t, v);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.ForwardInputOrAllocateOutput({0}, 0));
    const Tensor& v = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    std::string format = GetStringAttrOr(ctx.node, "data_format", "NHWC").value();
    // View the bias with the value's rank so that it broadcasts along its channel dim.
    std::vector<int64_t> bdims(v.shape().rank(), 1);
    bdims[format == "NHWC" ? v.shape().rank() - 1 : 1] = bias.shape().dim(0);
    return VisitTypes<TypeSet::kNumeric>(v.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      BroadcastBinary<T, T>(ctx, v, v.shape(), bias, Shape(bdims), out, 1, Wrapping(std::plus<>()));
      return Status::Ok();
    });
  };
  return def;
}

OpDef CastOp() {
  OpDef def;
  def.name = "Cast";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType src, c.TypeAttrMatching("SrcT", {0}));
    GJ_ASSIGN_OR_RETURN(DType dst, GetTypeAttr(c.node, "DstT"));
    (void)src;
    if (!IsSupportedDType(dst)) return c.TypeError("cannot cast to " + DTypeName(dst));
    c.AddOutput(dst, c.shape(0));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor out, CastTensor(ctx.input(0), ctx.output_dtypes[0], ctx.allocator));
    ctx.ForwardOutput(0, std::move(out));
    return Status::Ok();
  };
  return def;
}

// IsNan, IsInf and IsFinite: a float's class, as a bool.
template <typename P>
OpDef FloatClassOp(const char* name, P is) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    c.AddOutput(DType::kBool, c.shape(0));
    return Status::Ok();
  };
  def.compute = [is](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& in = ctx.input(0);
    bool* o = out->data<bool>();
    return VisitTypes<TypeSet::kFloat>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = in.data<T>();
      for (int64_t i = 0; i < in.num_elements(); ++i) o[i] = is(static_cast<double>(static_cast<ComputeType<T>>(x[i])));
      return Status::Ok();
    });
  };
  return def;
}

OpDef LogicalNotOp() {
  OpDef def;
  def.name = "LogicalNot";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_RETURN_IF_ERROR(c.ExpectDType(0, {DType::kBool}));
    c.AddOutput(DType::kBool, c.shape(0));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const bool* in = ctx.input(0).data<bool>();
    bool* o = out->data<bool>();
    for (int64_t i = 0; i < out->num_elements(); ++i) o[i] = !in[i];
    return Status::Ok();
  };
  return def;
}

OpDef LogicalBinaryOp(const char* name, bool is_and) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_RETURN_IF_ERROR(c.ExpectDType(0, {DType::kBool}));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kBool}));
    Shape s;
    GJ_RETURN_IF_ERROR(InferBroadcast(c, {0, 1}, &s));
    c.AddOutput(DType::kBool, s);
    return Status::Ok();
  };
  def.compute = [is_and](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    BroadcastPlan plan({a.shape(), b.shape()}, out->shape());
    plan.Run(ctx, 1, [&](const int64_t* off, int64_t o, int64_t n) {
      const bool* ap = a.data<bool>() + off[0];
      const bool* bp = b.data<bool>() + off[1];
      bool* op = out->data<bool>() + o;
      int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
      for (int64_t i = 0; i < n; ++i) op[i] = is_and ? (ap[sa * i] && bp[sb * i]) : (ap[sa * i] || bp[sb * i]);
    });
    return Status::Ok();
  };
  return def;
}

// ---- the op table ----------------------------------------------------------------

// ClipByValue(t, min, max): min(max(t, min), max)... as TensorFlow's CPU kernel computes it,
// t.cwiseMin(max).cwiseMax(min) with std::min and std::max per element: a NaN of t stays, a
// NaN bound is passed over. The bounds are scalars or of t's shape.
OpDef ClipByValueOp() {
  OpDef def;
  def.name = "ClipByValue";
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1, 2}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kNumeric));
    for (int i : {1, 2}) {
      const Shape& b = c.shape(i);
      if (b.IsFullyDefined() && b.num_elements() == 1 && b.rank() == 0) continue;
      if (b.IsFullyDefined() && c.shape(0).IsFullyDefined() && b != c.shape(0))
        return c.ShapeError("clip_value_min and clip_value_max must be scalars or of t's shape " + c.shape(0).ToString() +
                            ", got " + b.ToString());
    }
    c.AddOutput(t, c.shape(0));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const Tensor &x = ctx.input(0), &lo = ctx.input(1), &hi = ctx.input(2);
    for (const Tensor* b : {&lo, &hi})
      if (b->shape().rank() != 0 && b->shape() != x.shape())
        return ctx.Error("clip_value_min and clip_value_max must be scalars or of t's shape " + x.shape().ToString() + ", got " +
                         b->shape().ToString());
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.ForwardInputOrAllocateOutput({0}, 0));
    return VisitTypes<TypeSet::kNumeric>(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T *px = x.data<T>(), *pl = lo.data<T>(), *ph = hi.data<T>();
      const bool lo_all = lo.shape().rank() == 0, hi_all = hi.shape().rank() == 0;
      T* po = out->data<T>();
      ctx.ParallelFor(x.num_elements(), 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const C v = static_cast<C>(px[i]), l = static_cast<C>(pl[lo_all ? 0 : i]), h = static_cast<C>(ph[hi_all ? 0 : i]);
          const C r = std::min(v, h);
          po[i] = static_cast<T>(std::max(r, l));
        }
      });
      return Status::Ok();
    });
  };
  return def;
}

std::vector<OpDef> ElementwiseOps() {
  using TS = TypeSet;
  std::vector<OpDef> ops;
  // Unary: f(array expression, alpha attr).
  // x * -1, not -x: Eigen 3.4's AVX negation is 0 - x, which makes -(+0) +0 (Neg(+0) must be
  // -0: 1 / Neg(+0) is -Inf).
  // Signed integers wrap: Neg and Abs of the most negative value are that value.
  ops.push_back(UnaryOp<TS::kNumeric>("Neg", 1, [](const auto& x, auto) {
    return Wrapping(std::multiplies<>())(x, x.Constant(x.size(), ScalarOf<decltype(x)>(-1)));
  }));
  ops.push_back(UnaryOp<TS::kNumeric>("Abs", 1, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
      return x.unaryExpr([](C v) { return v < 0 ? WrapMul(v, C(-1)) : v; });
    else
      return x.abs();
  }));
  ops.push_back(UnaryOp<TS::kNumeric>("Sign", 1, [](const auto& x, auto) { return x.sign(); }));
  ops.push_back(UnaryOp<TS::kNumeric>("Square", 1, [](const auto& x, auto) { return Wrapping(std::multiplies<>())(x, x); }));
  ops.push_back(UnaryOp<TS::kNumeric>("Relu", 1, [](const auto& x, auto) { return x.max(ScalarOf<decltype(x)>(0)); }));
  ops.push_back(UnaryOp<TS::kNumeric>("Relu6", 1, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    return x.max(C(0)).min(C(6));
  }));
  ops.push_back(UnaryOp<TS::kFloat>("Exp", 8, [](const auto& x, auto) { return ZeroBelowNormal(Exp(x)); }));
  ops.push_back(UnaryOp<TS::kFloat>("Log", 8, [](const auto& x, auto) { return x.log(); }));
  ops.push_back(UnaryOp<TS::kFloat>("Log1p", 8, [](const auto& x, auto) { return x.log1p(); }));
  // Not Eigen 3.4's x.sqrt(): on SSE/AVX (not AVX-512) it is an rsqrt estimate and a Newton
  // step, 1-2 bits short, NaN for +inf and 0 for subnormals. A reference kernel is exact:
  // a scalar std::sqrt per element, which the compiler vectorizes to sqrtps (this file is
  // compiled with -fno-math-errno).
  ops.push_back(
      UnaryOp<TS::kFloat>("Sqrt", 4, [](const auto& x, auto) { return x.unaryExpr([](auto v) { return std::sqrt(v); }); }));
  // 1 / sqrt(x), two IEEE operations (as the JIT computes it): Eigen 3.4's x.rsqrt() on AVX
  // is an estimate and a Newton step, +Inf for -0 and for subnormals.
  ops.push_back(UnaryOp<TS::kFloat>(
      "Rsqrt", 4, [](const auto& x, auto) { return x.unaryExpr([](auto v) { return decltype(v)(1) / std::sqrt(v); }); }));
  ops.push_back(UnaryOp<TS::kFloat>("Reciprocal", 4, [](const auto& x, auto) { return x.inverse(); }));
  ops.push_back(UnaryOp<TS::kFloat>("Tanh", 8, [](const auto& x, auto) { return x.tanh(); }));
  // Eigen's sin and cos, as TensorFlow's CPU kernels: vectorized, with the reduction by pi/2
  // exact for every float.
  ops.push_back(UnaryOp<TS::kFloat>("Sin", 8, [](const auto& x, auto) { return x.sin(); }));
  ops.push_back(UnaryOp<TS::kFloat>("Cos", 8, [](const auto& x, auto) { return x.cos(); }));
  // The other trigonometric and hyperbolic functions and expm1, libm's per element as
  // Eigen's scalar ops call them for TensorFlow's CPU kernels (16-bit floats in float).
  auto libm = [](auto fn) {
    return [fn](const auto& x, auto) {
      using C = ScalarOf<decltype(x)>;
      return x.unaryExpr([fn](C v) { return static_cast<C>(fn(v)); });
    };
  };
  ops.push_back(UnaryOp<TS::kFloat>("Tan", 8, libm([](auto v) { return std::tan(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Asin", 8, libm([](auto v) { return std::asin(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Acos", 8, libm([](auto v) { return std::acos(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Atan", 8, libm([](auto v) { return std::atan(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Sinh", 8, libm([](auto v) { return std::sinh(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Cosh", 8, libm([](auto v) { return std::cosh(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Asinh", 8, libm([](auto v) { return std::asinh(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Acosh", 8, libm([](auto v) { return std::acosh(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Atanh", 8, libm([](auto v) { return std::atanh(v); })));
  ops.push_back(UnaryOp<TS::kFloat>("Expm1", 8, libm([](auto v) { return std::expm1(v); })));
  // TensorFlow's erfinv: ndtri(x / 2 + 1 / 2) / sqrt(2) (Eigen's ndtri), NaN where
  // x / 2 + 1 / 2 is outside [0, 1] (as TensorFlow's Eigen; older ones give +/-inf).
  ops.push_back(UnaryOp<TS::kFloat>("Erfinv", 12, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    return x.unaryExpr([](C v) {
      const C y = v * C(0.5) + C(0.5);
      return y < C(0) || y > C(1) ? std::numeric_limits<C>::quiet_NaN() : Eigen::numext::ndtri(y) * C(M_SQRT1_2);
    });
  }));
  ops.push_back(UnaryOp<TS::kFloat>("Sigmoid", 8, [](const auto& x, auto) { return ZeroBelowNormal(x.logistic()); }));
  ops.push_back(UnaryOp<TS::kFloat>("Erf", 8, [](const auto& x, auto) { return x.erf(); }));
  // libm's erfcf per element (Eigen's erfc); tiny results flushed as the exp-based ops do.
  ops.push_back(UnaryOp<TS::kFloat>("Erfc", 8, [](const auto& x, auto) { return ZeroBelowNormal(x.erfc()); }));
  ops.push_back(UnaryOp<TS::kFloat>("Softsign", 4, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    return x / (x.abs() + C(1));
  }));
  ops.push_back(UnaryOp<TS::kFloat>("Floor", 1, [](const auto& x, auto) { return IeeeRound<Rounding::kFloor>(x); }));
  ops.push_back(UnaryOp<TS::kFloat>("Ceil", 1, [](const auto& x, auto) { return IeeeRound<Rounding::kCeil>(x); }));
  // TensorFlow's Round rounds half to even, as rint does.
  ops.push_back(UnaryOp<TS::kFloat>("Round", 1, [](const auto& x, auto) { return IeeeRound<Rounding::kNearestEven>(x); }));
  ops.push_back(UnaryOp<TS::kFloat>("LeakyRelu", 1, [](const auto& x, auto alpha) {
    using C = ScalarOf<decltype(x)>;
    return (x > C(0)).select(x, x * alpha);
  }));
  ops.push_back(UnaryOp<TS::kFloat>("Elu", 8, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    return (x < C(0)).select(x.exp() - C(1), x);
  }));
  ops.push_back(UnaryOp<TS::kFloat>("Selu", 8, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    const C scale = C(1.0507009873554804934193349852946);
    const C scale_alpha = C(1.7580993408473768599402175208123);
    return (x < C(0)).select((x.exp() - C(1)) * scale_alpha, x * scale);
  }));
  ops.push_back(UnaryOp<TS::kFloat>("Softplus", 12, [](const auto& x, auto) {
    using C = ScalarOf<decltype(x)>;
    // As TensorFlow: x for large x, exp(x) for very negative x, log1p(exp(x)) between.
    const C threshold = std::log(std::numeric_limits<C>::epsilon()) + C(2);
    return x.unaryExpr([threshold](C v) {
      if (v > -threshold) return v;
      if (v < threshold) return ZeroBelowNormalOp()(std::exp(v));
      return std::log1p(std::exp(v));
    });
  }));

  // Binary arithmetic (signed integers wrap).
  auto add = Wrapping(std::plus<>());
  ops.push_back(BinaryOp<TS::kNumeric, false>("Add", 1, add));
  ops.push_back(BinaryOp<TS::kNumeric, false>("AddV2", 1, add));
  ops.push_back(BinaryOp<TS::kNumeric, false>("Sub", 1, Wrapping(std::minus<>())));
  ops.push_back(BinaryOp<TS::kNumeric, false>("Mul", 1, Wrapping(std::multiplies<>())));
  ops.push_back(BinaryOp<TS::kFloat, false>("RealDiv", 4, [](const auto& x, const auto& y) { return x / y; }));
  ops.push_back(BinaryOp<TS::kFloat, false>("DivNoNan", 4, [](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    return (y == C(0)).select(C(0), x / y);
  }));
  ops.push_back(BinaryOp<TS::kNumeric, false>("Maximum", 1, MinMax<true>()));
  ops.push_back(BinaryOp<TS::kNumeric, false>("Minimum", 1, MinMax<false>()));
  ops.push_back(BinaryOp<TS::kNumeric, false>("SquaredDifference", 1, [](const auto& x, const auto& y) {
    auto d = Wrapping(std::minus<>())(x, y);
    return Wrapping(std::multiplies<>())(d, d);
  }));
  // Activation gradients, as TensorFlow's kernels compute them (a NaN or infinite gradient
  // stays NaN where the activation is flat: it is multiplied by 0, not selected away).
  ops.push_back(BinaryOp<TS::kFloat, false>("ReluGrad", 1, [](const auto& g, const auto& f) {
    using C = ScalarOf<decltype(g)>;
    return g * (f > C(0)).template cast<C>();
  }));
  ops.push_back(BinaryOp<TS::kFloat, false>("Relu6Grad", 1, [](const auto& g, const auto& f) {
    using C = ScalarOf<decltype(g)>;
    return g * ((f > C(0)) && (f < C(6))).template cast<C>();
  }));
  ops.push_back(BinaryOp<TS::kFloat, false>("TanhGrad", 2, [](const auto& y, const auto& dy) {
    using C = ScalarOf<decltype(y)>;
    return dy * (C(1) - y * y);
  }));
  ops.push_back(BinaryOp<TS::kFloat, false>("SigmoidGrad", 2, [](const auto& y, const auto& dy) {
    using C = ScalarOf<decltype(y)>;
    return dy * y * (C(1) - y);
  }));
  ops.push_back(BinaryOp<TS::kFloat, false>("Atan2", 16, [](const auto& y, const auto& x) {
    using C = ScalarOf<decltype(y)>;
    return y.binaryExpr(x, [](C a, C b) { return static_cast<C>(std::atan2(a, b)); });
  }));
  // x * log(y), x * log1p(y), x / y; 0 where x is 0 (whatever y is), as TensorFlow's.
  ops.push_back(BinaryOp<TS::kFloat, false>("Xlogy", 16, [](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    return x.binaryExpr(y, [](C a, C b) { return a == C(0) ? C(0) : static_cast<C>(a * std::log(b)); });
  }));
  ops.push_back(BinaryOp<TS::kFloat, false>("Xlog1py", 16, [](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    return x.binaryExpr(y, [](C a, C b) { return a == C(0) ? C(0) : static_cast<C>(a * std::log1p(b)); });
  }));
  ops.push_back(BinaryOp<TS::kFloat, false>("Xdivy", 4, [](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    return x.binaryExpr(y, [](C a, C b) { return a == C(0) ? C(0) : static_cast<C>(a / b); });
  }));
  ops.push_back(FloorDivModOp<false>());
  ops.push_back(FloorDivModOp<true>());
  ops.push_back(BinaryOp<TS::kFloat, false>("Pow", 16, [](const auto& x, const auto& y) {
    using C = ScalarOf<decltype(x)>;
    return x.binaryExpr(y, [](C a, C b) { return std::pow(a, b); });
  }));

  // Comparisons and logic.
  ops.push_back(BinaryOp<TS::kAll, true>("Equal", 1, [](const auto& x, const auto& y) { return x == y; }));
  ops.push_back(BinaryOp<TS::kAll, true>("NotEqual", 1, [](const auto& x, const auto& y) { return x != y; }));
  ops.push_back(BinaryOp<TS::kNumeric, true>("Less", 1, [](const auto& x, const auto& y) { return x < y; }));
  ops.push_back(BinaryOp<TS::kNumeric, true>("LessEqual", 1, [](const auto& x, const auto& y) { return x <= y; }));
  ops.push_back(BinaryOp<TS::kNumeric, true>("Greater", 1, [](const auto& x, const auto& y) { return x > y; }));
  ops.push_back(BinaryOp<TS::kNumeric, true>("GreaterEqual", 1, [](const auto& x, const auto& y) { return x >= y; }));
  ops.push_back(LogicalNotOp());
  ops.push_back(FloatClassOp("IsNan", [](double x) { return std::isnan(x); }));
  ops.push_back(FloatClassOp("IsInf", [](double x) { return std::isinf(x); }));
  ops.push_back(FloatClassOp("IsFinite", [](double x) { return std::isfinite(x); }));
  ops.push_back(LogicalBinaryOp("LogicalAnd", true));
  ops.push_back(LogicalBinaryOp("LogicalOr", false));

  ops.push_back(AddNOp());
  ops.push_back(ClipByValueOp());
  ops.push_back(SelectOp("Select", false));
  ops.push_back(SelectOp("SelectV2", true));
  ops.push_back(BiasAddOp());
  ops.push_back(CastOp());
  return ops;
}

}  // namespace

const bool kElementwiseRegistered = RegisterOps(ElementwiseOps());

}  // namespace graphjit
