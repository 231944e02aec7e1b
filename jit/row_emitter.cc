#include "jit/row_emitter.h"

#include <set>

#include "jit/elemental.h"
#include "jit/gpu_launch.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

StatusOr<int64_t> RowEmitter::CpuBody(EmittedKernel* kernel) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  const int k = fusion_.split;
  std::vector<int64_t> rows(dims.begin(), dims.begin() + k), reduced(dims.begin() + k, dims.end());
  int64_t cols = 1;
  for (int64_t d : reduced) cols *= d;
  std::vector<TensorId> full, per_row;
  for (const TensorId& root : fusion_.roots) (Full(root) ? full : per_row).push_back(root);
  PlanRowCache(full, reduced);
  GJ_RETURN_IF_ERROR(Rows(rows, kernel, [&] {
    if (kernel->rows > 1) {
      const Value next = b_.Apply(Op::kAddI, {row_index_, IndexConst(1)});
      next_row_ = Delinearize(b_.Apply(Op::kMinUI, {next, IndexConst(kernel->rows - 1)}), rows);
    }
    return RowBody(full, per_row, reduced, cols);
  }));
  return cols;
}

void RowEmitter::StartGpuFunction() {
  KernelEmitter::StartGpuFunction();
  stages_.clear();
  stage_cols_.clear();
  stage_loop_ = 0;
  stage_bytes_ = stage_budget_ = 0;
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

void RowEmitter::PrefetchNextRow(const Index& at) {
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
bool RowEmitter::Inline(TensorId v) const {
  auto it = p_.buffer_of.find(v);
  if (it != p_.buffer_of.end() &&
      (p_.buffers[it->second].kind != FusionPlan::Buffer::Kind::kTemp || p_.buffers[it->second].fusion < f_))
    return false;
  auto kind = ClassifyNode(g_, v.node);
  return kind.ok() && (*kind == NodeKind::kElementwise || *kind == NodeKind::kSizeOneReshape);
}

// The full-shaped inline values under `v` (and whether any is expensive) into `out`.
bool RowEmitter::Collect(TensorId v, std::map<TensorId, bool>* out) const {
  if (!Inline(v)) return false;
  if (auto it = out->find(v); it != out->end()) return it->second;
  bool expensive = TraitsOf(g_.graph.node(v.node)->op).expensive;
  for (const TensorId& in : g_.graph.node(v.node)->inputs) expensive |= Collect(in, out);
  if (Full(v)) (*out)[v] = expensive;
  return expensive;
}

// Top down from `v`: the first values an earlier loop computed, if expensive, are cached
// (stored by the first loop that computes them). `earlier`: value -> (expensive, loop).
void RowEmitter::Mark(TensorId v, const std::map<TensorId, std::pair<bool, int>>& earlier, int64_t* bytes, int64_t row_bytes) {
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

void RowEmitter::PlanRowCache(const std::vector<TensorId>& full, const std::vector<int64_t>& reduced) {
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
std::optional<Value> RowEmitter::FromRowCache(TensorId v, const Index& index) {
  auto it = cache_.find(v);
  if (it == cache_.end() || loop_ <= it->second.loop || !it->second.stored) return std::nullopt;
  const Index cols(index.begin() + fusion_.split, index.end());
  return b_.Load(it->second.array, cols);
}

void RowEmitter::ToRowCache(TensorId v, const Index& index, const Value& value) {
  auto it = cache_.find(v);
  if (it == cache_.end() || loop_ != it->second.loop || value.level != Innermost()) return;
  const Index cols(index.begin() + fusion_.split, index.end());
  b_.Store(value, it->second.array, cols);
  it->second.stored = true;
}

// --- GPU.
Status RowEmitter::GpuBody(EmittedKernel* kernel, EmittedModule* module, std::string* functions) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  const std::vector<int64_t> row_dims(dims.begin(), dims.begin() + fusion_.split),
      reduced(dims.begin() + fusion_.split, dims.end());
  int64_t rows = 1, cols = 1;
  for (int64_t d : row_dims) rows *= d;
  for (int64_t d : reduced) cols *= d;
  std::vector<TensorId> full, per_row;
  for (const TensorId& root : fusion_.roots) (ShapeOf(root) == fusion_.space ? full : per_row).push_back(root);
  const int loops = static_cast<int>(fusion_.reductions.size()) + (full.empty() ? 0 : 1);
  const bool splits = SplitsAcrossThreads(g_, fusion_);
  const std::vector<int64_t> column_bytes = splits ? StagedColumnBytes() : std::vector<int64_t>{};
  const RowLaunch launch = ChooseRowLaunch(target_.gpu, rows, cols, splits, loops, column_bytes);
  if (rows == 0) return Status::Ok();  // grid 0: nothing to launch
  RowThreads t{launch, reduced, cols, full, per_row};
  switch (launch.kind) {
    case RowLaunch::Kind::kThreadPerRow:
      return GridStride(rows, kGpuBlock, kernel, [&](const Value& row) {
        row_ = Delinearize(row, row_dims);
        return RowBody(full, per_row, reduced, cols);
      });
    case RowLaunch::Kind::kInPhases: return GpuRowsInPhases(full, per_row, row_dims, reduced, launch.parts, module, functions);
    case RowLaunch::Kind::kThreadsPerRow: break;
  }
  kernel->block = launch.block;
  kernel->grid = launch.grid;
  kernel->cluster = launch.cluster;
  // The thread's first column (lane) and, in a cluster, its block's slice [first, end).
  Value row = bid_;
  t.lane = tid_;
  t.end = IndexConst(cols);
  if (launch.cluster > 1) {
    const Value rank = b_.Apply(Op::kRemUI, {bid_, IndexConst(launch.cluster)});
    row = b_.Apply(Op::kDivUI, {bid_, IndexConst(launch.cluster)});
    t.first = b_.Apply(Op::kMulI, {rank, IndexConst(launch.slice)});
    t.lane = b_.Apply(Op::kAddI, {t.first, tid_});
    t.end = b_.Apply(Op::kMinUI, {b_.Apply(Op::kAddI, {t.first, IndexConst(launch.slice)}), t.end});
  }
  if (launch.warp_per_row) {
    t.lane = b_.Apply(Op::kRemUI, {tid_, IndexConst(warp_)});
    const Value warp = b_.Apply(Op::kDivUI, {tid_, IndexConst(warp_)});
    row = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {bid_, IndexConst(launch.rows_per_block)}), warp});
  }
  auto body = [&]() -> Status {
    row_ = Delinearize(row, row_dims);
    return RowAcrossThreads(t);
  };
  // A warp past the last row has nothing to do (the whole warp: its shuffles stay whole).
  if (rows % launch.rows_per_block == 0) return body();
  return If(b_.Cmp(Pred::kUlt, row, IndexConst(rows)), body);
}

