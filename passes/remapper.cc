#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "ir/attr.h"
#include "passes/graph_edit.h"
#include "passes/passes.h"

namespace graphjit {

namespace {

bool IsFusedOp(const std::string& op) {
  return op == "_FusedMatMul" || op == "_FusedConv2D" || op == "_FusedDepthwiseConv2dNative";
}
const char* FusedOpFor(const std::string& op) {
  if (op == "MatMul") return "_FusedMatMul";
  return op == "DepthwiseConv2dNative" ? "_FusedDepthwiseConv2dNative" : "_FusedConv2D";
}

// One sweep in dataflow order: a BiasAdd (or an inference FusedBatchNorm) absorbs the
// MatMul/Conv2D/DepthwiseConv2dNative before it, a Mul and an Add of a constant per output
// channel (a batch norm as Keras writes it for inference: x * s + t) the convolution
// before it, an Add of a tensor of its shape (a residual) the fused convolution before
// it, then an activation absorbs the fused node before it. The node that absorbs
// keeps its name, so fetched names stay. Nodes on different devices (a convolution left on
// the CPU of a GPU session) are not fused.
class Remapper {
 public:
  Remapper(Graph& graph, const PassContext& context, const AnalyzedGraph& analysis)
      : g_(graph), context_(context), a_(analysis), uses_(graph.num_nodes(), 0), out_edges_(graph.ComputeOutEdges()) {
    for (int id = 0; id < g_.num_nodes(); ++id) {
      for (const TensorId& in : g_.node(id)->inputs) ++uses_[in.node];
      for (int c : g_.node(id)->control_inputs) uses_[c] += 2;  // never absorbed
    }
  }

  bool Sweep() {
    bool changed = false;
    for (int id : a_.topo_order) {
      const std::string& op = g_.node(id)->op;
      if (op == "Conv2D" || op == "DepthwiseConv2dNative") changed |= FoldPad(id);
      if (op == "BiasAdd") changed |= FuseBiasAdd(id);
      if (op == "Mul") changed |= FoldChannelScale(id);
      if (op == "Add" || op == "AddV2") changed |= FoldChannelShift(id) || FuseResidualAdd(id);
      if (op == "FusedBatchNorm" || op == "FusedBatchNormV2" || op == "FusedBatchNormV3") changed |= FoldBatchNorm(id);
      if (op == "Relu" || op == "Relu6" || op == "Elu") changed |= FuseActivation(id);
      if (op == "Einsum") changed |= EinsumAsBatchMatMul(id);
    }
    return RemoveDeadNodes(g_, context_, seeds_) > 0 || changed;
  }

