#include "jit/passes/lower_cnn_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <type_traits>

#include "ir/attr.h"
#include "runtime/const_node.h"
#include "runtime/graph_analysis.h"
#include "runtime/kernels/window.h"
#include "runtime/op_traits.h"
#include "runtime/tensor.h"

namespace graphjit {

namespace {

// Adds nodes to a body being rewritten, on the device of the node they replace.
class Writer {
 public:
  Writer(Graph& graph, int id) : g_(graph), name_(graph.node(id)->name), device_(graph.node(id)->device) {}

  TensorId Op(const std::string& suffix, const std::string& op, std::vector<TensorId> inputs, DType t) {
    Node* node = g_.AddNode(UniqueName(g_, name_ + "/" + suffix), op);
    node->device = device_;
    node->inputs = std::move(inputs);
    node->attrs["T"].set_type(static_cast<tensorflow::DataType>(t));
    return {node->id, 0};
  }
  TensorId Const(const std::string& suffix, const Tensor& value) {
    return {AddConst(g_, name_ + "/" + suffix, value, device_)->id, 0};
  }
  TensorId Ints(const std::string& suffix, const std::vector<int32_t>& values, const Shape& shape) {
    Tensor t = Tensor::Vector(values);
    return Const(suffix, t.Reshaped(shape));
  }
  // x padded by `pads` ([before, after] per dim) with `value` (a scalar of x's type).
  TensorId Pad(TensorId x, const std::vector<int32_t>& pads, const Tensor& value, DType t) {
    const TensorId p = Ints("paddings", pads, Shape{static_cast<int64_t>(pads.size() / 2), 2});
    const TensorId node = Op("padded", "PadV2", {x, p, Const("pad_value", value)}, t);
    g_.node(node.node)->attrs["Tpaddings"].set_type(tensorflow::DT_INT32);
    return node;
  }
  Graph& graph() { return g_; }
  TensorId Cast(TensorId x, DType from, DType to) {
    Node* node = g_.AddNode(UniqueName(g_, name_ + "/cast"), "Cast");
    node->device = device_;
    node->inputs = {x};
    node->attrs["SrcT"].set_type(static_cast<tensorflow::DataType>(from));
    node->attrs["DstT"].set_type(static_cast<tensorflow::DataType>(to));
    return {node->id, 0};
  }
  // Turns the node being replaced into `op` over `inputs` (its name, its readers kept).
  void Become(int id, const std::string& op, std::vector<TensorId> inputs, AttrMap attrs) {
    Node* node = g_.node(id);
    AttrMap kept = InternalAttrs(*node);
    for (auto& [key, value] : attrs) kept[key] = std::move(value);
    node->op = op;
    node->inputs = std::move(inputs);
    node->attrs = std::move(kept);
  }

 private:
  Graph& g_;
  const std::string name_, device_;
};

// A scalar of type `t` holding `value`, or for kLowest the type's lowest finite value.
constexpr double kLowest = -std::numeric_limits<double>::infinity();
Tensor ScalarOf(DType t, double value) {
  if (value != kLowest) return CastTensor(Tensor::Scalar(value), t).value();
  Tensor lowest = Tensor::Allocate(t, Shape{}).value();
  VisitDType(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      *lowest.data<T>() = false;
    } else {
      *lowest.data<T>() = std::numeric_limits<T>::lowest();
    }
  });
  return lowest;
}

