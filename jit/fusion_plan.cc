#include "jit/fusion_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/attr.h"
#include "jit/elemental.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"

namespace graphjit {

bool IsLibraryOp(const std::string& op) {
  const OpTraits& t = TraitsOf(op);
  return (t.pattern == OpPattern::kGemm || t.pattern == OpPattern::kConv) && t.compiled();
}

bool IsArgReduction(const std::string& op) {
  const OpReducer r = TraitsOf(op).reducer;
  return r == OpReducer::kArgMax || r == OpReducer::kArgMin;
}

namespace {

bool IsReduction(const std::string& op) { return TraitsOf(op).pattern == OpPattern::kReduction; }

// Identity and StopGradient: the operand as it is (elemental, computed inline).
bool IsPassThrough(const Node& n) { return n.op == "Identity" || n.op == "StopGradient"; }
// Reshape, ExpandDims, Squeeze: a view of the input, or a size-1 reshape (computed inline).
// (Identity and StopGradient, views too, are elemental: the operand as it is.)
bool IsReshape(const Node& n) { return TraitsOf(n.op).pattern == OpPattern::kView && !IsElementalOp(n.op); }

std::vector<int64_t> NonUnitDims(const Shape& s) {
  std::vector<int64_t> dims;
  for (int64_t d : s.dims())
    if (d != 1) dims.push_back(d);
  return dims;
}

// Whether reading through `dims` (see ReadDims) keeps an element in its row, whatever the
// row fusion's split: each dim reads its own position, except size-1 dims, and broadcast
// dims that only trailing broadcast dims follow (the reduced dims of [rows, 1] in softmax).
bool KeepsRows(const std::vector<int>& dims, const Shape& in, const Shape& out) {
  bool broadcast = false;
  for (int d = 0; d < in.rank(); ++d) {
    const bool unit = in.dim(d) == 1;
    if (unit && (dims[d] < 0 || out.dim(dims[d]) == 1)) continue;
    if (unit) {
      broadcast = true;
      continue;
    }
    if (broadcast || dims[d] != d) return false;
  }
  return true;
}

// A value the kernel that reads it computes element by element (unless it is stored).
bool ComputedInline(NodeKind kind) {
  return kind == NodeKind::kElementwise || kind == NodeKind::kSizeOneReshape || kind == NodeKind::kTranspose ||
         kind == NodeKind::kConcat || kind == NodeKind::kIndexed;
}

class Planner {
 public:
  Planner(const AnalyzedGraph& body, bool fuse) : g_(body), fuse_(fuse), kind_(body.graph.num_nodes(), NodeKind::kConstant) {}

