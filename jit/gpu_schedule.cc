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
#include "jit/kernel_emitter.h"
#include "runtime/gpu_model.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

namespace {

constexpr int64_t kBlock = 256;
// From this many output elements on, a reduction's threads take whole outputs.
constexpr int64_t kManyOutputs = 1024;
// A reduction in two phases: each first-phase thread folds at least kMinPerPart elements,
// and there are up to as many of them as the GPU holds at once (every SM full: 270336 on
// an H100's 132 SMs; their partial results, 1 MiB of f32 scratch), each with
// GpuLoadsInFlight's loads in flight. It is chosen when it gives each output at least
// kPhasesGain times the threads one kernel would.
constexpr int64_t kMinPerPart = 32;
constexpr int64_t kPhasesGain = 4;
// A column reduction's first phase: a block of this many warps, each a part of the rows.
constexpr int64_t kTileParts = 8;
// A row thread keeps up to this many of its elements in registers.
constexpr int64_t kMaxHeld = 8;
constexpr int64_t kRowsPerWarpBlock = 4;
// A block's static shared memory (CombineAcross's arrays: a warp's partial results per
// accumulator) stays within this; the rest of the block's shared memory may stage rows.
constexpr int64_t kStaticSharedReserve = 4096;
// A row longer than one block's shared memory is staged across a thread-block cluster of
// up to this many blocks (the portable limit; sm_90).
constexpr int64_t kMaxCluster = 8;
constexpr int kClusterCapability = 90;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

// A reduction of `outputs` results of `count` elements each in two phases: its threads per
// output in the first.
int64_t PartsPerOutput(int64_t outputs, int64_t count, const GpuDescription& gpu) {
  const int64_t resident = int64_t{gpu.multiprocessors} * gpu.max_threads_per_multiprocessor;
  return std::min(count / kMinPerPart, resident / outputs);
}

// `units` of work, a thread each, in blocks of at most `block` threads. A grid-stride
// loop's grid is at most the blocks the device holds at once (every SM full).
void Launch1D(int64_t units, int64_t block, const GpuDescription& gpu, EmittedKernel* kernel) {
  const int64_t warp = gpu.warp_size;
  kernel->block = std::min(block, std::max<int64_t>(warp, RoundUp(units, warp)));
  const int64_t resident = int64_t{gpu.multiprocessors} * gpu.max_blocks_per_multiprocessor;
  kernel->grid = std::min(CeilDiv(units, kernel->block), resident);
}

// Whether a row of `fusion` can be split across threads: its reductions combine partial
// results of 32-bit values (floats are computed in f32).
bool SplitsAcrossThreads(const AnalyzedGraph& g, const FusionPlan::Fusion& fusion) {
  for (int r : fusion.reductions) {
    if (IsArgReduction(g.graph.node(r)->op)) return false;
    const std::string type = ElementType(g.info(r).dtypes[0]);
    if (type != "f32" && type != "i32") return false;
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
  tid_ = Let(0, "gpu.thread_id x", "index");
  bid_ = Let(0, "gpu.block_id x", "index");
}

void KernelEmitter::EndGpuFunction(EmittedKernel kernel, EmittedModule* module, std::string* functions) {
  std::string params, workgroup;
  auto add = [&](const std::string& name, const std::string& type) {
    params += (params.empty() ? "" : ", ") + name + ": " + type + " {llvm.align = 16 : i64, llvm.noalias}";
  };
  for (int b : params_) {
    add("%b" + std::to_string(b), BufferType(b));
    kernel.buffers.push_back(b);
  }
  for (const auto& [area, type] : scratch_params_) {
    add("%s" + std::to_string(area), type);
    kernel.scratch.push_back(area);
  }
  kernel.shared_bytes = stage_bytes_;
  if (cluster_wait_at_end_) code_[0] += "nvvm.cluster.arrive\nnvvm.cluster.wait\n";
  // Shared arrays 16-byte aligned: LLVM reads them with 16-byte loads (ld.shared.v4).
  for (const std::string& w : workgroup_) workgroup += (workgroup.empty() ? "" : ", ") + w + " {llvm.align = 16 : i64}";
  if (!workgroup.empty()) workgroup = " workgroup(" + workgroup + ")";
  *functions += "gpu.func @" + kernel.function + "(" + params + ")" + workgroup +
                " kernel attributes {gpu.known_block_size = array<i32: " + std::to_string(std::max<int64_t>(kernel.block, 1)) +
                ", 1, 1>} {\n" + code_[0] + "gpu.return\n}\n";
  module->kernels.push_back(std::move(kernel));
}

int KernelEmitter::NewScratch(int64_t bytes, EmittedModule* module) {
  module->scratch.push_back(bytes);
  return static_cast<int>(module->scratch.size()) - 1;
}

std::string KernelEmitter::ScratchAccess(int area, int64_t elements, const std::string& type, const Value& at) {
  const std::string memref = "memref<" + std::to_string(elements) + "x" + type + ">";
  scratch_params_[area] = memref;
  return "%s" + std::to_string(area) + "[" + at.name + "] : " + memref;
}

// --- Loops.
Status KernelEmitter::GpuLoop(EmittedKernel* kernel) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  const int64_t elements = fusion_.space.num_elements();
  const int64_t vector = !dims.empty() && dims.back() % 4 == 0 ? 4 : 1;
  return GridStride(elements / vector, kBlock, kernel, [&](const Value& unit) -> Status {
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
    const Value first = Let(unit.depth, "arith.muli " + unit.name + ", " + IndexConst(vector).name + " : index", "index");
    const Index index = Delinearize(first, dims);
    std::vector<Index> at(vector, index);
    linear_[Names(index)] = first;
    for (int64_t j = 1; j < vector; ++j) {
      at[j].back() = Let(unit.depth, "arith.addi " + index.back().name + ", " + IndexConst(j).name + " : index", "index");
      linear_[Names(at[j])] = Let(unit.depth, "arith.addi " + first.name + ", " + IndexConst(j).name + " : index", "index");
    }
    // Loads go first, together (LLVM's vectorizer joins only nearby ones).
    load_slot_.depth = unit.depth;
    load_slot_.offset = code_[unit.depth].size();
    for (const auto& [key, linear] : linear_) load_slot_.ready.insert(linear.name);
    for (const Index& i : at)
      for (const Value& v : i) load_slot_.ready.insert(v.name);
    std::vector<std::vector<Value>> values(vector);
    for (int64_t j = 0; j < vector; ++j) {
      for (const TensorId& root : fusion_.roots) {
        auto v = Get(root, at[j]);
        if (!v.ok()) return v.status();
        values[j].push_back(*v);
      }
    }
    load_slot_ = {};
    for (int64_t j = 0; j < vector; ++j)
      for (size_t r = 0; r < fusion_.roots.size(); ++r) Store(p_.buffer_of.at(fusion_.roots[r]), at[j], values[j][r]);
    linear_.clear();
    return Status::Ok();
  });
}

Status KernelEmitter::GridStride(int64_t units, int64_t block, EmittedKernel* kernel,
                                 const std::function<Status(const Value&)>& body) {
  Launch1D(units, block, target_.gpu, kernel);
  if (units == 0) {
    kernel->grid = 0;
    return Status::Ok();
  }
  const Value first = Let(0, "arith.muli " + bid_.name + ", " + IndexConst(kernel->block).name + " : index", "index");
  const Value start = Let(0, "arith.addi " + first.name + ", " + tid_.name + " : index", "index");
  return Loop(start, units, kernel->grid * kernel->block, body);
}

Status KernelEmitter::If(const Value& cond, const std::function<Status()>& then) {
  const int at = Innermost(), saved_floor = floor_;
  OpenScope();
  floor_ = Innermost();
  Status s = then();
  floor_ = saved_floor;
  std::string inner = CloseScope();
  GJ_RETURN_IF_ERROR(s);
  code_[at] += "scf.if " + cond.name + " {\n" + inner + "}\n";
  return Status::Ok();
}

StatusOr<std::vector<Value>> KernelEmitter::If(const Value& cond, const std::vector<Value>& otherwise,
                                               const std::function<StatusOr<std::vector<Value>>()>& then) {
  const int at = Innermost(), saved_floor = floor_;
  OpenScope();
  floor_ = Innermost();
  auto values = then();
  floor_ = saved_floor;
  std::string inner = CloseScope();
  if (!values.ok()) return values.status();
  std::string lhs;
  std::vector<Value> out = Results(at, otherwise, &lhs);
  code_[at] += lhs + " = scf.if " + cond.name + " -> (" + Types(otherwise) + ") {\n" + inner + "scf.yield " +
               Names(*values) + " : " + Types(otherwise) + "\n} else {\nscf.yield " + Names(otherwise) + " : " +
               Types(otherwise) + "\n}\n";
  return out;
}

// --- Rows.
Status KernelEmitter::GpuRows(EmittedKernel* kernel, EmittedModule* module, std::string* functions) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  const std::vector<int64_t> row_dims(dims.begin(), dims.begin() + fusion_.split), reduced(dims.begin() + fusion_.split, dims.end());
  int64_t rows = 1, cols = 1;
  for (int64_t d : row_dims) rows *= d;
  for (int64_t d : reduced) cols *= d;
  std::vector<TensorId> full, per_row;
  for (const TensorId& root : fusion_.roots) (ShapeOf(root) == fusion_.space ? full : per_row).push_back(root);
  if (rows == 0) return Status::Ok();  // grid 0: nothing to launch
  if (cols == 0 || !SplitsAcrossThreads(g_, fusion_)) {
    // A thread per row.
    return GridStride(rows, kBlock, kernel, [&](const Value& row) {
      row_ = Delinearize(row, row_dims);
      return RowBody(full, per_row, reduced, cols);
    });
  }
  // T threads per row: a warp for short rows (several rows per block), else a block.
  const bool warp_per_row = cols <= warp_ * kMaxHeld;
  const int64_t threads = warp_per_row ? warp_ : std::min<int64_t>(target_.gpu.max_threads_per_block, std::max<int64_t>(64, RoundUp(CeilDiv(cols, kMaxHeld), warp_)));
  // A row too long for a block's registers and read by more than one loop is staged in
  // shared memory (FromStage); one too long for a block's is split among the blocks of a
  // thread-block cluster (sm_90), each staging a slice, where a cluster holds it.
  const bool stages = CeilDiv(cols, threads) > kMaxHeld && fusion_.reductions.size() + (full.empty() ? 0 : 1) > 1;
  const int64_t budget = target_.gpu.shared_memory_per_block_optin - kStaticSharedReserve;
  // A cluster's block takes a slice of whole warps' worth of columns (its loads start aligned).
  auto slice_of = [&](int64_t n) { return RoundUp(CeilDiv(cols, n), warp_); };
  int64_t cluster = 1;
  if (stages && target_.gpu.compute_capability >= kClusterCapability) {
    const std::vector<int64_t> column_bytes = StagedColumnBytes();
    auto staged = [&](int64_t slice) {
      int64_t bytes = 0;
      for (int64_t b : column_bytes) bytes = RoundUp(bytes, 16) + b * slice;
      return bytes;
    };
    if (staged(cols) > budget) {
      for (int64_t n = 2; n <= kMaxCluster && cluster == 1; ++n)
        if (staged(slice_of(n)) <= budget && CeilDiv(slice_of(n), threads) > kMaxHeld && slice_of(n) * (n - 1) < cols)
          cluster = n;
    }
  }
  const int64_t slice = cluster > 1 ? slice_of(cluster) : cols;  // a block's columns
  if (const int64_t parts = PartsPerOutput(rows, cols, target_.gpu); parts >= kPhasesGain * threads * cluster)
    return GpuRowsInPhases(full, per_row, row_dims, reduced, parts, module, functions);
  const int64_t rows_per_block = warp_per_row ? kRowsPerWarpBlock : 1;
  kernel->block = threads * rows_per_block;
  kernel->grid = CeilDiv(rows, rows_per_block) * cluster;
  kernel->cluster = cluster;
  // The thread's first column (lane) and, in a cluster, its block's slice [first, end).
  Value lane = tid_, row = bid_, first, end = IndexConst(cols);
  if (cluster > 1) {
    const Value rank = Let(0, "arith.remui " + bid_.name + ", " + IndexConst(cluster).name + " : index", "index");
    row = Let(0, "arith.divui " + bid_.name + ", " + IndexConst(cluster).name + " : index", "index");
    first = Let(0, "arith.muli " + rank.name + ", " + IndexConst(slice).name + " : index", "index");
    lane = Let(0, "arith.addi " + first.name + ", " + tid_.name + " : index", "index");
    const Value last = Let(0, "arith.addi " + first.name + ", " + IndexConst(slice).name + " : index", "index");
    end = Let(0, "arith.minui " + last.name + ", " + end.name + " : index", "index");
  }
  if (warp_per_row) {
    lane = Let(0, "arith.remui " + tid_.name + ", " + IndexConst(warp_).name + " : index", "index");
    const Value warp = Let(0, "arith.divui " + tid_.name + ", " + IndexConst(warp_).name + " : index", "index");
    const Value first = Let(0, "arith.muli " + bid_.name + ", " + IndexConst(rows_per_block).name + " : index", "index");
    row = Let(0, "arith.addi " + first.name + ", " + warp.name + " : index", "index");
  }
  auto body = [&]() -> Status {
    row_ = Delinearize(row, row_dims);
    // The thread's columns: lane + k * threads. Held: each a value the reductions and
    // stores share (the last one guarded when the row does not fill it).
    const int64_t per_thread = CeilDiv(slice, threads);
    const bool held = per_thread <= kMaxHeld;
    std::vector<Value> columns;
    if (held)
      for (int64_t k = 0; k < per_thread; ++k)
        columns.push_back(k == 0 ? lane : Let(lane.depth, "arith.addi " + lane.name + ", " + IndexConst(k * threads).name + " : index", "index"));
    auto at = [&](const Value& column) {
      Index index = row_;
      for (const Value& v : Delinearize(column, reduced)) index.push_back(v);
      return index;
    };
    // Not held: the row staged in shared memory when more than one loop reads it (FromStage).
    if (stages) {
      stage_budget_ = budget;
      stage_len_ = slice;
    }
    auto loop_at = [&](const Value& column, int loop) {
      stage_loop_ = loop;
      const Index index = at(column);
      if (stage_budget_ > 0) {
        stage_cols_.assign(index.begin() + static_cast<std::ptrdiff_t>(row_.size()), index.end());
        stage_at_ = cluster > 1 ? Let(column.depth, "arith.subi " + column.name + ", " + first.name + " : index", "index") : column;
      }
      return index;
    };
    auto in_row = [&](int64_t k) { return (k + 1) * threads > cols; };
    auto below_cols = [&](const Value& column) {
      return Let(column.depth, "arith.cmpi ult, " + column.name + ", " + IndexConst(cols).name + " : index", "i1");
    };
    // 1. Each reduction: the thread's elements folded, then combined across the threads.
    for (size_t j = 0; j < fusion_.reductions.size(); ++j) {
      const int r = fusion_.reductions[j];
      const Node& n = *g_.graph.node(r);
      const DType dtype = g_.info(r).dtypes[0];
      const Folding f = FoldingOf(n, ElementType(dtype), cols, /*reassoc=*/true);
      auto element = [&](const Value& column) { return Get(n.inputs[0], at(column)); };
      std::vector<Value> accs = f.init;
      if (held) {
        for (int64_t k = 0; k < per_thread; ++k) {
          auto step = [&]() -> StatusOr<std::vector<Value>> {
            GJ_ASSIGN_OR_RETURN(Value v, element(columns[k]));
            return f.step(accs, v);
          };
          if (in_row(k)) {
            GJ_ASSIGN_OR_RETURN(accs, If(below_cols(columns[k]), accs, step));
          } else {
            GJ_ASSIGN_OR_RETURN(accs, step());
          }
        }
      } else {
        // Several of the thread's columns at a time, their loads in flight together.
        GJ_ASSIGN_OR_RETURN(accs, LoopFolding(
                                      lane, end, threads, GpuLoadsInFlight(target_.gpu), accs,
                                      [&](const Value& column) -> StatusOr<std::vector<Value>> {
                                        GJ_ASSIGN_OR_RETURN(Value v, Get(n.inputs[0], loop_at(column, static_cast<int>(j))));
                                        return std::vector<Value>{v};
                                      },
                                      [&](const std::vector<Value>& args, const std::vector<Value>& v) { return f.step(args, v[0]); }));
        stage_cols_.clear();
      }
      accs = CombineAcross(f, accs, threads);
      if (cluster > 1) accs = CombineAcrossCluster(f, accs, cluster);
      reduced_[r] = RoundedTo(dtype, f.finish(accs));
    }
    // 2. What is stored per row (by the row's first thread), then per element.
    if (!per_row.empty())
      GJ_RETURN_IF_ERROR(If(Let(lane.depth, "arith.cmpi eq, " + lane.name + ", " + IndexConst(0).name + " : index", "i1"),
                            [&] { return StorePerRow(per_row); }));
    if (full.empty()) return Status::Ok();
    if (!held) {
      GJ_RETURN_IF_ERROR(Loop(lane, end, threads, [&](const Value& column) {
        return StoreRoots(full, loop_at(column, static_cast<int>(fusion_.reductions.size())));
      }));
      stage_cols_.clear();
      return Status::Ok();
    }
    for (int64_t k = 0; k < per_thread; ++k) {
      if (in_row(k)) GJ_RETURN_IF_ERROR(If(below_cols(columns[k]), [&] { return StoreRoots(full, at(columns[k])); }));
      else GJ_RETURN_IF_ERROR(StoreRoots(full, at(columns[k])));
    }
    return Status::Ok();
  };
  // A warp past the last row has nothing to do (the whole warp: its shuffles stay whole).
  if (rows % rows_per_block == 0) return body();
  return If(Let(0, "arith.cmpi ult, " + row.name + ", " + IndexConst(rows).name + " : index", "i1"), body);
}

