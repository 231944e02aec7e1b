#include "jit/kernel_emitter.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ir/attr.h"
#include "jit/elemental.h"
#include "jit/passes/mark_row_shifts.h"
#include "runtime/kernels/common.h"
#include "runtime/kernels/indexing.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

std::string StorageType(DType dtype) {
  switch (dtype) {
    case DType::kFloat: return "f32";
    case DType::kHalf: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kBool: return "i8";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    default: return "";
  }
}

std::string MemRefType(const Shape& shape, DType dtype) {
  std::string t = "memref<";
  for (int64_t d : shape.dims()) t += std::to_string(d ? d : 1) + "x";
  return t + StorageType(dtype) + ">";
}

std::string F32Constant(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[48];
  std::snprintf(buf, sizeof buf, "arith.constant 0x%08X : f32", bits);
  return buf;
}

int DepthOf(const Index& index) {
  int depth = 0;
  for (const Value& v : index) depth = std::max(depth, v.depth);
  return depth;
}

std::string Names(const Index& index) {
  std::string s;
  for (const Value& v : index) s += (s.empty() ? "" : ", ") + v.name;
  return s;
}

Reducer ReducerOf(const std::string& op, const std::string& t) {
  const bool f = t == "f32";
  switch (TraitsOf(op).reducer) {
    case OpReducer::kMax: return {f ? "arith.maximumf" : "arith.maxsi", Reducer::kLowest};
    case OpReducer::kMin: return {f ? "arith.minimumf" : "arith.minsi", Reducer::kHighest};
    case OpReducer::kProd: return {f ? "arith.mulf" : "arith.muli", Reducer::kOne};
    default: return {f ? "arith.addf" : "arith.addi", Reducer::kZero};  // Sum, Mean
  }
}

StatusOr<std::string> KernelEmitter::Emit(EmittedModule* module) {
  std::string functions;
  if (schedule_ == Schedule::kCpu) {
    StartFunction();  // the GPU schedules start each of their kernels themselves
    EmittedKernel kernel;
    GJ_ASSIGN_OR_RETURN(functions, EmitCpu(&kernel));
    module->kernels.push_back(std::move(kernel));
  } else {
    GJ_ASSIGN_OR_RETURN(functions, EmitGpu(module));
  }
  module->num_ops += num_ops_;
  return functions;
}

void KernelEmitter::StartFunction() {
  code_ = {""};
  index_constants_.clear();
  float_constants_.clear();
  memo_.clear();
  params_.clear();
  workgroup_.clear();
  scratch_params_.clear();
  IndexConst(0);
  IndexConst(1);
}

Value KernelEmitter::Let(int depth, const std::string& rhs, const std::string& type) {
  Value v{Fresh("%v"), std::max(depth, floor_), type};
  code_[v.depth] += v.name + " = " + rhs + "\n";
  return v;
}

Value KernelEmitter::IndexConst(int64_t c) {
  const std::string name = "%i" + std::to_string(c);
  if (index_constants_.insert(c).second) code_[0] += name + " = arith.constant " + std::to_string(c) + " : index\n";
  return {name, 0, "index"};
}

Value KernelEmitter::FloatConst(float v) {
  auto [it, added] = float_constants_.try_emplace(F32Constant(v));
  if (added) {
    it->second = {Fresh("%f"), 0, "f32"};
    code_[0] += it->second.name + " = " + it->first + "\n";
  }
  return it->second;
}

Value KernelEmitter::IntConst(int64_t v, const std::string& type) {
  return Let(0, "arith.constant " + std::to_string(v) + " : " + type, type);
}

// `count` elements are reduced: a float sum of one or more starts at -0, so that a sum of
// -0s is -0, as in IEEE arithmetic and the reference kernels (an empty sum is +0).
Value KernelEmitter::IdentityOf(const Reducer& reducer, const std::string& type, int64_t count) {
  const bool i32 = type == "i32";
  switch (reducer.init) {
    case Reducer::kZero: return type == "f32" ? FloatConst(count > 0 ? -0.0f : 0.0f) : IntConst(0, type);
    case Reducer::kOne: return type == "f32" ? FloatConst(1) : IntConst(1, type);
    case Reducer::kLowest:
      return type == "f32" ? FloatConst(-INFINITY) : IntConst(i32 ? INT32_MIN : INT64_MIN, type);
    case Reducer::kHighest:
      return type == "f32" ? FloatConst(INFINITY) : IntConst(i32 ? INT32_MAX : INT64_MAX, type);
  }
  return FloatConst(0);
}

std::string KernelEmitter::CloseScope() {
  std::string body = std::move(code_.back());
  code_.pop_back();
  for (auto it = memo_.begin(); it != memo_.end();) it = it->second.depth > Innermost() ? memo_.erase(it) : std::next(it);
  return body;
}

Status KernelEmitter::Loop(const Value& lower, int64_t upper, int64_t step, const std::function<Status(const Value&)>& body) {
  return Loop(lower, IndexConst(upper), step, body);
}

