// Neural-network ops: Conv2D, _FusedConv2D and DepthwiseConv2dNative (oneDNN for f32, a direct loop
// nest otherwise), MaxPool, AvgPool, FusedBatchNormV3 and its gradient, and
// SparseSoftmaxCrossEntropyWithLogits. Layout: NHWC, as TensorFlow's CPU kernels.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/kernels/common.h"
#include "runtime/kernels/fused.h"
#include "runtime/kernels/window.h"

namespace graphjit {
namespace {

// ---- geometry ------------------------------------------------------------------------

// Output size along one spatial dim; pads are resolved for SAME. -1 if `in` is unknown.
StatusOr<int64_t> OutSize(const InferenceContext& c, const std::string& padding, int64_t in, int64_t k, int64_t s, int64_t d,
                          int64_t* before, int64_t* after) {
  if (in < 0) return int64_t{-1};
  constexpr int64_t kMax = int64_t{1} << 30;  // windows, strides, dilations and pads beyond this are not real
  if (k < 1 || k > kMax || d > kMax || s > kMax || *before > kMax || *after > kMax || in > (int64_t{1} << 40))
    return c.ShapeError("window, stride, dilation or padding out of range");
  const int64_t eff = (k - 1) * d + 1;
  int64_t out;
  if (padding == "VALID") {
    *before = *after = 0;
    out = in >= eff ? (in - eff) / s + 1 : 0;
  } else if (padding == "SAME") {
    out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
    *before = total / 2;
    *after = total - *before;
  } else {
    int64_t padded = in + *before + *after;
    out = padded >= eff ? (padded - eff) / s + 1 : 0;
  }
  if (out <= 0)
    return c.ShapeError("window of size " + std::to_string(eff) + " does not fit the input of size " + std::to_string(in) +
                        " with " + padding + " padding");
  return out;
}

// A rank-4 shape's dims from NCHW to NHWC order, and back.
Shape ToNhwc(const Shape& s) { return s.unknown_rank() || s.rank() != 4 ? s : Shape{s.dim(0), s.dim(2), s.dim(3), s.dim(1)}; }
Shape ToNchw(const Shape& s) { return s.unknown_rank() || s.rank() != 4 ? s : Shape{s.dim(0), s.dim(3), s.dim(1), s.dim(2)}; }

// Reads strides/dilations/padding attrs (and ksize for pools) in the data format's order:
// NHWC, or for a convolution that allows it, NCHW.
StatusOr<Window> ReadWindow(const InferenceContext& c, bool pool, bool nchw_allowed = false) {
  Window w;
  GJ_ASSIGN_OR_RETURN(std::string format, GetStringAttrOr(c.node, "data_format", "NHWC"));
  if (format != "NHWC" && !(format == "NCHW" && nchw_allowed))
    return Unimplemented(NodeLabel(c.node) + ": data_format " + format + " is not supported (NHWC" +
                         (pool ? "" : ", and NCHW for a convolution without fused ops") + ")");
  w.nchw = format == "NCHW";
  const int h = w.nchw ? 2 : 1, c_dim = w.nchw ? 1 : 3;  // the dims of H and C (W is H's next)
  const std::string form = w.nchw ? "[1, 1, h, w]" : "[1, h, w, 1]";
  auto spatial = [&](const std::vector<int64_t>& v) {
    return v.size() == 4 && v[0] == 1 && v[c_dim] == 1 && v[h] >= 1 && v[h + 1] >= 1;
  };
  GJ_ASSIGN_OR_RETURN(std::vector<int64_t> strides, GetIntListAttr(c.node, "strides"));
  if (!spatial(strides)) return c.TypeError("strides must be " + form + " with positive h, w");
  w.sh = strides[h];
  w.sw = strides[h + 1];
  if (pool) {
    GJ_ASSIGN_OR_RETURN(std::vector<int64_t> ksize, GetIntListAttr(c.node, "ksize"));
    if (!spatial(ksize)) return c.TypeError("ksize must be " + form + " with positive h, w");
    w.kh = ksize[h];
    w.kw = ksize[h + 1];
  } else if (c.node.FindAttr("dilations")) {
    GJ_ASSIGN_OR_RETURN(std::vector<int64_t> dil, GetIntListAttr(c.node, "dilations"));
    if (!spatial(dil)) return c.TypeError("dilations must be " + form + " with positive h, w");
    w.dh = dil[h];
    w.dw = dil[h + 1];
  }
  GJ_ASSIGN_OR_RETURN(w.padding, GetStringAttr(c.node, "padding"));
  if (w.padding == "EXPLICIT") {
    if (pool) return c.TypeError("EXPLICIT padding is not allowed for pooling");
    GJ_ASSIGN_OR_RETURN(w.explicit_paddings, GetIntListAttr(c.node, "explicit_paddings"));
    const auto& e = w.explicit_paddings;
    if (e.size() != 8 || e[0] || e[1] || e[2 * c_dim] || e[2 * c_dim + 1] || *std::min_element(e.begin(), e.end()) < 0)
      return c.TypeError("explicit_paddings must be 8 non-negative values padding H and W only");
    w.pt = e[2 * h], w.pb = e[2 * h + 1], w.pl = e[2 * h + 2], w.pr = e[2 * h + 3];
  } else if (w.padding != "SAME" && w.padding != "VALID") {
    return c.TypeError("unknown padding '" + w.padding + "'");
  }
  return w;
}

// Output [N, OH, OW, channels] of a window op over input shape `in` (NHWC).
StatusOr<Shape> WindowOutput(const InferenceContext& c, Window* w, const Shape& in, int64_t channels) {
  if (in.unknown_rank()) return Shape{-1, -1, -1, channels};
  if (in.rank() != 4) return c.ShapeError("input must be NHWC (rank 4), got " + in.ToString());
  GJ_ASSIGN_OR_RETURN(int64_t oh, OutSize(c, w->padding, in.dim(1), w->kh, w->sh, w->dh, &w->pt, &w->pb));
  GJ_ASSIGN_OR_RETURN(int64_t ow, OutSize(c, w->padding, in.dim(2), w->kw, w->sw, w->dw, &w->pl, &w->pr));
  return Shape{in.dim(0), oh, ow, channels};
}

// ---- convolution ---------------------------------------------------------------------

// A direct loop nest: the reference for every dtype, and the path for non-f32 types. A
// filter [KH, KW, Cg, O] of a group's Cg input channels: groups = C / Cg, each of O / groups
// output channels (Cg = C: one group). A depthwise filter [KH, KW, C, M] is one group per
// channel of M outputs, the same memory as [KH, KW, 1, C * M].
template <typename T>
void DirectConv(const Tensor& in, const Tensor& filter, const Window& w, bool depthwise, Tensor* out) {
  using C = ComputeType<T>;
  const int64_t N = in.shape().dim(0), H = in.shape().dim(1), W = in.shape().dim(2), Cin = in.shape().dim(3);
  const int64_t OH = out->shape().dim(1), OW = out->shape().dim(2), O = out->shape().dim(3);
  const int64_t Cg = depthwise ? 1 : filter.shape().dim(2), Og = O / (Cin / Cg);
  const T* x = in.data<T>();
  const T* f = filter.data<T>();
  T* y = out->data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t o = 0; o < O; ++o) {
          C acc = 0;
          for (int64_t i = 0; i < w.kh; ++i) {
            int64_t ih = oh * w.sh - w.pt + i * w.dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t iw = ow * w.sw - w.pl + j * w.dw;
              if (iw < 0 || iw >= W) continue;
              const T* px = x + ((n * H + ih) * W + iw) * Cin + o / Og * Cg;
              const T* pf = f + (i * w.kw + j) * Cg * O + o;
              for (int64_t c = 0; c < Cg; ++c) acc += static_cast<C>(px[c]) * static_cast<C>(pf[c * O]);
            }
          }
          y[((n * OH + oh) * OW + ow) * O + o] = static_cast<T>(acc);
        }
}