bool KernelEmitter::Stages(int buffer, const Index& index, int depth) const {
  if (stage_cols_.empty() || p_.buffers[buffer].shape != fusion_.space || index.size() != row_.size() + stage_cols_.size())
    return false;
  for (size_t k = 0; k < stage_cols_.size(); ++k)
    if (index[row_.size() + k].name != stage_cols_[k].name) return false;
  return std::max(depth >= 0 ? depth : DepthOf(index), floor_) == DepthOf(stage_cols_);
}

std::optional<Value> KernelEmitter::FromStage(int buffer, const Index& index, int depth) {
  auto it = stages_.find(buffer);
  if (it == stages_.end() || it->second.loop >= stage_loop_ || !Stages(buffer, index, depth)) return std::nullopt;
  return Let(DepthOf(stage_cols_), "memref.load " + it->second.name + "[" + stage_at_.name + "] : " + it->second.type,
             StorageType(p_.buffers[buffer].dtype));
}

void KernelEmitter::ToStage(int buffer, const Index& index, const Value& v) {
  if (!Stages(buffer, index, v.depth)) return;
  if (auto it = stages_.find(buffer); it != stages_.end()) {
    // The loop that stages the buffer loads it again at another column (an unrolled step).
    if (it->second.loop == stage_loop_)
      code_[v.depth] += "memref.store " + v.name + ", " + it->second.name + "[" + stage_at_.name + "] : " + it->second.type + "\n";
    return;
  }
  const FusionPlan::Buffer& b = p_.buffers[buffer];
  const int64_t offset = RoundUp(stage_bytes_, 16);
  const int64_t bytes = static_cast<int64_t>(DTypeSize(b.dtype)) * stage_len_;
  if (offset + bytes > stage_budget_) return;
  const std::string type = "memref<" + std::to_string(stage_len_) + "x" + v.type + ", #gpu.address_space<workgroup>>";
  const std::string shared = "memref<?xi8, #gpu.address_space<workgroup>>";
  if (stages_.empty()) code_[0] += "%dsm = gpu.dynamic_shared_memory : " + shared + "\n";
  const Stage stage{"%stage" + std::to_string(buffer), type, stage_loop_};
  code_[0] += stage.name + " = memref.view %dsm[" + IndexConst(offset).name + "][] : " + shared + " to " + type + "\n";
  code_[v.depth] += "memref.store " + v.name + ", " + stage.name + "[" + stage_at_.name + "] : " + type + "\n";
  stages_[buffer] = stage;
  stage_bytes_ = offset + bytes;
}

