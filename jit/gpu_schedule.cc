// The GPU schedules: one `gpu.func @fusion_N(<buffers>...) kernel` per fusion, launched on
// a 1-D grid (EmittedKernel::grid blocks of EmittedKernel::block threads, in thread-block
// clusters of EmittedKernel::cluster blocks where that is above 1).
//
//  - loop: a thread per element, or per 4 consecutive elements when the last dim allows
//    (their loads and stores become 128-bit ones: every buffer is 16-byte aligned), in a
//    grid-stride loop;
//  - row: a warp per row (4 rows per block) for rows of up to 256 elements, else a block
//    per row; each thread folds its elements (columns lane, lane + T, ...), then the
//    threads combine through warp shuffles and, across warps, shared memory. When a thread
//    has at most 8 elements of the row they are held in registers from the first reduction
//    to the stores, so the row is read from memory once; a longer row is folded several
//    columns at a time (their loads in flight together: GpuLoadsInFlight, from the
//    device's DRAM bandwidth and SMs) and staged in dynamic shared
//    memory by the first loop that reads it, where it fits (FromStage); on sm_90 a row too
//    long for one block's shared memory is split among the blocks of a thread-block cluster
//    (up to 8), each staging its slice, their partial results combined through distributed
//    shared memory (CombineAcrossCluster). Rows too few and too long for that to keep the
//    GPU busy: each reduction in two phases (below), then the stores;
//  - reduce (columns, or everything): a thread per output element folding in order when
//    there are many outputs, else a block per output element (a two-level tree); when
//    that leaves the GPU idle (few outputs, each of many elements), two kernels: the first
//    splits each output's elements among many threads (part p of P takes elements p,
//    p + P, ...), whose partial results a block combines (a column reduction's block: a
//    warp's width of columns over 8 parts) and stores to scratch memory, the second
//    combines each output's partials in a fixed order;
// every float reduction combines in a fixed order, so results are the same from run to run.
// What these do not take (ArgMax/ArgMin, 64-bit integer rows) runs a thread per row.
#include <algorithm>
#include <set>

#include "jit/elemental.h"
#include "jit/gpu_launch.h"
#include "jit/kernel_emitter.h"
#include "runtime/gpu_model.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