// MaxPool (`max`) and AvgPool (see the header).
Status LowerPool(AnalyzedGraph& body, int id, bool max) {
  Graph& g = body.graph;
  const Node& node = *g.node(id);
  const DType t = body.info(id).dtypes[0];
  const Shape in = StaticShape(body, node.inputs[0]);
  GJ_ASSIGN_OR_RETURN(const Window w, ResolveWindow(node, in, nullptr));
  if (w.kh * w.kw > kMaxPoolWindowElements)
    return Unimplemented(NodeLabel(node) + ": a window of more than " + std::to_string(kMaxPoolWindowElements) + " elements");
  const Shape& out = body.info(id).shapes[0];
  const int64_t n = in.dim(0), c = in.dim(3), oh = out.dim(1), ow = out.dim(2);
  Writer write(g, id);
  TensorId x = node.inputs[0];
  // A sum of 16-bit values is kept in float32 and rounded once, as the reference does.
  const DType acc = !max && t != DType::kFloat ? DType::kFloat : t;
  if (w.pt || w.pb || w.pl || w.pr) {
    const std::vector<int32_t> pads = {
        0, 0, static_cast<int32_t>(w.pt), static_cast<int32_t>(w.pb), static_cast<int32_t>(w.pl), static_cast<int32_t>(w.pr),
        0, 0};
    x = write.Pad(x, pads, ScalarOf(t, max ? kLowest : 0.0), t);
  }
  if (acc != t) x = write.Cast(x, t, acc);
  TensorId folded;
  for (int64_t i = 0; i < w.kh; ++i) {
    for (int64_t j = 0; j < w.kw; ++j) {
      auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
      const TensorId begin = write.Ints("begin", {0, i32(i), i32(j), 0}, Shape{4});
      const TensorId end =
          write.Ints("end", {i32(n), i32(i + (oh - 1) * w.sh + 1), i32(j + (ow - 1) * w.sw + 1), i32(c)}, Shape{4});
      const TensorId strides = write.Ints("strides", {1, i32(w.sh), i32(w.sw), 1}, Shape{4});
      const TensorId slice = write.Op("window", "StridedSlice", {x, begin, end, strides}, acc);
      g.node(slice.node)->attrs["Index"].set_type(tensorflow::DT_INT32);
      folded = i == 0 && j == 0 ? slice : write.Op(max ? "max" : "sum", max ? "Maximum" : "AddV2", {folded, slice}, acc);
    }
  }
  AttrMap attrs;
  attrs["T"].set_type(static_cast<tensorflow::DataType>(t));
  if (max) {  // TensorFlow's max starts at the type's lowest finite value (-inf never wins)
    write.Become(id, "Maximum", {folded, write.Const("lowest", ScalarOf(t, kLowest))}, std::move(attrs));
    return Status::Ok();
  }
  // The count of each window's elements inside the input: one for all, or one per position.
  Tensor counts = Tensor::Allocate(DType::kFloat, Shape{1, oh, ow, 1}).value();
  for (int64_t y = 0; y < oh; ++y) {
    for (int64_t x0 = 0; x0 < ow; ++x0) {
      const int64_t h0 = std::max<int64_t>(0, y * w.sh - w.pt), h1 = std::min(in.dim(1), y * w.sh - w.pt + w.kh);
      const int64_t w0 = std::max<int64_t>(0, x0 * w.sw - w.pl), w1 = std::min(in.dim(2), x0 * w.sw - w.pl + w.kw);
      counts.data<float>()[y * ow + x0] = static_cast<float>((h1 - h0) * (w1 - w0));
    }
  }
  const bool uniform =
      std::all_of(counts.data<float>(), counts.data<float>() + oh * ow, [&](float v) { return v == counts.data<float>()[0]; });
  if (uniform) counts = Tensor::Scalar(counts.data<float>()[0]);
  const TensorId divisor = write.Const("counts", CastTensor(counts, acc).value());
  if (acc == t) {
    write.Become(id, "RealDiv", {folded, divisor}, std::move(attrs));
    return Status::Ok();
  }
  const TensorId mean = write.Op("mean", "RealDiv", {folded, divisor}, acc);
  attrs.erase("T");
  attrs["SrcT"].set_type(static_cast<tensorflow::DataType>(acc));
  attrs["DstT"].set_type(static_cast<tensorflow::DataType>(t));
  write.Become(id, "Cast", {mean}, std::move(attrs));
  return Status::Ok();
}