Status KernelEmitter::Loop(const Value& lower, const Value& upper, int64_t step, const std::function<Status(const Value&)>& body) {
  const int at = Innermost();
  const Value step_value = IndexConst(step);
  OpenScope();
  const Value iv{Fresh("%x"), Innermost(), "index"};
  Status s = body(iv);
  std::string inner = CloseScope();
  GJ_RETURN_IF_ERROR(s);
  code_[at] += "scf.for " + iv.name + " = " + lower.name + " to " + upper.name + " step " + step_value.name + " {\n" +
               inner + "}\n";
  return Status::Ok();
}

StatusOr<std::vector<Value>> KernelEmitter::LoopCarrying(const Value& lower, int64_t upper, int64_t step,
                                                         const std::vector<Value>& accs, const CarriedBody& body) {
  return LoopCarrying(lower, IndexConst(upper), step, accs, body);
}

StatusOr<std::vector<Value>> KernelEmitter::LoopCarrying(const Value& lower, const Value& upper, int64_t step,
                                                         const std::vector<Value>& accs, const CarriedBody& body) {
  const int at = Innermost();
  const Value step_value = IndexConst(step);
  OpenScope();
  const Value iv{Fresh("%x"), Innermost(), "index"};
  std::vector<Value> args;
  for (const Value& acc : accs) args.push_back({Fresh("%a"), Innermost(), acc.type});
  auto next = body(iv, args);
  std::string inner = CloseScope();
  if (!next.ok()) return next.status();
  std::string lhs, inits;
  std::vector<Value> out = Results(at, accs, &lhs);
  for (size_t i = 0; i < accs.size(); ++i) inits += (i ? ", " : "") + args[i].name + " = " + accs[i].name;
  code_[at] += lhs + " = scf.for " + iv.name + " = " + lower.name + " to " + upper.name + " step " +
               step_value.name + " iter_args(" + inits + ") -> (" + Types(accs) + ") {\n" + inner + "scf.yield " +
               Names(*next) + " : " + Types(accs) + "\n}\n";
  return out;
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
  const Value group_upper =
      Let(Innermost(), "arith.subi " + upper.name + ", " + IndexConst((unroll - 1) * step).name + " : index", "index");
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
  const int at = Innermost();
  OpenScope();
  const Value iv{Fresh("%x"), Innermost(), "index"};
  std::vector<Value> args, carried = accs;
  for (const Value& acc : accs) args.push_back({Fresh("%a"), Innermost(), acc.type});
  const Value after_arg{Fresh("%a"), Innermost(), "index"};
  carried.push_back(lower);
  std::vector<std::vector<Value>> values;
  Status computed = Status::Ok();
  for (int64_t k = 0; k < unroll && computed.ok(); ++k) {
    const Value at_k = k == 0 ? iv : Let(Innermost(), "arith.addi " + iv.name + ", " + IndexConst(k * step).name + " : index", "index");
    auto v = elements(at_k);
    if (v.ok()) values.push_back(*v);
    computed = v.status();
  }
  std::vector<Value> next = args;
  for (const std::vector<Value>& v : values) next = fold(next, v);
  next.push_back(Let(Innermost(), "arith.addi " + iv.name + ", " + IndexConst(unroll * step).name + " : index", "index"));
  std::string inner = CloseScope();
  GJ_RETURN_IF_ERROR(computed);
  std::string lhs, inits;
  std::vector<Value> out = Results(at, carried, &lhs);
  for (size_t i = 0; i < carried.size(); ++i)
    inits += (i ? ", " : "") + (i < args.size() ? args[i].name : after_arg.name) + " = " + carried[i].name;
  code_[at] += lhs + " = scf.for " + iv.name + " = " + lower.name + " to " + group_upper->name + " step " +
               IndexConst(unroll * step).name + " iter_args(" + inits + ") -> (" + Types(carried) + ") {\n" + inner +
               "scf.yield " + Names(next) + " : " + Types(carried) + "\n}\n";
  // The rest, one step at a time.
  const Value rest = out.back();
  out.pop_back();
  return LoopCarrying(rest, upper, step, out, one);
}

std::vector<Value> KernelEmitter::Results(int at, const std::vector<Value>& like, std::string* lhs) {
  const std::string name = Fresh("%v");
  std::vector<Value> out;
  for (size_t i = 0; i < like.size(); ++i)
    out.push_back({like.size() == 1 ? name : name + "#" + std::to_string(i), at, like[i].type});
  *lhs = like.size() == 1 ? name : name + ":" + std::to_string(like.size());
  return out;
}

std::string KernelEmitter::Types(const std::vector<Value>& values) {
  std::string s;
  for (const Value& v : values) s += (s.empty() ? "" : ", ") + v.type;
  return s;
}

