// What a GPU kernel's time is predicted to be from what the CUDA emulator counted of it
// (the bytes it moves, the loads each warp has in flight at once, its registers) and the
// device it would run on (an H100 or an H200: SMs, the DRAM's peak bandwidth, clocks).
//
// A kernel is bound by the larger of its memory time and its arithmetic. Its memory time is
// its bytes over the bandwidth it can draw, the smaller of the DRAM's (a fixed share of the
// peak: no kernel gets all of it) and what its loads in flight sustain by Little's law:
// bytes in flight = SMs it occupies x warps resident on each (threads, registers, shared
// memory and the grid allow) x loads each warp has in flight x bytes per load, over the
// DRAM's latency. A fixed cost per launch is added. The constants were fitted to the nine
// kernels an H200 measured (tests/data/gpu_kernels).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"

namespace graphjit {

struct GpuModelDevice {
  std::string name;
  int sms = 0;
  int max_threads_per_sm = 2048, max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int shared_per_sm = 233472;
  double dram_bytes_per_s = 0;  // the peak, from the memory clock and bus width
  double flops = 0;             // float32 FLOP/s without tensor cores: 128 lanes x 2 per SM per clock
};
// The device as its driver describes it (the emulator's: CUEMU_DEVICE=h100|h200|a100).
GpuModelDevice ModelDeviceOf(const CudaDeviceInfo& info);

// One launch as the model sees it.
struct KernelWork {
  int64_t grid = 0, block = 0;          // 0: a library's call, on the whole device
  int registers = 0, shared_bytes = 0;  // per thread; per block
  int64_t moved_bytes = 0;              // to and from DRAM
  double float_ops = 0;
  // Per warp: the global loads in flight when it waits for one (the emulator's
  // loads_in_flight_at_waits / load_waits), and the DRAM bytes of a warp's load (its 32-byte
  // sectors x 32). 0 loads in flight: none measured (bandwidth-bound).
  double loads_in_flight = 0, bytes_per_load = 0;
};

// A launch of `grid` x `block` threads as the emulator counted it.
KernelWork WorkOf(const CudaDevice::LaunchCounters& counters, int64_t grid, int64_t block);

struct KernelPrediction {
  double us = 0;
  double memory_us = 0, compute_us = 0;
  double warps_per_sm = 0;     // resident at once, on the SMs it occupies
  double bytes_in_flight = 0;  // on the whole device
  bool latency_bound = false;  // its loads in flight, not the DRAM, bound its bandwidth
};

// The model's constants (an H200's fit; see gpu_model.cc).
constexpr double kDramLatencyUs = 0.38;
constexpr double kDramAchievable = 0.888;  // of the peak, at best
constexpr double kLaunchUs = 1.5;

KernelPrediction PredictKernel(const GpuModelDevice& device, const KernelWork& kernel);

}  // namespace graphjit
