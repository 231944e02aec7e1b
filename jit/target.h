// What a backend's code is made for, read from its device: the GPU's limits (SMs, warp,
// threads and blocks, shared memory, registers, L2, DRAM bandwidth) or the CPU's (vector width, cores,
// caches). The schedules size grids, blocks and tiles from it, never from constants, and
// the backend's target string (part of every signature) says what in it decides the code.
#pragma once

#include <cstdint>
#include <string>

namespace graphjit {

enum class Schedule { kCpu, kGpu };

struct GpuDescription {
  int compute_capability = 0;  // major * 10 + minor
  int multiprocessors = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_multiprocessor = 0;
  int max_threads_per_multiprocessor = 0;  // resident at once
  int shared_memory_per_block = 0;         // bytes, without opting in
  int shared_memory_per_block_optin = 0;   // bytes
  int registers_per_block = 0;
  int64_t l2_bytes = 0;
  double dram_bytes_per_s = 0;  // peak: 2 x the memory clock x the bus width (0: unknown)
};

// The loads a GPU thread keeps in flight as it folds a reduction's elements (a power of two,
// 2 to 8): enough that every SM full of threads keeps twice the bytes Little's law asks of
// the device (its DRAM's peak bandwidth times its latency, kDramLatencyUs, over its SMs), in
// 4-byte loads. An H100 or H200: 4; an A100: 2; 4 where the bandwidth is not known.
int64_t GpuLoadsInFlight(const GpuDescription& gpu);

struct CpuDescription {
  int vector_bits = 0;                                // the widest vectors the code uses
  int cores = 0;                                      // the cores this process may run on
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // per core (L3: shared)
};

struct TargetDescription {
  Schedule schedule = Schedule::kCpu;
  GpuDescription gpu;  // kGpu
  CpuDescription cpu;  // kCpu

  // What the code depends on, for the target string: "108 SMs x 32 blocks x 2048 threads,
  // warp 32, 1024 threads, 163 KB shared, 1555 GB/s" (the grids' limits, the shared memory a
  // block may opt in to, the DRAM's peak: the loads a thread keeps in flight) or "512-bit
  // vectors".
  std::string CodeDecidingFacts() const;
};

}  // namespace graphjit
