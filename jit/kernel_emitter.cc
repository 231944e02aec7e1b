#include "jit/kernel_emitter.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ir/attr.h"
#include "jit/elemental.h"
#include "jit/loop_emitter.h"
#include "jit/passes/mark_row_shifts.h"
#include "jit/reduce_emitter.h"
#include "jit/row_emitter.h"
#include "runtime/kernels/common.h"
#include "runtime/kernels/indexing.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

Type StorageType(DType dtype) {
  switch (dtype) {
    case DType::kFloat: return Type::F32();
    case DType::kHalf: return Type::F16();
    case DType::kBFloat16: return Type::BF16();
    case DType::kBool: return Type::I8();
    case DType::kInt32: return Type::I32();
    case DType::kInt64: return Type::I64();
    default: return Type();
  }
}

Type MemRefType(const Shape& shape, DType dtype) {
  std::vector<int64_t> dims;
  for (int64_t d : shape.dims()) dims.push_back(d ? d : 1);
  return Type::MemRef(dims, StorageType(dtype));
}

std::string Names(const Index& index) {
  std::string s;
  for (const Value& v : index) s += (s.empty() ? "" : ", ") + v.name;
  return s;
}

Reducer ReducerOf(const std::string& op, Type t) {
  const bool f = t == Type::F32();
  switch (TraitsOf(op).reducer) {
    case OpReducer::kMax: return {f ? Op::kMaximumF : Op::kMaxSI, Reducer::kLowest};
    case OpReducer::kMin: return {f ? Op::kMinimumF : Op::kMinSI, Reducer::kHighest};
    case OpReducer::kProd: return {f ? Op::kMulF : Op::kMulI, Reducer::kOne};
    default: return {f ? Op::kAddF : Op::kAddI, Reducer::kZero};  // Sum, Mean
  }
}

std::string KernelEmitter::EmitterName(const FusionPlan::Fusion& fusion, int f) {
  const char* kind = fusion.kind == FusionPlan::Kind::kLoop     ? "loop"
                     : fusion.kind == FusionPlan::Kind::kRow    ? "row"
                     : fusion.kind == FusionPlan::Kind::kReduce ? "reduction"
                                                                : "library call";
  return std::string("the ") + kind + " emitter (fusion_" + std::to_string(f) + ")";
}

StatusOr<std::unique_ptr<KernelEmitter>> KernelEmitter::For(const AnalyzedGraph& g, const FusionPlan& p, int f,
                                                            const TargetDescription& target) {
  switch (p.fusions[f].kind) {
    case FusionPlan::Kind::kLoop: return std::unique_ptr<KernelEmitter>(new LoopEmitter(g, p, f, target));
    case FusionPlan::Kind::kRow: return std::unique_ptr<KernelEmitter>(new RowEmitter(g, p, f, target));
    case FusionPlan::Kind::kReduce: return std::unique_ptr<KernelEmitter>(new ReduceEmitter(g, p, f, target));
    case FusionPlan::Kind::kLibrary: break;
  }
  return Internal("a library call has no kernel to emit");
}

StatusOr<std::string> KernelEmitter::Emit(EmittedModule* module, std::string* canonical) {
  std::string functions;
  if (schedule_ == Schedule::kCpu) {
    StartFunction();  // the GPU schedules start each of their kernels themselves
    EmittedKernel kernel;
    GJ_ASSIGN_OR_RETURN(functions, EmitCpu(&kernel, canonical));
    module->kernels.push_back(std::move(kernel));
  } else {
    GJ_ASSIGN_OR_RETURN(functions, EmitGpu(module));
  }
  GJ_RETURN_IF_ERROR(b_.status());
  module->num_ops += num_ops_;
  return functions;
}

void KernelEmitter::StartFunction() {
  b_.StartFunction();
  memo_.clear();
  params_.clear();
  scratch_params_.clear();
}

// `count` elements are reduced: a float sum of one or more starts at -0, so that a sum of
// -0s is -0, as in IEEE arithmetic and the reference kernels (an empty sum is +0).
Value KernelEmitter::IdentityOf(const Reducer& reducer, Type type, int64_t count) {
  const bool f = type == Type::F32(), i32 = type == Type::I32();
  switch (reducer.init) {
    case Reducer::kZero: return f ? FloatConst(count > 0 ? -0.0f : 0.0f) : IntConst(0, type);
    case Reducer::kOne: return f ? FloatConst(1) : IntConst(1, type);
    case Reducer::kLowest: return f ? FloatConst(-INFINITY) : IntConst(i32 ? INT32_MIN : INT64_MIN, type);
    case Reducer::kHighest: return f ? FloatConst(INFINITY) : IntConst(i32 ? INT32_MAX : INT64_MAX, type);
  }
  return FloatConst(0);
}

Block KernelEmitter::CloseScope() {
  Block body = b_.CloseScope();
  for (auto it = memo_.begin(); it != memo_.end();) it = it->second.scope > Innermost() ? memo_.erase(it) : std::next(it);
  return body;
}

Status KernelEmitter::Loop(const Value& lower, int64_t upper, int64_t step, const std::function<Status(const Value&)>& body) {
  return Loop(lower, IndexConst(upper), step, body);
}

Status KernelEmitter::Loop(const Value& lower, const Value& upper, int64_t step,
                           const std::function<Status(const Value&)>& body) {
  const Value step_value = IndexConst(step);
  OpenScope();
  const Value iv = b_.InductionVar();
  Status s = body(iv);
  Block inner = CloseScope();
  GJ_RETURN_IF_ERROR(s);
  b_.For(iv, lower, upper, step_value, {}, {}, std::move(inner), {});
  return Status::Ok();
}

StatusOr<std::vector<Value>> KernelEmitter::LoopCarrying(const Value& lower, int64_t upper, int64_t step,
                                                         const std::vector<Value>& accs, const CarriedBody& body) {
  return LoopCarrying(lower, IndexConst(upper), step, accs, body);
}

StatusOr<std::vector<Value>> KernelEmitter::LoopCarrying(const Value& lower, const Value& upper, int64_t step,
                                                         const std::vector<Value>& accs, const CarriedBody& body) {
  const Value step_value = IndexConst(step);
  OpenScope();
  const Value iv = b_.InductionVar();
  std::vector<Value> args;
  for (const Value& acc : accs) args.push_back(b_.CarriedArg(acc.type));
  auto next = body(iv, args);
  Block inner = CloseScope();
  if (!next.ok()) return next.status();
  return b_.For(iv, lower, upper, step_value, args, accs, std::move(inner), *next);
}

StatusOr<std::vector<Value>> KernelEmitter::LoopFolding(const Value& lower, int64_t upper, int64_t step, int64_t unroll,
                                                        const std::vector<Value>& accs, const Elements& elements,
                                                        const FoldValues& fold) {
  const int64_t group_upper = upper - (unroll - 1) * step;  // a group starting below it is whole
  if (unroll <= 1 || group_upper <= 0) return FoldGroups(lower, IndexConst(upper), std::nullopt, step, 1, accs, elements, fold);
  return FoldGroups(lower, IndexConst(upper), IndexConst(group_upper), step, unroll, accs, elements, fold);
}

StatusOr<std::vector<Value>> KernelEmitter::LoopFolding(const Value& lower, const Value& upper, int64_t step, int64_t unroll,
                                                        const std::vector<Value>& accs, const Elements& elements,
                                                        const FoldValues& fold) {
  if (unroll <= 1) return FoldGroups(lower, upper, std::nullopt, step, 1, accs, elements, fold);
  // Signed, as scf.for compares: below the lower bound where the range holds no whole group.
  const Value group_upper = b_.Apply(Op::kSubI, {upper, IndexConst((unroll - 1) * step)});
  return FoldGroups(lower, upper, group_upper, step, unroll, accs, elements, fold);
}