// A node's filter in the layouts its oneDNN primitives asked for, when the filter is a
// session constant: reordered on the first run, then reused (a model's weights are
// reordered once per session, not on every run).
class ReorderedWeights {
 public:
  dnnl::memory Get(dnnl::memory user, const dnnl::memory::desc& wanted, const dnnl::engine& engine, dnnl::stream& stream) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [desc, memory] : weights_)
      if (desc == wanted) return memory;
    dnnl::memory memory(wanted, engine);
    dnnl::reorder(user, memory).execute(stream, user, memory);
    stream.wait();
    weights_.emplace_back(wanted, memory);
    return memory;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::pair<dnnl::memory::desc, dnnl::memory>> weights_;
};

// A oneDNN convolution (primitives built once per geometry); `bias` (optional) and the
// epilogue are applied as post-ops (a residual must be in `out` already). It runs in blocks on the intra-op threads (see
// OneDnnParallelFor): blocks of images, or for a single image, blocks of output rows,
// each with the input rows and the padding it needs.
Status OneDnnConv(const KernelContext& ctx, const Tensor& in, const Tensor& filter, const Window& w, bool depthwise,
                  const Tensor* bias, Epilogue epilogue, Tensor* out) {
  using dnnl::memory;
  static auto* primitives = new OneDnnPrimitives<dnnl::convolution_forward>();
  const dnnl::engine& engine = OneDnnEngine();
  const auto& is = in.shape();
  const auto& fs = filter.shape();
  const auto& os = out->shape();
  const int64_t N = is.dim(0), H = is.dim(1), W = is.dim(2), C = is.dim(3);
  const int64_t OH = os.dim(1), OW = os.dim(2), O = os.dim(3);
  // Groups of Cg input channels (see DirectConv): oneDNN's weights [G, O / G, Cg, KH, KW],
  // in TensorFlow's memory order h, w, i, g, o.
  const int64_t Cg = depthwise ? 1 : fs.dim(2), G = C / Cg;
  memory::dims w_dims = G > 1 ? memory::dims{G, O / G, Cg, w.kh, w.kw} : memory::dims{O, C, w.kh, w.kw};
  const memory::format_tag w_tag = G > 1 ? memory::format_tag::hwigo : memory::format_tag::hwio;
  const memory::desc bias_md({O}, memory::data_type::f32, memory::format_tag::a);
  const bool by_images = N > 1;
  auto block = [&](int64_t begin, int64_t end) {
    // Images [begin, end), or output rows [begin, end) of the one image and the input
    // rows they read, [ih0, ih1), with what they read outside the image as padding.
    int64_t n = N, h = H, oh = OH, pad_top = w.pt, pad_bottom = w.pb, in_offset = 0, out_offset = 0;
    if (by_images) {
      n = end - begin;
      in_offset = begin * H * W * C;
      out_offset = begin * OH * OW * O;
    } else {
      const int64_t first = begin * w.sh - w.pt, last = (end - 1) * w.sh - w.pt + (w.kh - 1) * w.dh + 1;
      const int64_t ih0 = std::max<int64_t>(0, first), ih1 = std::min(H, last);
      h = ih1 - ih0;
      oh = end - begin;
      pad_top = ih0 - first;
      pad_bottom = last - ih1;
      in_offset = ih0 * W * C;
      out_offset = begin * OW * O;
    }
    memory::dims src_dims = {n, C, h, W}, dst_dims = {n, O, oh, OW};
    memory::dims strides = {w.sh, w.sw}, dilates = {w.dh - 1, w.dw - 1}, pad_l = {pad_top, w.pl}, pad_r = {pad_bottom, w.pr};
    // Winograd (oneDNN's F(2x2, 3x3) or F(4x4, 3x3) kernels) does a 3x3 convolution with
    // 2.25x or 4x fewer multiplications: about twice as fast, with errors of up to about
    // 1e-5 of the largest output (the direct algorithm's are about 1e-6). Below 8x8
    // outputs it is not faster: its tiles are mostly padding, and its transformed filter,
    // 4x the size, is read for few outputs.
    const bool winograd = G == 1 && w.kh == 3 && w.kw == 3 && w.sh == 1 && w.sw == 1 && w.dh == 1 && w.dw == 1 && C % 16 == 0 &&
                          O % 16 == 0 && oh >= 8 && OW >= 8;
    std::string key =
        std::to_string(bias != nullptr) + std::to_string(epilogue.residual) + std::to_string(static_cast<int>(epilogue.act));
    for (const auto* v : {&src_dims, &w_dims, &strides, &dilates, &pad_l, &pad_r})
      for (auto d : *v) key += "," + std::to_string(d);
    const auto& e = primitives->Get(key, [&] {
      memory::desc w_any(w_dims, memory::data_type::f32, memory::format_tag::any);
      auto make = [&](dnnl::algorithm alg, memory::format_tag layout) {
        memory::desc src_md(src_dims, memory::data_type::f32, layout), dst_md(dst_dims, memory::data_type::f32, layout);
        const auto prop = dnnl::prop_kind::forward_inference;
        auto d = bias ? dnnl::convolution_forward::desc(prop, alg, src_md, w_any, bias_md, dst_md, strides, dilates, pad_l, pad_r)
                      : dnnl::convolution_forward::desc(prop, alg, src_md, w_any, dst_md, strides, dilates, pad_l, pad_r);
        return dnnl::convolution_forward::primitive_desc(d, OneDnnAttr(epilogue), engine);
      };
      if (winograd) {
        try {
          return make(dnnl::algorithm::convolution_winograd, memory::format_tag::any);
        } catch (const dnnl::error&) {  // not for this geometry or machine
        }
      }
      return make(dnnl::algorithm::convolution_direct, memory::format_tag::nhwc);
    });
    dnnl::stream stream(engine);
    // The tensors are NHWC; a Winograd primitive works on a blocked layout of its own.
    memory::desc src_nhwc(src_dims, memory::data_type::f32, memory::format_tag::nhwc);
    memory::desc dst_nhwc(dst_dims, memory::data_type::f32, memory::format_tag::nhwc);
    memory user_src(src_nhwc, engine, in.data<float>() + in_offset);
    memory user_dst(dst_nhwc, engine, out->data<float>() + out_offset);
    memory src = user_src, dst = user_dst;
    if (e.pd.src_desc() != src_nhwc) {
      src = memory(e.pd.src_desc(), engine);
      dnnl::reorder(user_src, src).execute(stream, user_src, src);
    }
    if (e.pd.dst_desc() != dst_nhwc) {
      dst = memory(e.pd.dst_desc(), engine);
      if (epilogue.residual) dnnl::reorder(user_dst, dst).execute(stream, user_dst, dst);  // the sum reads it
    }
    memory user_w({w_dims, memory::data_type::f32, w_tag}, engine, filter.raw());
    memory weights = user_w;
    if (e.pd.weights_desc() != user_w.get_desc()) {
      if (ctx.state && ctx.IsConstantInput(1)) {
        weights = static_cast<const ReorderedWeights*>(ctx.state)->Get(user_w, e.pd.weights_desc(), engine, stream);
      } else {
        weights = memory(e.pd.weights_desc(), engine);
        dnnl::reorder(user_w, weights).execute(stream, user_w, weights);
      }
    }
    memory scratchpad(e.pd.scratchpad_desc(), engine);  // this call's own: runs may overlap
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_md, engine, bias->raw()));
    e.primitive.execute(stream, args);
    if (dst != user_dst) dnnl::reorder(dst, user_dst).execute(stream, dst, user_dst);
    stream.wait();
  };
  const int64_t per_row = OW * O * w.kh * w.kw * Cg;
  const std::string error =
      by_images ? OneDnnParallelFor(ctx, N, OH * per_row, block) : OneDnnParallelFor(ctx, OH, per_row, block);
  if (!error.empty()) return Internal(NodeLabel(ctx.node) + ": oneDNN convolution failed: " + error);
  return Status::Ok();
}