 private:
  Node* N(int id) { return g_.node(id); }
  // The value of a constant, also of one this sweep added (the analysis predates it).
  const Tensor* Constant(TensorId t) {
    auto it = added_.find(t.node);
    if (it != added_.end()) return &it->second;
    return t.node < a_.graph.num_nodes() ? ConstValue(a_, t) : nullptr;
  }
  TensorId NewConst(const std::string& name, const Tensor& value, const std::string& device) {
    const int id = AddConst(g_, name, value, device)->id;
    added_.emplace(id, value);
    return {id, 0};
  }
  bool IsF32(int id) {
    auto t = GetTypeAttr(*N(id), "T");
    return t.ok() && *t == DType::kFloat;
  }
  // Output 0 of the producer is read by this one consumer only, on its device, and nothing
  // else needs the producer by name.
  bool Private(TensorId t, int reader) {
    return t.index == 0 && uses_[t.node] == 1 && !context_.IsPreserved(*N(t.node)) && N(t.node)->device == N(reader)->device;
  }
  // A MatMul or NHWC Conv2D/DepthwiseConv2dNative that can take an epilogue.
  bool IsGemmProducer(TensorId t, int reader) {
    const Node* p = N(t.node);
    if (p->op != "MatMul" && p->op != "Conv2D" && p->op != "DepthwiseConv2dNative") return false;
    return Private(t, reader) && IsF32(t.node) && GetStringAttrOr(*p, "data_format", "NHWC").value_or("") == "NHWC";
  }
  // A convolution, plain or fused with its bias alone, which a per-channel scale or shift
  // can join (`fused` says which). MatMuls are left alone: the JIT fuses what follows them.
  bool IsConvProducer(TensorId t, int reader, bool* fused) {
    const Node* p = N(t.node);
    *fused = p->op == "_FusedConv2D" || p->op == "_FusedDepthwiseConv2dNative";
    if (!*fused) return p->op != "MatMul" && IsGemmProducer(t, reader);
    if (!Private(t, reader) || !IsF32(t.node)) return false;
    const tensorflow::AttrValue* ops = p->FindAttr("fused_ops");
    return ops != nullptr && ops->list().s_size() == 1 && ops->list().s(0) == "BiasAdd";
  }
  // The output channels of a GEMM producer or fused op with constant weights `w`: how many,
  // and which one weight element i feeds. HWIO's last dim (depthwise HWIM: I * M, the last
  // two); MatMul's columns, or its rows when transposed.
  struct Channels {
    int64_t count = 0;
    int64_t row_size = 0;  // transposed MatMul's: a channel is a row of the weights
    int64_t Of(int64_t i) const { return row_size ? i / row_size : i % count; }
  };
  static Channels ChannelsOf(const Node& p, const Tensor& w) {
    const auto& d = w.shape();
    if (p.op == "MatMul" || p.op == "_FusedMatMul") {
      if (GetBoolAttrOr(p, "transpose_b", false).value_or(false)) return {d.dim(0), d.dim(1)};
      return {d.dim(1), 0};
    }
    const int r = d.rank();
    if (p.op == "DepthwiseConv2dNative" || p.op == "_FusedDepthwiseConv2dNative") return {d.dim(r - 2) * d.dim(r - 1), 0};
    return {d.dim(r - 1), 0};
  }
  // A float constant that broadcasts one value per output channel (shape [C], [1, ..., C]
  // or a scalar) as `channels` values, or nothing.
  std::optional<std::vector<float>> PerChannel(TensorId c, int64_t channels, int output_rank) {
    const Tensor* t = Constant(c);
    if (!t || t->dtype() != DType::kFloat || t->shape().rank() > output_rank) return std::nullopt;
    for (int i = 0; i + 1 < t->shape().rank(); ++i)
      if (t->shape().dim(i) != 1) return std::nullopt;
    if (t->num_elements() == 1) return std::vector<float>(channels, t->data<float>()[0]);
    if (t->num_elements() != channels) return std::nullopt;
    return std::vector<float>(t->data<float>(), t->data<float>() + channels);
  }
  int OutputRank(int id) {
    const auto& shapes = a_.info(id).shapes;
    return shapes.empty() || shapes[0].unknown_rank() ? -1 : shapes[0].rank();
  }

  // Conv(Pad(x)) with zeros padded on H and W only (Keras's ZeroPadding2D before a VALID
  // convolution, as MobileNetV2 and ResNet50 write their strided ones) -> Conv(x) with
  // the padding as the convolution's own (EXPLICIT): no padded copy of x.
  bool FoldPad(int id) {
    Node* conv = N(id);
    const TensorId x = conv->inputs[0];
    const Node* pad = N(x.node);
    const std::string padding = GetStringAttrOr(*conv, "padding", "").value_or("");
    if ((pad->op != "Pad" && pad->op != "PadV2") || !Private(x, id) || !IsF32(id) ||
        GetStringAttrOr(*conv, "data_format", "NHWC").value_or("") != "NHWC" || (padding != "VALID" && padding != "EXPLICIT"))
      return false;
    if (pad->op == "PadV2") {
      const Tensor* value = Constant(pad->inputs[2]);
      if (!value || value->dtype() != DType::kFloat || value->num_elements() != 1 || value->data<float>()[0] != 0.0f)
        return false;
    }
    const Tensor* pads = Constant(pad->inputs[1]);
    if (!pads || pads->shape() != Shape{4, 2}) return false;
    std::vector<int64_t> p(8), own(8, 0);
    for (int i = 0; i < 8; ++i) p[i] = pads->ValueAsInt(i);
    if (p[0] || p[1] || p[6] || p[7]) return false;  // N or C padded
    if (padding == "EXPLICIT") {
      auto e = GetIntListAttr(*conv, "explicit_paddings");
      if (!e.ok() || e->size() != 8) return false;
      own = *e;
    }
    auto* list = conv->attrs["explicit_paddings"].mutable_list();
    list->clear_i();
    for (int i = 0; i < 8; ++i) list->add_i(p[i] + own[i]);
    conv->attrs["padding"].set_s("EXPLICIT");
    conv->inputs[0] = pad->inputs[0];
    seeds_.push_back(x.node);
    return true;
  }