StatusOr<std::vector<Value>> KernelEmitter::FoldGroups(const Value& lower, const Value& upper,
                                                       const std::optional<Value>& group_upper, int64_t step, int64_t unroll,
                                                       const std::vector<Value>& accs, const Elements& elements,
                                                       const FoldValues& fold) {
  auto one = [&](const Value& iv, const std::vector<Value>& args) -> StatusOr<std::vector<Value>> {
    GJ_ASSIGN_OR_RETURN(std::vector<Value> values, elements(iv));
    return fold(args, values);
  };
  if (!group_upper) return LoopCarrying(lower, upper, step, accs, one);
  // The groups, carrying the accumulators and the index after the group.
  const Value group_step = IndexConst(unroll * step);
  OpenScope();
  const Value iv = b_.InductionVar();
  std::vector<Value> args, carried = accs;
  for (const Value& acc : accs) args.push_back(b_.CarriedArg(acc.type));
  args.push_back(b_.CarriedArg(Type::Index()));  // the index after the group
  carried.push_back(lower);
  std::vector<std::vector<Value>> values;
  Status computed = Status::Ok();
  for (int64_t k = 0; k < unroll && computed.ok(); ++k) {
    const Value at_k = k == 0 ? iv : b_.Apply(Op::kAddI, {iv, IndexConst(k * step)});
    auto v = elements(at_k);
    if (v.ok()) values.push_back(*v);
    computed = v.status();
  }
  std::vector<Value> next(args.begin(), args.end() - 1);
  for (const std::vector<Value>& v : values) next = fold(next, v);
  next.push_back(b_.Apply(Op::kAddI, {iv, group_step}));
  Block inner = CloseScope();
  GJ_RETURN_IF_ERROR(computed);
  std::vector<Value> out = b_.For(iv, lower, *group_upper, group_step, args, carried, std::move(inner), next);
  // The rest, one step at a time.
  const Value rest = out.back();
  out.pop_back();
  return LoopCarrying(rest, upper, step, out, one);
}

// A loop nest over dims[k..], appending its induction variables to `index`.
Status KernelEmitter::Nest(const std::vector<int64_t>& dims, size_t k, Index& index,
                           const std::function<Status(const Index&)>& body) {
  if (k == dims.size()) return body(index);
  if (dims[k] == 1) {  // no loop: a size-1 dim is always indexed by 0
    index.push_back(IndexConst(0));
    Status s = Nest(dims, k + 1, index, body);
    index.pop_back();
    return s;
  }
  return Loop(IndexConst(0), dims[k], 1, [&](const Value& iv) {
    index.push_back(iv);
    Status s = Nest(dims, k + 1, index, body);
    index.pop_back();
    return s;
  });
}

StatusOr<std::vector<Value>> KernelEmitter::Fold(const std::vector<int64_t>& dims, size_t k, Index& index,
                                                 const std::vector<Value>& accs, const Step& step,
                                                 const std::function<StatusOr<Value>(const Index&)>& element) {
  if (k == dims.size()) {
    GJ_ASSIGN_OR_RETURN(Value v, element(index));
    return step(accs, v);
  }
  if (dims[k] == 1) {
    index.push_back(IndexConst(0));
    auto folded = Fold(dims, k + 1, index, accs, step, element);
    index.pop_back();
    return folded;
  }
  return LoopCarrying(IndexConst(0), dims[k], 1, accs, [&](const Value& iv, const std::vector<Value>& args) {
    index.push_back(iv);
    auto folded = Fold(dims, k + 1, index, args, step, element);
    index.pop_back();
    return folded;
  });
}

// --- Buffers.
// Named by their place among the function's buffers (%b0 is the first it reads or writes),
// so that kernels of the same code over other buffers print the same.
Value KernelEmitter::Param(int buffer) {
  auto it = std::find(params_.begin(), params_.end(), buffer);
  if (it == params_.end()) it = params_.insert(it, buffer);
  return b_.Parameter("%b" + std::to_string(it - params_.begin()), BufferType(buffer));
}

Type KernelEmitter::BufferType(int buffer) const {
  const FusionPlan::Buffer& b = p_.buffers[buffer];
  if (schedule_ == Schedule::kCpu) return MemRefType(b.shape, b.dtype);
  return Type::MemRef({std::max<int64_t>(b.shape.num_elements(), 1)}, StorageType(b.dtype));
}

Index KernelEmitter::Subscript(int buffer, const Index& index) {
  if (schedule_ == Schedule::kCpu) return index;
  const FusionPlan::Buffer& b = p_.buffers[buffer];
  if (auto it = linear_.find(Names(index)); it != linear_.end() && b.shape == fusion_.space) return {it->second};
  // Row-major: ((i0 * d1 + i1) * d2 + i2) ..., leaving out zeros and ones.
  std::optional<Value> linear;
  for (size_t k = 0; k < index.size(); ++k) {
    const int64_t dim = b.shape.dim(static_cast<int>(k));
    const bool zero = index[k].name == IndexConst(0).name;
    if (linear && dim != 1) linear = b_.Apply(Op::kMulI, {*linear, IndexConst(dim)});
    if (zero) continue;
    linear = !linear ? index[k] : b_.Apply(Op::kAddI, {*linear, index[k]});
  }
  return {linear ? *linear : IndexConst(0)};
}

// An element of a buffer, widened to the type it is computed in.
Value KernelEmitter::Load(int buffer, const Index& index, int level) {
  const DType dtype = p_.buffers[buffer].dtype;
  Value v;
  if (auto staged = FromStage(buffer, index, level)) {
    v = *staged;
  } else {
    const Index subscript = Subscript(buffer, index);
    v = b_.Load(Param(buffer), subscript, std::max(level >= 0 ? level : LevelOf(index), LevelOf(subscript)));
    ToStage(buffer, index, v);
  }
  if (dtype == DType::kHalf || dtype == DType::kBFloat16) return b_.Convert(Cast::kExtF, v, Type::F32());
  if (dtype == DType::kBool) return b_.Convert(Cast::kTruncI, v, Type::I1());
  return v;
}

void KernelEmitter::Store(int buffer, const Index& index, const Value& v) {
  const DType dtype = p_.buffers[buffer].dtype;
  Value stored = v;
  if (dtype == DType::kHalf || dtype == DType::kBFloat16) stored = b_.Convert(Cast::kTruncF, v, StorageType(dtype));
  if (dtype == DType::kBool) stored = b_.Convert(Cast::kExtUI, v, Type::I8());
  b_.Store(stored, Param(buffer), Subscript(buffer, index));
}

Status KernelEmitter::StoreRoots(const std::vector<TensorId>& roots, const Index& index) {
  for (const TensorId& root : roots) {
    GJ_ASSIGN_OR_RETURN(Value v, Get(root, index));
    Store(p_.buffer_of.at(root), index, v);
  }
  return Status::Ok();
}

