#include <cmath>
#include <cstring>

#include "passes/graph_edit.h"
#include "passes/lower_bias_add_grads.h"
#include "passes/passes.h"

namespace graphjit {

namespace {

bool AllEqual(const Tensor& t, double value) {
  if (t.dtype() == DType::kBool) return false;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (t.ValueAsDouble(i) != value) return false;
  return true;
}

bool AllFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (!std::isfinite(t.ValueAsDouble(i))) return false;
  return true;
}

bool IsFloat(DType t) { return t == DType::kFloat || t == DType::kDouble || t == DType::kHalf || t == DType::kBFloat16; }

// Whether broadcasting `x` against the constant `c` gives x's shape, whatever x turns out
// to be at run time.
bool KeepsShape(const Shape& x, const Shape& c) {
  if (c.unknown_rank() || !c.IsFullyDefined() || x.unknown_rank() || c.rank() > x.rank()) return false;
  bool ones = true;
  for (int64_t d : c.dims()) ones &= d == 1;
  if (ones) return true;
  if (!x.IsFullyDefined()) return false;
  auto b = BroadcastShapes(x, c);
  return b.ok() && *b == x;
}

std::vector<int64_t> Perm(const Tensor& t) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < t.num_elements(); ++i) p.push_back(t.ValueAsInt(i));
  return p;
}

bool IsIdentityPerm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// One sweep over the graph with the analysis made before it. A node rewritten in this
// sweep is "dirty": its analysis is stale, so neither it nor its consumers are looked at
// again until the next sweep.
class Simplifier {
 public:
  Simplifier(Graph& graph, const PassContext& context, const AnalyzedGraph& analysis)
      : g_(graph), context_(context), a_(analysis), dirty_(graph.num_nodes(), false), uses_(graph.num_nodes(), 0) {
    for (int id = 0; id < g_.num_nodes(); ++id)
      for (const TensorId& in : g_.node(id)->inputs) ++uses_[in.node];
  }

  StatusOr<bool> Sweep() {
    bool changed = false;
    for (int id : a_.topo_order) {
      if (!Fresh(id)) continue;
      if (Rewrite(id)) {
        changed = true;
        MarkDirty(id);
      }
    }
    changed |= RemoveDeadNodes(g_, context_, seeds_) > 0;
    return changed;
  }

 private:
  bool IsDirty(int id) const { return id >= static_cast<int>(dirty_.size()) || dirty_[id]; }
  void MarkDirty(int id) {
    if (id < static_cast<int>(dirty_.size())) dirty_[id] = true;
  }
  bool Fresh(int id) const {
    if (IsDirty(id)) return false;
    for (const TensorId& in : g_.node(id)->inputs)
      if (IsDirty(in.node)) return false;
    return true;
  }
  const Tensor* Const(TensorId t) const { return IsDirty(t.node) ? nullptr : ConstValue(a_, t); }
  const Shape& ShapeOf(TensorId t) const { return StaticShape(a_, t); }
  Node* N(int id) { return g_.node(id); }
  // A producer this node alone reads, that may be rewritten away.
  bool Private(TensorId t) const { return Fresh(t.node) && uses_[t.node] == 1 && !context_.IsPreserved(*g_.node(t.node)); }

  // Output 0 of `id` is the tensor x.
  void Forward(int id, TensorId x) {
    for (const TensorId& in : N(id)->inputs) seeds_.push_back(in.node);
    if (context_.IsPreserved(*N(id))) {
      MakeIdentity(g_, id, x, StaticDType(a_, {id, 0}));
    } else {
      Bypass(g_, id, x);
      seeds_.push_back(id);
    }
  }
  // Rewrites `id` in place as a unary op of x.
  void Become(int id, const char* op, TensorId x) {
    for (const TensorId& in : N(id)->inputs) seeds_.push_back(in.node);
    DType t = StaticDType(a_, {id, 0});
    MakeIdentity(g_, id, x, t);
    N(id)->op = op;
  }
  void SetInput(int id, int i, TensorId t) {
    seeds_.push_back(N(id)->inputs[i].node);
    N(id)->inputs[i] = t;
  }
  TensorId AddConstFor(int id, const std::string& suffix, const Tensor& value) {
    Node* c = AddConst(g_, N(id)->name + "/" + suffix, value, N(id)->device);
    return {c->id, 0};
  }