  // A Mul or Add node `id` of a convolution (plain, or with only its bias) and a float
  // constant per output channel, in either order: the convolution, its constant weights
  // and bias (null for a plain one), and the constant's values per channel.
  struct ChannelOp {
    TensorId conv;
    const Tensor* weights = nullptr;
    const Tensor* bias = nullptr;
    Channels channels;
    std::vector<float> values;
  };
  std::optional<ChannelOp> MatchChannelOp(int id) {
    const Node* n = N(id);
    if (n->inputs.size() != 2 || !IsF32(id)) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      ChannelOp m;
      m.conv = n->inputs[side];
      bool fused = false;
      if (!IsConvProducer(m.conv, id, &fused)) continue;
      const Node* p = N(m.conv.node);
      m.weights = Constant(p->inputs[1]);
      m.bias = fused ? Constant(p->inputs[2]) : nullptr;
      if (!m.weights || m.weights->dtype() != DType::kFloat || (fused && (!m.bias || m.bias->dtype() != DType::kFloat))) continue;
      m.channels = ChannelsOf(*p, *m.weights);
      auto values = PerChannel(n->inputs[1 - side], m.channels.count, OutputRank(id));
      if (!values || (m.bias && m.bias->num_elements() != m.channels.count)) continue;
      m.values = std::move(*values);
      return m;
    }
    return std::nullopt;
  }

  // (conv x W + b) * s, s a constant per output channel -> conv x (W s) + b s, a fused
  // op with a bias (of zeros for a plain conv), which a shift and an activation can join.
  bool FoldChannelScale(int id) {
    const auto m = MatchChannelOp(id);
    if (!m) return false;
    auto weights = m->weights->Clone();
    if (!weights.ok()) return false;
    for (int64_t i = 0; i < weights->num_elements(); ++i) weights->data<float>()[i] *= m->values[m->channels.Of(i)];
    Tensor bias = Tensor::Allocate(DType::kFloat, Shape{m->channels.count}).value();
    for (int64_t k = 0; k < m->channels.count; ++k)
      bias.data<float>()[k] = m->bias ? m->bias->data<float>()[k] * m->values[k] : 0.0f;
    const Node* n = N(id);
    Absorb(id, m->conv.node, NewConst(n->name + "/scaled_weights", *weights, n->device),
           {NewConst(n->name + "/scaled_bias", bias, n->device)}, {"BiasAdd"});
    return true;
  }

  // (conv x W [+ b]) + t, t a constant per output channel -> a fused op with bias b + t.
  bool FoldChannelShift(int id) {
    const auto m = MatchChannelOp(id);
    if (!m) return false;
    Tensor bias = Tensor::Allocate(DType::kFloat, Shape{m->channels.count}).value();
    for (int64_t k = 0; k < m->channels.count; ++k)
      bias.data<float>()[k] = (m->bias ? m->bias->data<float>()[k] : 0.0f) + m->values[k];
    const Node* n = N(id);
    Absorb(id, m->conv.node, N(m->conv.node)->inputs[1], {NewConst(n->name + "/shifted_bias", bias, n->device)}, {"BiasAdd"});
    return true;
  }