namespace {

// Whether a row of `fusion` can be split across threads: its reductions combine partial
// results of 32-bit values (floats are computed in f32).
bool SplitsAcrossThreads(const AnalyzedGraph& g, const FusionPlan::Fusion& fusion) {
  for (int r : fusion.reductions) {
    if (IsArgReduction(g.graph.node(r)->op)) return false;
    const Type type = ElementType(g.info(r).dtypes[0]);
    if (type != Type::F32() && type != Type::I32()) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::string> KernelEmitter::EmitGpu(EmittedModule* module) {
  EmittedKernel kernel;
  kernel.function = "fusion_" + std::to_string(f_);
  StartGpuFunction();
  std::string functions;
  const size_t before = module->kernels.size();
  switch (fusion_.kind) {
    case FusionPlan::Kind::kLoop: GJ_RETURN_IF_ERROR(GpuLoop(&kernel)); break;
    case FusionPlan::Kind::kRow: GJ_RETURN_IF_ERROR(GpuRows(&kernel, module, &functions)); break;
    case FusionPlan::Kind::kReduce: GJ_RETURN_IF_ERROR(GpuReduce(&kernel, module, &functions)); break;
    case FusionPlan::Kind::kLibrary: return Internal("a library call has no kernel to emit");
  }
  if (module->kernels.size() == before) EndGpuFunction(std::move(kernel), module, &functions);
  return functions;
}

void KernelEmitter::StartGpuFunction() {
  StartFunction();
  reduced_.clear();
  row_.clear();
  stages_.clear();
  stage_cols_.clear();
  stage_loop_ = 0;
  stage_bytes_ = stage_budget_ = 0;
  cluster_wait_at_end_ = false;
  tid_ = b_.ThreadId();
  bid_ = b_.BlockId();
}

void KernelEmitter::EndGpuFunction(EmittedKernel kernel, EmittedModule* module, std::string* functions) {
  // Every buffer is 16-byte aligned (the runtime's allocations, and borrowed ones checked).
  std::vector<FunctionParam> params;
  for (int b : params_) {
    params.push_back({Param(b), /*noalias=*/true, 0, 16});
    kernel.buffers.push_back(b);
  }
  for (const auto& [area, type] : scratch_params_) {
    params.push_back({Scratch(area, type), /*noalias=*/true, 0, 16});
    kernel.scratch.push_back(area);
  }
  kernel.shared_bytes = stage_bytes_;
  if (cluster_wait_at_end_) b_.ClusterArriveAndWait();
  *functions += b_.GpuKernel(kernel.function, params, kernel.block);
  module->kernels.push_back(std::move(kernel));
}

int KernelEmitter::NewScratch(int64_t bytes, EmittedModule* module) {
  module->scratch.push_back(bytes);
  return static_cast<int>(module->scratch.size()) - 1;
}

Value KernelEmitter::Scratch(int area, int64_t elements, Type type) {
  return Scratch(area, scratch_params_[area] = Type::MemRef({elements}, type));
}

Value KernelEmitter::Scratch(int area, Type memref) { return b_.Parameter("%s" + std::to_string(area), memref); }

// --- Loops.
Status KernelEmitter::GpuLoop(EmittedKernel* kernel) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  const int64_t elements = fusion_.space.num_elements();
  const int64_t vector = LoopVectorWidth(dims);
  return GridStride(elements / vector, kGpuBlock, kernel, [&](const Value& unit) -> Status {
    if (vector == 1) {
      const Index index = Delinearize(unit, dims);
      linear_[Names(index)] = unit;
      Status stored = StoreRoots(fusion_.roots, index);
      linear_.clear();
      return stored;
    }
    // Elements unit * 4 + j (the last index of the first, plus j: the form in which LLVM
    // sees that the four are consecutive), their values first, then their stores: loads
    // and stores that LLVM's vectorizer joins into 128-bit ones.
    const Value first = b_.Apply(Op::kMulI, {unit, IndexConst(vector)});
    const Index index = Delinearize(first, dims);
    std::vector<Index> at(vector, index);
    linear_[Names(index)] = first;
    for (int64_t j = 1; j < vector; ++j) {
      at[j].back() = b_.Apply(Op::kAddI, {index.back(), IndexConst(j)});
      linear_[Names(at[j])] = b_.Apply(Op::kAddI, {first, IndexConst(j)});
    }
    // Loads go first, together (LLVM's vectorizer joins only nearby ones).
    std::vector<std::string> ready;
    for (const auto& [key, linear] : linear_) ready.push_back(linear.name);
    for (const Index& i : at)
      for (const Value& v : i) ready.push_back(v.name);
    b_.OpenLoadSlot(ready);
    std::vector<std::vector<Value>> values(vector);
    for (int64_t j = 0; j < vector; ++j) {
      for (const TensorId& root : fusion_.roots) {
        auto v = Get(root, at[j]);
        if (!v.ok()) return v.status();
        values[j].push_back(*v);
      }
    }
    b_.CloseLoadSlot();
    for (int64_t j = 0; j < vector; ++j)
      for (size_t r = 0; r < fusion_.roots.size(); ++r) Store(p_.buffer_of.at(fusion_.roots[r]), at[j], values[j][r]);
    linear_.clear();
    return Status::Ok();
  });
}

Status KernelEmitter::GridStride(int64_t units, int64_t block, EmittedKernel* kernel,
                                 const std::function<Status(const Value&)>& body) {
  const Launch launch = Launch1D(units, block, target_.gpu);
  kernel->grid = launch.grid;
  kernel->block = launch.block;
  if (units == 0) {
    kernel->grid = 0;
    return Status::Ok();
  }
  const Value first = b_.Apply(Op::kMulI, {bid_, IndexConst(kernel->block)});
  const Value start = b_.Apply(Op::kAddI, {first, tid_});
  return Loop(start, units, kernel->grid * kernel->block, body);
}

Status KernelEmitter::If(const Value& cond, const std::function<Status()>& then) {
  return If(cond, {},
            [&]() -> StatusOr<std::vector<Value>> {
              GJ_RETURN_IF_ERROR(then());
              return std::vector<Value>{};
            })
      .status();
}

StatusOr<std::vector<Value>> KernelEmitter::If(const Value& cond, const std::vector<Value>& otherwise,
                                               const std::function<StatusOr<std::vector<Value>>()>& then) {
  const int saved_floor = b_.floor();
  OpenScope();
  b_.set_floor(Innermost());
  auto values = then();
  b_.set_floor(saved_floor);
  Block inner = CloseScope();
  if (!values.ok()) return values.status();
  return b_.If(cond, std::move(inner), *values, {}, otherwise);
}

// --- Rows.
Status KernelEmitter::GpuRows(EmittedKernel* kernel, EmittedModule* module, std::string* functions) {
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

Index KernelEmitter::RowAt(const RowThreads& t, const Value& column) {
  Index index = row_;
  for (const Value& v : Delinearize(column, t.reduced)) index.push_back(v);
  return index;
}

Index KernelEmitter::StagedRowAt(const RowThreads& t, const Value& column, int loop) {
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
Status KernelEmitter::RowAcrossThreads(RowThreads& t) {
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

Status KernelEmitter::ReduceAcrossThreads(RowThreads& t, int j) {
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

bool KernelEmitter::Stages(int buffer, const Index& index, int level) const {
  if (stage_cols_.empty() || p_.buffers[buffer].shape != fusion_.space || index.size() != row_.size() + stage_cols_.size())
    return false;
  for (size_t k = 0; k < stage_cols_.size(); ++k)
    if (index[row_.size() + k].name != stage_cols_[k].name) return false;
  return std::max(level >= 0 ? level : LevelOf(index), b_.floor()) == LevelOf(stage_cols_);
}

std::optional<Value> KernelEmitter::FromStage(int buffer, const Index& index, int level) {
  auto it = stages_.find(buffer);
  if (it == stages_.end() || it->second.loop >= stage_loop_ || !Stages(buffer, index, level)) return std::nullopt;
  return b_.Load(it->second.array, {stage_at_}, LevelOf(stage_cols_));
}

void KernelEmitter::ToStage(int buffer, const Index& index, const Value& v) {
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

Value KernelEmitter::Combine(const Folding& f, size_t i, const Value& a, const Value& b) {
  return b_.Apply(f.combine[i].first, {a, b}, f.combine[i].second);
}

Status KernelEmitter::GpuRowsInPhases(const std::vector<TensorId>& full, const std::vector<TensorId>& per_row,
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

void KernelEmitter::StoreWhere(const Value& cond, const std::vector<Value>& values, const std::vector<Value>& arrays,
                               const Index& at) {
  OpenScope();
  for (size_t i = 0; i < values.size(); ++i) b_.Store(values[i], arrays[i], at);
  b_.If(cond, CloseScope(), {}, {}, {});
}

Value KernelEmitter::SharedArray(const std::vector<int64_t>& dims, Type type) {
  return b_.Workgroup(Type::MemRef(dims, type, /*workgroup=*/true));
}

std::vector<Value> KernelEmitter::CombineAcross(const Folding& f, std::vector<Value> accs, int64_t threads) {
  // 1. Within each warp: a butterfly, after which every lane holds the warp's result.
  const Value width = IntConst(warp_, Type::I32());
  for (int64_t offset = warp_ / 2; offset >= 1; offset /= 2) {
    const Value o = IntConst(offset, Type::I32());
    for (size_t i = 0; i < accs.size(); ++i) accs[i] = Combine(f, i, accs[i], b_.ShuffleXor(accs[i], o, width));
  }
  if (threads <= warp_) return accs;
  // 2. Across warps: each warp's first lane writes its result to shared memory; after a
  // barrier every thread folds them, in order.
  const Value lane = b_.Apply(Op::kRemUI, {tid_, IndexConst(warp_)});
  const Value warp = b_.Apply(Op::kDivUI, {tid_, IndexConst(warp_)});
  std::vector<Value> arrays;
  for (const Value& acc : accs) arrays.push_back(SharedArray({warp_}, acc.type));
  StoreWhere(b_.Cmp(Pred::kEq, lane, IndexConst(0)), accs, arrays, {warp});
  b_.Barrier();
  for (size_t i = 0; i < accs.size(); ++i) {
    Value acc;
    for (int64_t w = 0; w < threads / warp_; ++w) {
      const Value v = b_.Load(arrays[i], {IndexConst(w)}, Innermost());
      acc = w == 0 ? v : Combine(f, i, acc, v);
    }
    accs[i] = acc;
  }
  return accs;
}

std::vector<Value> KernelEmitter::CombineAcrossCluster(const Folding& f, std::vector<Value> accs, int64_t cluster) {
  // Thread 0 of each block writes the block's results to its shared memory; after the
  // cluster's barrier every thread reads them from each block (mapa: the address of the
  // same array in the block of a rank) and folds them in rank order.
  std::vector<Value> arrays;
  for (const Value& acc : accs) arrays.push_back(SharedArray({1}, acc.type));
  StoreWhere(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), accs, arrays, {IndexConst(0)});
  b_.ClusterArriveAndWait();
  for (size_t i = 0; i < accs.size(); ++i) {
    const Value generic = b_.GenericPointer(arrays[i]);
    Value acc;
    for (int64_t rank = 0; rank < cluster; ++rank) {
      const Value v = b_.LoadPointer(b_.InClusterBlock(generic, IntConst(rank, Type::I32())), accs[i].type);
      acc = rank == 0 ? v : Combine(f, i, acc, v);
    }
    accs[i] = acc;
  }
  cluster_wait_at_end_ = true;  // no block may exit (its shared memory gone) before the others read it
  return accs;
}

std::vector<int64_t> KernelEmitter::StagedColumnBytes() {
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

// --- Column and full reductions.
Status KernelEmitter::GpuReduce(EmittedKernel* kernel, EmittedModule* module, std::string* functions) {
  const int r = fusion_.reductions[0];
  const Node& n = *g_.graph.node(r);
  const int out = p_.buffer_of.at({r, 0});
  GJ_ASSIGN_OR_RETURN(ReductionAxes axes, GetReductionAxes(g_, r));
  const std::vector<int64_t>& out_dims = p_.buffers[out].shape.dims();
  const int64_t outputs = p_.buffers[out].shape.num_elements();
  std::vector<int64_t> reduced;
  int64_t count = 1;
  for (int a : axes.axes) {
    reduced.push_back(fusion_.space.dim(a));
    count *= fusion_.space.dim(a);
  }
  const bool arg = IsArgReduction(n.op);
  if (outputs == 0) return Status::Ok();
  const ReduceLaunch launch = ChooseReduceLaunch(target_.gpu, outputs, count, !arg && SplitsAcrossThreads(g_, fusion_));
  if (launch.kind == ReduceLaunch::Kind::kInPhases) {
    return ReduceInTwoPhases(
        n, outputs, count, launch.parts, kernel->function,
        [&](const Value& output, const Value& i) {
          return Get(n.inputs[0], InputIndex(axes, Delinearize(output, out_dims), Delinearize(i, reduced)));
        },
        [&](const Value& output, const Value& result) {
          Store(out, Delinearize(output, out_dims), result);
          return Status::Ok();
        },
        module, functions);
  }
  // Many outputs, or a reduction the threads cannot share: a thread per output element.
  if (launch.kind == ReduceLaunch::Kind::kThreadPerOutput) {
    return GridStride(outputs, kGpuBlock, kernel, [&](const Value& o) -> Status {
      const Index at = Delinearize(o, out_dims);
      Value v;
      if (arg) {
        Index along;
        GJ_ASSIGN_OR_RETURN(v, ArgMaxOrMin(r, count, along, [&](const Value& i) { return InputIndex(axes, at, {i}); }));
      } else {
        GJ_ASSIGN_OR_RETURN(v, ReduceOne(n, axes, at));
      }
      Store(out, at, v);
      return Status::Ok();
    });
  }
  // A block per output element: its threads fold strided elements, then combine.
  const int64_t threads = launch.threads;
  kernel->block = threads;
  kernel->grid = outputs;
  const Index at = Delinearize(bid_, out_dims);
  const Folding f = FoldingOf(n, ElementType(p_.buffers[out].dtype), count, /*reassoc=*/true);
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                      LoopCarrying(tid_, count, threads, f.init,
                                   [&](const Value& i, const std::vector<Value>& args) -> StatusOr<std::vector<Value>> {
                                     GJ_ASSIGN_OR_RETURN(Value v,
                                                         Get(n.inputs[0], InputIndex(axes, at, Delinearize(i, reduced))));
                                     return f.step(args, v);
                                   }));
  const Value result = f.finish(CombineAcross(f, accs, threads));
  return If(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), [&] {
    Store(out, at, result);
    return Status::Ok();
  });
}

Status KernelEmitter::ReduceInTwoPhases(const Node& n, int64_t outputs, int64_t count, int64_t parts, const std::string& name,
                                        const PhaseElement& element, const PhaseStore& store, EmittedModule* module,
                                        std::string* functions) {
  const Type type = ElementType(g_.info(n.id).dtypes[0]);
  // 1. Many outputs: a block is a tile of a warp's width of outputs over `tile_parts` parts
  // (its warps); neighbouring threads read neighbouring outputs, and the block combines its
  // warps' partial results per output, in order, into one: partial result `group` of output
  // o at group * outputs + o. Few (and parts for whole blocks): u = output * parts + part,
  // parts a multiple of the block, neighbouring threads read neighbouring elements of one
  // output, and each block combines its threads' results into one. Either way the second
  // phase has few partial results to read, however many threads the first had.
  const PhasesLaunch l = ChoosePhases(target_.gpu, outputs, parts);
  std::vector<int> areas;  // per accumulator: the partial results (f32 or i32)
  GJ_RETURN_IF_ERROR(FirstPhase(n, l, outputs, count, name, element, &areas, module, functions));
  // 2. Each output's partial results in order (several loads in flight): a thread per output
  // when there are many (reading neighbouring outputs), else a block per output.
  StartGpuFunction();
  EmittedKernel kernel;
  kernel.function = name + "_finish";
  const Folding f = FoldingOf(n, type, count, /*reassoc=*/true);
  auto partials = [&](const Value& output, const Value& first, int64_t step) {
    return LoopFolding(
        first, l.kept, step, GpuLoadsInFlight(target_.gpu), f.init,
        [&](const Value& part) -> StatusOr<std::vector<Value>> {
          const Value scaled = b_.Apply(Op::kMulI, {l.by_block ? output : part, IndexConst(l.by_block ? l.kept : outputs)});
          const Value u = b_.Apply(Op::kAddI, {scaled, l.by_block ? part : output});
          std::vector<Value> loaded;
          for (size_t i = 0; i < areas.size(); ++i)
            loaded.push_back(b_.Load(Scratch(areas[i], l.kept * outputs, f.init[i].type), {u}));
          return loaded;
        },
        [&](const std::vector<Value>& args, const std::vector<Value>& loaded) {
          std::vector<Value> next;
          for (size_t i = 0; i < args.size(); ++i) next.push_back(Combine(f, i, args[i], loaded[i]));
          return next;
        });
  };
  if (l.finish_threads == 0) {
    GJ_RETURN_IF_ERROR(GridStride(outputs, kGpuBlock, &kernel, [&](const Value& output) -> Status {
      GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, partials(output, IndexConst(0), 1));
      return store(output, f.finish(accs));
    }));
  } else {
    kernel.block = l.finish_threads;
    kernel.grid = outputs;
    GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, partials(bid_, tid_, l.finish_threads));
    const Value result = f.finish(CombineAcross(f, accs, l.finish_threads));
    GJ_RETURN_IF_ERROR(If(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), [&] { return store(bid_, result); }));
  }
  EndGpuFunction(std::move(kernel), module, functions);
  return Status::Ok();
}

// The first phase's kernel: each thread folds its part of an output's elements; a block's
// (or a tile's) partial results are combined into one per output, stored in new scratch
// areas (one per accumulator).
Status KernelEmitter::FirstPhase(const Node& n, const PhasesLaunch& l, int64_t outputs, int64_t count, const std::string& name,
                                 const PhaseElement& element, std::vector<int>* areas_out, EmittedModule* module,
                                 std::string* functions) {
  StartGpuFunction();
  EmittedKernel kernel;
  kernel.function = name;
  const Folding f = FoldingOf(n, ElementType(g_.info(n.id).dtypes[0]), count, /*reassoc=*/true);
  const int64_t kept = l.kept * outputs;  // the partial results
  std::vector<int>& areas = *areas_out;
  for (size_t i = 0; i < f.init.size(); ++i) areas.push_back(NewScratch(kept * 4, module));
  auto fold = [&](const Value& output, const Value& part) {
    return LoopFolding(
        part, count, l.parts, GpuLoadsInFlight(target_.gpu), f.init,
        [&](const Value& i) -> StatusOr<std::vector<Value>> {
          GJ_ASSIGN_OR_RETURN(Value v, element(output, i));
          return std::vector<Value>{v};
        },
        [&](const std::vector<Value>& args, const std::vector<Value>& v) { return f.step(args, v[0]); });
  };
  if (l.by_block) {
    kernel.block = kGpuBlock;
    kernel.grid = l.parts * outputs / kGpuBlock;
    const Value u = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {bid_, IndexConst(kGpuBlock)}), tid_});
    GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                        fold(b_.Apply(Op::kDivUI, {u, IndexConst(l.parts)}), b_.Apply(Op::kRemUI, {u, IndexConst(l.parts)})));
    accs = CombineAcross(f, accs, kGpuBlock);
    std::vector<Value> partials;
    for (size_t i = 0; i < accs.size(); ++i) partials.push_back(Scratch(areas[i], kept, accs[i].type));
    StoreWhere(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), accs, partials, {bid_});
    EndGpuFunction(std::move(kernel), module, functions);
    return Status::Ok();
  }
  const int64_t tiles = CeilDiv(outputs, warp_);
  kernel.block = warp_ * l.tile_parts;
  kernel.grid = tiles * (l.parts / l.tile_parts);
  const Value group = b_.Apply(Op::kDivUI, {bid_, IndexConst(tiles)});
  const Value lane = b_.Apply(Op::kRemUI, {tid_, IndexConst(warp_)});
  const Value warp = b_.Apply(Op::kDivUI, {tid_, IndexConst(warp_)});
  const Value output =
      b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {b_.Apply(Op::kRemUI, {bid_, IndexConst(tiles)}), IndexConst(warp_)}), lane});
  const Value part = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {group, IndexConst(l.tile_parts)}), warp});
  const Value inside = b_.Cmp(Pred::kUlt, output, IndexConst(outputs));
  std::vector<Value> accs = f.init;
  if (outputs % warp_ == 0) {
    GJ_ASSIGN_OR_RETURN(accs, fold(output, part));
  } else {
    GJ_ASSIGN_OR_RETURN(accs, If(inside, f.init, [&] { return fold(output, part); }));
  }
  // The warps' partial results per output, through shared memory, folded in order by the
  // first warp.
  std::vector<Value> arrays;
  for (const Value& acc : accs) {
    arrays.push_back(SharedArray({l.tile_parts, warp_}, acc.type));
    b_.Store(acc, arrays.back(), {warp, lane});
  }
  b_.Barrier();
  const Value stores_results = b_.Cmp(Pred::kEq, warp, IndexConst(0));
  const Value store_here = outputs % warp_ == 0 ? stores_results : b_.Apply(Op::kAndI, {stores_results, inside});
  GJ_RETURN_IF_ERROR(If(store_here, [&] {
    const Value at = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {group, IndexConst(outputs)}), output});
    for (size_t i = 0; i < accs.size(); ++i) {
      Value acc;
      for (int64_t w = 0; w < l.tile_parts; ++w) {
        const Value v = b_.Load(arrays[i], {IndexConst(w), lane}, Innermost());
        acc = w == 0 ? v : Combine(f, i, acc, v);
      }
      b_.Store(acc, Scratch(areas[i], kept, acc.type), {at});
    }
    return Status::Ok();
  }));
  EndGpuFunction(std::move(kernel), module, functions);
  return Status::Ok();
}

}  // namespace graphjit::emitter

namespace graphjit {

int64_t GpuLoadsInFlight(const GpuDescription& gpu) {
  // The bytes in flight a fold keeps, over what Little's law asks to keep the DRAM busy: its
  // latency grows under load.
  constexpr double kHeadroom = 2;
  if (gpu.dram_bytes_per_s <= 0 || gpu.multiprocessors <= 0 || gpu.max_threads_per_multiprocessor <= 0) return 4;
  const double per_sm = kHeadroom * gpu.dram_bytes_per_s * kDramLatencyUs * 1e-6 / gpu.multiprocessors;
  const double per_thread = per_sm / (gpu.max_threads_per_multiprocessor * 4.0);
  int64_t loads = 2;
  while (loads < 8 && loads < per_thread) loads *= 2;
  return loads;
}

}  // namespace graphjit