// Writes a batch norm's per-channel arithmetic: x's layout (NHWC or NCHW, rank 4), the sums
// over every dim but the channels', and [C] vectors broadcast against x.
class ChannelMath {
 public:
  ChannelMath(AnalyzedGraph& body, int id, Writer& write, int x_input) : write_(write) {
    const Node& node = *body.graph.node(id);
    nchw_ = GetStringAttrOr(node, "data_format", "NHWC").value_or("NHWC") == "NCHW";
    const Shape x = StaticShape(body, node.inputs[x_input]);
    count_ = x.num_elements() / std::max<int64_t>(x.dim(nchw_ ? 1 : 3), 1);
    axes_ = write.Ints("axes", nchw_ ? std::vector<int32_t>{0, 2, 3} : std::vector<int32_t>{0, 1, 2}, Shape{3});
  }
  // The elements per channel.
  int64_t count() const { return count_; }
  TensorId Op(const std::string& name, const std::string& op, std::vector<TensorId> inputs) {
    return write_.Op(name, op, std::move(inputs), DType::kFloat);
  }
  TensorId Add(const std::string& name, TensorId a, TensorId b) { return Op(name, "AddV2", {a, b}); }
  TensorId Sub(const std::string& name, TensorId a, TensorId b) { return Op(name, "Sub", {a, b}); }
  TensorId Mul(const std::string& name, TensorId a, TensorId b) { return Op(name, "Mul", {a, b}); }
  TensorId Scalar(const std::string& name, float v) { return write_.Const(name, Tensor::Scalar(v)); }
  // Per channel: the sum or the mean over every other dim.
  TensorId Sum(const std::string& name, TensorId x) { return Reduce(name, "Sum", x); }
  TensorId Mean(const std::string& name, TensorId x) { return Reduce(name, "Mean", x); }
  // A [C] vector shaped to broadcast against x (along dim 1 in NCHW).
  TensorId Broadcast(TensorId v) {
    if (!nchw_) return v;
    const TensorId r = Op("per_channel", "Reshape", {v, write_.Ints("channel_shape", {-1, 1, 1}, Shape{3})});
    write_.graph().node(r.node)->attrs["Tshape"].set_type(tensorflow::DT_INT32);
    return r;
  }
  // 1 / sqrt(variance + epsilon).
  TensorId InverseStd(TensorId variance, float epsilon) {
    const TensorId shifted = Add("shifted", variance, Scalar("epsilon", epsilon));
    return Op("inverse", "Reciprocal", {Op("root", "Sqrt", {shifted})});
  }

 private:
  TensorId Reduce(const std::string& name, const char* op, TensorId x) {
    const TensorId r = Op(name, op, {x, axes_});
    Node* node = write_.graph().node(r.node);
    node->attrs["Tidx"].set_type(tensorflow::DT_INT32);
    node->attrs["keep_dims"].set_b(false);
    return r;
  }

  Writer& write_;
  bool nchw_ = false;
  int64_t count_ = 0;
  TensorId axes_;
};

// The node being replaced becomes float32 `y` in its type T (an Identity, free in the kernel
// that computes y, or a Cast).
void BecomeInType(Writer& write, int id, TensorId y, DType t) {
  AttrMap attrs;
  if (t == DType::kFloat) {
    attrs["T"].set_type(tensorflow::DT_FLOAT);
    write.Become(id, "Identity", {y}, std::move(attrs));
    return;
  }
  attrs["SrcT"].set_type(tensorflow::DT_FLOAT);
  attrs["DstT"].set_type(static_cast<tensorflow::DataType>(t));
  write.Become(id, "Cast", {y}, std::move(attrs));
}