// Folds the elements `element` gives over `dims` (their indices appended to `index`) with
// n's reducer in the computed type `type`, and divides a Mean by `count`. Integers are
// exact in any order. Floats may reassociate if `reassoc`. Max and Min combine with nnan
// and nsz, which makes them one vmaxps/vminps instead of six instructions that order NaN
// and signed zeros (and keeps LLVM from making a half-vector maximum of values loaded from
// f16, which lost NaNs). Two integer folds beside the value, over the elements' bits, give
// IEEE maximum/minimum all the same: the largest magnitude's bits (above Inf's: a NaN was
// seen, the result is NaN), and the smallest bits of +0 for Max (x ^ sign for Min, to find
// -0): a zero result is +0 for Max if any +0 was seen (-0 for Min if any -0 was), as in
// the reference kernels. (Integer folds vectorize without the packing of i1 flags.) A
// softmax's row shift (kRowShiftAttr) needs neither fold.
KernelEmitter::Folding KernelEmitter::FoldingOf(const Node& n, Type type, int64_t count, bool reassoc) {
  Folding f;
  const Reducer reducer = ReducerOf(n.op, type);
  const bool is_float = type == Type::F32();
  const OpReducer kind = TraitsOf(n.op).reducer;
  const bool max = kind == OpReducer::kMax;
  const tensorflow::AttrValue* shift = n.FindAttr(kRowShiftAttr);
  const bool min_max = is_float && (max || kind == OpReducer::kMin);
  const bool ordered = min_max && !(shift && shift->b());
  const unsigned fastmath = (is_float && reassoc ? kReassoc : kExact) | (min_max ? kNnan | kNsz : kExact);
  const Type i32 = Type::I32();
  f.init = {IdentityOf(reducer, type, count)};
  if (ordered) f.init.insert(f.init.end(), {IntConst(0, i32), IntConst(-1, i32)});
  f.step = [this, reducer, fastmath, ordered, max, i32](const std::vector<Value>& accs, const Value& v) {
    std::vector<Value> next = {b_.Apply(reducer.combine, {accs[0], v}, fastmath)};
    if (ordered) {
      const Value bits = b_.Convert(Cast::kBitcast, v, i32);
      const Value magnitude = b_.Apply(Op::kAndI, {bits, IntConst(INT32_MAX, i32)});
      next.push_back(b_.Apply(Op::kMaxUI, {accs[1], magnitude}));
      const Value key = max ? bits : b_.Apply(Op::kXOrI, {bits, IntConst(INT32_MIN, i32)});
      next.push_back(b_.Apply(Op::kMinUI, {accs[2], key}));
    }
    return next;
  };
  f.combine = {{reducer.combine, fastmath}};
  if (ordered) f.combine.insert(f.combine.end(), {{Op::kMaxUI, kExact}, {Op::kMinUI, kExact}});
  const bool mean = kind == OpReducer::kMean;
  f.finish = [this, type, count, ordered, max, is_float, mean, i32](const std::vector<Value>& accs) {
    Value acc = accs[0];
    if (ordered) {
      const Value nan = b_.Cmp(Pred::kUgt, accs[1], IntConst(0x7f800000, i32));
      const Value tie_seen = b_.Cmp(Pred::kEq, accs[2], IntConst(0, i32));
      const Value zero = b_.Cmp(Pred::kOeq, acc, FloatConst(0));
      const Value signed_zero = b_.Select(tie_seen, FloatConst(max ? 0.0f : -0.0f), FloatConst(max ? -0.0f : 0.0f));
      acc = b_.Select(zero, signed_zero, acc);
      acc = b_.Select(nan, FloatConst(NAN), acc);
    }
    if (mean && is_float) acc = b_.Apply(Op::kDivF, {acc, FloatConst(count)});
    if (mean && !is_float && count > 0) acc = b_.Apply(Op::kDivSI, {acc, IntConst(count, type)});
    return acc;
  };
  return f;
}

StatusOr<Value> KernelEmitter::FoldReduction(const Node& n, Type type, const std::vector<int64_t>& dims, Index& index,
                                             int64_t count, bool reassoc,
                                             const std::function<StatusOr<Value>(const Index&)>& element) {
  const Folding f = FoldingOf(n, type, count, reassoc);
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, Fold(dims, 0, index, f.init, f.step, element));
  return f.finish(accs);
}

Index KernelEmitter::Delinearize(const Value& linear, const std::vector<int64_t>& dims) {
  Index index;
  int64_t stride = 1;
  for (int64_t d : dims) stride *= d;
  for (size_t j = 0; j < dims.size(); ++j) {
    stride = dims[j] ? stride / dims[j] : 0;
    if (dims[j] == 1) {
      index.push_back(IndexConst(0));
      continue;
    }
    const Value q = stride > 1 ? b_.Apply(Op::kDivUI, {linear, IndexConst(stride)}) : linear;
    index.push_back(j == 0 ? q : b_.Apply(Op::kRemUI, {q, IndexConst(dims[j])}));
  }
  return index;
}

// ArgMax (ArgMin) along an axis of `size` elements: the first index of the largest
// (smallest) value, as the reference kernel finds it (a NaN is never larger or smaller;
// the first element is taken even if it is NaN). `at(i)` is the input's index for
// position `i` on the axis.
StatusOr<Value> KernelEmitter::ArgMaxOrMin(int id, int64_t size, Index& index, const std::function<Index(const Value&)>& at) {
  const Node& n = *g_.graph.node(id);
  const bool max = TraitsOf(n.op).reducer == OpReducer::kArgMax;
  const Type value_type = ElementType(StaticDType(g_, n.inputs[0]));
  const Type out_type = ElementType(g_.info(id).dtypes[0]);
  const bool f = value_type == Type::F32();
  const bool i32 = value_type == Type::I32();
  const Value start = f ? FloatConst(max ? -INFINITY : INFINITY)
                        : IntConst(max ? (i32 ? INT32_MIN : INT64_MIN) : (i32 ? INT32_MAX : INT64_MAX), value_type);
  const Pred better = f ? (max ? Pred::kOgt : Pred::kOlt) : (max ? Pred::kSgt : Pred::kSlt);
  Value position;
  auto step = [&](const std::vector<Value>& accs, const Value& v) {
    const Value wins = b_.Cmp(better, v, accs[0]);
    const Value first = b_.Cmp(Pred::kEq, position, IndexConst(0));
    const Value take = b_.Apply(Op::kOrI, {wins, first});
    return std::vector<Value>{b_.Select(take, v, accs[0]), b_.Select(take, position, accs[1])};
  };
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                      Fold({size}, 0, index, {start, IndexConst(0)}, step, [&](const Index& i) -> StatusOr<Value> {
                        position = i.back();
                        return Get(n.inputs[0], at(i.back()));
                      }));
  return b_.Convert(Cast::kIndexCast, accs[1], out_type);
}

// --- Elements.
// The element of `v` at `index` (in v's shape).
StatusOr<Value> KernelEmitter::Get(TensorId v, const Index& index) {
  const std::pair<TensorId, std::string> key(v, Names(index));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  if (auto cached = FromRowCache(v, index)) return memo_[key] = *cached;
  GJ_ASSIGN_OR_RETURN(Value value, Compute(v, index));
  ToRowCache(v, index, value);
  memo_[key] = value;
  return value;
}

// Whether v went through an approximation: a math function's polynomial, a float sum or
// product (in any order), or a GEMM.
bool KernelEmitter::IsApproximate(TensorId v) {
  if (auto it = approximate_.find(v.node); it != approximate_.end()) return it->second;
  const Node& n = *g_.graph.node(v.node);
  bool approximate = false;
  const OpTraits& traits = TraitsOf(n.op);
  if (traits.approximate || IsLibraryOp(n.op)) {
    approximate = true;
  } else if (traits.reducer == OpReducer::kSum || traits.reducer == OpReducer::kMean || traits.reducer == OpReducer::kProd) {
    approximate = ElementType(g_.info(v.node).dtypes[0]) == Type::F32();
  } else if (!IsPlaceholder(n) && !IsConstant(n)) {
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (IsDataInput(n, static_cast<int>(i)) && IsApproximate(n.inputs[i])) approximate = true;
  }
  return approximate_[v.node] = approximate;
}