// A loop nest over dims[k..], appending its induction variables to `index`.
Status KernelEmitter::Nest(const std::vector<int64_t>& dims, size_t k, Index& index, const std::function<Status(const Index&)>& body) {
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
std::string KernelEmitter::Param(int buffer) {
  if (std::find(params_.begin(), params_.end(), buffer) == params_.end()) params_.push_back(buffer);
  return "%b" + std::to_string(buffer);
}

std::string KernelEmitter::BufferType(int buffer) const {
  const FusionPlan::Buffer& b = p_.buffers[buffer];
  if (schedule_ == Schedule::kCpu) return MemRefType(b.shape, b.dtype);
  return "memref<" + std::to_string(std::max<int64_t>(b.shape.num_elements(), 1)) + "x" + StorageType(b.dtype) + ">";
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
    if (linear && dim != 1)
      linear = Let(std::max(linear->depth, index[k].depth), "arith.muli " + linear->name + ", " + IndexConst(dim).name + " : index", "index");
    if (zero) continue;
    linear = !linear ? index[k]
                     : Let(std::max(linear->depth, index[k].depth), "arith.addi " + linear->name + ", " + index[k].name + " : index", "index");
  }
  return {linear ? *linear : IndexConst(0)};
}

std::string KernelEmitter::Access(int buffer, const Index& subscript) {
  return Param(buffer) + "[" + Names(subscript) + "] : " + BufferType(buffer);
}

// An element of a buffer, widened to the type it is computed in. `depth` -1: hoisted as
// far as the index allows (for buffers this kernel does not write).
Value KernelEmitter::Load(int buffer, const Index& index, int depth) {
  const DType dtype = p_.buffers[buffer].dtype;
  Value v;
  if (auto staged = FromStage(buffer, index, depth)) {
    v = *staged;
  } else {
    const Index subscript = Subscript(buffer, index);
    const std::string load = "memref.load " + Access(buffer, subscript);
    const int d = std::max({depth >= 0 ? depth : DepthOf(index), DepthOf(subscript), floor_});
    const bool early = d == load_slot_.depth && std::all_of(subscript.begin(), subscript.end(), [&](const Value& i) {
                         return i.depth < d || load_slot_.ready.count(i.name);
                       });
    if (early) {
      v = {Fresh("%v"), d, StorageType(dtype)};
      const std::string line = v.name + " = " + load + "\n";
      code_[d].insert(load_slot_.offset, line);
      load_slot_.offset += line.size();
    } else {
      v = Let(d, load, StorageType(dtype));
    }
    ToStage(buffer, index, v);
  }
  if (dtype == DType::kHalf || dtype == DType::kBFloat16)
    return Let(v.depth, "arith.extf " + v.name + " : " + v.type + " to f32", "f32");
  if (dtype == DType::kBool) return Let(v.depth, "arith.trunci " + v.name + " : i8 to i1", "i1");
  return v;
}

void KernelEmitter::Store(int buffer, const Index& index, const Value& v) {
  const DType dtype = p_.buffers[buffer].dtype;
  std::string name = v.name;
  if (dtype == DType::kHalf || dtype == DType::kBFloat16)
    name = Let(Innermost(), "arith.truncf " + name + " : f32 to " + StorageType(dtype), "").name;
  if (dtype == DType::kBool) name = Let(Innermost(), "arith.extui " + name + " : i1 to i8", "").name;
  code_[Innermost()] += "memref.store " + name + ", " + Access(buffer, Subscript(buffer, index)) + "\n";
}

Status KernelEmitter::StoreRoots(const std::vector<TensorId>& roots, const Index& index) {
  for (const TensorId& root : roots) {
    GJ_ASSIGN_OR_RETURN(Value v, Get(root, index));
    Store(p_.buffer_of.at(root), index, v);
  }
  return Status::Ok();
}