  StatusOr<FusionPlan> Run(const std::vector<TensorId>& args, const std::vector<TensorId>& outputs) {
    // 1. The nodes the outputs compute, and how each is emitted.
    std::vector<bool> live(g_.graph.num_nodes(), false);
    std::vector<int> work;
    for (const TensorId& t : outputs) work.push_back(t.node);
    while (!work.empty()) {
      const int id = work.back();
      work.pop_back();
      if (live[id]) continue;
      live[id] = true;
      const Node& n = *g_.graph.node(id);
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (IsDataInput(n, static_cast<int>(i))) work.push_back(n.inputs[i].node);
    }
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].node >= 0)
        AddBuffer({FusionPlan::Buffer::Kind::kArgument, args[i], StaticShape(g_, args[i]), StaticDType(g_, args[i]),
                   static_cast<int>(i)});
    // 2. In dataflow order: reductions start or join fusions; views view buffers.
    for (int id : g_.topo_order) {
      if (!live[id]) continue;
      const Node& n = *g_.graph.node(id);
      for (const Shape& s : g_.info(id).shapes)
        if (!s.IsFullyDefined())
          return Unimplemented("the shape of " + NodeLabel(n) + " (" + s.ToString() + ") is not known from the inputs' shapes");
      GJ_ASSIGN_OR_RETURN(kind_[id], ClassifyNode(g_, id));
      if (kind_[id] == NodeKind::kArgument && !p_.buffer_of.count({id, 0}))
        return Internal("the body placeholder " + n.name + " is not an input");
      if (kind_[id] == NodeKind::kView) {
        GJ_RETURN_IF_ERROR(MakeRoot(n.inputs[0]));
        AddBuffer({FusionPlan::Buffer::Kind::kView,
                   {id, 0},
                   StaticShape(g_, {id, 0}),
                   StaticDType(g_, {id, 0}),
                   p_.buffer_of.at(n.inputs[0])});
      }
      if (kind_[id] == NodeKind::kReduction) GJ_RETURN_IF_ERROR(AddReduction(id));
      // Unfused: every value computed is stored by a kernel of its own.
      if (!fuse_ && ComputedInline(kind_[id]))
        for (int i = 0; i < static_cast<int>(g_.info(id).dtypes.size()); ++i) GJ_RETURN_IF_ERROR(MakeRoot({id, i}));
      if (kind_[id] == NodeKind::kLibrary) {
        for (const TensorId& in : n.inputs) GJ_RETURN_IF_ERROR(MakeRoot(in));
        const int f = NewFusion(FusionPlan::Kind::kLibrary, StaticShape(g_, {id, 0}));
        p_.fusions[f].library_node = id;
        AddRoot(f, {id, 0});
      }
    }
    // 3. The outputs are stored (or are inputs, constants or views of them). An output that
    // passes on a value with a buffer of its own (tf.identity of a reduction or a GEMM)
    // views that buffer rather than being copied by a kernel.
    for (const TensorId& t : outputs) {
      if (const Node& n = *g_.graph.node(t.node); fuse_ && !p_.buffer_of.count(t) && IsPassThrough(n)) {
        const TensorId in = n.inputs[0];
        const NodeKind from = kind_[in.node];
        if (p_.buffer_of.count(in) || from == NodeKind::kReduction || from == NodeKind::kLibrary) {
          GJ_RETURN_IF_ERROR(MakeRoot(in));
          AddBuffer({FusionPlan::Buffer::Kind::kView, t, StaticShape(g_, t), StaticDType(g_, t), p_.buffer_of.at(in)});
        }
      }
      GJ_RETURN_IF_ERROR(MakeRoot(t));
      p_.outputs.push_back(p_.buffer_of.at(t));
    }
    return std::move(p_);
  }

 private:
  // What an element of a value reads, through the values computed inline: fusions whose
  // buffers it loads, and reductions (read at the same row, or through a transpose/concat).
  struct Reach {
    std::set<int> fusions, heroes, remapped_heroes;
  };

  int AddBuffer(FusionPlan::Buffer b) {
    const int id = static_cast<int>(p_.buffers.size());
    p_.buffer_of[b.value] = id;
    p_.buffers.push_back(std::move(b));
    return id;
  }

  int Base(int buffer) const {
    while (p_.buffers[buffer].kind == FusionPlan::Buffer::Kind::kView) buffer = p_.buffers[buffer].source;
    return buffer;
  }

  void ConstantBuffer(int node) {
    if (p_.buffer_of.count({node, 0})) return;
    const Tensor& value = g_.constants[node];
    AddBuffer(
        {FusionPlan::Buffer::Kind::kConstant, {node, 0}, value.shape(), value.dtype(), static_cast<int>(p_.constants.size())});
    p_.constants.push_back(value);
  }