  bool Rewrite(int id) {
    const std::string op = N(id)->op;
    if (N(id)->inputs.size() == 2 &&
        (op == "Mul" || op == "Add" || op == "AddV2" || op == "Sub" || op == "RealDiv" || op == "Div"))
      return RewriteBinary(id, op);
    if (op == "MatMul") return FoldTransposeIntoMatMul(id);
    if (op == "Transpose") return RewriteTranspose(id);
    if (op == "Reshape") return RewriteReshape(id);
    if (op == "BiasAddGrad" && N(id)->inputs.size() == 1) {
      const Shape& g = ShapeOf(N(id)->inputs[0]);
      return LowerBiasAddGrad(g_, id, g.unknown_rank() ? -1 : g.rank());
    }
    if (op == "Pow" && N(id)->inputs.size() == 2) return RewritePow(id);
    return false;
  }

  // Pow(x, c) with every element of the constant c 1, 2, 3 or -1: x, Square(x),
  // x * Square(x), Reciprocal(x), as Grappler rewrites them: multiplications, where pow
  // is a call per element that no loop vectorizes (GELU's tanh form has x^3). Square and
  // Reciprocal round once, as pow does; x * x^2 within an ulp of pow. Not 0.5 or -0.5:
  // pow(-0, 0.5) is +0 and pow(-Inf, 0.5) +Inf, where Sqrt gives -0 and NaN.
  bool RewritePow(int id) {
    const TensorId x = N(id)->inputs[0], e = N(id)->inputs[1];
    const Tensor* c = Const(e);
    if (!c || !IsFloat(c->dtype()) || !KeepsShape(ShapeOf(x), ShapeOf(e))) return false;
    if (AllEqual(*c, 1.0)) return Forward(id, x), true;
    if (AllEqual(*c, 2.0)) return Become(id, "Square", x), true;
    if (AllEqual(*c, -1.0)) return Become(id, "Reciprocal", x), true;
    if (!AllEqual(*c, 3.0)) return false;
    Node* square = g_.AddNode(UniqueName(g_, N(id)->name + "/square"), "Square");
    square->device = N(id)->device;
    square->attrs["T"] = N(id)->attrs["T"];
    square->inputs = {x};
    SetInput(id, 1, {square->id, 0});
    N(id)->op = "Mul";
    return true;
  }

  bool RewriteBinary(int id, const std::string& op) {
    const TensorId in0 = N(id)->inputs[0], in1 = N(id)->inputs[1];
    const Tensor* c0 = Const(in0);
    const Tensor* c1 = Const(in1);
    const bool commutative = op == "Mul" || op == "Add" || op == "AddV2";
    const double neutral = (op == "Mul" || op == "RealDiv" || op == "Div") ? 1.0 : 0.0;
    // x op neutral -> x (and neutral op x for + and *).
    if (c1 && AllEqual(*c1, neutral) && KeepsShape(ShapeOf(in0), ShapeOf(in1))) return Forward(id, in0), true;
    if (commutative && c0 && AllEqual(*c0, neutral) && KeepsShape(ShapeOf(in1), ShapeOf(in0))) return Forward(id, in1), true;
    // x * 0 -> 0 when x is a constant with finite values (NaN * 0 and Inf * 0 are NaN).
    if (op == "Mul") {
      for (auto [x, zero] : {std::pair{c0, c1}, std::pair{c1, c0}}) {
        const Shape& out = ShapeOf({id, 0});
        if (x && zero && AllEqual(*zero, 0.0) && AllFinite(*x) && out.IsFullyDefined() &&
            CheckedBytes(out.dims(), static_cast<int64_t>(DTypeSize(x->dtype()))).value_or(INT64_MAX) <=
                context_.max_constant_bytes) {
          auto zeros = Tensor::Allocate(x->dtype(), out);
          if (!zeros.ok()) return false;
          std::memset(zeros->raw(), 0, zeros->bytes());
          for (const TensorId& in : N(id)->inputs) seeds_.push_back(in.node);
          ReplaceWithConst(g_, id, *zeros);
          return true;
        }
      }
    }
    // 0 - y -> Neg(y); 1 / y -> Reciprocal(y).
    if (op == "Sub" && c0 && AllEqual(*c0, 0.0) && KeepsShape(ShapeOf(in1), ShapeOf(in0))) return Become(id, "Neg", in1), true;
    if ((op == "RealDiv" || op == "Div") && c0 && IsFloat(c0->dtype()) && AllEqual(*c0, 1.0) &&
        KeepsShape(ShapeOf(in1), ShapeOf(in0)))
      return Become(id, "Reciprocal", in1), true;
    if (commutative) return PushDownConstant(id, op);
    return false;
  }

