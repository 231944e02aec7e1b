// The GPU schedules' launch choices (internal to jit/): pure functions of the device's
// description and the shapes, each unit-tested (tests/unit/jit/gpu_launch_test.cc); the
// kinds' emitters (jit/loop_emitter.h, jit/row_emitter.h, jit/reduce_emitter.h) write the
// code the choice describes.
#pragma once

#include <cstdint>
#include <vector>

#include "jit/target.h"

namespace graphjit::emitter {

// A block's threads when a schedule does not size it otherwise.
constexpr int64_t kGpuBlock = 256;

int64_t CeilDiv(int64_t a, int64_t b);
int64_t RoundUp(int64_t a, int64_t b);

// `units` of work, a thread each, in blocks of at most `block` threads; a grid-stride
// loop's grid is at most the blocks the device holds at once (every SM full).
struct Launch {
  int64_t grid = 0, block = 0;
};
Launch Launch1D(int64_t units, int64_t block, const GpuDescription& gpu);

// A loop fusion's elements per thread: 4 consecutive ones (128-bit loads and stores) where
// the last dim allows, else 1.
int64_t LoopVectorWidth(const std::vector<int64_t>& dims);

// A reduction of `outputs` results of `count` elements each, in two phases: its threads per
// output in the first (each folding at least a few elements; as many in all as the GPU
// holds at once).
int64_t PartsPerOutput(int64_t outputs, int64_t count, const GpuDescription& gpu);

// How a row fusion (`rows` rows of `cols` columns) is launched.
struct RowLaunch {
  enum class Kind {
    kThreadPerRow,   // rows the threads cannot share (ArgMax, 64-bit integers), or empty rows
    kThreadsPerRow,  // a warp (short rows, several rows per block) or a block per row
    kInPhases,       // rows too few and too long: each reduction in two phases
  } kind = Kind::kThreadPerRow;
  int64_t threads = 0;          // per row
  bool warp_per_row = false;    // kThreadsPerRow: a warp per row, kRowsPerWarpBlock rows per block
  int64_t rows_per_block = 1;   // kThreadsPerRow
  int64_t cluster = 1;          // blocks per row (a thread-block cluster, sm_90)
  int64_t slice = 0;            // a block's columns (the row's, or its cluster's share)
  bool held = false;            // each thread holds its columns in registers
  bool stages = false;          // the row is staged in shared memory (read by more than one loop)
  int64_t stage_budget = 0;     // the shared memory staging may use, per block
  int64_t parts = 0;            // kInPhases: threads per row in the first phase
  int64_t grid = 0, block = 0;  // kThreadsPerRow
};
// `splits`: partial results can be combined across threads; `loops`: the loops over the
// row (one per reduction, and one if the fusion stores full rows); `column_bytes`: per
// buffer the loops read, the bytes a staged column takes.
RowLaunch ChooseRowLaunch(const GpuDescription& gpu, int64_t rows, int64_t cols, bool splits, int loops,
                          const std::vector<int64_t>& column_bytes);

// How a column or full reduction of `outputs` results of `count` elements each is launched.
struct ReduceLaunch {
  enum class Kind {
    kThreadPerOutput,  // many outputs, or elements the threads cannot share
    kBlockPerOutput,   // a block's threads fold strided elements, then combine
    kInPhases,         // few outputs of many elements: two kernels
  } kind = Kind::kThreadPerOutput;
  int64_t threads = 0;  // kBlockPerOutput: the block
  int64_t parts = 0;    // kInPhases: threads per output in the first phase
};
ReduceLaunch ChooseReduceLaunch(const GpuDescription& gpu, int64_t outputs, int64_t count, bool splits);

// A reduction in two phases: by block (few outputs: a block's threads share one output,
// u = output * parts + part) or by tile (a block is a warp's width of outputs over
// `tile_parts` parts); the parts rounded to whole blocks or tiles, and the partial results
// each output keeps for the second phase.
struct PhasesLaunch {
  bool by_block = false;
  int64_t tile_parts = 0;
  int64_t parts = 0;
  int64_t kept = 0;
  int64_t finish_threads = 0;  // the second phase: a block per output of these threads (0: a thread per output)
};
PhasesLaunch ChoosePhases(const GpuDescription& gpu, int64_t outputs, int64_t parts);

}  // namespace graphjit::emitter