  void Visit(TensorId v, bool remapped, Reach* r, std::set<std::pair<TensorId, bool>>* seen) {
    if (!seen->insert({v, remapped}).second) return;
    const NodeKind kind = kind_[v.node];
    // A reduction is read from its fusion whether or not it is also stored (an output):
    // its own fusion reads it at the row.
    if (kind == NodeKind::kReduction) {
      (remapped ? r->remapped_heroes : r->heroes).insert(v.node);
      return;
    }
    auto it = p_.buffer_of.find(v);
    if (it != p_.buffer_of.end()) {
      const FusionPlan::Buffer& b = p_.buffers[Base(it->second)];
      if (b.kind == FusionPlan::Buffer::Kind::kTemp) r->fusions.insert(b.fusion);
      return;
    }
    if (kind == NodeKind::kConstant) {
      if (g_.constants[v.node].num_elements() != 1) ConstantBuffer(v.node);
      return;
    }
    const Node& n = *g_.graph.node(v.node);
    const bool remaps = remapped || kind == NodeKind::kTranspose || kind == NodeKind::kConcat || kind == NodeKind::kIndexed;
    const bool reads_by_dims = kind == NodeKind::kElementwise || kind == NodeKind::kSizeOneReshape;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!IsDataInput(n, static_cast<int>(i))) continue;
      const Shape& in = StaticShape(g_, n.inputs[i]);
      const Shape& out = StaticShape(g_, v);
      Visit(n.inputs[i], remaps || (reads_by_dims && !KeepsRows(ReadDims(n, static_cast<int>(i), in, out), in, out)), r, seen);
    }
  }

  Reach ReachOf(TensorId v) {
    Reach r;
    std::set<std::pair<TensorId, bool>> seen;
    Visit(v, false, &r, &seen);
    return r;
  }

  // Whether fusion `f` can compute a value with this reach: what it loads comes from
  // earlier fusions, and its own reductions are read at the current row only.
  bool CanJoin(int f, const Reach& r) const {
    for (int other : r.fusions)
      if (other >= f) return false;
    for (int h : r.heroes)
      if (p_.fusion_of.at(h) > f) return false;
    for (int h : r.remapped_heroes)
      if (p_.fusion_of.at(h) >= f) return false;
    return true;
  }

  // Whether `f` is earlier than anything the value reads (so no earlier fusion can take it).
  bool Reads(int f, const Reach& r) const {
    if (r.fusions.count(f)) return true;
    for (const auto* heroes : {&r.heroes, &r.remapped_heroes})
      for (int h : *heroes)
        if (p_.fusion_of.at(h) == f) return true;
    return false;
  }

  // Joins a value with this reach to `f`: the reductions of other fusions it reads are stored.
  void Join(int f, const Reach& r) {
    for (const auto* heroes : {&r.heroes, &r.remapped_heroes})
      for (int h : *heroes)
        if (p_.fusion_of.at(h) != f) AddRoot(p_.fusion_of.at(h), {h, 0});
  }

  void AddRoot(int f, TensorId v) {
    if (p_.buffer_of.count(v)) return;
    FusionPlan::Buffer b{FusionPlan::Buffer::Kind::kTemp, v, StaticShape(g_, v), StaticDType(g_, v)};
    b.fusion = f;
    AddBuffer(std::move(b));
    p_.fusions[f].roots.push_back(v);
  }

  int NewFusion(FusionPlan::Kind kind, const Shape& space, int split = 0) {
    FusionPlan::Fusion fusion;
    fusion.kind = kind;
    fusion.space = space;
    fusion.split = split;
    p_.fusions.push_back(std::move(fusion));
    return static_cast<int>(p_.fusions.size()) - 1;
  }

  // A row fusion's per-row shape: its row dims, with or without the reduced dims as 1.
  static bool IsRowShape(const Shape& s, const FusionPlan::Fusion& f) {
    const int k = f.split;
    if (s.rank() != k && s.rank() != f.space.rank()) return false;
    for (int i = 0; i < s.rank(); ++i)
      if (s.dim(i) != (i < k ? f.space.dim(i) : 1)) return false;
    return true;
  }

  Status AddReduction(int id) {
    const Node& n = *g_.graph.node(id);
    GJ_ASSIGN_OR_RETURN(ReductionAxes a, GetReductionAxes(g_, id));
    const Shape& x = StaticShape(g_, n.inputs[0]);
    const bool trailing =
        !a.axes.empty() && a.axes.back() == x.rank() - 1 && static_cast<int>(a.axes.size()) == x.rank() - a.axes.front();
    if (!trailing && fuse_) GJ_RETURN_IF_ERROR(StoreBroadcastOperands(n.inputs[0], x));
    const Reach r = ReachOf(n.inputs[0]);
    if (!trailing) {
      const int f = NewFusion(FusionPlan::Kind::kReduce, x);
      p_.fusions[f].reductions = {id};
      p_.fusion_of[id] = f;
      Join(f, r);
      AddRoot(f, {id, 0});
      return Status::Ok();
    }
    const int split = a.axes.front();
    for (int f = static_cast<int>(p_.fusions.size()) - 1; fuse_ && f >= 0; --f) {
      const FusionPlan::Fusion& fusion = p_.fusions[f];
      if (fusion.kind == FusionPlan::Kind::kRow && fusion.space == x && fusion.split == split && CanJoin(f, r)) {
        p_.fusion_of[id] = f;
        p_.fusions[f].reductions.push_back(id);
        Join(f, r);
        return Status::Ok();
      }
      if (Reads(f, r)) break;
    }
    const int f = NewFusion(FusionPlan::Kind::kRow, x, split);
    p_.fusions[f].reductions = {id};
    p_.fusion_of[id] = f;
    Join(f, r);
    if (!fuse_) AddRoot(f, {id, 0});
    return Status::Ok();
  }

  // Whether `v`, computed inline, has a transcendental or a division in it.
  bool Expensive(TensorId v) const {
    if (!ComputedInline(kind_[v.node]) || p_.buffer_of.count(v)) return false;
    const Node& n = *g_.graph.node(v.node);
    if (TraitsOf(n.op).expensive) return true;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (IsDataInput(n, static_cast<int>(i)) && Expensive(n.inputs[i])) return true;
    return false;
  }

  // In a reduce fusion over `space`, a value broadcast into it (a GEMM's operand, as
  // ExpandSmallGemms writes it) is stored first where it is expensive (computed inline, it
  // would be computed in an outer loop, one element at a time), or where it is a transpose
  // of its last dim (K^T of attention's Q K^T: read inline, the innermost loop would
  // gather with a stride; stored, it is read contiguously).
  Status StoreBroadcastOperands(TensorId v, const Shape& space) {
    const NodeKind kind = kind_[v.node];
    if (kind != NodeKind::kElementwise && kind != NodeKind::kSizeOneReshape && kind != NodeKind::kTranspose) return Status::Ok();
    if (p_.buffer_of.count(v)) return Status::Ok();
    const Node& n = *g_.graph.node(v.node);
    const bool broadcast = StaticShape(g_, v).num_elements() < space.num_elements();
    if (broadcast && kind == NodeKind::kTranspose) {
      const Tensor& perm = g_.constants[n.inputs[1].node];
      const int64_t rank = perm.num_elements();
      if (rank > 0 && perm.ValueAsInt(rank - 1) != rank - 1) return MakeRoot(v);
    }
    if (broadcast && Expensive(v)) {
      // Below its reshapes and transposes: the value itself (an elementwise op, or the
      // glue of an indexed read, whose data need not be its input 0).
      while (kind_[v.node] == NodeKind::kSizeOneReshape || kind_[v.node] == NodeKind::kTranspose)
        v = g_.graph.node(v.node)->inputs[0];
      return MakeRoot(v);
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (IsDataInput(n, static_cast<int>(i))) GJ_RETURN_IF_ERROR(StoreBroadcastOperands(n.inputs[i], space));
    return Status::Ok();
  }

  // Gives `v` a buffer: a fusion stores it (the latest one that can), unless it is an
  // input, a constant or a view.
  Status MakeRoot(TensorId v) {
    if (p_.buffer_of.count(v)) return Status::Ok();
    switch (kind_[v.node]) {
      case NodeKind::kConstant: ConstantBuffer(v.node); return Status::Ok();
      case NodeKind::kReduction: AddRoot(p_.fusion_of.at(v.node), v); return Status::Ok();
      case NodeKind::kArgument:
      case NodeKind::kLibrary:
      case NodeKind::kView: return Internal("no buffer for " + g_.graph.TensorName(v));
      default: break;
    }
    const Reach r = ReachOf(v);
    const Shape& s = StaticShape(g_, v);
    for (int f = static_cast<int>(p_.fusions.size()) - 1; fuse_ && f >= 0; --f) {
      const FusionPlan::Fusion& fusion = p_.fusions[f];
      const bool fits = (fusion.kind == FusionPlan::Kind::kLoop && fusion.space == s) ||
                        (fusion.kind == FusionPlan::Kind::kRow && (fusion.space == s || IsRowShape(s, fusion)));
      if (fits && CanJoin(f, r)) {
        Join(f, r);
        AddRoot(f, v);
        return Status::Ok();
      }
      if (Reads(f, r)) break;
    }
    const int f = NewFusion(FusionPlan::Kind::kLoop, s);
    Join(f, r);
    AddRoot(f, v);
    return Status::Ok();
  }

  const AnalyzedGraph& g_;
  const bool fuse_;
  FusionPlan p_;
  std::vector<NodeKind> kind_;
};

}  // namespace