// --- Reductions.
Status KernelEmitter::ReduceRow(int r, const std::vector<int64_t>& reduced, int64_t count) {
  const Node& n = *g_.graph.node(r);
  if (IsArgReduction(n.op)) {
    Index index = row_;
    GJ_ASSIGN_OR_RETURN(reduced_[r], ArgMaxOrMin(r, reduced.back(), index, [&](const Value& i) {
      Index at = row_;
      at.push_back(i);
      return at;
    }));
    return Status::Ok();
  }
  Index index = row_;
  GJ_ASSIGN_OR_RETURN(Value acc, FoldReduction(n, ElementType(g_.info(r).dtypes[0]), reduced, index, count,
                                               /*reassoc=*/true, [&](const Index& at) {
                                                 PrefetchNextRow(at);
                                                 return Get(n.inputs[0], at);
                                               }));
  reduced_[r] = RoundedTo(g_.info(r).dtypes[0], acc);
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
KernelEmitter::Folding KernelEmitter::FoldingOf(const Node& n, const std::string& type, int64_t count, bool reassoc) {
  Folding f;
  const Reducer reducer = ReducerOf(n.op, type);
  const bool is_float = type == "f32";
  const OpReducer kind = TraitsOf(n.op).reducer;
  const bool max = kind == OpReducer::kMax;
  const tensorflow::AttrValue* shift = n.FindAttr(kRowShiftAttr);
  const bool min_max = is_float && (max || kind == OpReducer::kMin);
  const bool ordered = min_max && !(shift && shift->b());
  std::string fastmath = is_float && reassoc ? "reassoc" : "";
  if (min_max) fastmath += fastmath.empty() ? "nnan,nsz" : ",nnan,nsz";
  const std::string flags = (fastmath.empty() ? "" : " fastmath<" + fastmath + ">") + " : " + type;
  f.init = {IdentityOf(reducer, type, count)};
  if (ordered) f.init.insert(f.init.end(), {IntConst(0, "i32"), IntConst(-1, "i32")});
  f.step = [this, reducer, flags, type, ordered, max](const std::vector<Value>& accs, const Value& v) {
    const int d = Innermost();
    std::vector<Value> next = {Let(d, reducer.combine + " " + accs[0].name + ", " + v.name + flags, type)};
    if (ordered) {
      const Value bits = Let(d, "arith.bitcast " + v.name + " : f32 to i32", "i32");
      const Value magnitude = Let(d, "arith.andi " + bits.name + ", " + IntConst(INT32_MAX, "i32").name + " : i32", "i32");
      next.push_back(Let(d, "arith.maxui " + accs[1].name + ", " + magnitude.name + " : i32", "i32"));
      const Value key = max ? bits : Let(d, "arith.xori " + bits.name + ", " + IntConst(INT32_MIN, "i32").name + " : i32", "i32");
      next.push_back(Let(d, "arith.minui " + accs[2].name + ", " + key.name + " : i32", "i32"));
    }
    return next;
  };
  f.combine = {reducer.combine + " %0, %1" + flags};
  if (ordered) f.combine.insert(f.combine.end(), {"arith.maxui %0, %1 : i32", "arith.minui %0, %1 : i32"});
  const bool mean = kind == OpReducer::kMean;
  f.finish = [this, type, count, ordered, max, is_float, mean](const std::vector<Value>& accs) {
    Value acc = accs[0];
    if (ordered) {
      const int d = acc.depth;
      const Value nan = Let(d, "arith.cmpi ugt, " + accs[1].name + ", " + IntConst(0x7f800000, "i32").name + " : i32", "i1");
      const Value tie_seen = Let(d, "arith.cmpi eq, " + accs[2].name + ", " + IntConst(0, "i32").name + " : i32", "i1");
      const Value zero = Let(d, "arith.cmpf oeq, " + acc.name + ", " + FloatConst(0).name + " : f32", "i1");
      const Value signed_zero = Let(d, "arith.select " + tie_seen.name + ", " + FloatConst(max ? 0.0f : -0.0f).name + ", " +
                                           FloatConst(max ? -0.0f : 0.0f).name + " : f32", "f32");
      acc = Let(d, "arith.select " + zero.name + ", " + signed_zero.name + ", " + acc.name + " : f32", "f32");
      acc = Let(d, "arith.select " + nan.name + ", " + FloatConst(NAN).name + ", " + acc.name + " : f32", "f32");
    }
    if (mean && is_float)
      acc = Let(acc.depth, "arith.divf " + acc.name + ", " + FloatConst(count).name + " : f32", "f32");
    if (mean && !is_float && count > 0)
      acc = Let(acc.depth, "arith.divsi " + acc.name + ", " + IntConst(count, type).name + " : " + type, type);
    return acc;
  };
  return f;
}

StatusOr<Value> KernelEmitter::FoldReduction(const Node& n, const std::string& type, const std::vector<int64_t>& dims, Index& index,
                              int64_t count, bool reassoc, const std::function<StatusOr<Value>(const Index&)>& element) {
  const Folding f = FoldingOf(n, type, count, reassoc);
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, Fold(dims, 0, index, f.init, f.step, element));
  return f.finish(accs);
}

// A reduction into a 16-bit float type: per output element, a loop over what it reduces,
// accumulated in f32 and rounded once, as the reference kernel does (accumulating in the
// 16-bit output itself would round every partial result).
Status KernelEmitter::ReduceAllPerOutput(const Node& n, int out, const ReductionAxes& axes) {
  Index index;
  return Nest(p_.buffers[out].shape.dims(), 0, index, [&](const Index& at) -> Status {
    GJ_ASSIGN_OR_RETURN(Value acc, ReduceOne(n, axes, at));
    Store(out, at, acc);
    return Status::Ok();
  });
}

StatusOr<Value> KernelEmitter::ReduceOne(const Node& n, const ReductionAxes& axes, const Index& at) {
  std::vector<int64_t> reduced_dims;
  int64_t count = 1;
  for (int a : axes.axes) {
    reduced_dims.push_back(fusion_.space.dim(a));
    count *= fusion_.space.dim(a);
  }
  Index along;
  return FoldReduction(n, ElementType(g_.info(n.id).dtypes[0]), reduced_dims, along, count, /*reassoc=*/false,
                       [&](const Index& r) { return Get(n.inputs[0], InputIndex(axes, at, r)); });
}