  // `id` becomes the fused op of `producer` with inputs (x, weights, args...).
  void Absorb(int id, int producer, TensorId weights, std::vector<TensorId> args, std::vector<std::string> fused_ops) {
    Node* n = N(id);
    const Node* p = N(producer);
    for (const TensorId& in : n->inputs) seeds_.push_back(in.node);
    AttrMap attrs = p->attrs;
    for (const auto& [name, value] : n->attrs)
      if (!name.empty() && name[0] == '_') attrs[name] = value;
    attrs["num_args"].set_i(static_cast<int64_t>(args.size()));
    attrs["epsilon"].set_f(0.0001f);
    auto* list = attrs["fused_ops"].mutable_list();
    list->clear_s();
    for (const std::string& f : fused_ops) list->add_s(f);
    std::vector<int> controls = n->control_inputs;
    for (int c : p->control_inputs) controls.push_back(c);
    n->op = IsFusedOp(p->op) ? p->op : FusedOpFor(p->op);
    n->inputs = {p->inputs[0], weights};
    n->inputs.insert(n->inputs.end(), args.begin(), args.end());
    n->attrs = std::move(attrs);
    n->control_inputs = std::move(controls);
    seeds_.push_back(producer);
  }

  // MatMul/Conv2D + BiasAdd -> _FusedMatMul/_FusedConv2D [BiasAdd].
  bool FuseBiasAdd(int id) {
    const TensorId x = N(id)->inputs[0];
    if (!IsGemmProducer(x, id) || !IsF32(id) || GetStringAttrOr(*N(id), "data_format", "NHWC").value_or("") != "NHWC")
      return false;
    Absorb(id, x.node, N(x.node)->inputs[1], {N(id)->inputs[1]}, {"BiasAdd"});
    return true;
  }

  // The fused_ops of a fused node `t` whose output only `id`, an f32 node, reads.
  std::vector<std::string> PrivateFusedOps(int id, TensorId t) {
    const Node* f = N(t.node);
    const tensorflow::AttrValue* ops = f->FindAttr("fused_ops");
    if (!IsFusedOp(f->op) || !Private(t, id) || !IsF32(id) || ops == nullptr) return {};
    return {ops->list().s().begin(), ops->list().s().end()};
  }

  // Activation(_Fused*[BiasAdd (, Add)]) -> _Fused*[BiasAdd (, Add), Activation].
  bool FuseActivation(int id) {
    const TensorId x = N(id)->inputs[0];
    std::vector<std::string> ops = PrivateFusedOps(id, x);
    if (ops != std::vector<std::string>{"BiasAdd"} && ops != std::vector<std::string>{"BiasAdd", "Add"}) return false;
    const Node* f = N(x.node);
    ops.push_back(N(id)->op);
    Absorb(id, x.node, f->inputs[1], {f->inputs.begin() + 2, f->inputs.end()}, ops);
    return true;
  }

  // conv[BiasAdd] + r, r a tensor of the convolution's shape (ResNet's skip connection) ->
  // _FusedConv2D[BiasAdd, Add] with r its fourth input, which an activation can join.
  bool FuseResidualAdd(int id) {
    const Node* n = N(id);
    if (n->inputs.size() != 2 || id >= a_.graph.num_nodes()) return false;
    const Shape& shape = a_.info(id).shapes[0];
    if (!shape.IsFullyDefined()) return false;
    for (int side = 0; side < 2; ++side) {
      const TensorId conv = n->inputs[side], residual = n->inputs[1 - side];
      const std::string& op = N(conv.node)->op;
      if ((op != "_FusedConv2D" && op != "_FusedDepthwiseConv2dNative") ||
          PrivateFusedOps(id, conv) != std::vector<std::string>{"BiasAdd"} || residual.node >= a_.graph.num_nodes() ||
          conv.node >= a_.graph.num_nodes() || StaticShape(a_, residual) != shape || StaticShape(a_, conv) != shape)
        continue;
      const Node* f = N(conv.node);
      Absorb(id, conv.node, f->inputs[1], {f->inputs[2], residual}, {"BiasAdd", "Add"});
      return true;
    }
    return false;
  }