// FusedBatchNormV3 (see the header); `moved` gets where each of its outputs 1-5 now is.
Status LowerBatchNorm(AnalyzedGraph& body, int id, std::vector<TensorId>* moved) {
  Graph& g = body.graph;
  const Node& node = *g.node(id);
  const DType t = body.info(id).dtypes[0];
  const bool training = GetBoolAttrOr(node, "is_training", true).value_or(true);
  const float epsilon = GetFloatAttrOr(node, "epsilon", 1e-4f).value_or(1e-4f);
  const float factor = GetFloatAttrOr(node, "exponential_avg_factor", 1.0f).value_or(1.0f);
  const std::vector<TensorId> in = node.inputs;  // x, scale, offset, mean, variance
  Writer write(g, id);
  ChannelMath m(body, id, write, 0);
  const TensorId x = t == DType::kFloat ? in[0] : write.Cast(in[0], t, DType::kFloat);
  const TensorId reserve = write.Const("reserve", Tensor::Allocate(DType::kFloat, Shape{0}).value());
  if (!training) {
    // x * s + (offset - mean * s), s = scale / sqrt(variance + epsilon): one multiply-add.
    const TensorId mul = m.Mul("scale", in[1], m.InverseStd(in[4], epsilon));
    const TensorId add = m.Sub("shift", in[2], m.Mul("mean_scaled", in[3], mul));
    BecomeInType(write, id, m.Add("normalized", m.Mul("scaled", x, m.Broadcast(mul)), m.Broadcast(add)), t);
    *moved = {in[3], in[4], in[3], in[4], reserve};
    return Status::Ok();
  }
  // The batch's mean, then its variance from the centered x (two column reductions: exact
  // where the mean is large against the spread), then (x - mean) * s + offset.
  const int64_t n = m.count();
  TensorId mean, variance, running_mean, running_variance;
  if (n == 0) {  // as TensorFlow: NaN running statistics, zero batch ones
    const int64_t c = StaticShape(body, in[1]).dim(0);
    auto fill = [&](const char* name, float v) {
      Tensor value = Tensor::Allocate(DType::kFloat, Shape{c}).value();
      std::fill_n(value.data<float>(), c, v);
      return write.Const(name, value);
    };
    mean = variance = fill("batch_statistic", 0.0f);
    running_mean = running_variance = fill("running_statistic", std::numeric_limits<float>::quiet_NaN());
    BecomeInType(write, id, x, t);
  } else {
    mean = m.Mean("mean", x);
    const TensorId centered = m.Sub("centered", x, m.Broadcast(mean));
    variance = m.Mean("variance", m.Op("squared", "Square", {centered}));
    const TensorId mul = m.Mul("scale", in[1], m.InverseStd(variance, epsilon));
    BecomeInType(write, id, m.Add("normalized", m.Mul("scaled", centered, m.Broadcast(mul)), m.Broadcast(in[2])), t);
    const float unbias = static_cast<float>(static_cast<double>(n) / static_cast<double>(std::max<int64_t>(n - 1, 1)));
    running_mean = mean;
    running_variance = m.Mul("unbiased", variance, m.Scalar("unbias", unbias));
  }
  if (factor != 1.0f) {  // (1 - f) * given + f * batch
    auto blend = [&](TensorId given, TensorId batch) {
      return m.Add("running", m.Mul("kept", given, m.Scalar("keep", 1.0f - factor)),
                   m.Mul("new", batch, m.Scalar("factor", factor)));
    };
    running_mean = blend(in[3], running_mean);
    running_variance = blend(in[4], running_variance);
  }
  *moved = {running_mean, running_variance, mean, variance, reserve};
  return Status::Ok();
}

// FusedBatchNormGradV3 (see the header); `moved` gets where each of its outputs 1-4 now is.
Status LowerBatchNormGrad(AnalyzedGraph& body, int id, std::vector<TensorId>* moved) {
  Graph& g = body.graph;
  const Node& node = *g.node(id);
  const DType t = body.info(id).dtypes[0];
  const bool training = GetBoolAttrOr(node, "is_training", true).value_or(true);
  const float epsilon = GetFloatAttrOr(node, "epsilon", 1e-4f).value_or(1e-4f);
  const std::vector<TensorId> in = node.inputs;  // dy, x, scale, mean, variance, (reserve)
  Writer write(g, id);
  ChannelMath m(body, id, write, 1);
  auto f32 = [&](TensorId v) { return t == DType::kFloat ? v : write.Cast(v, t, DType::kFloat); };
  const TensorId dy = f32(in[0]), x = f32(in[1]);
  const TensorId inverse = m.InverseStd(in[4], epsilon);
  const TensorId normalized = m.Mul("normalized", m.Sub("centered", x, m.Broadcast(in[3])), m.Broadcast(inverse));
  const TensorId d_offset = m.Sum("offset_backprop", dy);
  const TensorId d_scale = m.Sum("scale_backprop", m.Mul("dy_normalized", dy, normalized));
  const TensorId factor = m.Broadcast(m.Mul("dx_scale", in[2], inverse));
  TensorId g_x = dy;
  if (training) {  // dy - sum(dy) / n - normalized * sum(dy * normalized) / n
    const TensorId per = m.Scalar("per_element", 1.0f / static_cast<float>(std::max<int64_t>(m.count(), 1)));
    const TensorId mean_dy = m.Broadcast(m.Mul("mean_dy", d_offset, per));
    const TensorId mean_dy_n = m.Broadcast(m.Mul("mean_dy_normalized", d_scale, per));
    g_x = m.Sub("dy_centered", m.Sub("dy_less_mean", dy, mean_dy), m.Mul("along_normalized", normalized, mean_dy_n));
  }
  BecomeInType(write, id, m.Mul("x_backprop", g_x, factor), t);
  const TensorId zero = m.Scalar("placeholder", 0.0f);
  *moved = {d_scale, d_offset, zero, zero};
  return Status::Ok();
}