Index KernelEmitter::InputIndex(const ReductionAxes& axes, const Index& at, const Index& reduced) {
  Index full;
  size_t o = 0, k = 0;
  for (int i = 0; i < fusion_.space.rank(); ++i) {
    if (std::binary_search(axes.axes.begin(), axes.axes.end(), i)) {
      full.push_back(reduced[k++]);
      if (axes.keep_dims) ++o;
    } else {
      full.push_back(at[o++]);
    }
  }
  return full;
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
    Value q = stride > 1 ? Let(linear.depth, "arith.divui " + linear.name + ", " + IndexConst(stride).name + " : index", "index") : linear;
    index.push_back(j == 0 ? q : Let(linear.depth, "arith.remui " + q.name + ", " + IndexConst(dims[j]).name + " : index", "index"));
  }
  return index;
}

Status KernelEmitter::RowBody(const std::vector<TensorId>& full, const std::vector<TensorId>& per_row,
                              const std::vector<int64_t>& reduced, int64_t cols) {
  // 1. Each reduction, one loop over the row; later ones read earlier ones.
  for (int r : fusion_.reductions) {
    GJ_RETURN_IF_ERROR(ReduceRow(r, reduced, cols));
    ++loop_;
  }
  // 2. What is stored per row, then what is stored per element.
  GJ_RETURN_IF_ERROR(StorePerRow(per_row));
  if (full.empty()) return Status::Ok();
  Index index = row_;
  return Nest(reduced, 0, index, [&](const Index& at) {
    PrefetchNextRow(at);
    return StoreRoots(full, at);
  });
}

Status KernelEmitter::StorePerRow(const std::vector<TensorId>& per_row) {
  for (const TensorId& root : per_row) {
    Index at = row_;
    while (static_cast<int>(at.size()) < ShapeOf(root).rank()) at.push_back(IndexConst(0));
    GJ_RETURN_IF_ERROR(StoreRoots({root}, at));
  }
  return Status::Ok();
}

// ArgMax (ArgMin) along an axis of `size` elements: the first index of the largest
// (smallest) value, as the reference kernel finds it (a NaN is never larger or smaller;
// the first element is taken even if it is NaN). `at(i)` is the input's index for
// position `i` on the axis.
StatusOr<Value> KernelEmitter::ArgMaxOrMin(int id, int64_t size, Index& index, const std::function<Index(const Value&)>& at) {
  const Node& n = *g_.graph.node(id);
  const bool max = TraitsOf(n.op).reducer == OpReducer::kArgMax;
  const std::string value_type = ElementType(StaticDType(g_, n.inputs[0]));
  const std::string out_type = ElementType(g_.info(id).dtypes[0]);
  const bool f = value_type == "f32";
  const bool i32 = value_type == "i32";
  const Value start = f ? FloatConst(max ? -INFINITY : INFINITY)
                        : IntConst(max ? (i32 ? INT32_MIN : INT64_MIN) : (i32 ? INT32_MAX : INT64_MAX), value_type);
  const std::string better = f ? (max ? "arith.cmpf ogt, " : "arith.cmpf olt, ") : (max ? "arith.cmpi sgt, " : "arith.cmpi slt, ");
  Value position;
  auto step = [&](const std::vector<Value>& accs, const Value& v) {
    const int d = Innermost();
    const Value wins = Let(d, better + v.name + ", " + accs[0].name + " : " + value_type, "i1");
    const Value first = Let(d, "arith.cmpi eq, " + position.name + ", " + IndexConst(0).name + " : index", "i1");
    const Value take = Let(d, "arith.ori " + wins.name + ", " + first.name + " : i1", "i1");
    return std::vector<Value>{
        Let(d, "arith.select " + take.name + ", " + v.name + ", " + accs[0].name + " : " + value_type, value_type),
        Let(d, "arith.select " + take.name + ", " + position.name + ", " + accs[1].name + " : index", "index")};
  };
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                      Fold({size}, 0, index, {start, IndexConst(0)}, step, [&](const Index& i) -> StatusOr<Value> {
                        position = i.back();
                        return Get(n.inputs[0], at(i.back()));
                      }));
  return Let(accs[1].depth, "arith.index_cast " + accs[1].name + " : index to " + out_type, out_type);
}