bool IsDataInput(const Node& node, int i) {
  const OpDef* def = OpRegistry::Global()->Find(node.op);
  return !def || !def->IsValueInput(i, static_cast<int>(node.inputs.size()));
}

std::string WhyNotCompilable(const Node& n, const std::vector<DType>& input_types, const std::vector<DType>& output_types) {
  const OpTraits& traits = TraitsOf(n.op);
  if (traits.pattern == OpPattern::kSource) return "";
  if (!traits.compiled()) return "the JIT does not compile " + n.op;
  for (DType t : output_types)
    if (!ElementType(t)) return "computes " + DTypeName(t);
  std::vector<emitter::Type> types;
  for (size_t i = 0; i < input_types.size(); ++i) {
    if (!IsDataInput(n, static_cast<int>(i))) continue;
    types.push_back(ElementType(input_types[i]));
    if (!types.back()) return "reads " + DTypeName(input_types[i]);
  }
  if (IsElementalOp(n.op)) return WhyNotElemental(n.op, types);
  // Views, transposes and concatenations, reductions, GEMMs (library calls or loops), and
  // the row ops, which specialization writes as the reductions they are.
  return "";
}

std::vector<int> ReadDims(const Node& n, int i, const Shape& in, const Shape& out) {
  std::vector<int> dims(in.rank(), -1);
  if (IsReshape(n)) {
    // A size-1 reshape: the non-unit dims, in order.
    int next = 0;
    for (int d = 0; d < in.rank(); ++d) {
      if (in.dim(d) == 1) continue;
      while (out.dim(next) == 1) ++next;
      dims[d] = next++;
    }
    return dims;
  }
  // Select (not SelectV2) with a vector condition and matrices or more: the condition picks
  // whole rows, as in TensorFlow, rather than broadcasting.
  if (n.op == "Select" && i == 0 && in.rank() == 1 && out.rank() > 1) {
    dims[0] = 0;
    return dims;
  }
  // BiasAdd in NCHW: the bias runs along dim 1.
  if (n.op == "BiasAdd" && i == 1 && GetStringAttrOr(n, "data_format", "NHWC").value_or("") == "NCHW") {
    dims[0] = 1;
    return dims;
  }
  for (int d = 0; d < in.rank(); ++d) dims[d] = out.rank() - in.rank() + d;
  return dims;
}