// A division may round differently from x / d (by an ulp or two) where its operands are
// approximate already, or where the quotient is used only inside this kernel, by math
// functions: the reference's exact quotient is never seen.
bool KernelEmitter::MayRoundDivision(TensorId v) {
  const Node& n = *g_.graph.node(v.node);
  if (IsApproximate(n.inputs[0]) || IsApproximate(n.inputs[1])) return true;
  if (p_.buffer_of.count(v)) return false;
  if (consumers_.empty()) consumers_ = g_.graph.ComputeOutEdges();
  const std::vector<OutEdge>& uses = consumers_[v.node];
  return !uses.empty() && std::all_of(uses.begin(), uses.end(), [&](const OutEdge& e) {
    return e.dst_input >= 0 && TraitsOf(g_.graph.node(e.dst)->op).approximate;
  });
}

// x / d, where d is computed outside x's innermost loop (a constant, or a row's sum), and
// the quotient's last bit does not matter (see MayRoundDivision): a division costs up to
// ten multiplications on both targets, so 1 / d is computed once and x multiplied by it
// (within an ulp and a half of x / d), as XLA does for constants and TensorFlow's Softmax
// for its sums. Not where 1 / d is not a normal number (a huge or subnormal d, where
// x * (1 / d) is 0 or Inf and x / d is not): the branch on that is the same for the whole
// loop, which LLVM versions (unswitches) on it.
Value KernelEmitter::DivideByInvariant(const Value& x, const Value& d) {
  const Value r = b_.Apply(Op::kDivF, {FloatConst(1), d});
  const Value magnitude = b_.Apply(Op::kAbsF, {r});
  const Value normal = b_.Apply(
      Op::kAndI, {b_.Cmp(Pred::kOge, magnitude, FloatConst(FLT_MIN)), b_.Cmp(Pred::kOle, magnitude, FloatConst(FLT_MAX))});
  const int level = std::max(x.level, normal.level), saved_floor = b_.floor();
  Block branches[2];
  Value quotients[2];
  for (int k = 0; k < 2; ++k) {
    OpenScope();
    b_.set_floor(Innermost());
    quotients[k] = k == 0 ? b_.Apply(Op::kMulF, {x, r}) : b_.Apply(Op::kDivF, {x, d});
    b_.set_floor(saved_floor);
    branches[k] = CloseScope();
  }
  return b_.If(normal, std::move(branches[0]), {quotients[0]}, std::move(branches[1]), {quotients[1]}, level)[0];
}

// (y, s) where an f32 Erf's argument is y * s, s * y or y / (1 / s), s a constant in
// [2^-16, 2^16], computed in f32 with y of its shape: ScaledErf takes y and s.
std::optional<std::pair<TensorId, double>> KernelEmitter::ScaledArgument(const Node& erf) {
  const TensorId arg = erf.inputs[0];
  const Node& m = *g_.graph.node(arg.node);
  const bool mul = m.op == "Mul", div = m.op == "RealDiv";
  if ((!mul && !div) || g_.info(arg.node).dtypes[0] != DType::kFloat) return std::nullopt;
  auto constant = [&](int i) -> std::optional<double> {
    auto kind = ClassifyNode(g_, m.inputs[i].node);
    if (!kind.ok() || *kind != NodeKind::kConstant) return std::nullopt;
    const Tensor& c = g_.constants[m.inputs[i].node];
    if (c.num_elements() != 1) return std::nullopt;
    return c.ValueAsDouble(0);
  };
  for (int i = 0; i < 2; ++i) {
    if (div && i == 0) continue;  // only a constant divisor
    std::optional<double> c = constant(i);
    if (!c) continue;
    const double s = div ? 1 / *c : *c;
    const TensorId y = m.inputs[1 - i];
    if (!(s >= 0x1p-16 && s <= 0x1p16) || ShapeOf(y) != ShapeOf(arg) || g_.info(y.node).dtypes[y.index] != DType::kFloat)
      return std::nullopt;
    return std::pair{y, s};
  }
  return std::nullopt;
}

StatusOr<Value> KernelEmitter::Compute(TensorId v, const Index& index) {
  const auto located = b_.At(g_.graph.node(v.node)->name);
  if (auto it = p_.buffer_of.find(v); it != p_.buffer_of.end()) {
    const FusionPlan::Buffer& b = p_.buffers[it->second];
    // A value an earlier fusion stored is loaded; one this fusion or a later one stores
    // (a cluster output also read inside, stored after the fusions that read it) is computed.
    if (b.kind != FusionPlan::Buffer::Kind::kTemp || b.fusion < f_) return Load(it->second, index);
  }
  const Node& n = *g_.graph.node(v.node);
  const Shape& shape = g_.info(v.node).shapes[v.index];
  GJ_ASSIGN_OR_RETURN(NodeKind kind, ClassifyNode(g_, v.node));
  switch (kind) {
    case NodeKind::kConstant: {
      const Tensor& c = g_.constants[v.node];
      const Type type = ElementType(c.dtype());
      if (type == Type::F32()) return FloatConst(static_cast<float>(c.ValueAsDouble(0)));
      return IntConst(c.ValueAsInt(0), type);
    }
    case NodeKind::kReduction: {
      auto it = reduced_.find(v.node);
      if (it == reduced_.end()) return Internal(NodeLabel(n) + " is read before it is reduced");
      for (size_t j = 0; j < row_.size(); ++j)
        if (index[j].name != row_[j].name) return Unimplemented(NodeLabel(n) + " is read at another row");
      return it->second;
    }
    case NodeKind::kElementwise: {
      // erf(y * s) reads y: ScaledErf folds s into its fit.
      const auto scaled = n.op == "Erf" && g_.info(v.node).dtypes[0] == DType::kFloat ? ScaledArgument(n) : std::nullopt;
      std::vector<Value> x;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const TensorId& in = scaled ? scaled->first : n.inputs[i];
        const Shape& in_shape = ShapeOf(in);
        GJ_ASSIGN_OR_RETURN(x.emplace_back(),
                            Get(in, ReadAt(ReadDims(n, static_cast<int>(i), in_shape, shape), index, in_shape)));
      }
      Value result;
      if (scaled) {
        result = ScaledErf(x[0], scaled->second, b_);
      } else if (n.op == "RealDiv" && x[0].type == Type::F32() && x[1].level < x[0].level && MayRoundDivision(v)) {
        result = DivideByInvariant(x[0], x[1]);
      } else {
        GJ_ASSIGN_OR_RETURN(result, EmitElemental(n, x, b_));
      }
      ++num_ops_;
      return RoundedTo(g_.info(v.node).dtypes[0], result);
    }
    case NodeKind::kSizeOneReshape: {
      const Shape& in_shape = ShapeOf(n.inputs[0]);
      return Get(n.inputs[0], ReadAt(ReadDims(n, 0, in_shape, shape), index, in_shape));
    }
    case NodeKind::kTranspose: {
      const Tensor& perm = g_.constants[n.inputs[1].node];
      Index to(index.size());
      for (size_t i = 0; i < index.size(); ++i) to[perm.ValueAsInt(i)] = index[i];
      return Get(n.inputs[0], to);
    }
    case NodeKind::kConcat: {
      int64_t axis = g_.constants[n.inputs.back().node].ValueAsInt(0);
      if (axis < 0) axis += shape.rank();
      std::vector<int64_t> ends;
      for (size_t k = 0; k + 1 < n.inputs.size(); ++k)
        ends.push_back((ends.empty() ? 0 : ends.back()) + ShapeOf(n.inputs[k]).dim(static_cast<int>(axis)));
      return Pieces(index, static_cast<int>(axis), ends, [&](size_t k, const Value& local) {
        Index at = index;
        at[axis] = local;
        return Get(n.inputs[k], at);
      });
    }
    case NodeKind::kIndexed: return Indexed(v, index);
    default: return Internal("no value for " + g_.graph.TensorName(v) + " in fusion_" + std::to_string(f_));
  }
}