Value KernelEmitter::Combine(const Folding& f, size_t i, const Value& a, const Value& b) {
  std::string op = f.combine[i];
  op.replace(op.find("%0"), 2, a.name);
  op.replace(op.find("%1"), 2, b.name);
  return Let(Innermost(), op, a.type);
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
      const std::string type = ElementType(g_.info(r).dtypes[0]);
      reduced_[r] = Let(row.depth, "memref.load " + ScratchAccess(results[j], rows, type, row), type);
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
          code_[Innermost()] += "memref.store " + v.name + ", " + ScratchAccess(area, rows, v.type, row) + "\n";
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
  GJ_RETURN_IF_ERROR(GridStride(rows * cols, kBlock, &kernel, [&](const Value& e) -> Status {
    const Value row = Let(e.depth, "arith.divui " + e.name + ", " + IndexConst(cols).name + " : index", "index");
    const Value column = Let(e.depth, "arith.remui " + e.name + ", " + IndexConst(cols).name + " : index", "index");
    enter_row(row);
    const Index index = at(column);
    linear_[Names(index)] = e;
    GJ_RETURN_IF_ERROR(StoreRoots(full, index));
    linear_.clear();
    if (per_row.empty()) return Status::Ok();
    return If(Let(e.depth, "arith.cmpi eq, " + column.name + ", " + IndexConst(0).name + " : index", "i1"),
              [&] { return StorePerRow(per_row); });
  }));
  EndGpuFunction(std::move(kernel), module, functions);
  return Status::Ok();
}

