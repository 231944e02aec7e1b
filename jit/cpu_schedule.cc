// The CPU schedules: a kernel `@fusion_N(%begin: index, %end: index, <buffers>...)`
// computes rows [begin, end) of its fusion, so the caller can split the rows across the
// intra-op threads; each row is a loop nest over its elements, vectorized by LLVM.
#include <algorithm>
#include <cmath>

#include "jit/elemental.h"
#include "jit/kernel_emitter.h"
#include "runtime/allocator.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

StatusOr<std::string> KernelEmitter::EmitCpu(EmittedKernel* kernel, std::string* canonical) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  int64_t cols = 1;
  switch (fusion_.kind) {
    case FusionPlan::Kind::kLoop: {
      // Rows are all dims but the last; each row is one loop over the last dim.
      const int n = fusion_.space.rank();
      std::vector<int64_t> outer(dims.begin(), dims.begin() + std::max(0, n - 1)), inner;
      if (n > 0) inner = {dims.back()};
      cols = n > 0 ? dims.back() : 1;
      GJ_RETURN_IF_ERROR(Rows(outer, kernel, [&] {
        Index index = row_;
        return Nest(inner, 0, index, [&](const Index& at) { return StoreRoots(fusion_.roots, at); });
      }));
      break;
    }
    case FusionPlan::Kind::kRow: {
      const int k = fusion_.split;
      std::vector<int64_t> rows(dims.begin(), dims.begin() + k), reduced(dims.begin() + k, dims.end());
      for (int64_t d : reduced) cols *= d;
      std::vector<TensorId> full, per_row;
      for (const TensorId& root : fusion_.roots)
        (g_.info(root.node).shapes[root.index] == fusion_.space ? full : per_row).push_back(root);
      PlanRowCache(full, reduced);
      GJ_RETURN_IF_ERROR(Rows(rows, kernel, [&] {
        if (kernel->rows > 1) {
          const Value next = b_.Apply(Op::kAddI, {row_index_, IndexConst(1)});
          next_row_ = Delinearize(b_.Apply(Op::kMinUI, {next, IndexConst(kernel->rows - 1)}), rows);
        }
        return RowBody(full, per_row, reduced, cols);
      }));
      break;
    }
    case FusionPlan::Kind::kReduce:
      GJ_RETURN_IF_ERROR(Rows({}, kernel, [&] { return ReduceAll(fusion_.reductions[0]); }));
      for (int64_t d : dims) cols *= d;
      break;
    case FusionPlan::Kind::kLibrary: return Internal("a library call has no kernel to emit");
  }
  kernel->cost_per_row = cols * (num_ops_ + 1);
  kernel->function = "fusion_" + std::to_string(f_);
  std::vector<FunctionParam> params = {{begin_}, {end_}};
  for (int b : params_) {
    const FusionPlan::Buffer& buffer = p_.buffers[b];
    // What LLVM may rely on: the buffer's bytes and, for the outputs this kernel stores
    // (which the runtime allocates for it, as the ahead-of-time runner does),
    // Allocator::kAlignment; what it reads may be a caller's memory, aligned or not.
    // With them, stores into a large output stream past the caches (CompileOptions::
    // streaming_store_bytes).
    FunctionParam param{Param(b), /*noalias=*/true};
    param.dereferenceable = CheckedBytes(buffer.shape.dims(), static_cast<int64_t>(DTypeSize(buffer.dtype))).value_or(0);
    if (buffer.kind == FusionPlan::Buffer::Kind::kTemp && buffer.fusion == f_) param.align = Allocator::kAlignment;
    params.push_back(param);
    kernel->buffers.push_back(b);
  }
  if (canonical) *canonical = b_.Function("kernel", params, /*locations=*/false);
  return b_.Function(kernel->function, params);
}

// --- Loops.
// The row loop over [begin, end) of the rows (the product of `dims`), with row_ set.
Status KernelEmitter::Rows(const std::vector<int64_t>& dims, EmittedKernel* kernel, const std::function<Status()>& body) {
  kernel->rows = 1;
  for (int64_t d : dims) kernel->rows *= d;
  begin_ = b_.Parameter("%begin", Type::Index());
  end_ = b_.Parameter("%end", Type::Index());
  OpenScope();
  row_index_ = b_.InductionVar("%r");
  row_ = Delinearize(row_index_, dims);
  Status s = body();
  Block inner = CloseScope();
  GJ_RETURN_IF_ERROR(s);
  b_.For(row_index_, begin_, end_, IndexConst(1), {}, {}, std::move(inner), {});
  return Status::Ok();
}