// --- Elements.
// The element of `v` at `index` (in v's shape).
StatusOr<Value> KernelEmitter::Get(TensorId v, const Index& index) {
  const std::string key = g_.graph.TensorName(v) + "@" + Names(index);
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
    approximate = ElementType(g_.info(v.node).dtypes[0]) == "f32";
  } else if (n.op != "Placeholder" && n.op != "Const") {
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
std::string KernelEmitter::DivideByInvariant(const Value& x, const Value& d, MlirWriter& w) {
  const Value r = Let(d.depth, "arith.divf " + FloatConst(1).name + ", " + d.name + " : f32", "f32");
  const Value magnitude = Let(d.depth, "math.absf " + r.name + " : f32", "f32");
  const Value above_min = Let(d.depth, "arith.cmpf oge, " + magnitude.name + ", " + FloatConst(FLT_MIN).name + " : f32", "i1");
  const Value below_max = Let(d.depth, "arith.cmpf ole, " + magnitude.name + ", " + FloatConst(FLT_MAX).name + " : f32", "i1");
  const Value normal = Let(d.depth, "arith.andi " + above_min.name + ", " + below_max.name + " : i1", "i1");
  const std::string q = w.Fresh();
  w.Line(q + " = scf.if " + normal.name + " -> (f32) {");
  w.Line("  scf.yield " + w.Let("arith.mulf " + x.name + ", " + r.name + " : f32") + " : f32");
  w.Line("} else {");
  w.Line("  scf.yield " + w.Let("arith.divf " + x.name + ", " + d.name + " : f32") + " : f32");
  w.Line("}");
  return q;
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
      if (c.dtype() == DType::kBool) return Let(0, c.ValueAsInt(0) ? "arith.constant true" : "arith.constant false", "i1");
      const std::string type = ElementType(c.dtype());
      if (type == "i32" || type == "i64") return IntConst(c.ValueAsInt(0), type);
      return FloatConst(static_cast<float>(c.ValueAsDouble(0)));
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
      std::vector<std::string> operands, types;
      int depth = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const TensorId& in = scaled ? scaled->first : n.inputs[i];
        const Shape& in_shape = ShapeOf(in);
        GJ_ASSIGN_OR_RETURN(x.emplace_back(), Get(in, ReadAt(ReadDims(n, static_cast<int>(i), in_shape, shape), index, in_shape)));
        operands.push_back(x.back().name);
        types.push_back(x.back().type);
        depth = std::max(depth, x.back().depth);
      }
      MlirWriter w(Fresh("%e") + "_");
      std::string result;
      if (scaled) {
        result = ScaledErf(x[0].name, scaled->second, w);
      } else if (n.op == "RealDiv" && types[0] == "f32" && x[1].depth < x[0].depth && MayRoundDivision(v)) {
        result = DivideByInvariant(x[0], x[1], w);
      } else {
        GJ_ASSIGN_OR_RETURN(result, EmitElemental(n, operands, types, w));
      }
      depth = std::max(depth, floor_);
      code_[depth] += w.code();
      ++num_ops_;
      return RoundedTo(g_.info(v.node).dtypes[0], Value{result, depth, ElementType(g_.info(v.node).dtypes[0])});
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
  const std::string t = StorageType(dtype);
  const Value narrow = Let(v.depth, "arith.truncf " + v.name + " : f32 to " + t, t);
  return Let(v.depth, "arith.extf " + narrow.name + " : " + t + " to f32", "f32");
}

// The index of an operand of shape `s` broadcast into `out` at `index`.
// The index of an input of shape `in` read through `dims` (see ReadDims) at `index`.
Index KernelEmitter::ReadAt(const std::vector<int>& dims, const Index& index, const Shape& in) {
  Index to;
  for (int d = 0; d < in.rank(); ++d) to.push_back(in.dim(d) == 1 || dims[d] < 0 ? IndexConst(0) : index[dims[d]]);
  return to;
}

StatusOr<Value> KernelEmitter::Branch(const Value& cond, const std::function<StatusOr<Value>()>& then,
                                      const std::function<StatusOr<Value>()>& otherwise) {
  const int at = Innermost(), saved_floor = floor_;
  std::string branches[2];
  Value yielded[2];
  for (int b = 0; b < 2; ++b) {
    OpenScope();
    floor_ = Innermost();
    auto v = b == 0 ? then() : otherwise();
    floor_ = saved_floor;
    branches[b] = CloseScope();
    if (!v.ok()) return v.status();
    yielded[b] = *v;
  }
  const Value result{Fresh("%v"), at, yielded[0].type};
  code_[at] += result.name + " = scf.if " + cond.name + " -> (" + result.type + ") {\n" + branches[0] + "scf.yield " +
               yielded[0].name + " : " + result.type + "\n} else {\n" + branches[1] + "scf.yield " + yielded[1].name +
               " : " + result.type + "\n}\n";
  return result;
}

StatusOr<Value> KernelEmitter::Pieces(const Index& index, int axis, const std::vector<int64_t>& ends, const Piece& piece,
                                      size_t k) {
  const int64_t start = k == 0 ? 0 : ends[k - 1];
  const Value local = start ? IndexArith("arith.subi", index[axis], IndexConst(start)) : index[axis];
  if (k + 1 == ends.size()) return piece(k, local);
  return Branch(IndexCmp("ult", index[axis], IndexConst(ends[k])), [&] { return piece(k, local); },
                [&] { return Pieces(index, axis, ends, piece, k + 1); });
}

Value KernelEmitter::IndexArith(const char* op, const Value& a, const Value& b) {
  return Let(std::max(a.depth, b.depth), std::string(op) + " " + a.name + ", " + b.name + " : index", "index");
}

Value KernelEmitter::IndexCmp(const char* pred, const Value& a, const Value& b) {
  return Let(std::max(a.depth, b.depth), std::string("arith.cmpi ") + pred + ", " + a.name + ", " + b.name + " : index", "i1");
}