std::pair<std::string, std::string> KernelEmitter::SharedArray(const std::string& dims, const std::string& type) {
  const std::string name = "%ws" + std::to_string(workgroup_.size());
  const std::string memref = "memref<" + dims + "x" + type + ", #gpu.address_space<workgroup>>";
  workgroup_.push_back(name + " : " + memref);
  return {name, memref};
}

std::vector<Value> KernelEmitter::CombineAcross(const Folding& f, std::vector<Value> accs, int64_t threads) {
  // 1. Within each warp: a butterfly, after which every lane holds the warp's result.
  const Value width = IntConst(warp_, "i32");
  for (int64_t offset = warp_ / 2; offset >= 1; offset /= 2) {
    const Value o = IntConst(offset, "i32");
    for (size_t i = 0; i < accs.size(); ++i) {
      const std::string name = Fresh("%v");
      code_[Innermost()] += name + ":2 = gpu.shuffle xor " + accs[i].name + ", " + o.name + ", " + width.name + " : " +
                            accs[i].type + "\n";
      accs[i] = Combine(f, i, accs[i], {name + "#0", Innermost(), accs[i].type});
    }
  }
  if (threads <= warp_) return accs;
  // 2. Across warps: each warp's first lane writes its result to shared memory; after a
  // barrier every thread folds them, in order.
  const Value lane = Let(0, "arith.remui " + tid_.name + ", " + IndexConst(warp_).name + " : index", "index");
  const Value warp = Let(0, "arith.divui " + tid_.name + ", " + IndexConst(warp_).name + " : index", "index");
  const Value first = Let(0, "arith.cmpi eq, " + lane.name + ", " + IndexConst(0).name + " : index", "i1");
  std::vector<std::string> arrays, types;
  std::string stores;
  for (const Value& acc : accs) {
    const auto [array, type] = SharedArray(std::to_string(warp_), acc.type);
    arrays.push_back(array);
    types.push_back(type);
    stores += "memref.store " + acc.name + ", " + array + "[" + warp.name + "] : " + type + "\n";
  }
  code_[Innermost()] += "scf.if " + first.name + " {\n" + stores + "}\ngpu.barrier\n";
  for (size_t i = 0; i < accs.size(); ++i) {
    Value acc;
    for (int64_t w = 0; w < threads / warp_; ++w) {
      const Value v = Let(Innermost(), "memref.load " + arrays[i] + "[" + IndexConst(w).name + "] : " + types[i], accs[i].type);
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
  const Value first = Let(0, "arith.cmpi eq, " + tid_.name + ", " + IndexConst(0).name + " : index", "i1");
  std::vector<std::string> arrays, types;
  std::string stores;
  for (const Value& acc : accs) {
    const auto [array, type] = SharedArray("1", acc.type);
    arrays.push_back(array);
    types.push_back(type);
    stores += "memref.store " + acc.name + ", " + array + "[" + IndexConst(0).name + "] : " + type + "\n";
  }
  const int at = Innermost();
  code_[at] += "scf.if " + first.name + " {\n" + stores + "}\nnvvm.cluster.arrive\nnvvm.cluster.wait\n";
  for (size_t i = 0; i < accs.size(); ++i) {
    const Value address = Let(at, "memref.extract_aligned_pointer_as_index " + arrays[i] + " : " + types[i] + " -> index", "index");
    const Value integer = Let(at, "arith.index_cast " + address.name + " : index to i64", "i64");
    const Value shared = Let(at, "llvm.inttoptr " + integer.name + " : i64 to !llvm.ptr<3>", "!llvm.ptr<3>");
    const Value generic = Let(at, "llvm.addrspacecast " + shared.name + " : !llvm.ptr<3> to !llvm.ptr", "!llvm.ptr");
    Value acc;
    for (int64_t rank = 0; rank < cluster; ++rank) {
      const Value remote = Let(at, "llvm.call_intrinsic \"llvm.nvvm.mapa\"(" + generic.name + ", " + IntConst(rank, "i32").name +
                                       ") : (!llvm.ptr, i32) -> !llvm.ptr", "!llvm.ptr");
      const Value v = Let(at, "llvm.load " + remote.name + " : !llvm.ptr -> " + accs[i].type, accs[i].type);
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
  const bool splits = !arg && count >= warp_ && SplitsAcrossThreads(g_, fusion_);
  const bool many = outputs >= kManyOutputs;
  if (const int64_t parts = PartsPerOutput(outputs, count, target_.gpu); splits && parts >= kPhasesGain * (many ? 1 : kBlock)) {
    return ReduceInTwoPhases(
        n, outputs, count, parts, kernel->function,
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
  if (!splits || many) {
    return GridStride(outputs, kBlock, kernel, [&](const Value& o) -> Status {
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
  const int64_t threads = std::min<int64_t>(kBlock, RoundUp(count, warp_));
  kernel->block = threads;
  kernel->grid = outputs;
  const Index at = Delinearize(bid_, out_dims);
  const Folding f = FoldingOf(n, ElementType(p_.buffers[out].dtype), count, /*reassoc=*/true);
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                      LoopCarrying(tid_, count, threads, f.init, [&](const Value& i, const std::vector<Value>& args)
                                       -> StatusOr<std::vector<Value>> {
                        GJ_ASSIGN_OR_RETURN(Value v, Get(n.inputs[0], InputIndex(axes, at, Delinearize(i, reduced))));
                        return f.step(args, v);
                      }));
  const Value result = f.finish(CombineAcross(f, accs, threads));
  return If(Let(0, "arith.cmpi eq, " + tid_.name + ", " + IndexConst(0).name + " : index", "i1"), [&] {
    Store(out, at, result);
    return Status::Ok();
  });
}

Status KernelEmitter::ReduceInTwoPhases(const Node& n, int64_t outputs, int64_t count, int64_t parts, const std::string& name,
                                        const std::function<StatusOr<Value>(const Value&, const Value&)>& element,
                                        const std::function<Status(const Value&, const Value&)>& store,
                                        EmittedModule* module, std::string* functions) {
  const std::string type = ElementType(g_.info(n.id).dtypes[0]);
  // 1. Many outputs: a block is a tile of a warp's width of outputs over `tile_parts` parts
  // (its warps); neighbouring threads read neighbouring outputs, and the block combines its
  // warps' partial results per output, in order, into one: partial result `group` of output
  // o at group * outputs + o. Few (and parts for whole blocks): u = output * parts + part,
  // parts a multiple of the block, neighbouring threads read neighbouring elements of one
  // output, and each block combines its threads' results into one. Either way the second
  // phase has few partial results to read, however many threads the first had.
  const bool by_block = outputs < kManyOutputs && parts >= kBlock;
  const int64_t tile_parts = by_block ? 0 : parts >= kTileParts ? kTileParts : kTileParts / 2;
  parts = by_block ? parts / kBlock * kBlock : parts / tile_parts * tile_parts;
  const int64_t units = parts * outputs;
  const int64_t kept = by_block ? parts / kBlock : parts / tile_parts;  // partial results per output
  std::vector<int> areas;  // per accumulator: the partial results (f32 or i32)
  {
    StartGpuFunction();
    EmittedKernel kernel;
    kernel.function = name;
    const Folding f = FoldingOf(n, type, count, /*reassoc=*/true);
    for (size_t i = 0; i < f.init.size(); ++i) areas.push_back(NewScratch(kept * outputs * 4, module));
    auto fold = [&](const Value& output, const Value& part) {
      return LoopFolding(
          part, count, parts, GpuLoadsInFlight(target_.gpu), f.init,
          [&](const Value& i) -> StatusOr<std::vector<Value>> {
            GJ_ASSIGN_OR_RETURN(Value v, element(output, i));
            return std::vector<Value>{v};
          },
          [&](const std::vector<Value>& args, const std::vector<Value>& v) { return f.step(args, v[0]); });
    };
    if (!by_block) {
      const int64_t tiles = CeilDiv(outputs, warp_);
      kernel.block = warp_ * tile_parts;
      kernel.grid = tiles * (parts / tile_parts);
      const Value tile = Let(0, "arith.remui " + bid_.name + ", " + IndexConst(tiles).name + " : index", "index");
      const Value group = Let(0, "arith.divui " + bid_.name + ", " + IndexConst(tiles).name + " : index", "index");
      const Value lane = Let(0, "arith.remui " + tid_.name + ", " + IndexConst(warp_).name + " : index", "index");
      const Value warp = Let(0, "arith.divui " + tid_.name + ", " + IndexConst(warp_).name + " : index", "index");
      const Value first = Let(0, "arith.muli " + tile.name + ", " + IndexConst(warp_).name + " : index", "index");
      const Value output = Let(0, "arith.addi " + first.name + ", " + lane.name + " : index", "index");
      const Value first_part = Let(0, "arith.muli " + group.name + ", " + IndexConst(tile_parts).name + " : index", "index");
      const Value part = Let(0, "arith.addi " + first_part.name + ", " + warp.name + " : index", "index");
      const Value inside = Let(0, "arith.cmpi ult, " + output.name + ", " + IndexConst(outputs).name + " : index", "i1");
      std::vector<Value> accs = f.init;
      if (outputs % warp_ == 0) {
        GJ_ASSIGN_OR_RETURN(accs, fold(output, part));
      } else {
        GJ_ASSIGN_OR_RETURN(accs, If(inside, f.init, [&] { return fold(output, part); }));
      }
      // The warps' partial results per output, through shared memory, folded in order by
      // the first warp.
      std::vector<std::string> arrays, types;
      std::string stores;
      for (const Value& acc : accs) {
        const auto [array, type] = SharedArray(std::to_string(tile_parts) + "x" + std::to_string(warp_), acc.type);
        arrays.push_back(array);
        types.push_back(type);
        stores += "memref.store " + acc.name + ", " + array + "[" + warp.name + ", " + lane.name + "] : " + type + "\n";
      }
      code_[0] += stores + "gpu.barrier\n";
      const Value stores_results =
          Let(0, "arith.cmpi eq, " + warp.name + ", " + IndexConst(0).name + " : index", "i1");
      const Value store_here = outputs % warp_ == 0 ? stores_results : Let(0, "arith.andi " + stores_results.name + ", " + inside.name + " : i1", "i1");
      GJ_RETURN_IF_ERROR(If(store_here, [&] {
        const Value scaled = Let(Innermost(), "arith.muli " + group.name + ", " + IndexConst(outputs).name + " : index", "index");
        const Value at = Let(Innermost(), "arith.addi " + scaled.name + ", " + output.name + " : index", "index");
        for (size_t i = 0; i < accs.size(); ++i) {
          Value acc;
          for (int64_t w = 0; w < tile_parts; ++w) {
            const Value v = Let(Innermost(), "memref.load " + arrays[i] + "[" + IndexConst(w).name + ", " + lane.name + "] : " + types[i],
                                accs[i].type);
            acc = w == 0 ? v : Combine(f, i, acc, v);
          }
          code_[Innermost()] += "memref.store " + acc.name + ", " + ScratchAccess(areas[i], kept * outputs, acc.type, at) + "\n";
        }
        return Status::Ok();
      }));
    } else {
      kernel.block = kBlock;
      kernel.grid = units / kBlock;
      const Value first = Let(0, "arith.muli " + bid_.name + ", " + IndexConst(kBlock).name + " : index", "index");
      const Value u = Let(0, "arith.addi " + first.name + ", " + tid_.name + " : index", "index");
      const Value output = Let(0, "arith.divui " + u.name + ", " + IndexConst(parts).name + " : index", "index");
      const Value part = Let(0, "arith.remui " + u.name + ", " + IndexConst(parts).name + " : index", "index");
      GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, fold(output, part));
      accs = CombineAcross(f, accs, kBlock);
      GJ_RETURN_IF_ERROR(If(Let(0, "arith.cmpi eq, " + tid_.name + ", " + IndexConst(0).name + " : index", "i1"), [&] {
        for (size_t i = 0; i < accs.size(); ++i)
          code_[Innermost()] += "memref.store " + accs[i].name + ", " + ScratchAccess(areas[i], kept * outputs, accs[i].type, bid_) + "\n";
        return Status::Ok();
      }));
    }
    EndGpuFunction(std::move(kernel), module, functions);
  }
  // 2. Each output's partial results in order (several loads in flight): a thread per output
  // when there are many (reading neighbouring outputs), else a block per output.
  StartGpuFunction();
  EmittedKernel kernel;
  kernel.function = name + "_finish";
  const Folding f = FoldingOf(n, type, count, /*reassoc=*/true);
  auto partials = [&](const Value& output, const Value& first, int64_t step) {
    return LoopFolding(
        first, kept, step, GpuLoadsInFlight(target_.gpu), f.init,
        [&](const Value& part) -> StatusOr<std::vector<Value>> {
          const int depth = std::max(part.depth, output.depth);  // output * kept + part, or part * outputs + output
          const Value scaled = Let(depth, "arith.muli " + (by_block ? output.name : part.name) + ", " +
                                   IndexConst(by_block ? kept : outputs).name + " : index", "index");
          const Value u = Let(depth, "arith.addi " + scaled.name + ", " + (by_block ? part.name : output.name) + " : index", "index");
          std::vector<Value> loaded;
          for (size_t i = 0; i < areas.size(); ++i)
            loaded.push_back(Let(depth, "memref.load " + ScratchAccess(areas[i], kept * outputs, f.init[i].type, u), f.init[i].type));
          return loaded;
        },
        [&](const std::vector<Value>& args, const std::vector<Value>& loaded) {
          std::vector<Value> next;
          for (size_t i = 0; i < args.size(); ++i) next.push_back(Combine(f, i, args[i], loaded[i]));
          return next;
        });
  };
  if (outputs >= kManyOutputs) {
    GJ_RETURN_IF_ERROR(GridStride(outputs, kBlock, &kernel, [&](const Value& output) -> Status {
      GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, partials(output, IndexConst(0), 1));
      return store(output, f.finish(accs));
    }));
  } else {
    const int64_t threads = std::min<int64_t>(kBlock, RoundUp(kept, warp_));
    kernel.block = threads;
    kernel.grid = outputs;
    GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, partials(bid_, tid_, threads));
    const Value result = f.finish(CombineAcross(f, accs, threads));
    GJ_RETURN_IF_ERROR(If(Let(0, "arith.cmpi eq, " + tid_.name + ", " + IndexConst(0).name + " : index", "i1"),
                          [&] { return store(bid_, result); }));
  }
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