// A 16-bit float value, computed in f32, rounded to its type as the reference kernels
// round each op's result: an f16 chain overflows to Inf where they do.
Value KernelEmitter::RoundedTo(DType dtype, const Value& v) {
  if (dtype != DType::kHalf && dtype != DType::kBFloat16) return v;
  return b_.Convert(Cast::kExtF, b_.Convert(Cast::kTruncF, v, StorageType(dtype)), Type::F32());
}

// The index of an input of shape `in` read through `dims` (see ReadDims) at `index`.
Index KernelEmitter::ReadAt(const std::vector<int>& dims, const Index& index, const Shape& in) {
  Index to;
  for (int d = 0; d < in.rank(); ++d) to.push_back(in.dim(d) == 1 || dims[d] < 0 ? IndexConst(0) : index[dims[d]]);
  return to;
}

StatusOr<Value> KernelEmitter::Branch(const Value& cond, const std::function<StatusOr<Value>()>& then,
                                      const std::function<StatusOr<Value>()>& otherwise) {
  const int saved_floor = b_.floor();
  Block branches[2];
  Value yielded[2];
  for (int k = 0; k < 2; ++k) {
    OpenScope();
    b_.set_floor(Innermost());
    auto v = k == 0 ? then() : otherwise();
    b_.set_floor(saved_floor);
    branches[k] = CloseScope();
    if (!v.ok()) return v.status();
    yielded[k] = *v;
  }
  return b_.If(cond, std::move(branches[0]), {yielded[0]}, std::move(branches[1]), {yielded[1]})[0];
}

StatusOr<Value> KernelEmitter::Pieces(const Index& index, int axis, const std::vector<int64_t>& ends, const Piece& piece,
                                      size_t k) {
  const int64_t start = k == 0 ? 0 : ends[k - 1];
  const Value local = start ? IndexArith(Op::kSubI, index[axis], IndexConst(start)) : index[axis];
  if (k + 1 == ends.size()) return piece(k, local);
  return Branch(
      IndexCmp(Pred::kUlt, index[axis], IndexConst(ends[k])), [&] { return piece(k, local); },
      [&] { return Pieces(index, axis, ends, piece, k + 1); });
}

Value KernelEmitter::IndexArith(Op op, const Value& a, const Value& b) { return b_.Apply(op, {a, b}); }
Value KernelEmitter::IndexCmp(Pred pred, const Value& a, const Value& b) { return b_.Cmp(pred, a, b); }

// --- Indexed ops: each op's element generator, in a table keyed by op.
// What a generator reads: the node, the output it computes, the input it moves data from
// (`data`, of shape `in`), the output's shape and the element's index.
struct KernelEmitter::IndexedElement {
  const Node& n;
  TensorId v;
  TensorId data;
  const Shape& in;
  const Shape& out;
  const Index& index;
};

StatusOr<Value> KernelEmitter::Indexed(TensorId v, const Index& index) {
  using Generator = std::function<StatusOr<Value>(KernelEmitter & e, const IndexedElement& x)>;
  struct Entry {
    int data;  // the input data is moved from
    Generator element;
  };
  static const std::map<std::string, Entry, std::less<>> kGenerators = {
      {"Fill", {1, [](KernelEmitter& e, const IndexedElement& x) { return e.Get(x.data, {}); }}},
      {"Slice", {0, &KernelEmitter::SliceElement}},
      {"StridedSlice", {0, &KernelEmitter::StridedSliceElement}},
      {"Tile", {0, &KernelEmitter::TileElement}},
      {"ReverseV2", {0, &KernelEmitter::ReverseElement}},
      {"MirrorPad", {0, &KernelEmitter::MirrorPadElement}},
      {"Pad", {0, &KernelEmitter::PadElement}},
      {"PadV2", {0, &KernelEmitter::PadElement}},
      {"GatherV2", {0, &KernelEmitter::GatherElement}},
      {"_GraphjitSetRow", {0, &KernelEmitter::SetRowElement}},
      {"Pack", {0, &KernelEmitter::PackElement}},
      {"Unpack", {0, &KernelEmitter::UnpackElement}},
      {"Split", {1, [](KernelEmitter& e, const IndexedElement& x) { return e.SplitElement(x, 0); }}},
      {"SplitV", {0, [](KernelEmitter& e, const IndexedElement& x) { return e.SplitElement(x, 2); }}},
      {"Range", {0, &KernelEmitter::RangeElement}},
      {"OneHot", {0, &KernelEmitter::OneHotElement}},
      {"Cumsum", {0, [](KernelEmitter& e, const IndexedElement& x) { return e.ScanElement(x, true); }}},
      {"Cumprod", {0, [](KernelEmitter& e, const IndexedElement& x) { return e.ScanElement(x, false); }}},
      {"DepthToSpace", {0, &KernelEmitter::DepthToSpaceElement}},
      {"SpaceToDepth", {0, &KernelEmitter::SpaceToDepthElement}},
      {"SpaceToBatchND", {0, &KernelEmitter::SpaceToBatchElement}},
      {"BatchToSpaceND", {0, &KernelEmitter::BatchToSpaceElement}},
      {"MatrixBandPart", {0, &KernelEmitter::BandPartElement}},
      {"GatherNd", {0, &KernelEmitter::GatherNdElement}},
      {"ResizeBilinear", {0, [](KernelEmitter& e, const IndexedElement& x) { return e.ResizeElement(x, true); }}},
      {"ResizeNearestNeighbor", {0, [](KernelEmitter& e, const IndexedElement& x) { return e.ResizeElement(x, false); }}},
  };
  const Node& n = *g_.graph.node(v.node);
  auto it = kGenerators.find(n.op);
  if (it == kGenerators.end()) return Internal(NodeLabel(n) + " is not an indexed op");
  const TensorId data = n.inputs[it->second.data];
  return it->second.element(*this, {n, v, data, ShapeOf(data), ShapeOf(v), index});
}

std::vector<int64_t> KernelEmitter::ConstantInts(const Node& n, int input) const {
  return IntValues(g_.constants[n.inputs[input].node]);
}

Value KernelEmitter::Plus(const Value& i, int64_t c) { return c ? IndexArith(Op::kAddI, i, IndexConst(c)) : i; }

StatusOr<Value> KernelEmitter::ZeroOf(TensorId v) {
  const Type type = ElementType(g_.info(v.node).dtypes[v.index]);
  return type == Type::F32() ? FloatConst(0) : IntConst(0, type);
}

StatusOr<Value> KernelEmitter::SliceElement(const IndexedElement& x) {
  const std::vector<int64_t> begin = ConstantInts(x.n, 1);
  Index at = x.index;
  for (int d = 0; d < x.in.rank(); ++d) at[d] = Plus(x.index[d], begin[d]);
  return Get(x.data, at);
}