// Whether oneDNN computes a convolution of these operands (float32, a filter with channels).
bool UsesOneDnn(const Tensor& in, const Tensor& filter) { return in.dtype() == DType::kFloat && filter.shape().dim(2) > 0; }

// An NHWC convolution into `out` (which holds the residual, if any, for oneDNN), then its
// epilogue: oneDNN's for float32, else the direct loop nest and the epilogue in a pass.
Status NhwcConv(const KernelContext& ctx, const Tensor& in, const Tensor& filter, const Window& w, bool depthwise,
                const Tensor* bias, Epilogue epilogue, Tensor* out) {
  if (UsesOneDnn(in, filter)) return OneDnnConv(ctx, in, filter, w, depthwise, bias, epilogue, out);
  GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(in.dtype(), [&](auto tag) -> Status {
    DirectConv<decltype(tag)>(in, filter, w, depthwise, out);
    return Status::Ok();
  }));
  return bias ? ApplyEpilogue(ctx, *bias, epilogue.residual ? &ctx.input(3) : nullptr, epilogue.act, out) : Status::Ok();
}

// The output of a convolution, in its data format (NCHW: computed in NHWC order).
Status InferConv(InferenceContext& c, bool depthwise, bool nchw_allowed) {
  GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
  GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
  GJ_ASSIGN_OR_RETURN(Window w, ReadWindow(c, false, nchw_allowed));
  const Shape& f = c.shape(1);
  const Shape in = w.nchw ? ToNhwc(c.shape(0)) : c.shape(0);
  auto add_output = [&](const Shape& nhwc) { c.AddOutput(t, w.nchw ? ToNchw(nhwc) : nhwc); };
  int64_t out_channels = -1;
  if (!f.unknown_rank()) {
    if (f.rank() != 4) return c.ShapeError("filter must be [KH, KW, in, out], got " + f.ToString());
    w.kh = f.dim(0);
    w.kw = f.dim(1);
    if (!in.unknown_rank() && in.rank() == 4 && in.dim(3) >= 0 && f.dim(2) >= 0) {
      if (depthwise ? f.dim(2) != in.dim(3) : (f.dim(2) == 0 || in.dim(3) == 0 || in.dim(3) % f.dim(2) != 0))
        return c.ShapeError("filter " + f.ToString() + " does not match the input's " + std::to_string(in.dim(3)) + " channels");
      const int64_t groups = depthwise ? 1 : in.dim(3) / f.dim(2);  // a grouped convolution's (see DirectConv)
      if (!depthwise && f.dim(3) >= 0 && f.dim(3) % groups != 0)
        return c.ShapeError("filter " + f.ToString() + ": its " + std::to_string(f.dim(3)) +
                            " output channels are not a multiple of the " + std::to_string(groups) + " groups of " +
                            std::to_string(f.dim(2)) + " of the input's " + std::to_string(in.dim(3)) + " channels");
    }
    if (f.dim(3) >= 0) out_channels = depthwise ? (f.dim(2) >= 0 ? f.dim(2) * f.dim(3) : -1) : f.dim(3);
    if (w.kh < 0 || w.kw < 0) {
      add_output(Shape{in.unknown_rank() ? -1 : in.dim(0), -1, -1, out_channels});
      return Status::Ok();
    }
  } else {
    add_output(Shape{-1, -1, -1, -1});
    return Status::Ok();
  }
  GJ_ASSIGN_OR_RETURN(Shape out, WindowOutput(c, &w, in, out_channels));
  add_output(out);
  return Status::Ok();
}

