#include "runtime/gpu_model.h"

#include <algorithm>
#include <cmath>

namespace graphjit {

// Fitted to the H200's measurements of tests/data/gpu_kernels (ncu's kernel durations):
// kDramAchievable from the row and loop fusions that stream at the DRAM's pace (softmax,
// layer norm, GELU: 268 MB in 62.9-65.8 us, 4.3-4.4 TB/s of 4.92), kDramLatencyUs from the
// column reduction that cannot (65536 threads with one 128-byte load per warp in flight:
// 0.26 MB in flight, 0.69 TB/s), kLaunchUs from the kernels of a few KB (2.1-2.4 us).
GpuModelDevice ModelDeviceOf(const CudaDeviceInfo& info) {
  GpuModelDevice d;
  d.name = info.name;
  d.sms = info.multiprocessors;
  if (info.max_threads_per_multiprocessor > 0) d.max_threads_per_sm = info.max_threads_per_multiprocessor;
  if (info.max_blocks_per_multiprocessor > 0) d.max_blocks_per_sm = info.max_blocks_per_multiprocessor;
  d.dram_bytes_per_s = info.PeakDramBytesPerSecond();
  d.flops = info.multiprocessors * 128.0 * 2 * info.clock_khz * 1e3;
  return d;
}

KernelWork WorkOf(const CudaDevice::LaunchCounters& c, int64_t grid, int64_t block) {
  KernelWork k;
  k.grid = grid;
  k.block = block;
  k.registers = c.registers;
  k.shared_bytes = c.shared_bytes;
  k.moved_bytes = static_cast<int64_t>(c.footprint_sectors) * 32;
  k.float_ops = static_cast<double>(c.float_ops);
  if (c.load_waits) k.loads_in_flight = static_cast<double>(c.loads_in_flight_at_waits) / c.load_waits;
  if (c.load_requests) k.bytes_per_load = 32.0 * c.load_sectors / c.load_requests;
  return k;
}

KernelPrediction PredictKernel(const GpuModelDevice& d, const KernelWork& k) {
  KernelPrediction p;
  if (k.grid <= 0 || k.block <= 0) {  // a library's (cuBLASLt): the whole device, at its peaks
    p.memory_us = k.moved_bytes / (kDramAchievable * d.dram_bytes_per_s) * 1e6;
    p.compute_us = k.float_ops / d.flops * 1e6;
    p.us = std::max(p.memory_us, p.compute_us) + kLaunchUs;
    return p;
  }
  // Blocks resident on an SM: the fewest its threads, blocks, registers (allocated per warp
  // in units of 256) and shared memory (with 1 KB reserved per block) allow.
  const int64_t warps_per_block = (k.block + 31) / 32;
  const int64_t registers_per_warp = (std::max(k.registers, 1) * 32 + 255) / 256 * 256;
  int64_t blocks = std::min<int64_t>(d.max_blocks_per_sm, d.max_threads_per_sm / (warps_per_block * 32));
  blocks = std::min(blocks, d.registers_per_sm / (registers_per_warp * warps_per_block));
  if (k.shared_bytes > 0) blocks = std::min<int64_t>(blocks, d.shared_per_sm / (k.shared_bytes + 1024));
  blocks = std::max<int64_t>(blocks, 1);
  // The grid over the SMs: as many SMs as blocks, up to all; on each, its share of the
  // blocks up to what fits.
  const double sms = std::min<double>(d.sms, k.grid);
  const double resident = std::min<double>(blocks, static_cast<double>(k.grid) / sms);
  p.warps_per_sm = resident * warps_per_block;
  double bandwidth = kDramAchievable * d.dram_bytes_per_s;
  if (k.loads_in_flight > 0 && k.bytes_per_load > 0) {
    p.bytes_in_flight = sms * p.warps_per_sm * k.loads_in_flight * k.bytes_per_load;
    const double sustained = p.bytes_in_flight / (kDramLatencyUs * 1e-6);
    if (sustained < bandwidth) {
      bandwidth = sustained;
      p.latency_bound = true;
    }
  }
  p.memory_us = k.moved_bytes / bandwidth * 1e6;
  p.compute_us = k.float_ops / (d.flops * sms / d.sms) * 1e6;
  p.us = std::max(p.memory_us, p.compute_us) + kLaunchUs;
  return p;
}

}  // namespace graphjit