// A convolution whose padding is not symmetric (see the header); `backprop`: the
// convolution computes the gradient of its input (Conv2DBackpropInput).
Status PadSymmetrically(AnalyzedGraph& body, int id, bool backprop) {
  Graph& g = body.graph;
  const Node& node = *g.node(id);
  const DType t = body.info(id).dtypes[0];
  const Shape in = backprop ? body.info(id).shapes[0] : StaticShape(body, node.inputs[0]);
  const Shape filter = StaticShape(body, node.inputs[1]);
  GJ_ASSIGN_OR_RETURN(const Window w, ResolveWindow(node, in, &filter));
  if (w.pt == w.pb && w.pl == w.pr) return Status::Ok();
  const int64_t ph = std::min(w.pt, w.pb), pw = std::min(w.pl, w.pr);
  const int32_t top = static_cast<int32_t>(w.pt - ph), bottom = static_cast<int32_t>(w.pb - ph);
  const int32_t left = static_cast<int32_t>(w.pl - pw), right = static_cast<int32_t>(w.pr - pw);
  // Per dim, in the data format's order (H at 1 or 2, W after it).
  const int h = w.nchw ? 2 : 1;
  auto per_dim = [&](int64_t batch, int64_t rows, int64_t cols, int64_t channels) {
    std::vector<int64_t> v = {batch, 0, 0, 0};
    v[h] = rows, v[h + 1] = cols, v[w.nchw ? 1 : 3] = channels;
    return v;
  };
  AttrMap attrs = node.attrs;
  attrs["padding"].set_s("EXPLICIT");
  auto* paddings = attrs["explicit_paddings"].mutable_list();
  paddings->clear_i();
  for (const int64_t p : per_dim(0, ph, pw, 0)) paddings->add_i(p), paddings->add_i(p);
  Writer write(g, id);
  auto i32 = [](const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); };
  if (!backprop) {
    std::vector<int32_t> pads(8, 0);
    pads[2 * h] = top, pads[2 * h + 1] = bottom, pads[2 * h + 2] = left, pads[2 * h + 3] = right;
    Node* conv = g.node(id);
    conv->inputs[0] = write.Pad(conv->inputs[0], pads, ScalarOf(t, 0), t);
    conv->attrs = std::move(attrs);
    return Status::Ok();
  }
  // The gradient for the input padded by the extra rows and columns, sliced back to it.
  const std::vector<TensorId> inputs = node.inputs;
  const int64_t c = in.dim(w.nchw ? 1 : 3), rows = in.dim(h), cols = in.dim(h + 1);
  const TensorId sizes =
      write.Ints("input_sizes", i32(per_dim(in.dim(0), rows + top + bottom, cols + left + right, c)), Shape{4});
  const TensorId padded = write.Op("padded_gradient", node.op, {sizes, inputs[1], inputs[2]}, t);
  g.node(padded.node)->attrs = std::move(attrs);
  const TensorId begin = write.Ints("begin", i32(per_dim(0, top, left, 0)), Shape{4});
  const TensorId size = write.Ints("size", i32(per_dim(in.dim(0), rows, cols, c)), Shape{4});
  AttrMap slice;
  slice["T"].set_type(static_cast<tensorflow::DataType>(t));
  slice["Index"].set_type(tensorflow::DT_INT32);
  write.Become(id, "Slice", {padded, begin, size}, std::move(slice));
  return Status::Ok();
}