// --- Prefetching the next row.
// A row kernel's first loop (a reduction) is the only one that reads the row from memory;
// the loops after it compute on the row in L1 (or in the row cache), and no load misses
// while they run, so the hardware's prefetchers have no stream to follow: a core would wait
// on memory for a row, then compute on it, never both at once. The second loop prefetches
// the next row's elements at its own columns (one line per vector), so that the next row
// is in L1 when its first loop starts. LLVM vectorizes the loop around the prefetch
// (backends/cpu/cpu_compiler.cc). Not for rows of more than kMaxPrefetchedRowBytes (of all
// the buffers prefetched): this row and the next would crowd each other out of L2 (on a
// Xeon with 2 MiB of L2, a softmax over rows of 1 MiB took 1.3x its time with prefetches,
// over rows of 512 KiB 0.95x, of 256 KiB 0.7x).
constexpr int64_t kMaxPrefetchedRowBytes = 256 << 10;

void KernelEmitter::PrefetchNextRow(const Index& at) {
  if (next_row_.empty() || loop_ != 1 || prefetched_) return;
  prefetched_ = true;
  int64_t cols = 1;
  for (int i = fusion_.split; i < fusion_.space.rank(); ++i) cols *= fusion_.space.dim(i);
  std::vector<int> buffers;
  int64_t bytes = 0;
  for (int b : params_) {
    const FusionPlan::Buffer& buffer = p_.buffers[b];
    if (buffer.shape != fusion_.space || (buffer.kind == FusionPlan::Buffer::Kind::kTemp && buffer.fusion == f_)) continue;
    buffers.push_back(b);
    bytes += cols * static_cast<int64_t>(DTypeSize(buffer.dtype));
  }
  if (bytes > kMaxPrefetchedRowBytes) return;
  Index index = next_row_;
  index.insert(index.end(), at.begin() + fusion_.split, at.end());
  for (int b : buffers) b_.Prefetch(Param(b), index);
}

// --- The row cache.
// A row fusion loops over each row once per reduction, then once more for what it
// stores. An expensive value (one with a transcendental or a division in it) that an
// earlier loop computes and a later loop needs again is kept in a stack array of one
// row (in L1), not computed twice: softmax computes exp(x - max) once per element.
// Whether `v` is computed inline, element by element at the loop's own column.
bool KernelEmitter::Inline(TensorId v) const {
  auto it = p_.buffer_of.find(v);
  if (it != p_.buffer_of.end() &&
      (p_.buffers[it->second].kind != FusionPlan::Buffer::Kind::kTemp || p_.buffers[it->second].fusion < f_))
    return false;
  auto kind = ClassifyNode(g_, v.node);
  return kind.ok() && (*kind == NodeKind::kElementwise || *kind == NodeKind::kSizeOneReshape);
}

// The full-shaped inline values under `v` (and whether any is expensive) into `out`.
bool KernelEmitter::Collect(TensorId v, std::map<TensorId, bool>* out) const {
  if (!Inline(v)) return false;
  if (auto it = out->find(v); it != out->end()) return it->second;
  bool expensive = TraitsOf(g_.graph.node(v.node)->op).expensive;
  for (const TensorId& in : g_.graph.node(v.node)->inputs) expensive |= Collect(in, out);
  if (Full(v)) (*out)[v] = expensive;
  return expensive;
}

// Top down from `v`: the first values an earlier loop computed, if expensive, are cached
// (stored by the first loop that computes them). `earlier`: value -> (expensive, loop).
void KernelEmitter::Mark(TensorId v, const std::map<TensorId, std::pair<bool, int>>& earlier, int64_t* bytes, int64_t row_bytes) {
  if (!Inline(v)) return;
  auto it = earlier.find(v);
  if (it != earlier.end() && it->second.first && ElementType(g_.info(v.node).dtypes[0]) == Type::F32()) {
    if (!cache_.count(v) && *bytes + row_bytes <= kMaxRowCacheBytes) {
      *bytes += row_bytes;
      cache_[v] = {Value{"%s" + std::to_string(cache_.size())}, it->second.second, false};
    }
    if (cache_.count(v)) return;
  }
  for (const TensorId& in : g_.graph.node(v.node)->inputs) Mark(in, earlier, bytes, row_bytes);
}