Index RowEmitter::RowAt(const RowThreads& t, const Value& column) {
  Index index = row_;
  for (const Value& v : Delinearize(column, t.reduced)) index.push_back(v);
  return index;
}

Index RowEmitter::StagedRowAt(const RowThreads& t, const Value& column, int loop) {
  stage_loop_ = loop;
  const Index index = RowAt(t, column);
  if (stage_budget_ > 0) {
    stage_cols_.assign(index.begin() + static_cast<std::ptrdiff_t>(row_.size()), index.end());
    stage_at_ = t.launch.cluster > 1 ? b_.Apply(Op::kSubI, {column, t.first}) : column;
  }
  return index;
}

// The thread's columns: lane + k * threads. Held: each a value the reductions and stores
// share (the last one guarded when the row does not fill it). Not held: several columns at
// a time, their loads in flight together, the row staged in shared memory when more than
// one loop reads it (FromStage).
Status RowEmitter::RowAcrossThreads(RowThreads& t) {
  const RowLaunch& launch = t.launch;
  const int64_t per_thread = CeilDiv(launch.slice, launch.threads);
  if (launch.held)
    for (int64_t k = 0; k < per_thread; ++k)
      t.columns.push_back(k == 0 ? t.lane : b_.Apply(Op::kAddI, {t.lane, IndexConst(k * launch.threads)}));
  if (launch.stages) {
    stage_budget_ = launch.stage_budget;
    stage_len_ = launch.slice;
  }
  // 1. Each reduction: the thread's elements folded, then combined across the threads.
  for (size_t j = 0; j < fusion_.reductions.size(); ++j) GJ_RETURN_IF_ERROR(ReduceAcrossThreads(t, static_cast<int>(j)));
  // 2. What is stored per row (by the row's first thread), then per element.
  if (!t.per_row.empty())
    GJ_RETURN_IF_ERROR(If(b_.Cmp(Pred::kEq, t.lane, IndexConst(0)), [&] { return StorePerRow(t.per_row); }));
  if (t.full.empty()) return Status::Ok();
  if (!launch.held) {
    GJ_RETURN_IF_ERROR(Loop(t.lane, t.end, launch.threads, [&](const Value& column) {
      return StoreRoots(t.full, StagedRowAt(t, column, static_cast<int>(fusion_.reductions.size())));
    }));
    stage_cols_.clear();
    return Status::Ok();
  }
  for (size_t k = 0; k < t.columns.size(); ++k) {
    auto store = [&] { return StoreRoots(t.full, RowAt(t, t.columns[k])); };
    if (t.MayPassEnd(k))
      GJ_RETURN_IF_ERROR(If(b_.Cmp(Pred::kUlt, t.columns[k], IndexConst(t.cols)), store));
    else
      GJ_RETURN_IF_ERROR(store());
  }
  return Status::Ok();
}