// Conv2D, DepthwiseConv2dNative, and their fused forms _FusedConv2D and
// _FusedDepthwiseConv2dNative (+ BiasAdd [+ Add] [+ activation], as TensorFlow's remapper
// writes them: inputs x, filter, bias [, residual]).
OpDef ConvOp(const char* name, bool depthwise) {
  OpDef def;
  def.name = name;
  const bool fused = std::string(name).rfind("_Fused", 0) == 0;
  def.min_inputs = fused ? 3 : 2;
  def.max_inputs = fused ? 4 : 2;
  def.infer = [depthwise, fused](InferenceContext& c) -> Status {
    GJ_RETURN_IF_ERROR(InferConv(c, depthwise, /*nchw_allowed=*/!fused));
    if (fused) {
      GJ_RETURN_IF_ERROR(c.TypeAttrMatching("T", {2}).status());
      if (c.num_inputs() == 4) GJ_RETURN_IF_ERROR(c.TypeAttrMatching("T", {3}).status());
      GJ_RETURN_IF_ERROR(InferFusedEpilogue(c, 2, c.output_shapes[0].dim(3), /*residual_allowed=*/true).status());
    }
    return Status::Ok();
  };
  def.compute = [depthwise, fused](KernelContext& ctx) -> Status {
    const Tensor& filter = ctx.input(1);
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(Window w, ReadWindow(ic, false, /*nchw_allowed=*/!fused));
    w.kh = filter.shape().dim(0);
    w.kw = filter.shape().dim(1);
    if (w.nchw) {  // the convolution of the input in NHWC, transposed back
      GJ_ASSIGN_OR_RETURN(const Tensor in, TransposeTensor(ctx, ctx.input(0), {0, 2, 3, 1}));
      const int64_t channels = depthwise ? filter.shape().dim(2) * filter.shape().dim(3) : filter.shape().dim(3);
      GJ_ASSIGN_OR_RETURN(const Shape shape, WindowOutput(ic, &w, in.shape(), channels));
      GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(in.dtype(), shape, ctx.allocator));
      if (out.num_elements() > 0) GJ_RETURN_IF_ERROR(NhwcConv(ctx, in, filter, w, depthwise, nullptr, {}, &out));
      GJ_ASSIGN_OR_RETURN(Tensor nchw, TransposeTensor(ctx, out, {0, 3, 1, 2}));
      ctx.ForwardOutput(0, std::move(nchw));
      return Status::Ok();
    }
    const Tensor& in = ctx.input(0);
    Epilogue epilogue;
    if (fused) {
      GJ_ASSIGN_OR_RETURN(epilogue, ReadEpilogue(ctx.node, /*residual_allowed=*/true));
    }
    const Tensor* bias = fused ? &ctx.input(2) : nullptr;
    const Tensor* residual = epilogue.residual ? &ctx.input(3) : nullptr;
    // oneDNN adds the residual where the output is: it starts as (or in) the residual.
    Tensor* out = nullptr;
    if (UsesOneDnn(in, filter) && residual) {
      GJ_ASSIGN_OR_RETURN(out, ctx.ForwardInputOrAllocateOutput({3}, 0));
      if (out->raw() != residual->raw()) std::memcpy(out->raw(), residual->raw(), residual->bytes());
    } else {
      GJ_ASSIGN_OR_RETURN(out, ctx.AllocateOutput(0));
    }
    if (out->num_elements() == 0) return Status::Ok();
    GJ_RETURN_IF_ERROR(WindowOutput(ic, &w, in.shape(), out->shape().dim(3)).status());
    return NhwcConv(ctx, in, filter, w, depthwise, bias, epilogue, out);
  };
  def.prepare = [](const Node&) -> StatusOr<std::shared_ptr<const void>> {
    return std::shared_ptr<const void>(std::make_shared<const ReorderedWeights>());
  };
  return def;
}

// Conv2DBackpropInput(input_sizes, filter, out_backprop): the gradient of Conv2D with
// respect to its input, which is also Keras's Conv2DTranspose. Each input element sums
// the output elements its window positions reached, times the filter tap: a direct loop
// over output channels, contiguous in both the gradient and the filter.
template <typename T>
void ConvBackpropInput(const Tensor& filter, const Tensor& dy, const Window& w, Tensor* dx) {
  using C = ComputeType<T>;
  const int64_t N = dx->shape().dim(0), H = dx->shape().dim(1), W = dx->shape().dim(2), Cin = dx->shape().dim(3);
  const int64_t OH = dy.shape().dim(1), OW = dy.shape().dim(2), O = dy.shape().dim(3);
  const T* f = filter.data<T>();
  const T* g = dy.data<T>();
  T* x = dx->data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t wi = 0; wi < W; ++wi)
        for (int64_t c = 0; c < Cin; ++c) {
          C acc = 0;
          for (int64_t i = 0; i < w.kh; ++i) {
            const int64_t oh_s = h + w.pt - i * w.dh;  // oh * sh
            if (oh_s < 0 || oh_s % w.sh != 0 || oh_s / w.sh >= OH) continue;
            for (int64_t j = 0; j < w.kw; ++j) {
              const int64_t ow_s = wi + w.pl - j * w.dw;
              if (ow_s < 0 || ow_s % w.sw != 0 || ow_s / w.sw >= OW) continue;
              const T* pg = g + ((n * OH + oh_s / w.sh) * OW + ow_s / w.sw) * O;
              const T* pf = f + ((i * w.kw + j) * Cin + c) * O;
              for (int64_t o = 0; o < O; ++o) acc += static_cast<C>(pg[o]) * static_cast<C>(pf[o]);
            }
          }
          x[((n * H + h) * W + wi) * Cin + c] = static_cast<T>(acc);
        }
}

