// The CUDA driver, opened at run time with dlopen: a GPU's libcuda.so.1, or the CUDA
// emulator (cuda_emulator/) that stands in for it and runs kernels on the CPU. Only the
// toolkit's cuda.h is needed to build it; a machine without a driver runs everything on
// the CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/device.h"
#include "ir/status.h"

namespace graphjit {

struct CudaDeviceInfo {
  std::string library;   // the path the driver was opened from
  int ordinal = 0;       // the driver's device number (gpu:N)
  int device_count = 0;  // how many devices the driver has
  std::string name;
  int driver_version = 0;  // e.g. 13000
  int compute_capability_major = 0, compute_capability_minor = 0;
  int multiprocessors = 0;
  uint64_t total_memory = 0;
  bool emulated = false;  // the CUDA emulator, not a GPU
  // The limits code is sized by (the driver's device attributes).
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_multiprocessor = 0;
  int max_threads_per_multiprocessor = 0;
  int shared_memory_per_block = 0;        // bytes, without opting in
  int shared_memory_per_block_optin = 0;  // bytes, the most a kernel may opt in to
  int registers_per_block = 0;
  int l2_cache_bytes = 0;
  // What the performance model reads: the SMs' and the memory's clocks (kHz) and the
  // memory bus's width (bits).
  int clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;
  // The DRAM's peak bandwidth, bytes/s: two transfers per memory clock over the bus (0
  // when the driver does not say).
  double PeakDramBytesPerSecond() const { return 2.0 * memory_clock_khz * 1e3 * memory_bus_bits / 8; }
};

// The device a session that compiles without a GPU (SessionOptions::gpu_compile_only)
// generates code for: an A100 (108 SMs) for sm_80, an H100 SXM (132 SMs) for sm_90, as
// their drivers describe them.
CudaDeviceInfo NominalCudaDevice(int sm);

class CudaDriver {
 public:
  // Opens `library` (a path, or a name the dynamic loader finds), initializes it and
  // reads device `ordinal`. Fails with the reason: no library, a stub library, no such
  // device, a process forked from one that had initialized CUDA.
  static StatusOr<std::unique_ptr<CudaDriver>> Open(const std::string& library, int ordinal = 0);
  ~CudaDriver();

  const CudaDeviceInfo& device() const { return device_; }
  // A driver entry point by its exported (versioned) name, e.g. "cuMemAlloc_v2"; null if
  // the driver does not have it.
  void* Symbol(const char* name) const;

 private:
  CudaDriver() = default;
  void* handle_ = nullptr;
  CudaDeviceInfo device_;
};

// The driver library for a device: a GPU's libcuda.so.1 (or `cuda_driver` if given), the
// CUDA emulator that ships with graphjit (lib/cuda_emulator/libcuda.so.1) for kGpuEmu.
StatusOr<std::string> CudaDriverLibrary(DeviceKind device, const std::string& cuda_driver);

// The cuBLASLt library for a device: a GPU's libcublasLt.so.13, the CUDA emulator's
// stand-in (lib/cuda_emulator/libcublasLt.so.13) for kGpuEmu.
StatusOr<std::string> CublasLtLibrary(DeviceKind device);

// The cuDNN library for a device: a GPU's libcudnn.so.9, the CUDA emulator's stand-in
// (lib/cuda_emulator/libcudnn.so.9) for kGpuEmu.
StatusOr<std::string> CudnnLibrary(DeviceKind device);
// Ok if that library opens (asked once per process and device), else why not.
Status CudnnOpens(DeviceKind device);

// FailedPrecondition in a child made by fork() of a process that had initialized CUDA (the
// driver refuses every call there, with an error that says nothing of why); else Ok.
Status CheckNotForkedAfterCuda();

// "NVIDIA H100 SXM (graphjit CUDA emulator), sm_90, 132 SMs, 4096 MiB, driver 13.0 (path)".
std::string DescribeCudaDevice(const CudaDeviceInfo& info);

}  // namespace graphjit