void KernelEmitter::PlanRowCache(const std::vector<TensorId>& full, const std::vector<int64_t>& reduced) {
  int64_t row_bytes = 4, bytes = 0;
  for (int64_t d : reduced) row_bytes *= d;
  std::map<TensorId, std::pair<bool, int>> earlier;
  std::vector<std::vector<TensorId>> loops;
  for (int r : fusion_.reductions) loops.push_back({g_.graph.node(r)->inputs[0]});
  loops.push_back(full);
  for (size_t j = 0; j < loops.size(); ++j) {
    for (const TensorId& v : loops[j]) Mark(v, earlier, &bytes, row_bytes);
    std::map<TensorId, bool> computed;
    for (const TensorId& v : loops[j]) Collect(v, &computed);
    for (auto& [v, expensive] : computed) earlier.emplace(v, std::pair{expensive, static_cast<int>(j)});
  }
  std::vector<int64_t> dims;
  for (int64_t d : reduced) dims.push_back(d ? d : 1);
  for (auto& [v, entry] : cache_) entry.array = b_.Alloca(Type::MemRef(dims, Type::F32()), entry.array.name);
}

// The cached element of `v` at `index` if an earlier loop stored it; else stores it if
// this loop is the one that computes it.
std::optional<Value> KernelEmitter::FromRowCache(TensorId v, const Index& index) {
  auto it = cache_.find(v);
  if (it == cache_.end() || loop_ <= it->second.loop || !it->second.stored) return std::nullopt;
  const Index cols(index.begin() + fusion_.split, index.end());
  return b_.Load(it->second.array, cols);
}

void KernelEmitter::ToRowCache(TensorId v, const Index& index, const Value& value) {
  auto it = cache_.find(v);
  if (it == cache_.end() || loop_ != it->second.loop || value.level != Innermost()) return;
  const Index cols(index.begin() + fusion_.split, index.end());
  b_.Store(value, it->second.array, cols);
  it->second.stored = true;
}

// A reduction over any axes: the output is initialized, then accumulated in place while
// the input is read in memory order.
Status KernelEmitter::ReduceAll(int r) {
  const Node& n = *g_.graph.node(r);
  const int out = p_.buffer_of.at({r, 0});
  GJ_ASSIGN_OR_RETURN(ReductionAxes axes, GetReductionAxes(g_, r));
  const Shape& in = fusion_.space;
  const std::vector<int64_t>& out_dims = p_.buffers[out].shape.dims();
  Index index;
  if (IsArgReduction(n.op)) {  // per output element, a loop along the axis
    const int axis = axes.axes[0];
    return Nest(out_dims, 0, index, [&](const Index& at) -> Status {
      Index along;
      GJ_ASSIGN_OR_RETURN(Value best, ArgMaxOrMin(r, in.dim(axis), along, [&](const Value& i) {
                            Index full = at;
                            full.insert(full.begin() + axis, i);
                            return full;
                          }));
      Store(out, at, best);
      return Status::Ok();
    });
  }
  const DType dtype = p_.buffers[out].dtype;
  if (dtype == DType::kHalf || dtype == DType::kBFloat16) return ReduceAllPerOutput(n, out, axes);
  if (dtype != DType::kFloat && dtype != DType::kInt32 && dtype != DType::kInt64)
    return Unimplemented(NodeLabel(n) + ": a column reduction of " + DTypeName(dtype));
  const Type type = ElementType(dtype);
  const Reducer reducer = ReducerOf(n.op, type);
  int64_t count = 1;
  for (int a : axes.axes) count *= in.dim(a);
  GJ_RETURN_IF_ERROR(Nest(out_dims, 0, index, [&](const Index& at) {
    Store(out, at, IdentityOf(reducer, type, count));
    return Status::Ok();
  }));
  GJ_RETURN_IF_ERROR(Nest(in.dims(), 0, index, [&](const Index& at) -> Status {
    Index to;
    for (int i = 0; i < in.rank(); ++i) {
      const bool is_reduced = std::binary_search(axes.axes.begin(), axes.axes.end(), i);
      if (!is_reduced)
        to.push_back(at[i]);
      else if (axes.keep_dims)
        to.push_back(IndexConst(0));
    }
    GJ_ASSIGN_OR_RETURN(Value v, Get(n.inputs[0], at));
    const Value acc = Load(out, to, Innermost());
    Store(out, to, b_.Apply(reducer.combine, {acc, v}));
    return Status::Ok();
  }));
  if (TraitsOf(n.op).reducer != OpReducer::kMean) return Status::Ok();
  if (type != Type::F32() && count == 0) return Status::Ok();  // an integer mean of nothing stays 0
  return Nest(out_dims, 0, index, [&](const Index& at) {
    const Value sum = Load(out, at, Innermost());
    const bool f = type == Type::F32();
    Store(out, at, b_.Apply(f ? Op::kDivF : Op::kDivSI, {sum, f ? FloatConst(count) : IntConst(count, type)}));
    return Status::Ok();
  });
}

}  // namespace graphjit::emitter
