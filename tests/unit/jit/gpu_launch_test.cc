// jit/gpu_launch: the GPU schedules' launch choices, pure functions of the device and the
// shapes, on an H100 (sm_90: thread-block clusters) and an A100 (sm_80).
#include "jit/gpu_launch.h"

#include <gtest/gtest.h>

namespace graphjit::emitter {
namespace {

GpuDescription H100() {
  GpuDescription gpu;
  gpu.compute_capability = 90;
  gpu.multiprocessors = 132;
  gpu.warp_size = 32;
  gpu.max_threads_per_block = 1024;
  gpu.max_blocks_per_multiprocessor = 32;
  gpu.max_threads_per_multiprocessor = 2048;
  gpu.shared_memory_per_block = 48 << 10;
  gpu.shared_memory_per_block_optin = 227 << 10;
  gpu.registers_per_block = 65536;
  gpu.l2_bytes = 50 << 20;
  gpu.dram_bytes_per_s = 3.35e12;
  return gpu;
}

GpuDescription A100() {
  GpuDescription gpu = H100();
  gpu.compute_capability = 80;
  gpu.multiprocessors = 108;
  gpu.shared_memory_per_block_optin = 163 << 10;
  gpu.dram_bytes_per_s = 1.555e12;
  return gpu;
}

TEST(GpuLaunch, OneDimensionalGridsFillTheDeviceOnce) {
  const Launch few = Launch1D(40, kGpuBlock, H100());
  EXPECT_EQ(few.block, 64) << "a whole number of warps, no more than the units need";
  EXPECT_EQ(few.grid, 1);
  const Launch many = Launch1D(int64_t{1} << 30, kGpuBlock, H100());
  EXPECT_EQ(many.block, 256);
  EXPECT_EQ(many.grid, 132 * 32) << "a grid-stride loop: at most the blocks resident at once";
  EXPECT_EQ(Launch1D(0, kGpuBlock, H100()).grid, 0);
}

TEST(GpuLaunch, LoopsTakeFourElementsWhereTheLastDimAllows) {
  EXPECT_EQ(LoopVectorWidth({8, 12}), 4);
  EXPECT_EQ(LoopVectorWidth({8, 6}), 1);
  EXPECT_EQ(LoopVectorWidth({}), 1);
}

TEST(GpuLaunch, ShortRowsTakeAWarpEachLongRowsABlock) {
  const RowLaunch warp = ChooseRowLaunch(H100(), 10000, 100, /*splits=*/true, /*loops=*/2, {4});
  EXPECT_EQ(warp.kind, RowLaunch::Kind::kThreadsPerRow);
  EXPECT_TRUE(warp.warp_per_row);
  EXPECT_EQ(warp.threads, 32);
  EXPECT_EQ(warp.rows_per_block, 4);
  EXPECT_EQ(warp.block, 128);
  EXPECT_EQ(warp.grid, 2500);
  EXPECT_TRUE(warp.held) << "4 columns a thread, in registers";
  EXPECT_FALSE(warp.stages);

  const RowLaunch block = ChooseRowLaunch(H100(), 10000, 4096, true, 2, {4});
  EXPECT_FALSE(block.warp_per_row);
  EXPECT_EQ(block.threads, 512) << "8 columns a thread";
  EXPECT_EQ(block.block, 512);
  EXPECT_EQ(block.grid, 10000);
  EXPECT_TRUE(block.held);
}

TEST(GpuLaunch, RowsTheThreadsCannotShareTakeAThreadEach) {
  EXPECT_EQ(ChooseRowLaunch(H100(), 100, 4096, /*splits=*/false, 1, {4}).kind, RowLaunch::Kind::kThreadPerRow);
  EXPECT_EQ(ChooseRowLaunch(H100(), 100, 0, true, 1, {4}).kind, RowLaunch::Kind::kThreadPerRow);
  EXPECT_EQ(ChooseRowLaunch(H100(), 0, 100, true, 1, {4}).kind, RowLaunch::Kind::kThreadPerRow);
}

TEST(GpuLaunch, ARowTooLongForABlocksSharedMemoryIsSplitAcrossACluster) {
  // Rows of 1 MiB of f32, read by two loops: staged; on sm_90 split among 5 blocks, each
  // staging 52448 columns (205 KiB of its 227).
  const RowLaunch h100 = ChooseRowLaunch(H100(), 8, 262144, true, 2, {4});
  EXPECT_EQ(h100.kind, RowLaunch::Kind::kThreadsPerRow);
  EXPECT_TRUE(h100.stages);
  EXPECT_FALSE(h100.held);
  EXPECT_EQ(h100.cluster, 5);
  EXPECT_EQ(h100.slice, 52448);
  EXPECT_EQ(h100.block, 1024);
  EXPECT_EQ(h100.grid, 8 * 5);
  EXPECT_EQ(h100.stage_budget, (227 << 10) - 4096);
  // No clusters on sm_80: a block per row, staged where it fits.
  const RowLaunch a100 = ChooseRowLaunch(A100(), 8, 262144, true, 2, {4});
  EXPECT_EQ(a100.cluster, 1);
  EXPECT_EQ(a100.slice, 262144);
  // Read once: nothing to stage.
  EXPECT_FALSE(ChooseRowLaunch(H100(), 8, 262144, true, 1, {4}).stages);
}

TEST(GpuLaunch, FewLongRowsAreReducedInTwoPhases) {
  const RowLaunch phases = ChooseRowLaunch(H100(), 64, 1 << 20, true, 2, {4});
  EXPECT_EQ(phases.kind, RowLaunch::Kind::kInPhases);
  EXPECT_EQ(phases.parts, 270336 / 64) << "as many threads as the GPU holds, shared by the rows";
}

TEST(GpuLaunch, ReductionsChooseByOutputsAndElements) {
  EXPECT_EQ(ChooseReduceLaunch(H100(), 1, 1 << 24, true).kind, ReduceLaunch::Kind::kInPhases);
  EXPECT_EQ(ChooseReduceLaunch(H100(), 1, 1 << 24, true).parts, 270336);
  EXPECT_EQ(ChooseReduceLaunch(H100(), 4096, 64, true).kind, ReduceLaunch::Kind::kThreadPerOutput) << "many outputs";
  const ReduceLaunch block = ChooseReduceLaunch(H100(), 16, 1000, true);
  EXPECT_EQ(block.kind, ReduceLaunch::Kind::kBlockPerOutput);
  EXPECT_EQ(block.threads, 256);
  EXPECT_EQ(ChooseReduceLaunch(H100(), 16, 1000, false).kind, ReduceLaunch::Kind::kThreadPerOutput) << "ArgMax";
  EXPECT_EQ(ChooseReduceLaunch(H100(), 16, 16, true).kind, ReduceLaunch::Kind::kThreadPerOutput) << "fewer than a warp";
}

TEST(GpuLaunch, TwoPhasesShareABlockPerOutputOrATileOfOutputs) {
  const PhasesLaunch few = ChoosePhases(H100(), 1, 8200);
  EXPECT_TRUE(few.by_block);
  EXPECT_EQ(few.parts, 8192) << "whole blocks";
  EXPECT_EQ(few.kept, 32);
  EXPECT_EQ(few.finish_threads, 32);
  const PhasesLaunch many = ChoosePhases(H100(), 2048, 100);
  EXPECT_FALSE(many.by_block);
  EXPECT_EQ(many.tile_parts, 8);
  EXPECT_EQ(many.parts, 96);
  EXPECT_EQ(many.kept, 12);
  EXPECT_EQ(many.finish_threads, 0) << "a thread per output";
  EXPECT_EQ(ChoosePhases(H100(), 2048, 6).tile_parts, 4);
}

TEST(GpuLaunch, LoadsInFlightFollowTheDramBandwidth) {
  EXPECT_EQ(GpuLoadsInFlight(H100()), 4);
  EXPECT_EQ(GpuLoadsInFlight(A100()), 2);
  GpuDescription unknown = H100();
  unknown.dram_bytes_per_s = 0;
  EXPECT_EQ(GpuLoadsInFlight(unknown), 4);
}

}  // namespace
}  // namespace graphjit::emitter