StatusOr<NodeKind> ClassifyNode(const AnalyzedGraph& body, int id) {
  const Node& n = *body.graph.node(id);
  if (IsConstant(n)) return NodeKind::kConstant;
  if (IsPlaceholder(n)) return NodeKind::kArgument;
  std::vector<DType> input_types;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!IsDataInput(n, static_cast<int>(i)) && !IsConstant(*body.graph.node(n.inputs[i].node)))
      return Unimplemented(NodeLabel(n) + ": input " + std::to_string(i) + " is not a constant");
    input_types.push_back(StaticDType(body, n.inputs[i]));
  }
  if (std::string why = WhyNotCompilable(n, input_types, body.info(id).dtypes); !why.empty())
    return Unimplemented(NodeLabel(n) + ": " + why);
  if (IsElementalOp(n.op)) return NodeKind::kElementwise;
  if (IsReshape(n))
    return NonUnitDims(StaticShape(body, n.inputs[0])) == NonUnitDims(StaticShape(body, {id, 0})) ? NodeKind::kSizeOneReshape
                                                                                                  : NodeKind::kView;
  // The data movement with kinds of its own (every fusion computes them), then the rest
  // (Slice, Pad, Tile, Pack, Split, OneHot, ...) and Fill, which are element generators.
  static const std::map<std::string, NodeKind, std::less<>> kOwnKinds = {
      {"Transpose", NodeKind::kTranspose},
      {"ConcatV2", NodeKind::kConcat},
  };
  if (auto own = kOwnKinds.find(n.op); own != kOwnKinds.end()) return own->second;
  const OpPattern pattern = TraitsOf(n.op).pattern;
  if (pattern == OpPattern::kDataMovement || pattern == OpPattern::kBroadcast) return NodeKind::kIndexed;
  if (IsReduction(n.op)) {
    // Over no axis (an empty axes list, as tf.reduce_sum(x, axis=[]) writes it): x itself.
    // (ArgMax and ArgMin take one axis, a scalar.)
    const Tensor& axes = body.constants[n.inputs[1].node];
    return axes.num_elements() == 0 ? NodeKind::kSizeOneReshape : NodeKind::kReduction;
  }
  if (IsLibraryOp(n.op)) return NodeKind::kLibrary;
  // Pools and batch norms are written out as the ops they are made of before planning.
  return Unimplemented(NodeLabel(n) + ": " + n.op + " is not written out for this target");
}