StatusOr<Value> KernelEmitter::Indexed(TensorId v, const Index& index) {
  const Node& n = *g_.graph.node(v.node);
  const std::string& op = n.op;
  const Shape& out = ShapeOf(v);
  const TensorId data = n.inputs[op == "Split" || op == "Fill" ? 1 : 0];
  const Shape& in = ShapeOf(data);
  auto ints = [&](int i) { return IntValues(g_.constants[n.inputs[i].node]); };
  auto plus = [&](const Value& i, int64_t c) { return c ? IndexArith("arith.addi", i, IndexConst(c)) : i; };
  auto select = [&](const Value& cond, const Value& a, const Value& b) {
    return Let(std::max({cond.depth, a.depth, b.depth}),
               "arith.select " + cond.name + ", " + a.name + ", " + b.name + " : " + a.type, a.type);
  };
  auto zero = [&]() -> StatusOr<Value> {
    const std::string type = ElementType(g_.info(v.node).dtypes[0]);
    if (type == "f32") return FloatConst(0);
    if (type == "i1") return Let(0, "arith.constant false", "i1");
    return IntConst(0, type);
  };
  Index at = index;
  if (op == "Fill") return Get(data, {});
  if (op == "Slice") {
    const std::vector<int64_t> begin = ints(1);
    for (int d = 0; d < in.rank(); ++d) at[d] = plus(index[d], begin[d]);
    return Get(data, at);
  }
  if (op == "StridedSlice") {
    const InferenceContext c{n, {}, {}, {}, {}, {}};
    GJ_ASSIGN_OR_RETURN(std::vector<SliceDim> dims, ResolveStridedSlice(c, in, ints(1), ints(2), ints(3)));
    at.assign(in.rank(), IndexConst(0));
    size_t k = 0;  // the result's dim
    for (const SliceDim& s : dims) {
      const Value* i = s.keep ? &index[k++] : nullptr;
      if (s.in_dim < 0) continue;
      if (!i || s.size == 1) {
        at[s.in_dim] = IndexConst(s.begin);
      } else {
        at[s.in_dim] = plus(s.stride == 1 ? *i : IndexArith("arith.muli", *i, IndexConst(s.stride)), s.begin);
      }
    }
    return Get(data, at);
  }
  if (op == "Tile") {
    for (int d = 0; d < in.rank(); ++d)
      at[d] = in.dim(d) == 1     ? IndexConst(0)
              : in.dim(d) == out.dim(d) ? index[d]
                                        : IndexArith("arith.remui", index[d], IndexConst(in.dim(d)));
    return Get(data, at);
  }
  if (op == "ReverseV2") {
    for (int64_t a : ints(1)) {
      const int d = static_cast<int>(a < 0 ? a + in.rank() : a);
      at[d] = IndexArith("arith.subi", IndexConst(in.dim(d) - 1), index[d]);
    }
    return Get(data, at);
  }
  if (op == "MirrorPad") {
    // REFLECT repeats no edge element, SYMMETRIC repeats it: before the start, j -> -j - 1 +
    // reflect; past the end (size n), j -> 2n - 1 - reflect - j.
    GJ_ASSIGN_OR_RETURN(std::string mode, GetStringAttr(n, "mode"));
    const int64_t reflect = mode == "REFLECT" ? 1 : 0;
    const std::vector<int64_t> pads = ints(1);
    for (int d = 0; d < in.rank(); ++d) {
      Value j = pads[2 * d] ? IndexArith("arith.subi", index[d], IndexConst(pads[2 * d])) : index[d];
      if (pads[2 * d])
        j = select(IndexCmp("slt", j, IndexConst(0)), IndexArith("arith.subi", IndexConst(reflect - 1), j), j);
      if (pads[2 * d + 1])
        j = select(IndexCmp("sge", j, IndexConst(in.dim(d))),
                   IndexArith("arith.subi", IndexConst(2 * in.dim(d) - 1 - reflect), j), j);
      at[d] = j;
    }
    return Get(data, at);
  }
  if (op == "Pad" || op == "PadV2") {
    const std::vector<int64_t> pads = ints(1);
    std::optional<Value> inside;
    for (int d = 0; d < in.rank(); ++d) {
      if (!pads[2 * d] && !pads[2 * d + 1]) continue;
      at[d] = pads[2 * d] ? IndexArith("arith.subi", index[d], IndexConst(pads[2 * d])) : index[d];
      const Value ok = IndexCmp("ult", at[d], IndexConst(in.dim(d)));  // before the start, at[d] wraps around
      inside = !inside ? ok : Let(std::max(inside->depth, ok.depth), "arith.andi " + inside->name + ", " + ok.name + " : i1", "i1");
    }
    if (!inside) return Get(data, at);
    return Branch(*inside, [&] { return Get(data, at); }, [&]() -> StatusOr<Value> {
      if (op == "PadV2") return Get(n.inputs[2], {});
      return zero();
    });
  }
  if (op == "GatherV2") {
    // The result is params[:axis] + indices[batch_dims:] + params[axis + 1:] (the batch dims
    // among the first); an index outside [0, dim) reads as zero, as TensorFlow's GPU kernel
    // writes it (the JIT compiles GatherV2 for GPUs only).
    int64_t axis = ints(2)[0];
    if (axis < 0) axis += in.rank();
    GJ_ASSIGN_OR_RETURN(int64_t batch_dims, GetIntAttrOr(n, "batch_dims", 0));
    const int indices_rank = ShapeOf(n.inputs[1]).rank();
    if (batch_dims < 0) batch_dims += indices_rank;
    const int64_t own = indices_rank - batch_dims;  // the indices' dims of their own, in the result
    Index where(index.begin(), index.begin() + batch_dims);
    where.insert(where.end(), index.begin() + axis, index.begin() + axis + own);
    GJ_ASSIGN_OR_RETURN(const Value x, Get(n.inputs[1], where));
    const Value i = Let(x.depth, "arith.index_cast " + x.name + " : " + x.type + " to index", "index");
    at.assign(index.begin(), index.begin() + axis);
    at.push_back(i);
    at.insert(at.end(), index.begin() + axis + own, index.end());
    return Branch(IndexCmp("ult", i, IndexConst(in.dim(static_cast<int>(axis)))), [&] { return Get(data, at); }, zero);
  }
  if (op == "_GraphjitSetRow") {
    // The list (input 0) with row `index` replaced by the item; the index clamped into the
    // list, as XLA's dynamic-update-slice does (the JIT compiles it for GPUs only).
    GJ_ASSIGN_OR_RETURN(const Value x, Get(n.inputs[1], {}));
    Value row = Let(x.depth, "arith.index_cast " + x.name + " : " + x.type + " to index", "index");
    row = IndexArith("arith.maxsi", row, IndexConst(0));
    row = IndexArith("arith.minsi", row, IndexConst(in.dim(0) - 1));
    const Index item(index.begin() + 1, index.end());
    GJ_ASSIGN_OR_RETURN(const Value replaced, Get(n.inputs[2], item));
    GJ_ASSIGN_OR_RETURN(const Value kept, Get(data, index));
    return select(IndexCmp("eq", index[0], row), replaced, kept);
  }
  if (op == "Pack" || op == "Unpack") {
    GJ_ASSIGN_OR_RETURN(int64_t axis, GetIntAttrOr(n, "axis", 0));
    if (op == "Unpack") {
      at.insert(at.begin() + (axis < 0 ? axis + in.rank() : axis), IndexConst(v.index));
      return Get(data, at);
    }
    const int a = static_cast<int>(axis < 0 ? axis + out.rank() : axis);
    std::vector<int64_t> ends(n.inputs.size());
    for (size_t k = 0; k < ends.size(); ++k) ends[k] = static_cast<int64_t>(k) + 1;
    at.erase(at.begin() + a);
    return Pieces(index, a, ends, [&](size_t k, const Value&) { return Get(n.inputs[k], at); });
  }
  if (op == "Split" || op == "SplitV") {
    int64_t axis = ints(op == "Split" ? 0 : 2)[0];
    if (axis < 0) axis += out.rank();
    int64_t offset = 0;  // the outputs before this one, along the axis
    for (int k = 0; k < v.index; ++k) offset += g_.info(v.node).shapes[k].dim(static_cast<int>(axis));
    at[axis] = plus(index[axis], offset);
    return Get(data, at);
  }
  if (op == "Range") {
    // start + i * delta (its inputs are constants: they decide the output's shape).
    GJ_ASSIGN_OR_RETURN(const Value start, Get(n.inputs[0], {}));
    GJ_ASSIGN_OR_RETURN(const Value delta, Get(n.inputs[2], {}));
    const std::string& type = start.type;
    const bool floating = type == "f32";
    Value i = Let(index[0].depth, "arith.index_cast " + index[0].name + " : index to " + (floating ? "i64" : type),
                  floating ? "i64" : type);
    if (floating) i = Let(i.depth, "arith.uitofp " + i.name + " : i64 to f32", "f32");
    const std::string f = floating ? "f" : "i";
    const Value step = Let(i.depth, "arith.mul" + f + " " + i.name + ", " + delta.name + " : " + type, type);
    return Let(step.depth, "arith.add" + f + " " + start.name + ", " + step.name + " : " + type, type);
  }
  if (op == "OneHot") {
    GJ_ASSIGN_OR_RETURN(int64_t axis, GetIntAttrOr(n, "axis", -1));
    const int a = static_cast<int>(axis == -1 ? out.rank() - 1 : axis);
    at.erase(at.begin() + a);
    GJ_ASSIGN_OR_RETURN(const Value x, Get(data, at));
    const Value i = Let(x.depth, "arith.index_cast " + x.name + " : " + x.type + " to index", "index");
    GJ_ASSIGN_OR_RETURN(const Value on, Get(n.inputs[2], {}));
    GJ_ASSIGN_OR_RETURN(const Value off, Get(n.inputs[3], {}));
    return select(IndexCmp("eq", i, index[a]), on, off);
  }
  return Internal(NodeLabel(n) + " is not an indexed op");
}

}  // namespace graphjit::emitter