OpDef ConvBackpropInputOp() {
  OpDef def;
  def.name = "Conv2DBackpropInput";
  def.min_inputs = def.max_inputs = 3;
  def.value_inputs = {0};
  // The window of the forward convolution whose input has shape `in` (NHWC order) and whose
  // filter is `f`; checks that it makes an output of `out`'s spatial shape.
  auto window = [](const InferenceContext& c, const Shape& in, const Shape& f, const Shape& out) -> StatusOr<Window> {
    GJ_ASSIGN_OR_RETURN(Window w, ReadWindow(c, false, /*nchw_allowed=*/true));
    w.kh = f.dim(0);
    w.kw = f.dim(1);
    GJ_ASSIGN_OR_RETURN(Shape forward, WindowOutput(c, &w, in, f.dim(3)));
    if (forward.dim(1) != out.dim(1) || forward.dim(2) != out.dim(2))
      return c.ShapeError("out_backprop " + out.ToString() + " is not what a convolution of input " + in.ToString() +
                          " with filter " + f.ToString() + " makes (" + forward.ToString() + ")");
    return w;
  };
  def.infer = [window](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {1, 2}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    GJ_RETURN_IF_ERROR(c.ExpectDType(0, {DType::kInt32, DType::kInt64}));
    GJ_ASSIGN_OR_RETURN(const Window format, ReadWindow(c, false, /*nchw_allowed=*/true));
    const char* layout = format.nchw ? "NCHW" : "NHWC";
    const Shape& f = c.shape(1);
    const Shape dy = format.nchw ? ToNhwc(c.shape(2)) : c.shape(2);
    if (!f.unknown_rank() && f.rank() != 4) return c.ShapeError("filter must be [KH, KW, in, out], got " + f.ToString());
    if (!dy.unknown_rank() && dy.rank() != 4)
      return c.ShapeError(std::string("out_backprop must be ") + layout + " (rank 4), got " + c.shape(2).ToString());
    const Tensor* sizes = c.value(0);
    if (sizes == nullptr) {
      c.AddOutput(t, Shape{-1, -1, -1, -1});
      return Status::Ok();
    }
    if (sizes->shape().rank() != 1 || sizes->num_elements() != 4)
      return c.ShapeError(std::string("input_sizes must hold 4 values (") + layout + "), got shape " + sizes->shape().ToString());
    const Shape given(IntValues(*sizes));
    for (int i = 0; i < 4; ++i)
      if (given.dim(i) < 0) return c.ShapeError("input_sizes must be non-negative, got " + given.ToString());
    GJ_RETURN_IF_ERROR(CheckedNumElements(given.dims()).status());
    const Shape in = format.nchw ? ToNhwc(given) : given;
    if (!f.unknown_rank() && f.IsFullyDefined() && !dy.unknown_rank() && dy.IsFullyDefined()) {
      if (f.dim(2) != in.dim(3) || f.dim(3) != dy.dim(3) || dy.dim(0) != in.dim(0))
        return c.ShapeError("filter " + f.ToString() + " does not connect input " + given.ToString() + " and out_backprop " +
                            c.shape(2).ToString());
      GJ_RETURN_IF_ERROR(window(c, in, f, dy).status());
    }
    c.AddOutput(t, given);
    return Status::Ok();
  };
  def.compute = [window](KernelContext& ctx) -> Status {
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(const Window format, ReadWindow(ic, false, /*nchw_allowed=*/true));
    const Shape in = format.nchw ? ToNhwc(ctx.output_shapes[0]) : ctx.output_shapes[0];
    if (in.num_elements() == 0) return ctx.AllocateOutput(0).status();
    // NCHW: the gradient of out_backprop in NHWC, transposed back.
    Tensor dy = ctx.input(2);
    if (format.nchw) {
      GJ_ASSIGN_OR_RETURN(dy, TransposeTensor(ctx, dy, {0, 2, 3, 1}));
    }
    GJ_ASSIGN_OR_RETURN(Window w, window(ic, in, ctx.input(1).shape(), dy.shape()));
    GJ_ASSIGN_OR_RETURN(Tensor dx, Tensor::Allocate(dy.dtype(), in, ctx.allocator));
    GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(dx.dtype(), [&](auto tag) -> Status {
      ConvBackpropInput<decltype(tag)>(ctx.input(1), dy, w, &dx);
      return Status::Ok();
    }));
    if (format.nchw) {
      GJ_ASSIGN_OR_RETURN(dx, TransposeTensor(ctx, dx, {0, 3, 1, 2}));
    }
    ctx.ForwardOutput(0, std::move(dx));
    return Status::Ok();
  };
  return def;
}

// ---- pooling -------------------------------------------------------------------------

template <bool kMax>
OpDef PoolOp(const char* name) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, kMax ? TypeSet::kNumeric : TypeSet::kFloat));
    GJ_ASSIGN_OR_RETURN(Window w, ReadWindow(c, true));
    const Shape& in = c.shape(0);
    if (!in.unknown_rank() && in.rank() != 4) return c.ShapeError("input must be NHWC (rank 4), got " + in.ToString());
    GJ_ASSIGN_OR_RETURN(Shape out, WindowOutput(c, &w, in, in.unknown_rank() ? -1 : in.dim(3)));
    c.AddOutput(t, out);
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(Window w, ReadWindow(ic, true));
    const Tensor& in = ctx.input(0);
    GJ_RETURN_IF_ERROR(WindowOutput(ic, &w, in.shape(), in.shape().dim(3)).status());
    const int64_t N = in.shape().dim(0), H = in.shape().dim(1), W = in.shape().dim(2), C = in.shape().dim(3);
    const int64_t OH = out->shape().dim(1), OW = out->shape().dim(2);
    return VisitTypes<kMax ? TypeSet::kNumeric : TypeSet::kFloat>(in.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using CT = ComputeType<T>;
      ctx.ParallelFor(N * OH, OW * C * w.kh * w.kw, [&](int64_t b, int64_t e) {
        std::vector<CT> acc(C);
        for (int64_t row = b; row < e; ++row) {
          const int64_t n = row / OH, oh = row % OH;
          const int64_t h0 = std::max<int64_t>(0, oh * w.sh - w.pt), h1 = std::min(H, oh * w.sh - w.pt + w.kh);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = std::max<int64_t>(0, ow * w.sw - w.pl), w1 = std::min(W, ow * w.sw - w.pl + w.kw);
            std::fill(acc.begin(), acc.end(), kMax ? std::numeric_limits<CT>::lowest() : CT(0));
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) {
                const T* px = in.data<T>() + ((n * H + ih) * W + iw) * C;
                for (int64_t c = 0; c < C; ++c) {
                  CT v = static_cast<CT>(px[c]);
                  if constexpr (kMax) {
                    // NaN wins, as in TensorFlow's Eigen max.
                    acc[c] = (v > acc[c] || v != v) ? v : acc[c];
                  } else {
                    acc[c] += v;
                  }
                }
              }
            T* py = out->data<T>() + ((n * OH + oh) * OW + ow) * C;
            // AvgPool divides by the number of window elements inside the input.
            const CT count = static_cast<CT>((h1 - h0) * (w1 - w0));
            for (int64_t c = 0; c < C; ++c) py[c] = static_cast<T>(kMax ? acc[c] : acc[c] / count);
          }
        }
      });
      return Status::Ok();
    });
  };
  return def;
}