  // c1 + (x + c2) -> x + (c1 + c2), and the same for *. Broadcasting is associative,
  // so the shape stays.
  bool PushDownConstant(int id, const std::string& op) {
    auto family = [](const std::string& o) { return o == "AddV2" ? std::string("Add") : o; };
    for (int side = 0; side < 2; ++side) {
      const TensorId c_outer = N(id)->inputs[side], inner = N(id)->inputs[1 - side];
      const Tensor* c1 = Const(c_outer);
      if (!c1 || Const(inner) || !Private(inner) || family(N(inner.node)->op) != family(op)) continue;
      const Node* in = N(inner.node);
      if (in->inputs.size() != 2) continue;
      for (int k = 0; k < 2; ++k) {
        const Tensor* c2 = Const(in->inputs[k]);
        const TensorId x = in->inputs[1 - k];
        if (!c2 || Const(x)) continue;
        auto combined = EvaluateNode(*N(id), {*c1, *c2});
        if (!combined.ok()) return false;
        TensorId c = AddConstFor(id, "pushed_down", (*combined)[0]);
        SetInput(id, 0, x);
        SetInput(id, 1, c);
        seeds_.push_back(inner.node);
        return true;
      }
    }
    return false;
  }

  // MatMul(Transpose(x, [1, 0]), y) -> MatMul(x, y, transpose_a = !transpose_a); same for y.
  bool FoldTransposeIntoMatMul(int id) {
    bool changed = false;
    for (int i = 0; i < 2; ++i) {
      const TensorId in = N(id)->inputs[i];
      const Node* t = N(in.node);
      if (t->op != "Transpose" || !Fresh(in.node)) continue;
      const Tensor* perm = Const(t->inputs[1]);
      if (!perm || Perm(*perm) != std::vector<int64_t>{1, 0}) continue;
      const char* attr = i == 0 ? "transpose_a" : "transpose_b";
      tensorflow::AttrValue& flag = N(id)->attrs[attr];
      flag.set_b(!flag.b());
      SetInput(id, i, t->inputs[0]);
      changed = true;
    }
    return changed;
  }

  bool RewriteTranspose(int id) {
    if (N(id)->inputs.size() != 2) return false;
    const TensorId x = N(id)->inputs[0];
    const Tensor* p2 = Const(N(id)->inputs[1]);
    if (!p2) return false;
    std::vector<int64_t> outer = Perm(*p2);
    if (IsIdentityPerm(outer)) return Forward(id, x), true;
    // Transpose(Transpose(y, p1), p2) = Transpose(y, q) with q[i] = p1[p2[i]].
    const Node* inner = N(x.node);
    if (inner->op != "Transpose" || !Fresh(x.node)) return false;
    const Tensor* p1 = Const(inner->inputs[1]);
    if (!p1 || p1->num_elements() != p2->num_elements()) return false;
    std::vector<int64_t> first = Perm(*p1), composed;
    for (int64_t i : outer) composed.push_back(first[i]);
    const TensorId y = inner->inputs[0];
    if (IsIdentityPerm(composed)) return Forward(id, y), true;
    Tensor q = p2->dtype() == DType::kInt64 ? Tensor::Vector(composed)
                                            : Tensor::Vector(std::vector<int32_t>(composed.begin(), composed.end()));
    TensorId perm = AddConstFor(id, "perm", q);
    SetInput(id, 0, y);
    SetInput(id, 1, perm);
    return true;
  }

  bool RewriteReshape(int id) {
    if (N(id)->inputs.size() != 2) return false;
    const TensorId x = N(id)->inputs[0];
    const Shape& in = ShapeOf(x);
    if (in.IsFullyDefined() && in == ShapeOf({id, 0})) return Forward(id, x), true;
    // Reshape(Reshape(y, s1), s2) -> Reshape(y, s2): the element count is the same.
    if (N(x.node)->op == "Reshape" && Fresh(x.node)) {
      SetInput(id, 0, N(x.node)->inputs[0]);
      return true;
    }
    return false;
  }

  Graph& g_;
  const PassContext& context_;
  const AnalyzedGraph& a_;
  std::vector<bool> dirty_;
  std::vector<int> uses_;
  std::vector<int> seeds_;
};

}  // namespace

StatusOr<bool> SimplifyArithmetic(Graph& graph, const PassContext& context) {
  bool changed = false;
  for (int sweep = 0; sweep < 4; ++sweep) {
    GJ_ASSIGN_OR_RETURN(AnalyzedGraph analysis, AnalyzeGraph(graph.Clone()));
    GJ_ASSIGN_OR_RETURN(bool more, Simplifier(graph, context, analysis).Sweep());
    if (!more) break;
    changed = true;
  }
  return changed;
}

}  // namespace graphjit
