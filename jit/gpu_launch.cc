#include "jit/gpu_launch.h"

#include <algorithm>

namespace graphjit::emitter {

namespace {

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

// The blocks of a cluster a row too long for one block's shared memory is split among:
// each block's slice (whole warps' worth of columns, so its loads start aligned) must fit
// (the staged bytes of its columns) and still be too long to hold in registers; 1 if none.
int64_t ClusterFor(const GpuDescription& gpu, int64_t cols, int64_t threads, int64_t budget,
                   const std::vector<int64_t>& column_bytes) {
  auto slice_of = [&](int64_t n) { return RoundUp(CeilDiv(cols, n), gpu.warp_size); };
  auto staged = [&](int64_t slice) {
    int64_t bytes = 0;
    for (int64_t b : column_bytes) bytes = RoundUp(bytes, 16) + b * slice;
    return bytes;
  };
  if (staged(cols) <= budget) return 1;
  for (int64_t n = 2; n <= kMaxCluster; ++n)
    if (staged(slice_of(n)) <= budget && CeilDiv(slice_of(n), threads) > kMaxHeld && slice_of(n) * (n - 1) < cols) return n;
  return 1;
}

}  // namespace

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

Launch Launch1D(int64_t units, int64_t block, const GpuDescription& gpu) {
  Launch launch;
  launch.block = std::min(block, std::max<int64_t>(gpu.warp_size, RoundUp(units, gpu.warp_size)));
  const int64_t resident = int64_t{gpu.multiprocessors} * gpu.max_blocks_per_multiprocessor;
  launch.grid = std::min(CeilDiv(units, launch.block), resident);
  return launch;
}

int64_t LoopVectorWidth(const std::vector<int64_t>& dims) { return !dims.empty() && dims.back() % 4 == 0 ? 4 : 1; }

int64_t PartsPerOutput(int64_t outputs, int64_t count, const GpuDescription& gpu) {
  const int64_t resident = int64_t{gpu.multiprocessors} * gpu.max_threads_per_multiprocessor;
  return std::min(count / kMinPerPart, resident / outputs);
}

RowLaunch ChooseRowLaunch(const GpuDescription& gpu, int64_t rows, int64_t cols, bool splits, int loops,
                          const std::vector<int64_t>& column_bytes) {
  RowLaunch l;
  if (rows == 0 || cols == 0 || !splits) return l;  // a thread per row
  const int64_t warp = gpu.warp_size;
  l.warp_per_row = cols <= warp * kMaxHeld;
  l.threads = l.warp_per_row
                  ? warp
                  : std::min<int64_t>(gpu.max_threads_per_block, std::max<int64_t>(64, RoundUp(CeilDiv(cols, kMaxHeld), warp)));
  // A row too long for a block's registers and read by more than one loop is staged in
  // shared memory; one too long for a block's is split among the blocks of a cluster.
  l.stages = CeilDiv(cols, l.threads) > kMaxHeld && loops > 1;
  const int64_t budget = gpu.shared_memory_per_block_optin - kStaticSharedReserve;
  if (l.stages && gpu.compute_capability >= kClusterCapability)
    l.cluster = ClusterFor(gpu, cols, l.threads, budget, column_bytes);
  l.slice = l.cluster > 1 ? RoundUp(CeilDiv(cols, l.cluster), warp) : cols;
  l.held = CeilDiv(l.slice, l.threads) <= kMaxHeld;
  l.stage_budget = l.stages ? budget : 0;
  if (const int64_t parts = PartsPerOutput(rows, cols, gpu); parts >= kPhasesGain * l.threads * l.cluster) {
    l.kind = RowLaunch::Kind::kInPhases;
    l.parts = parts;
    return l;
  }
  l.kind = RowLaunch::Kind::kThreadsPerRow;
  l.rows_per_block = l.warp_per_row ? kRowsPerWarpBlock : 1;
  l.block = l.threads * l.rows_per_block;
  l.grid = CeilDiv(rows, l.rows_per_block) * l.cluster;
  return l;
}

ReduceLaunch ChooseReduceLaunch(const GpuDescription& gpu, int64_t outputs, int64_t count, bool splits) {
  ReduceLaunch l;
  splits = splits && count >= gpu.warp_size;
  const bool many = outputs >= kManyOutputs;
  if (const int64_t parts = PartsPerOutput(outputs, count, gpu); splits && parts >= kPhasesGain * (many ? 1 : kGpuBlock)) {
    l.kind = ReduceLaunch::Kind::kInPhases;
    l.parts = parts;
  } else if (splits && !many) {
    l.kind = ReduceLaunch::Kind::kBlockPerOutput;
    l.threads = std::min<int64_t>(kGpuBlock, RoundUp(count, gpu.warp_size));
  }
  return l;
}

PhasesLaunch ChoosePhases(const GpuDescription& gpu, int64_t outputs, int64_t parts) {
  PhasesLaunch l;
  l.by_block = outputs < kManyOutputs && parts >= kGpuBlock;
  l.tile_parts = l.by_block ? 0 : parts >= kTileParts ? kTileParts : kTileParts / 2;
  l.parts = l.by_block ? parts / kGpuBlock * kGpuBlock : parts / l.tile_parts * l.tile_parts;
  l.kept = l.by_block ? l.parts / kGpuBlock : l.parts / l.tile_parts;
  l.finish_threads = outputs >= kManyOutputs ? 0 : std::min<int64_t>(kGpuBlock, RoundUp(l.kept, gpu.warp_size));
  return l;
}

}  // namespace graphjit::emitter