StatusOr<Value> KernelEmitter::StridedSliceElement(const IndexedElement& x) {
  const InferenceContext c{x.n, {}, {}, {}, {}, {}};
  GJ_ASSIGN_OR_RETURN(std::vector<SliceDim> dims,
                      ResolveStridedSlice(c, x.in, ConstantInts(x.n, 1), ConstantInts(x.n, 2), ConstantInts(x.n, 3)));
  Index at(x.in.rank(), IndexConst(0));
  size_t k = 0;  // the result's dim
  for (const SliceDim& s : dims) {
    const Value* i = s.keep ? &x.index[k++] : nullptr;
    if (s.in_dim < 0) continue;
    if (!i || s.size == 1) {
      at[s.in_dim] = IndexConst(s.begin);
    } else {
      at[s.in_dim] = Plus(s.stride == 1 ? *i : IndexArith(Op::kMulI, *i, IndexConst(s.stride)), s.begin);
    }
  }
  return Get(x.data, at);
}

StatusOr<Value> KernelEmitter::TileElement(const IndexedElement& x) {
  Index at = x.index;
  for (int d = 0; d < x.in.rank(); ++d)
    at[d] = x.in.dim(d) == 1              ? IndexConst(0)
            : x.in.dim(d) == x.out.dim(d) ? x.index[d]
                                          : IndexArith(Op::kRemUI, x.index[d], IndexConst(x.in.dim(d)));
  return Get(x.data, at);
}

StatusOr<Value> KernelEmitter::ReverseElement(const IndexedElement& x) {
  Index at = x.index;
  for (int64_t a : ConstantInts(x.n, 1)) {
    const int d = static_cast<int>(a < 0 ? a + x.in.rank() : a);
    at[d] = IndexArith(Op::kSubI, IndexConst(x.in.dim(d) - 1), x.index[d]);
  }
  return Get(x.data, at);
}

// REFLECT repeats no edge element, SYMMETRIC repeats it: before the start, j -> -j - 1 +
// reflect; past the end (size n), j -> 2n - 1 - reflect - j.
StatusOr<Value> KernelEmitter::MirrorPadElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(std::string mode, GetStringAttr(x.n, "mode"));
  const int64_t reflect = mode == "REFLECT" ? 1 : 0;
  const std::vector<int64_t> pads = ConstantInts(x.n, 1);
  Index at = x.index;
  for (int d = 0; d < x.in.rank(); ++d) {
    Value j = pads[2 * d] ? IndexArith(Op::kSubI, x.index[d], IndexConst(pads[2 * d])) : x.index[d];
    if (pads[2 * d]) j = b_.Select(IndexCmp(Pred::kSlt, j, IndexConst(0)), IndexArith(Op::kSubI, IndexConst(reflect - 1), j), j);
    if (pads[2 * d + 1])
      j = b_.Select(IndexCmp(Pred::kSge, j, IndexConst(x.in.dim(d))),
                    IndexArith(Op::kSubI, IndexConst(2 * x.in.dim(d) - 1 - reflect), j), j);
    at[d] = j;
  }
  return Get(x.data, at);
}

// Pad and PadV2: the input inside, the padding value (PadV2's input 2, else 0) around it.
StatusOr<Value> KernelEmitter::PadElement(const IndexedElement& x) {
  const std::vector<int64_t> pads = ConstantInts(x.n, 1);
  Index at = x.index;
  std::optional<Value> inside;
  for (int d = 0; d < x.in.rank(); ++d) {
    if (!pads[2 * d] && !pads[2 * d + 1]) continue;
    at[d] = pads[2 * d] ? IndexArith(Op::kSubI, x.index[d], IndexConst(pads[2 * d])) : x.index[d];
    const Value ok = IndexCmp(Pred::kUlt, at[d], IndexConst(x.in.dim(d)));  // before the start, at[d] wraps around
    inside = !inside ? ok : b_.Apply(Op::kAndI, {*inside, ok});
  }
  if (!inside) return Get(x.data, at);
  return Branch(
      *inside, [&] { return Get(x.data, at); },
      [&]() -> StatusOr<Value> {
        if (x.n.inputs.size() > 2) return Get(x.n.inputs[2], {});
        return ZeroOf(x.v);
      });
}

// The result is params[:axis] + indices[batch_dims:] + params[axis + 1:] (the batch dims
// among the first); an index outside [0, dim) reads as zero, as TensorFlow's GPU kernel
// writes it (the JIT compiles GatherV2 for GPUs only).
StatusOr<Value> KernelEmitter::GatherElement(const IndexedElement& x) {
  int64_t axis = ConstantInts(x.n, 2)[0];
  if (axis < 0) axis += x.in.rank();
  GJ_ASSIGN_OR_RETURN(int64_t batch_dims, GetIntAttrOr(x.n, "batch_dims", 0));
  const int indices_rank = ShapeOf(x.n.inputs[1]).rank();
  if (batch_dims < 0) batch_dims += indices_rank;
  const int64_t own = indices_rank - batch_dims;  // the indices' dims of their own, in the result
  Index where(x.index.begin(), x.index.begin() + batch_dims);
  where.insert(where.end(), x.index.begin() + axis, x.index.begin() + axis + own);
  GJ_ASSIGN_OR_RETURN(const Value position, Get(x.n.inputs[1], where));
  const Value i = b_.Convert(Cast::kIndexCast, position, Type::Index());
  Index at(x.index.begin(), x.index.begin() + axis);
  at.push_back(i);
  at.insert(at.end(), x.index.begin() + axis + own, x.index.end());
  return Branch(
      IndexCmp(Pred::kUlt, i, IndexConst(x.in.dim(static_cast<int>(axis)))), [&] { return Get(x.data, at); },
      [&] { return ZeroOf(x.v); });
}

// The list (input 0) with row `index` replaced by the item; the index clamped into the
// list, as XLA's dynamic-update-slice does (the JIT compiles it for GPUs only).
StatusOr<Value> KernelEmitter::SetRowElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(const Value position, Get(x.n.inputs[1], {}));
  Value row = b_.Convert(Cast::kIndexCast, position, Type::Index());
  row = IndexArith(Op::kMaxSI, row, IndexConst(0));
  row = IndexArith(Op::kMinSI, row, IndexConst(x.in.dim(0) - 1));
  const Index item(x.index.begin() + 1, x.index.end());
  GJ_ASSIGN_OR_RETURN(const Value replaced, Get(x.n.inputs[2], item));
  GJ_ASSIGN_OR_RETURN(const Value kept, Get(x.data, x.index));
  return b_.Select(IndexCmp(Pred::kEq, x.index[0], row), replaced, kept);
}

StatusOr<Value> KernelEmitter::PackElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(int64_t axis, GetIntAttrOr(x.n, "axis", 0));
  const int a = static_cast<int>(axis < 0 ? axis + x.out.rank() : axis);
  std::vector<int64_t> ends(x.n.inputs.size());
  for (size_t k = 0; k < ends.size(); ++k) ends[k] = static_cast<int64_t>(k) + 1;
  Index at = x.index;
  at.erase(at.begin() + a);
  return Pieces(x.index, a, ends, [&](size_t k, const Value&) { return Get(x.n.inputs[k], at); });
}

StatusOr<Value> KernelEmitter::UnpackElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(int64_t axis, GetIntAttrOr(x.n, "axis", 0));
  Index at = x.index;
  at.insert(at.begin() + (axis < 0 ? axis + x.in.rank() : axis), IndexConst(x.v.index));
  return Get(x.data, at);
}

// Split (the axis is input 0) and SplitV (input 2): output k starts after the outputs
// before it along the axis.
StatusOr<Value> KernelEmitter::SplitElement(const IndexedElement& x, int axis_input) {
  int64_t axis = ConstantInts(x.n, axis_input)[0];
  if (axis < 0) axis += x.out.rank();
  int64_t offset = 0;
  for (int k = 0; k < x.v.index; ++k) offset += g_.info(x.v.node).shapes[k].dim(static_cast<int>(axis));
  Index at = x.index;
  at[axis] = Plus(x.index[axis], offset);
  return Get(x.data, at);
}