StatusOr<ReductionAxes> GetReductionAxes(const AnalyzedGraph& body, int id) {
  const Node& n = *body.graph.node(id);
  const int rank = StaticShape(body, n.inputs[0]).rank();
  const Tensor& axes = body.constants[n.inputs[1].node];
  ReductionAxes r;
  for (int64_t i = 0; i < axes.num_elements(); ++i) {
    int64_t a = axes.ValueAsInt(i);
    if (a < -rank || a >= rank) return InvalidArgument(NodeLabel(n) + ": axis " + std::to_string(a) + " out of range");
    r.axes.push_back(static_cast<int>(a < 0 ? a + rank : a));
  }
  std::sort(r.axes.begin(), r.axes.end());
  r.axes.erase(std::unique(r.axes.begin(), r.axes.end()), r.axes.end());
  GJ_ASSIGN_OR_RETURN(r.keep_dims, GetBoolAttrOr(n, "keep_dims", false));
  if (r.axes.empty()) return Unimplemented(NodeLabel(n) + " reduces no axis");
  return r;
}

std::string FusionPlan::ToString(const Graph& graph) const {
  std::string s;
  for (size_t f = 0; f < fusions.size(); ++f) {
    const Fusion& fusion = fusions[f];
    static const char* kKinds[] = {"loop", "row", "reduce", "library"};
    s += "fusion_" + std::to_string(f) + ": " + kKinds[static_cast<int>(fusion.kind)] + " over " + fusion.space.ToString();
    if (fusion.kind == Kind::kRow) s += ", rows " + std::to_string(fusion.split) + " dims";
    if (fusion.kind == Kind::kLibrary) s += ", " + graph.node(fusion.library_node)->op;
    if (!fusion.reductions.empty()) {
      s += "; reduces";
      for (int r : fusion.reductions) s += " " + graph.node(r)->name + " (" + graph.node(r)->op + ")";
    }
    s += "; stores";
    for (const TensorId& t : fusion.roots) s += " " + graph.TensorName(t);
    s += "\n";
  }
  for (const Buffer& b : buffers)
    if (b.kind == Buffer::Kind::kView)
      s += "view: " + graph.TensorName(b.value) + " " + b.shape.ToString() + " of " + graph.TensorName(buffers[b.source].value) +
           "\n";
  return s;
}

StatusOr<FusionPlan> PlanFusions(const AnalyzedGraph& body, const std::vector<TensorId>& args,
                                 const std::vector<TensorId>& outputs, bool fuse) {
  return Planner(body, fuse).Run(args, outputs);
}

}  // namespace graphjit