Status RowEmitter::ReduceAcrossThreads(RowThreads& t, int j) {
  const RowLaunch& launch = t.launch;
  const int r = fusion_.reductions[j];
  const Node& n = *g_.graph.node(r);
  const DType dtype = g_.info(r).dtypes[0];
  const Folding f = FoldingOf(n, ElementType(dtype), t.cols, /*reassoc=*/true);
  std::vector<Value> accs = f.init;
  if (launch.held) {
    for (size_t k = 0; k < t.columns.size(); ++k) {
      auto step = [&]() -> StatusOr<std::vector<Value>> {
        GJ_ASSIGN_OR_RETURN(Value v, Get(n.inputs[0], RowAt(t, t.columns[k])));
        return f.step(accs, v);
      };
      if (t.MayPassEnd(k)) {
        GJ_ASSIGN_OR_RETURN(accs, If(b_.Cmp(Pred::kUlt, t.columns[k], IndexConst(t.cols)), accs, step));
      } else {
        GJ_ASSIGN_OR_RETURN(accs, step());
      }
    }
  } else {
    GJ_ASSIGN_OR_RETURN(accs,
                        LoopFolding(
                            t.lane, t.end, launch.threads, GpuLoadsInFlight(target_.gpu), accs,
                            [&](const Value& column) -> StatusOr<std::vector<Value>> {
                              GJ_ASSIGN_OR_RETURN(Value v, Get(n.inputs[0], StagedRowAt(t, column, j)));
                              return std::vector<Value>{v};
                            },
                            [&](const std::vector<Value>& args, const std::vector<Value>& v) { return f.step(args, v[0]); }));
    stage_cols_.clear();
  }
  accs = CombineAcross(f, accs, launch.threads);
  if (launch.cluster > 1) accs = CombineAcrossCluster(f, accs, launch.cluster);
  reduced_[r] = RoundedTo(dtype, f.finish(accs));
  return Status::Ok();
}

bool RowEmitter::Stages(int buffer, const Index& index, int level) const {
  if (stage_cols_.empty() || p_.buffers[buffer].shape != fusion_.space || index.size() != row_.size() + stage_cols_.size())
    return false;
  for (size_t k = 0; k < stage_cols_.size(); ++k)
    if (index[row_.size() + k].name != stage_cols_[k].name) return false;
  return std::max(level >= 0 ? level : LevelOf(index), b_.floor()) == LevelOf(stage_cols_);
}

std::optional<Value> RowEmitter::FromStage(int buffer, const Index& index, int level) {
  auto it = stages_.find(buffer);
  if (it == stages_.end() || it->second.loop >= stage_loop_ || !Stages(buffer, index, level)) return std::nullopt;
  return b_.Load(it->second.array, {stage_at_}, LevelOf(stage_cols_));
}

void RowEmitter::ToStage(int buffer, const Index& index, const Value& v) {
  if (!Stages(buffer, index, v.level)) return;
  if (auto it = stages_.find(buffer); it != stages_.end()) {
    // The loop that stages the buffer loads it again at another column (an unrolled step).
    if (it->second.loop == stage_loop_) b_.Store(v, it->second.array, {stage_at_});
    return;
  }
  const FusionPlan::Buffer& b = p_.buffers[buffer];
  const int64_t offset = RoundUp(stage_bytes_, 16);
  const int64_t bytes = static_cast<int64_t>(DTypeSize(b.dtype)) * stage_len_;
  if (offset + bytes > stage_budget_) return;
  const Type type = Type::MemRef({stage_len_}, v.type, /*workgroup=*/true);
  const Stage stage{b_.SharedView(offset, type, "%stage" + std::to_string(buffer)), stage_loop_};
  b_.Store(v, stage.array, {stage_at_});
  stages_[buffer] = stage;
  stage_bytes_ = offset + bytes;
}