// How each op is lowered; `moved` gets where its outputs after the first now are.
using Lowering = Status (*)(AnalyzedGraph& body, int id, std::vector<TensorId>* moved);

Status LowerMaxPool(AnalyzedGraph& body, int id, std::vector<TensorId>*) { return LowerPool(body, id, true); }
Status LowerAvgPool(AnalyzedGraph& body, int id, std::vector<TensorId>*) { return LowerPool(body, id, false); }
Status PadConvolution(AnalyzedGraph& body, int id, std::vector<TensorId>*) { return PadSymmetrically(body, id, false); }
Status PadInputGradient(AnalyzedGraph& body, int id, std::vector<TensorId>*) { return PadSymmetrically(body, id, true); }

// The lowering of `op`: by name, else a convolution's padding (kConv); null for none.
Lowering LoweringOf(const std::string& op) {
  static const std::map<std::string, Lowering, std::less<>> kLowerings = {
      {"MaxPool", LowerMaxPool},
      {"AvgPool", LowerAvgPool},
      {"FusedBatchNormV3", LowerBatchNorm},
      {"FusedBatchNormGradV3", LowerBatchNormGrad},
      {"Conv2DBackpropInput", PadInputGradient},
  };
  auto it = kLowerings.find(op);
  if (it != kLowerings.end()) return it->second;
  return TraitsOf(op).pattern == OpPattern::kConv ? PadConvolution : nullptr;
}

// Whether the node's inputs and outputs have static shapes (as after specialization).
bool StaticShapes(const AnalyzedGraph& body, int id) {
  for (const TensorId& in : body.graph.node(id)->inputs)
    if (!StaticShape(body, in).IsFullyDefined()) return false;
  for (const Shape& out : body.info(id).shapes)
    if (!out.IsFullyDefined()) return false;
  return true;
}

// Makes the readers of each moved tensor, and the outputs naming it, read where it is now.
void FollowMoves(Graph& g, const std::map<TensorId, TensorId>& moved, std::vector<std::string>* outputs) {
  auto follow = [&](TensorId& t) {
    auto it = moved.find(t);
    if (it != moved.end()) t = it->second;
  };
  for (int id = 0; id < g.num_nodes(); ++id)
    for (TensorId& in : g.node(id)->inputs) follow(in);
  if (outputs == nullptr) return;
  for (std::string& out : *outputs) {
    ParsedInput parsed;
    const Node* node = ParseInputString(out, &parsed) ? g.FindNode(parsed.node) : nullptr;
    if (node == nullptr) continue;
    TensorId t{node->id, parsed.index};
    follow(t);
    out = g.TensorName(t);
  }
}

}  // namespace

StatusOr<bool> LowerCnnOps(Graph& graph, std::vector<std::string>* outputs) {
  const int n = graph.num_nodes();
  bool any = false;
  for (int id = 0; id < n && !any; ++id) any = LoweringOf(graph.node(id)->op) != nullptr;
  if (!any) return false;
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph body, AnalyzeGraph(graph.Clone()));
  Graph& g = body.graph;
  std::map<TensorId, TensorId> moved;  // a batch norm's other outputs -> where they are now
  bool changed = false;
  for (int id = 0; id < n; ++id) {
    const Lowering lower = LoweringOf(g.node(id)->op);
    if (lower == nullptr) continue;
    if (!StaticShapes(body, id)) return Unimplemented(NodeLabel(*g.node(id)) + ": written out for static shapes only");
    const int before = g.num_nodes();
    std::vector<TensorId> to;
    GJ_RETURN_IF_ERROR(lower(body, id, &to));
    for (int k = 0; k < static_cast<int>(to.size()); ++k) moved[{id, k + 1}] = to[k];
    changed |= g.num_nodes() != before;
  }
  if (!changed) return false;
  FollowMoves(g, moved, outputs);
  graph = std::move(g);
  return true;
}

}  // namespace graphjit