// ---- batch norm ----------------------------------------------------------------------

// A batch norm's tensors: x (or its gradient) of rank 4 with the channels at dim 3 (NHWC) or
// 1 (NCHW); element (o, c, k) is at (o * C + c) * inner + k.
struct ChannelLayout {
  int64_t outer = 0, C = 0, inner = 1;
  int64_t per_channel() const { return outer * inner; }
};

StatusOr<ChannelLayout> LayoutOf(const Node& node, const Shape& x) {
  GJ_ASSIGN_OR_RETURN(std::string format, GetStringAttrOr(node, "data_format", "NHWC"));
  const bool nhwc = format == "NHWC";
  ChannelLayout l;
  l.C = x.dim(nhwc ? 3 : 1);
  l.inner = nhwc ? 1 : x.dim(2) * x.dim(3);
  l.outer = l.C == 0 ? 0 : x.num_elements() / (l.C * l.inner);
  return l;
}

// Per channel, the sum over every other dim of f(i, c) (in double: the reference's sums).
template <typename F>
std::vector<double> ChannelSums(const ChannelLayout& l, F f) {
  std::vector<double> sums(l.C, 0.0);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t c = 0; c < l.C; ++c)
      for (int64_t i = (o * l.C + c) * l.inner, e = i + l.inner; i < e; ++i) sums[c] += f(i, c);
  return sums;
}

// Checks the type attrs and data format of FusedBatchNormV3 and FusedBatchNormGradV3; `t_inputs`
// are the inputs of type T, `u_inputs` those of type U (float32); `x` is the rank-4 input.
Status CheckBatchNorm(InferenceContext& c, std::initializer_list<int> t_inputs, std::initializer_list<int> u_inputs, int x,
                      DType* t, int64_t* channels) {
  GJ_ASSIGN_OR_RETURN(*t, c.TypeAttrMatching("T", t_inputs));
  GJ_ASSIGN_OR_RETURN(DType u, c.TypeAttrMatching("U", u_inputs));
  if (u != DType::kFloat) return c.TypeError("U must be float32");
  GJ_RETURN_IF_ERROR(CheckTypeSet(c, *t, TypeSet::kFloat));
  GJ_ASSIGN_OR_RETURN(std::string format, GetStringAttrOr(c.node, "data_format", "NHWC"));
  if (format != "NHWC" && format != "NCHW") return c.TypeError("unknown data_format '" + format + "'");
  const Shape& s = c.shape(x);
  if (!s.unknown_rank() && s.rank() != 4) return c.ShapeError("x must have rank 4, got " + s.ToString());
  *channels = s.unknown_rank() ? -1 : s.dim(format == "NHWC" ? 3 : 1);
  return Status::Ok();
}

// Input i is a vector of the channels (or, where `empty_ok`, of none).
Status CheckChannelVector(InferenceContext& c, int i, int64_t channels, bool empty_ok) {
  const Shape& s = c.shape(i);
  if (s.unknown_rank()) return Status::Ok();
  const bool fits = s.rank() == 1 && (channels < 0 || s.dim(0) < 0 || s.dim(0) == channels || (empty_ok && s.dim(0) == 0));
  if (fits) return Status::Ok();
  return c.ShapeError("input " + std::to_string(i) + " must be a vector of " + std::to_string(channels) + " channels" +
                      (empty_ok ? " (or empty)" : "") + ", got " + s.ToString());
}

