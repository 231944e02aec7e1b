// The row emitter: a fusion of row reductions (softmax, layer norm, ...) and what reads
// their results, each row's reductions in order, then what the fusion stores.
//  - CPU: a row per iteration of the row loop; each reduction one loop over the row, then
//    one loop for the stores; an expensive value an earlier loop computed is kept in a
//    stack array of one row (the row cache), and the second loop prefetches the next row.
//  - GPU: a warp per row (4 rows per block) for rows of up to 256 elements, else a block
//    per row; each thread folds its elements (columns lane, lane + T, ...), then the
//    threads combine through warp shuffles and, across warps, shared memory. When a thread
//    has at most 8 elements of the row they are held in registers from the first reduction
//    to the stores, so the row is read from memory once; a longer row is folded several
//    columns at a time (their loads in flight together: GpuLoadsInFlight, from the
//    device's DRAM bandwidth and SMs) and staged in dynamic shared memory by the first loop
//    that reads it, where it fits (FromStage); on sm_90 a row too long for one block's
//    shared memory is split among the blocks of a thread-block cluster (up to 8), each
//    staging its slice, their partial results combined through distributed shared memory
//    (CombineAcrossCluster). Rows too few and too long for that to keep the GPU busy: each
//    reduction in two phases, then the stores. What the threads cannot share (ArgMax/ArgMin,
//    64-bit integer rows) runs a thread per row.
// The launch is jit/gpu_launch.h's ChooseRowLaunch.
#pragma once

#include "jit/kernel_emitter.h"

namespace graphjit::emitter {

class RowEmitter : public KernelEmitter {
 public:
  RowEmitter(const AnalyzedGraph& g, const FusionPlan& p, int f, const TargetDescription& target)
      : KernelEmitter(g, p, f, target) {}

 private:
  StatusOr<int64_t> CpuBody(EmittedKernel* kernel) override;
  Status GpuBody(EmittedKernel* kernel, EmittedModule* module, std::string* functions) override;
  void StartGpuFunction() override;
  int64_t SharedBytes() const override { return stage_bytes_; }

  // --- The row cache.
  // A row fusion loops over each row once per reduction, then once more for what it
  // stores. An expensive value (one with a transcendental or a division in it) that an
  // earlier loop computes and a later loop needs again is kept in a stack array of one
  // row (in L1), not computed twice: softmax computes exp(x - max) once per element.
  // Whether `v` is computed inline, element by element at the loop's own column.
  bool Inline(TensorId v) const;
  // The full-shaped inline values under `v` (and whether any is expensive) into `out`.
  bool Collect(TensorId v, std::map<TensorId, bool>* out) const;
  // Top down from `v`: the first values an earlier loop computed, if expensive, are cached
  // (stored by the first loop that computes them). `earlier`: value -> (expensive, loop).
  void Mark(TensorId v, const std::map<TensorId, std::pair<bool, int>>& earlier, int64_t* bytes, int64_t row_bytes);
  void PlanRowCache(const std::vector<TensorId>& full, const std::vector<int64_t>& reduced);
  // The cached element of `v` at `index` if an earlier loop stored it; else stores it if
  // this loop is the one that computes it.
  std::optional<Value> FromRowCache(TensorId v, const Index& index) override;
  void ToRowCache(TensorId v, const Index& index, const Value& value) override;

  // A row's reductions in order, each one loop over the row, then what the fusion stores per
  // row (`per_row`) and per element (`full`), at row_: the row as one thread computes it.
  Status RowBody(const std::vector<TensorId>& full, const std::vector<TensorId>& per_row, const std::vector<int64_t>& reduced,
                 int64_t cols);
  Status StorePerRow(const std::vector<TensorId>& per_row);
  Status ReduceRow(int r, const std::vector<int64_t>& reduced, int64_t count);
  // CPU: in a row's second loop, at its column `at`, prefetches of the next row (next_row_)
  // of the full-shaped buffers the first loop read.
  void PrefetchNextRow(const Index& at);

  // A row fusion's row as the threads of a kThreadsPerRow launch share it: what it stores
  // (full rows, per row), the thread's first column (lane) and, in a cluster, its block's
  // slice [first, end); held: the thread's columns.
  struct RowThreads {
    const RowLaunch& launch;
    std::vector<int64_t> reduced;
    int64_t cols;
    std::vector<TensorId> full, per_row;
    Value lane, first, end;
    std::vector<Value> columns;
    // Whether the thread's k-th column may be past the row's end.
    bool MayPassEnd(size_t k) const { return static_cast<int64_t>(k + 1) * launch.threads > cols; }
  };
  Status RowAcrossThreads(RowThreads& t);
  Status ReduceAcrossThreads(RowThreads& t, int j);
  // The index of the row's `column`; in loop `loop`, staged where the row is (FromStage).
  Index RowAt(const RowThreads& t, const Value& column);
  Index StagedRowAt(const RowThreads& t, const Value& column, int loop);

  // Rows too few and too long for a block each: each reduction in two phases
  // (ReduceInTwoPhases; fusion_N_reduceJ), its result per row kept in scratch memory, then
  // fusion_N: what the fusion stores, a thread per element (or per row).
  Status GpuRowsInPhases(const std::vector<TensorId>& full, const std::vector<TensorId>& per_row,
                         const std::vector<int64_t>& row_dims, const std::vector<int64_t>& reduced, int64_t parts,
                         EmittedModule* module, std::string* functions);

  // The element sizes of the full-shaped buffers the row fusion loads: what a column of
  // the row takes staged (an estimate from the graph, before the kernel is written).
  std::vector<int64_t> StagedColumnBytes();

  // A row too long for a block's registers, read by more than one of its loops: each
  // full-shaped buffer's row is staged in dynamic shared memory by the first loop that
  // loads it (each thread its own columns), and the later loops load it from there: the row
  // is read from memory once. Loads staged: those at the loop's own column, in the loop's
  // body (not in a branch). FromStage: the element from shared memory where an earlier loop
  // staged it; ToStage: after a load from memory, stores it there if this loop is the first
  // to load the buffer and the block's shared memory has room.
  std::optional<Value> FromStage(int buffer, const Index& index, int level) override;
  void ToStage(int buffer, const Index& index, const Value& v) override;
  bool Stages(int buffer, const Index& index, int level) const;

  // GPU: the staged rows (FromStage): per buffer, its array in dynamic shared memory, its
  // type and the loop that stores it; the loop being written (stage_loop_: reductions,
  // then the stores) and its column in the row's dims (empty: nothing is staged); the
  // dynamic shared memory used and the most there is.
  struct Stage {
    Value array;
    int loop = 0;
  };
  // A stage holds the block's `stage_len_` columns of the row (a cluster's block: its
  // slice), the loop's column at `stage_at_` of them.
  std::map<int, Stage> stages_;
  int stage_loop_ = 0;
  Index stage_cols_;
  Value stage_at_;
  int64_t stage_len_ = 0;
  int64_t stage_bytes_ = 0, stage_budget_ = 0;

  // The row cache: per cached value, its stack array, the loop that stores it and whether
  // it did; loop_ is the row loop being written (reductions, then the stores).
  struct Cached {
    Value array;
    int loop = -1;
    bool stored = false;
  };
  static constexpr int64_t kMaxRowCacheBytes = 128 << 10;
  std::map<TensorId, Cached> cache_;
  int loop_ = 0;
  Index next_row_;           // CPU: the row after row_ (the last row's is itself); empty: no prefetches
  bool prefetched_ = false;  // the second loop has its prefetches
};

}  // namespace graphjit::emitter