Status RowEmitter::GpuRowsInPhases(const std::vector<TensorId>& full, const std::vector<TensorId>& per_row,
                                   const std::vector<int64_t>& row_dims, const std::vector<int64_t>& reduced, int64_t parts,
                                   EmittedModule* module, std::string* functions) {
  int64_t rows = 1, cols = 1;
  for (int64_t d : row_dims) rows *= d;
  for (int64_t d : reduced) cols *= d;
  std::vector<int> results;  // per reduction done: its result per row (f32 or i32)
  // Row `row`: row_, and the results of the reductions done, loaded.
  auto enter_row = [&](const Value& row) {
    row_ = Delinearize(row, row_dims);
    for (size_t j = 0; j < results.size(); ++j) {
      const int r = fusion_.reductions[j];
      reduced_[r] = b_.Load(Scratch(results[j], rows, ElementType(g_.info(r).dtypes[0])), {row});
    }
  };
  auto at = [&](const Value& column) {
    Index index = row_;
    for (const Value& v : Delinearize(column, reduced)) index.push_back(v);
    return index;
  };
  const std::string name = "fusion_" + std::to_string(f_);
  for (size_t j = 0; j < fusion_.reductions.size(); ++j) {
    const int r = fusion_.reductions[j];
    const Node& n = *g_.graph.node(r);
    // The last reduction of a fusion that stores only per row stores it all itself.
    const bool stores_all = j + 1 == fusion_.reductions.size() && full.empty();
    const int area = stores_all ? -1 : NewScratch(rows * 4, module);
    GJ_RETURN_IF_ERROR(ReduceInTwoPhases(
        n, rows, cols, parts, name + "_reduce" + std::to_string(j),
        [&](const Value& row, const Value& column) {
          enter_row(row);
          return Get(n.inputs[0], at(column));
        },
        [&](const Value& row, const Value& result) {
          const Value v = RoundedTo(g_.info(r).dtypes[0], result);
          if (stores_all) {
            enter_row(row);
            reduced_[r] = v;
            return StorePerRow(per_row);
          }
          b_.Store(v, Scratch(area, rows, v.type), {row});
          return Status::Ok();
        },
        module, functions));
    results.push_back(area);
  }
  if (full.empty()) return Status::Ok();
  // What the fusion stores: a thread per element (the row's first also stores per row).
  StartGpuFunction();
  EmittedKernel kernel;
  kernel.function = name;
  GJ_RETURN_IF_ERROR(GridStride(rows * cols, kGpuBlock, &kernel, [&](const Value& e) -> Status {
    const Value row = b_.Apply(Op::kDivUI, {e, IndexConst(cols)});
    const Value column = b_.Apply(Op::kRemUI, {e, IndexConst(cols)});
    enter_row(row);
    const Index index = at(column);
    linear_[Names(index)] = e;
    GJ_RETURN_IF_ERROR(StoreRoots(full, index));
    linear_.clear();
    if (per_row.empty()) return Status::Ok();
    return If(b_.Cmp(Pred::kEq, column, IndexConst(0)), [&] { return StorePerRow(per_row); });
  }));
  EndGpuFunction(std::move(kernel), module, functions);
  return Status::Ok();
}

std::vector<int64_t> RowEmitter::StagedColumnBytes() {
  std::set<int> buffers, seen;
  std::vector<TensorId> work = fusion_.roots;
  for (int r : fusion_.reductions) work.push_back(g_.graph.node(r)->inputs[0]);
  while (!work.empty()) {
    const TensorId v = work.back();
    work.pop_back();
    if (auto it = p_.buffer_of.find(v); it != p_.buffer_of.end()) {
      const FusionPlan::Buffer& b = p_.buffers[it->second];
      if (b.kind != FusionPlan::Buffer::Kind::kTemp || b.fusion < f_) {  // loaded (as Compute does)
        if (b.shape == fusion_.space) buffers.insert(it->second);
        continue;
      }
    }
    if (!seen.insert(v.node).second) continue;
    auto kind = ClassifyNode(g_, v.node);
    if (!kind.ok() || *kind == NodeKind::kConstant || *kind == NodeKind::kReduction) continue;
    const Node& n = *g_.graph.node(v.node);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (IsDataInput(n, static_cast<int>(i))) work.push_back(n.inputs[i]);
  }
  std::vector<int64_t> bytes;
  for (int b : buffers) bytes.push_back(static_cast<int64_t>(DTypeSize(p_.buffers[b].dtype)));
  return bytes;
}

// --- A row as one thread computes it.
Status RowEmitter::ReduceRow(int r, const std::vector<int64_t>& reduced, int64_t count) {
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

Status RowEmitter::RowBody(const std::vector<TensorId>& full, const std::vector<TensorId>& per_row,
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

Status RowEmitter::StorePerRow(const std::vector<TensorId>& per_row) {
  for (const TensorId& root : per_row) {
    Index at = row_;
    while (static_cast<int>(at.size()) < ShapeOf(root).rank()) at.push_back(IndexConst(0));
    GJ_RETURN_IF_ERROR(StoreRoots({root}, at));
  }
  return Status::Ok();
}

}  // namespace graphjit::emitter