// FusedBatchNormV3. In inference: y = (x - mean) * scale / sqrt(var + eps) + offset, and
// outputs 1-4 echo the given mean and variance, as TensorFlow does. In training the mean and
// variance are the batch's, over every dim but the channels: y uses the biased variance;
// outputs 1 and 2 are the running mean and the running (unbiased) variance, blended with the
// given ones by exponential_avg_factor f as (1 - f) * given + f * batch (the given ones may be
// empty where f is 1); outputs 3 and 4 the batch's mean and biased variance, which the
// gradient reads. An empty batch has NaN running statistics and zero batch ones.
OpDef FusedBatchNormOp() {
  OpDef def;
  def.name = "FusedBatchNormV3";
  def.min_inputs = def.max_inputs = 5;
  def.infer = [](InferenceContext& c) -> Status {
    DType t;
    int64_t channels;
    GJ_RETURN_IF_ERROR(CheckBatchNorm(c, {0}, {1, 2, 3, 4}, 0, &t, &channels));
    GJ_ASSIGN_OR_RETURN(bool training, GetBoolAttrOr(c.node, "is_training", true));
    for (int i = 1; i <= 4; ++i) GJ_RETURN_IF_ERROR(CheckChannelVector(c, i, channels, training && i >= 3));
    c.AddOutput(t, c.shape(0));
    for (int i = 0; i < 4; ++i) c.AddOutput(DType::kFloat, Shape{channels});
    c.AddOutput(DType::kFloat, Shape{0});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0));
    const Tensor& x = ctx.input(0);
    const float eps = GetFloatAttrOr(ctx.node, "epsilon", 1e-4f).value();
    const bool training = GetBoolAttrOr(ctx.node, "is_training", true).value();
    const float factor = GetFloatAttrOr(ctx.node, "exponential_avg_factor", 1.0f).value();
    GJ_ASSIGN_OR_RETURN(const ChannelLayout l, LayoutOf(ctx.node, x.shape()));
    auto given = [&](int i) { return ctx.input(i).data<float>(); };
    if (training && factor != 1.0f)
      for (int i : {3, 4})
        if (ctx.input(i).num_elements() != l.C)
          return ctx.Error("When exponential_avg_factor != 1, input " + std::to_string(i) + " must have the " +
                           std::to_string(l.C) + " elements of x's channels, got " + std::to_string(ctx.input(i).num_elements()));
    std::vector<double> mean(l.C), var(l.C);
    if (!training) {
      for (int64_t c = 0; c < l.C; ++c) mean[c] = given(3)[c], var[c] = given(4)[c];
    } else {
      GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(x.dtype(), [&](auto tag) -> Status {
        using T = decltype(tag);
        const T* px = x.data<T>();
        const double n = static_cast<double>(l.per_channel());
        mean = ChannelSums(l, [&](int64_t i, int64_t) { return static_cast<double>(px[i]); });
        for (double& m : mean) m /= n;
        var = ChannelSums(l, [&](int64_t i, int64_t c) {
          const double d = static_cast<double>(px[i]) - mean[c];
          return d * d;
        });
        for (double& v : var) v /= n;
        return Status::Ok();
      }));
    }
    std::vector<float> mul(l.C), add(l.C);
    for (int64_t c = 0; c < l.C; ++c) {
      const double s = given(1)[c] / std::sqrt(var[c] + eps);
      mul[c] = static_cast<float>(s);
      add[c] = static_cast<float>(given(2)[c] - mean[c] * s);
    }
    GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using CT = ComputeType<T>;
      ctx.ParallelFor(l.outer, l.C * l.inner, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o)
          for (int64_t c = 0; c < l.C; ++c)
            for (int64_t i = (o * l.C + c) * l.inner, end = i + l.inner; i < end; ++i)
              y->data<T>()[i] = static_cast<T>(static_cast<CT>(x.data<T>()[i]) * mul[c] + add[c]);
      });
      return Status::Ok();
    }));
    if (!training) {
      for (int i = 1; i <= 4; ++i) ctx.ForwardOutput(i, ctx.input(i <= 2 ? i + 2 : i));
    } else {
      const int64_t n = l.per_channel();
      const double unbias = static_cast<double>(n) / static_cast<double>(std::max<int64_t>(n - 1, 1));
      float* out[4];
      for (int i = 0; i < 4; ++i) {
        GJ_ASSIGN_OR_RETURN(Tensor * t, ctx.AllocateOutput(i + 1));
        out[i] = t->data<float>();
      }
      for (int64_t c = 0; c < l.C; ++c) {
        if (n == 0) {
          out[0][c] = out[1][c] = std::numeric_limits<float>::quiet_NaN();
          out[2][c] = out[3][c] = 0.0f;
          continue;
        }
        const double running_mean = mean[c], running_var = var[c] * unbias;
        out[0][c] = static_cast<float>(factor == 1.0f ? running_mean : (1.0 - factor) * given(3)[c] + factor * running_mean);
        out[1][c] = static_cast<float>(factor == 1.0f ? running_var : (1.0 - factor) * given(4)[c] + factor * running_var);
        out[2][c] = static_cast<float>(mean[c]);
        out[3][c] = static_cast<float>(var[c]);
      }
    }
    GJ_RETURN_IF_ERROR(ctx.AllocateOutput(5).status());
    return Status::Ok();
  };
  return def;
}

// FusedBatchNormGradV3(dy, x, scale, reserve_space_1..3): the gradients of FusedBatchNormV3's y
// for x, scale and offset, with reserve_space_1 and 2 the mean and variance the forward op
// normalized by (the batch's in training: its outputs 3 and 4; the given ones in inference).
// With s = rsqrt(var + eps) and x^ = (x - mean) * s, summing over every dim but the channels:
// d_offset = sum(dy), d_scale = sum(dy * x^); in training, where the mean and variance depend
// on x, dx = scale * s * (dy - sum(dy) / n - x^ * sum(dy * x^) / n); in inference
// dx = scale * s * dy. Outputs 3 and 4 are TensorFlow's placeholders: scalar zeros.
OpDef FusedBatchNormGradOp() {
  OpDef def;
  def.name = "FusedBatchNormGradV3";
  def.min_inputs = def.max_inputs = 6;
  def.infer = [](InferenceContext& c) -> Status {
    DType t;
    int64_t channels;
    GJ_RETURN_IF_ERROR(CheckBatchNorm(c, {0, 1}, {2, 3, 4, 5}, 1, &t, &channels));
    const Shape &dy = c.shape(0), &x = c.shape(1);
    if (dy.IsFullyDefined() && x.IsFullyDefined() && dy != x)
      return c.ShapeError("y_backprop " + dy.ToString() + " and x " + x.ToString() + " differ");
    for (int i = 2; i <= 4; ++i) GJ_RETURN_IF_ERROR(CheckChannelVector(c, i, channels, false));
    c.AddOutput(t, x.unknown_rank() ? dy : x);
    for (int i = 0; i < 2; ++i) c.AddOutput(DType::kFloat, Shape{channels});
    for (int i = 0; i < 2; ++i) c.AddOutput(DType::kFloat, Shape{});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    const Tensor &dy = ctx.input(0), &x = ctx.input(1);
    if (dy.shape() != x.shape())
      return ctx.Error("y_backprop " + dy.shape().ToString() + " and x " + x.shape().ToString() + " differ");
    GJ_ASSIGN_OR_RETURN(Tensor * dx, ctx.AllocateOutput(0));
    GJ_ASSIGN_OR_RETURN(Tensor * d_scale, ctx.AllocateOutput(1));
    GJ_ASSIGN_OR_RETURN(Tensor * d_offset, ctx.AllocateOutput(2));
    const float eps = GetFloatAttrOr(ctx.node, "epsilon", 1e-4f).value();
    const bool training = GetBoolAttrOr(ctx.node, "is_training", true).value();
    GJ_ASSIGN_OR_RETURN(const ChannelLayout l, LayoutOf(ctx.node, x.shape()));
    const float *scale = ctx.input(2).data<float>(), *mean = ctx.input(3).data<float>(), *var = ctx.input(4).data<float>();
    std::vector<double> inv(l.C);
    for (int64_t c = 0; c < l.C; ++c) inv[c] = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      const T *pdy = dy.data<T>(), *px = x.data<T>();
      auto normalized = [&](int64_t i, int64_t c) { return (static_cast<double>(px[i]) - mean[c]) * inv[c]; };
      const std::vector<double> sum_dy = ChannelSums(l, [&](int64_t i, int64_t) { return static_cast<double>(pdy[i]); });
      const std::vector<double> sum_dy_xn =
          ChannelSums(l, [&](int64_t i, int64_t c) { return static_cast<double>(pdy[i]) * normalized(i, c); });
      const double n = static_cast<double>(std::max<int64_t>(l.per_channel(), 1));
      for (int64_t c = 0; c < l.C; ++c) {
        d_scale->data<float>()[c] = static_cast<float>(sum_dy_xn[c]);
        d_offset->data<float>()[c] = static_cast<float>(sum_dy[c]);
      }
      ctx.ParallelFor(l.outer, 4 * l.C * l.inner, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o)
          for (int64_t c = 0; c < l.C; ++c)
            for (int64_t i = (o * l.C + c) * l.inner, end = i + l.inner; i < end; ++i) {
              double g = pdy[i];
              if (training) g -= (sum_dy[c] + normalized(i, c) * sum_dy_xn[c]) / n;
              dx->data<T>()[i] = static_cast<T>(scale[c] * inv[c] * g);
            }
      });
      return Status::Ok();
    }));
    for (int i : {3, 4}) {
      GJ_ASSIGN_OR_RETURN(Tensor * placeholder, ctx.AllocateOutput(i));
      placeholder->data<float>()[0] = 0.0f;
    }
    return Status::Ok();
  };
  return def;
}