// start + i * delta (its inputs are constants: they decide the output's shape).
StatusOr<Value> KernelEmitter::RangeElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(const Value start, Get(x.n.inputs[0], {}));
  GJ_ASSIGN_OR_RETURN(const Value delta, Get(x.n.inputs[2], {}));
  const bool floating = start.type == Type::F32();
  Value i = b_.Convert(Cast::kIndexCast, x.index[0], floating ? Type::I64() : start.type);
  if (floating) i = b_.Convert(Cast::kUIToFP, i, Type::F32());
  const Value step = b_.Apply(floating ? Op::kMulF : Op::kMulI, {i, delta});
  return b_.Apply(floating ? Op::kAddF : Op::kAddI, {start, step});
}

StatusOr<Value> KernelEmitter::OneHotElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(int64_t axis, GetIntAttrOr(x.n, "axis", -1));
  const int a = static_cast<int>(axis == -1 ? x.out.rank() - 1 : axis);
  Index at = x.index;
  at.erase(at.begin() + a);
  GJ_ASSIGN_OR_RETURN(const Value position, Get(x.data, at));
  const Value i = b_.Convert(Cast::kIndexCast, position, Type::Index());
  GJ_ASSIGN_OR_RETURN(const Value on, Get(x.n.inputs[2], {}));
  GJ_ASSIGN_OR_RETURN(const Value off, Get(x.n.inputs[3], {}));
  return b_.Select(IndexCmp(Pred::kEq, i, x.index[a]), on, off);
}

// Cumsum and Cumprod: the element at position i on the axis folds the input along it in the
// order TensorFlow's kernel scans it, from the identity: from the axis's start through i
// (exclusive: up to i), or, reversed, from its end down to i (exclusive: down to i + 1),
// each running value rounded to the type as the kernel's accumulator is: the scan's value
// bit for bit. Each element folds its own part of the axis, in parallel with the others
// (O(n^2) additions over an axis of n, for the positions and masks of a sequence).
StatusOr<Value> KernelEmitter::ScanElement(const IndexedElement& x, bool sum) {
  int64_t axis = ConstantInts(x.n, 1).at(0);
  if (axis < 0) axis += x.out.rank();
  GJ_ASSIGN_OR_RETURN(const bool exclusive, GetBoolAttrOr(x.n, "exclusive", false));
  GJ_ASSIGN_OR_RETURN(const bool reverse, GetBoolAttrOr(x.n, "reverse", false));
  const DType dtype = g_.info(x.v.node).dtypes[0];
  const Type type = ElementType(dtype);
  const bool f = type == Type::F32();
  const Op combine = sum ? (f ? Op::kAddF : Op::kAddI) : (f ? Op::kMulF : Op::kMulI);
  const Value identity = f ? FloatConst(sum ? 0.0f : 1.0f) : IntConst(sum ? 0 : 1, type);
  const int64_t n = x.out.dim(static_cast<int>(axis));
  const Value i = x.index[axis];
  // How many elements it folds: i + 1 (i) forward, n - i (n - i - 1) reversed.
  const Value count = reverse ? IndexArith(Op::kSubI, IndexConst(exclusive ? n - 1 : n), i) : Plus(i, exclusive ? 0 : 1);
  GJ_ASSIGN_OR_RETURN(std::vector<Value> acc,
                      LoopCarrying(IndexConst(0), count, 1, {identity},
                                   [&](const Value& j, const std::vector<Value>& accs) -> StatusOr<std::vector<Value>> {
                                     Index at = x.index;
                                     at[axis] = reverse ? IndexArith(Op::kSubI, IndexConst(n - 1), j) : j;
                                     GJ_ASSIGN_OR_RETURN(const Value v, Get(x.data, at));
                                     return std::vector<Value>{RoundedTo(dtype, b_.Apply(combine, {accs[0], v}))};
                                   }));
  return acc[0];
}

// The index maps of runtime/kernels/data_movement.cc, element by element.
// DepthToSpace: output (n, y, x, c) is input (n, y / b, x / b, ((y % b) * b + x % b) * C + c).
StatusOr<Value> KernelEmitter::DepthToSpaceElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(const int64_t b, GetIntAttr(x.n, "block_size"));
  const Value bv = IndexConst(b);
  const Value dy = IndexArith(Op::kRemUI, x.index[1], bv), dx = IndexArith(Op::kRemUI, x.index[2], bv);
  const Value block = IndexArith(Op::kAddI, IndexArith(Op::kMulI, dy, bv), dx);
  const Value c = IndexArith(Op::kAddI, IndexArith(Op::kMulI, block, IndexConst(x.out.dim(3))), x.index[3]);
  return Get(x.data, {x.index[0], IndexArith(Op::kDivUI, x.index[1], bv), IndexArith(Op::kDivUI, x.index[2], bv), c});
}

// SpaceToDepth: output (n, y, x, (by * b + bx) * C + c) is input (n, y * b + by, x * b + bx, c).
StatusOr<Value> KernelEmitter::SpaceToDepthElement(const IndexedElement& x) {
  GJ_ASSIGN_OR_RETURN(const int64_t b, GetIntAttr(x.n, "block_size"));
  const Value bv = IndexConst(b), channels = IndexConst(x.in.dim(3));
  const Value block = IndexArith(Op::kDivUI, x.index[3], channels);
  auto at = [&](int d, const Value& offset) { return IndexArith(Op::kAddI, IndexArith(Op::kMulI, x.index[d], bv), offset); };
  return Get(x.data, {x.index[0], at(1, IndexArith(Op::kDivUI, block, bv)), at(2, IndexArith(Op::kRemUI, block, bv)),
                      IndexArith(Op::kRemUI, x.index[3], channels)});
}

// SpaceToBatchND: output (o * B + n, s_i, r) is the padded input (n, s_i * block_i + o_i, r),
// zero in the padding.
StatusOr<Value> KernelEmitter::SpaceToBatchElement(const IndexedElement& x) {
  const std::vector<int64_t> block = ConstantInts(x.n, 1), pads = ConstantInts(x.n, 2);
  const Value batch = IndexConst(x.in.dim(0));
  Index at = x.index;
  at[0] = IndexArith(Op::kRemUI, x.index[0], batch);
  Value offset = IndexArith(Op::kDivUI, x.index[0], batch);
  std::optional<Value> inside;
  for (size_t i = block.size(); i-- > 0;) {
    const Value o = IndexArith(Op::kRemUI, offset, IndexConst(block[i]));
    offset = IndexArith(Op::kDivUI, offset, IndexConst(block[i]));
    const int d = static_cast<int>(i) + 1;
    at[d] = IndexArith(Op::kAddI, IndexArith(Op::kMulI, x.index[d], IndexConst(block[i])), o);
    if (!pads[2 * i] && !pads[2 * i + 1]) continue;
    at[d] = IndexArith(Op::kSubI, at[d], IndexConst(pads[2 * i]));
    const Value ok = IndexCmp(Pred::kUlt, at[d], IndexConst(x.in.dim(d)));  // before the start, at[d] wraps around
    inside = !inside ? ok : b_.Apply(Op::kAndI, {*inside, ok});
  }
  if (!inside) return Get(x.data, at);
  return Branch(*inside, [&] { return Get(x.data, at); }, [&] { return ZeroOf(x.v); });
}