  // Conv2D/MatMul + FusedBatchNorm(is_training=false): the normalization is a per-channel
  // scale s = gamma / sqrt(var + eps), folded into the weights, and a bias beta - mean * s.
  bool FoldBatchNorm(int id) {
    Node* bn = N(id);
    const TensorId x = bn->inputs[0];
    if (bn->inputs.size() != 5 || !IsGemmProducer(x, id) || GetBoolAttrOr(*bn, "is_training", true).value_or(true) ||
        GetStringAttrOr(*bn, "data_format", "NHWC").value_or("") != "NHWC")
      return false;
    for (const OutEdge& e : out_edges_[id])
      if (e.src_output > 0) return false;  // batch statistics are read
    for (const std::string& fetch : context_.fetches()) {
      ParsedInput parsed;
      if (ParseInputString(fetch, &parsed) && parsed.node == bn->name && parsed.index > 0) return false;
    }
    const Node* p = N(x.node);
    const Tensor* w = Constant(p->inputs[1]);
    std::vector<const Tensor*> params;
    for (int i = 1; i < 5; ++i) params.push_back(Constant(bn->inputs[i]));
    if (!w || w->dtype() != DType::kFloat) return false;
    const int64_t channels = params[0] ? params[0]->num_elements() : -1;
    for (const Tensor* t : params)
      if (!t || t->dtype() != DType::kFloat || t->num_elements() != channels) return false;
    const Channels channel = ChannelsOf(*p, *w);
    if (channel.count != channels) return false;
    const float eps = GetFloatAttrOr(*bn, "epsilon", 0.0001f).value_or(0.0001f);
    std::vector<float> scale(channels);
    Tensor bias = Tensor::Allocate(DType::kFloat, Shape{channels}).value();
    for (int64_t c = 0; c < channels; ++c) {
      scale[c] = params[0]->data<float>()[c] / std::sqrt(params[3]->data<float>()[c] + eps);
      bias.data<float>()[c] = params[1]->data<float>()[c] - params[2]->data<float>()[c] * scale[c];
    }
    auto folded = w->Clone();
    if (!folded.ok()) return false;
    for (int64_t i = 0; i < folded->num_elements(); ++i) folded->data<float>()[i] *= scale[channel.Of(i)];
    const TensorId weights = NewConst(bn->name + "/folded_weights", *folded, bn->device);
    const TensorId b = NewConst(bn->name + "/folded_bias", bias, bn->device);
    Absorb(id, x.node, weights, {b}, {"BiasAdd"});
    return true;
  }