// ---- sparse softmax cross-entropy -----------------------------------------------------

OpDef SparseSoftmaxXentOp() {
  OpDef def;
  def.name = "SparseSoftmaxCrossEntropyWithLogits";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    GJ_RETURN_IF_ERROR(c.ExpectDType(1, {DType::kInt32, DType::kInt64}));
    const Shape& f = c.shape(0);
    const Shape& l = c.shape(1);
    if (!f.unknown_rank() && f.rank() != 2) return c.ShapeError("logits must be a matrix, got " + f.ToString());
    if (!l.unknown_rank() && l.rank() != 1) return c.ShapeError("labels must be a vector, got " + l.ToString());
    if (!f.unknown_rank() && !l.unknown_rank() && f.dim(0) >= 0 && l.dim(0) >= 0 && f.dim(0) != l.dim(0))
      return c.ShapeError("logits " + f.ToString() + " and labels " + l.ToString() + " disagree on the batch size");
    int64_t batch = !f.unknown_rank() ? f.dim(0) : (!l.unknown_rank() ? l.dim(0) : -1);
    c.AddOutput(t, Shape{batch});
    c.AddOutput(t, f.unknown_rank() ? Shape{batch, -1} : Shape{batch, f.dim(1)});
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * loss, ctx.AllocateOutput(0));
    GJ_ASSIGN_OR_RETURN(Tensor * grad, ctx.AllocateOutput(1));
    const Tensor& logits = ctx.input(0);
    const int64_t rows = logits.shape().dim(0), d = logits.shape().dim(1);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t label = ctx.input(1).ValueAsInt(r);
      if (label < 0 || label >= d)
        return ctx.Error("label " + std::to_string(label) + " at position " + std::to_string(r) +
                         " is outside the valid range [0, " + std::to_string(d) + ")");
    }
    return VisitTypes<TypeSet::kFloat>(logits.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      using CT = ComputeType<T>;
      std::vector<CT> e(d);
      for (int64_t r = 0; r < rows; ++r) {
        const T* x = logits.data<T>() + r * d;
        CT m = -std::numeric_limits<CT>::infinity();
        for (int64_t i = 0; i < d; ++i) m = std::max(m, static_cast<CT>(x[i]));
        CT sum = 0;
        for (int64_t i = 0; i < d; ++i) sum += (e[i] = std::exp(static_cast<CT>(x[i]) - m));
        const int64_t label = ctx.input(1).ValueAsInt(r);
        loss->data<T>()[r] = static_cast<T>(std::log(sum) - (static_cast<CT>(x[label]) - m));
        for (int64_t i = 0; i < d; ++i) grad->data<T>()[r * d + i] = static_cast<T>(e[i] / sum - (i == label ? CT(1) : CT(0)));
      }
      return Status::Ok();
    });
  };
  return def;
}

const bool kRegistered =
    RegisterOps({ConvOp("Conv2D", false), ConvOp("DepthwiseConv2dNative", true), ConvOp("_FusedConv2D", false),
                 ConvOp("_FusedDepthwiseConv2dNative", true), ConvBackpropInputOp(), PoolOp<true>("MaxPool"),
                 PoolOp<false>("AvgPool"), FusedBatchNormOp(), FusedBatchNormGradOp(), SparseSoftmaxXentOp()});

}  // namespace

StatusOr<Window> ResolveWindow(const Node& node, const Shape& layout_input, const Shape* filter) {
  const InferenceContext c{node, {}, {}, {}, {}, {}};
  GJ_ASSIGN_OR_RETURN(Window w, ReadWindow(c, filter == nullptr, /*nchw_allowed=*/filter != nullptr));
  const Shape input = w.nchw ? ToNhwc(layout_input) : layout_input;
  if (filter) {
    if (filter->rank() != 4) return c.ShapeError("filter must be [KH, KW, in, out], got " + filter->ToString());
    w.kh = filter->dim(0);
    w.kw = filter->dim(1);
  }
  if (input.unknown_rank() || !input.IsFullyDefined())
    return c.ShapeError("the input's shape " + input.ToString() + " is not static");
  GJ_RETURN_IF_ERROR(WindowOutput(c, &w, input, input.dim(3)).status());
  return w;
}

}  // namespace graphjit