// BatchToSpaceND: output (n, x_i, r), with y_i = x_i + crop_i, is input
// ((y_i % block_i, row-major) * B + n, y_i / block_i, r).
StatusOr<Value> KernelEmitter::BatchToSpaceElement(const IndexedElement& x) {
  const std::vector<int64_t> block = ConstantInts(x.n, 1), crops = ConstantInts(x.n, 2);
  Index at = x.index;
  Value offset = IndexConst(0);
  for (size_t i = 0; i < block.size(); ++i) {
    const int d = static_cast<int>(i) + 1;
    const Value y = Plus(x.index[d], crops[2 * i]), b = IndexConst(block[i]);
    offset = IndexArith(Op::kAddI, IndexArith(Op::kMulI, offset, b), IndexArith(Op::kRemUI, y, b));
    at[d] = IndexArith(Op::kDivUI, y, b);
  }
  at[0] = IndexArith(Op::kAddI, IndexArith(Op::kMulI, offset, IndexConst(x.out.dim(0))), x.index[0]);
  return Get(x.data, at);
}

// MatrixBandPart: (m, n) of each innermost matrix kept where num_lower < 0 or m - n <=
// num_lower, and num_upper < 0 or n - m <= num_upper; zero elsewhere.
StatusOr<Value> KernelEmitter::BandPartElement(const IndexedElement& x) {
  const int64_t lower = ConstantInts(x.n, 1).at(0), upper = ConstantInts(x.n, 2).at(0);
  const int r = x.out.rank();
  const Value m = x.index[r - 2], n = x.index[r - 1];
  std::optional<Value> inside;
  if (lower >= 0) inside = IndexCmp(Pred::kSle, m, Plus(n, lower));
  if (upper >= 0) {
    const Value ok = IndexCmp(Pred::kSle, n, Plus(m, upper));
    inside = !inside ? ok : b_.Apply(Op::kAndI, {*inside, ok});
  }
  if (!inside) return Get(x.data, x.index);
  return Branch(*inside, [&] { return Get(x.data, x.index); }, [&] { return ZeroOf(x.v); });
}

// GatherNd: output (i..., j...) is params (indices[i..., :], j...); an index row with an
// element outside its dim reads as zero, as TensorFlow's GPU kernel writes it (the JIT
// compiles GatherNd for GPUs only).
StatusOr<Value> KernelEmitter::GatherNdElement(const IndexedElement& x) {
  const Shape& indices = ShapeOf(x.n.inputs[1]);
  const int batch = indices.rank() - 1;
  const int64_t k = indices.dim(batch);
  Index at, where(x.index.begin(), x.index.begin() + batch);
  std::optional<Value> inside;
  for (int64_t j = 0; j < k; ++j) {
    where.push_back(IndexConst(j));
    GJ_ASSIGN_OR_RETURN(const Value position, Get(x.n.inputs[1], where));
    where.pop_back();
    at.push_back(b_.Convert(Cast::kIndexCast, position, Type::Index()));
    const Value ok = IndexCmp(Pred::kUlt, at.back(), IndexConst(x.in.dim(static_cast<int>(j))));
    inside = !inside ? ok : b_.Apply(Op::kAndI, {*inside, ok});
  }
  at.insert(at.end(), x.index.begin() + batch, x.index.end());
  if (!inside) return Get(x.data, at);
  return Branch(*inside, [&] { return Get(x.data, at); }, [&] { return ZeroOf(x.v); });
}

// With TensorFlow's float arithmetic (see ResizeOp in runtime/kernels/data_movement.cc): a
// source coordinate s = (o + 0.5) * scale (- 0.5 for bilinear) with half_pixel_centers,
// else o * scale. Bilinear: floor(s) (at least 0) and ceil(s) (at most in - 1), weight
// s - floor(s). Nearest: floor(s), or with align_corners round(s) (s >= 0: floor(s), plus
// one where s - floor(s), exact, is at least 0.5), at most in - 1 (at least 0 with
// half_pixel_centers).
KernelEmitter::ResizeTaps KernelEmitter::ResizeSource(const Node& n, const Value& o, float scale, int64_t in, bool bilinear) {
  const bool align = GetBoolAttrOr(n, "align_corners", false).value();
  const bool half = GetBoolAttrOr(n, "half_pixel_centers", false).value();
  Value s = b_.Convert(Cast::kSIToFP, b_.Convert(Cast::kIndexCast, o, Type::I64()), Type::F32());
  if (half) s = b_.Apply(Op::kAddF, {s, FloatConst(0.5f)});
  s = b_.Apply(Op::kMulF, {s, FloatConst(scale)});
  if (half && bilinear) s = b_.Apply(Op::kSubF, {s, FloatConst(0.5f)});
  const Value f = b_.Apply(Op::kFloor, {s});
  auto index = [&](const Value& v) {
    return b_.Convert(Cast::kIndexCast, b_.Convert(Cast::kFPToSI, v, Type::I64()), Type::Index());
  };
  const Value last = IndexConst(in - 1);
  if (bilinear) {
    const Value lower = IndexArith(Op::kMaxSI, index(f), IndexConst(0));
    const Value upper = IndexArith(Op::kMinSI, index(b_.Apply(Op::kCeil, {s})), last);
    return {lower, upper, b_.Apply(Op::kSubF, {s, f})};
  }
  Value i = index(f);
  if (align) {
    const Value up = b_.Cmp(Pred::kOge, b_.Apply(Op::kSubF, {s, f}), FloatConst(0.5f));
    i = b_.Select(up, Plus(i, 1), i);
  }
  i = IndexArith(Op::kMinSI, i, last);
  if (half) i = IndexArith(Op::kMaxSI, i, IndexConst(0));
  return {i, i, Value()};
}

// ResizeBilinear (float32 of the four pixels around the point, interpolated as
// TensorFlow's kernel does: along the row, then between the rows) and
// ResizeNearestNeighbor (the nearest pixel).
StatusOr<Value> KernelEmitter::ResizeElement(const IndexedElement& x, bool bilinear) {
  const bool align = GetBoolAttrOr(x.n, "align_corners", false).value();
  auto scale = [&](int d) {
    const int64_t in = x.in.dim(d), out = x.out.dim(d);
    return align && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                            : static_cast<float>(in) / static_cast<float>(out);
  };
  const ResizeTaps y = ResizeSource(x.n, x.index[1], scale(1), x.in.dim(1), bilinear);
  const ResizeTaps w = ResizeSource(x.n, x.index[2], scale(2), x.in.dim(2), bilinear);
  if (!bilinear) return Get(x.data, {x.index[0], y.lower, w.lower, x.index[3]});
  const DType in_type = StaticDType(g_, x.data);
  auto pixel = [&](const Value& r, const Value& c) -> StatusOr<Value> {
    GJ_ASSIGN_OR_RETURN(Value v, Get(x.data, {x.index[0], r, c, x.index[3]}));
    if (v.type == Type::F32()) return v;
    return b_.Convert(in_type == DType::kUInt8 ? Cast::kUIToFP : Cast::kSIToFP, v, Type::F32());
  };
  auto lerp = [&](const Value& a, const Value& b, const Value& t) {
    return b_.Apply(Op::kAddF, {a, b_.Apply(Op::kMulF, {b_.Apply(Op::kSubF, {b, a}), t})});
  };
  GJ_ASSIGN_OR_RETURN(const Value top_left, pixel(y.lower, w.lower));
  GJ_ASSIGN_OR_RETURN(const Value top_right, pixel(y.lower, w.upper));
  GJ_ASSIGN_OR_RETURN(const Value bottom_left, pixel(y.upper, w.lower));
  GJ_ASSIGN_OR_RETURN(const Value bottom_right, pixel(y.upper, w.upper));
  return lerp(lerp(top_left, top_right, w.weight), lerp(bottom_left, bottom_right, w.weight), y.weight);
}

}  // namespace graphjit::emitter