  // An Einsum of two operands whose labels are batch dims (in both operands and the
  // output), free dims (in one operand and the output) and contracted dims (in both
  // operands alone), as a BatchMatMulV2 with Transposes around it (none where the operands
  // and output are in order; an operand whose contracted and free dims are swapped is read
  // adjoint), as TensorFlow's Einsum kernel computes it: attention's BTNH,BSNH->BNTS and
  // BNTS,BSNH->BTNH. Several free or contracted dims of one operand (Keras's EinsumDense:
  // abc,cde->abde and abcd,cde->abe) are merged by Reshapes around the product, which needs
  // the operands' shapes known. The Einsum's name goes to the last node.
  bool EinsumAsBatchMatMul(int id) {
    const Node* n = N(id);
    const auto equation = GetStringAttr(*n, "equation");
    const auto dtype = GetTypeAttr(*n, "T");
    if (n->inputs.size() != 2 || !equation.ok() || !dtype.ok()) return false;
    const size_t comma = equation->find(','), arrow = equation->find("->");
    if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) return false;
    const std::string a = equation->substr(0, comma), b = equation->substr(comma + 1, arrow - comma - 1),
                      out = equation->substr(arrow + 2);
    auto labels_ok = [](const std::string& s) {
      std::string sorted = s;
      std::sort(sorted.begin(), sorted.end());
      return std::all_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }) &&
             std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    };
    if (!labels_ok(a) || !labels_ok(b) || !labels_ok(out)) return false;
    auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
    std::string batch, free_a, free_b, contracted;
    for (char c : out) {
      if (in(a, c) && in(b, c))
        batch += c;
      else if (in(a, c))
        free_a += c;
      else if (in(b, c))
        free_b += c;
      else
        return false;
    }
    for (char c : a + b) {
      if (in(out, c) || contracted.find(c) != std::string::npos) continue;
      if (!in(a, c) || !in(b, c)) return false;  // summed over in one operand alone
      contracted += c;
    }
    if (free_a.empty() || free_b.empty() || contracted.empty()) return false;
    if (free_a.size() > 1 || free_b.size() > 1 || contracted.size() > 1)
      return EinsumAsReshapedBatchMatMul(id, a, b, out, batch, free_a, free_b, contracted, *dtype);
    // Each operand in the order [batch..., row, column]: a transpose, or none with adjoint.
    auto operand = [&](int i, const std::string& labels, const std::string& row, const std::string& column,
                       bool* adjoint) -> TensorId {
      const std::string straight = batch + row + column, swapped = batch + column + row;
      *adjoint = labels == swapped;
      if (labels == straight || *adjoint) return n->inputs[i];
      return Transpose(id, n->inputs[i], labels, straight, i == 0 ? "/transpose_a" : "/transpose_b");
    };
    bool adj_x = false, adj_y = false;
    const TensorId x = operand(0, a, free_a, contracted, &adj_x);
    const TensorId y = operand(1, b, contracted, free_b, &adj_y);
    const std::string product = batch + free_a + free_b;
    Node* matmul = product == out ? N(id) : NewLike(id, n->name + "/matmul", "BatchMatMulV2");
    if (product != out) {
      Transpose(id, {matmul->id, 0}, product, out, "");
      matmul = N(matmul->id);
    } else {
      ClearForRewrite(matmul, "BatchMatMulV2");
    }
    matmul->inputs = {x, y};
    matmul->attrs["T"].set_type(static_cast<tensorflow::DataType>(*dtype));
    matmul->attrs["adj_x"].set_b(adj_x);
    matmul->attrs["adj_y"].set_b(adj_y);
    return true;
  }

  // EinsumAsBatchMatMul with several dims of one kind: each operand transposed to [batch...,
  // rows..., columns...] and reshaped to [batch..., rows, columns], the product reshaped to
  // [batch..., free_a..., free_b...] and transposed to the output's order.
  bool EinsumAsReshapedBatchMatMul(int id, const std::string& a, const std::string& b, const std::string& out,
                                   const std::string& batch, const std::string& free_a, const std::string& free_b,
                                   const std::string& contracted, DType dtype) {
    const Node* n = N(id);
    std::map<char, int64_t> size;  // label -> dim, from the operands' known shapes
    for (int i = 0; i < 2; ++i) {
      const TensorId t = n->inputs[i];
      if (t.node >= a_.graph.num_nodes() || t.index >= static_cast<int>(a_.info(t.node).shapes.size())) return false;
      const Shape& shape = a_.info(t.node).shapes[t.index];
      const std::string& labels = i == 0 ? a : b;
      if (shape.unknown_rank() || shape.rank() != static_cast<int>(labels.size())) return false;
      for (int d = 0; d < shape.rank(); ++d) {
        if (shape.dim(d) < 0) return false;
        size[labels[d]] = shape.dim(d);
      }
    }
    auto dims = [&](const std::string& labels) {
      std::vector<int64_t> v;
      for (char c : labels) v.push_back(size[c]);
      return v;
    };
    auto product = [&](const std::string& labels) {
      int64_t p = 1;
      for (char c : labels) p *= size[c];
      return p;
    };
    auto matrix = [&](int i, const std::string& labels, const std::string& rows, const std::string& columns) {
      const std::string ordered = batch + rows + columns;
      const std::string name = i == 0 ? "/a" : "/b";
      TensorId x = N(id)->inputs[i];
      if (labels != ordered) x = Transpose(id, x, labels, ordered, name + "_transpose");
      std::vector<int64_t> shape = dims(batch);
      shape.push_back(product(rows));
      shape.push_back(product(columns));
      return Reshape(id, x, shape, dtype, name + "_matrix");
    };
    const TensorId x = matrix(0, a, free_a, contracted), y = matrix(1, b, contracted, free_b);
    const std::string name = N(id)->name;
    Node* matmul = NewLike(id, name + "/matmul", "BatchMatMulV2");
    matmul->inputs = {x, y};
    matmul->attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
    matmul->attrs["adj_x"].set_b(false);
    matmul->attrs["adj_y"].set_b(false);
    const std::string labels = batch + free_a + free_b;
    if (labels == out) {
      Reshape(id, {matmul->id, 0}, dims(out), dtype, "");
    } else {
      const TensorId unmerged = Reshape(id, {matmul->id, 0}, dims(labels), dtype, "/unmerged");
      Transpose(id, unmerged, labels, out, "");
    }
    return true;
  }

  // A node beside `like` (its device and internal attributes), named after `name`.
  Node* NewLike(int like, const std::string& name, const std::string& op) {
    Node* node = g_.AddNode(UniqueName(g_, name), op);
    node->device = N(like)->device;
    node->attrs = InternalAttrs(*N(like));
    return node;
  }
  // `node` becomes an `op`: its internal attributes kept, the others dropped.
  static void ClearForRewrite(Node* node, const std::string& op) {
    node->op = op;
    node->attrs = InternalAttrs(*node);
  }
  // An `op` beside `id` named id's name + `suffix`, or, for an empty suffix, `id` itself
  // rewritten as one.
  Node* NewOrRewritten(int id, const std::string& suffix, const std::string& op) {
    if (!suffix.empty()) return NewLike(id, N(id)->name + suffix, op);
    ClearForRewrite(N(id), op);
    return N(id);
  }
  // x (dims labeled `from`) transposed to `to`: a new node beside `id` named id's name +
  // `suffix`, or, for an empty suffix, `id` itself.
  TensorId Transpose(int id, TensorId x, const std::string& from, const std::string& to, const std::string& suffix) {
    std::vector<int32_t> perm;
    for (char c : to) perm.push_back(static_cast<int32_t>(from.find(c)));
    const Tensor value = Tensor::Vector(perm);
    const DType dtype = GetTypeAttr(*N(id), "T").value_or(DType::kFloat);
    const std::string name = N(id)->name;
    const TensorId perm_const{AddConst(g_, name + "/perm" + suffix, value, N(id)->device)->id, 0};
    Node* t = NewOrRewritten(id, suffix, "Transpose");
    t->inputs = {x, perm_const};
    t->attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
    t->attrs["Tperm"].set_type(tensorflow::DT_INT32);
    return {t->id, 0};
  }

  // x reshaped to `shape`, as Transpose is made.
  TensorId Reshape(int id, TensorId x, const std::vector<int64_t>& shape, DType dtype, const std::string& suffix) {
    const std::string name = N(id)->name;
    const TensorId shape_const{AddConst(g_, name + "/shape" + suffix, Tensor::Vector(shape), N(id)->device)->id, 0};
    Node* r = NewOrRewritten(id, suffix, "Reshape");
    r->inputs = {x, shape_const};
    r->attrs["T"].set_type(static_cast<tensorflow::DataType>(dtype));
    r->attrs["Tshape"].set_type(tensorflow::DT_INT64);
    return {r->id, 0};
  }

  Graph& g_;
  const PassContext& context_;
  const AnalyzedGraph& a_;
  std::vector<int> uses_;
  std::vector<std::vector<OutEdge>> out_edges_;
  std::vector<int> seeds_;
  std::map<int, Tensor> added_;  // constants added by this sweep
};

}  // namespace

StatusOr<bool> Remap(Graph& graph, const PassContext& context) {
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analysis, AnalyzeGraph(graph.Clone()));
  return Remapper(graph, context, analysis).Sweep();
}

}  // namespace graphjit
