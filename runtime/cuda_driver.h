// The CUDA driver, opened at run time with dlopen: a GPU's libcuda.so.1, or the CUDA
// emulator (cuda_emulator/) that stands in for it and runs kernels on the CPU. Only the
// toolkit's cuda.h is needed to build it; a machine without a driver runs everything on
// the CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/status.h"

namespace graphjit {

struct CudaDeviceInfo {
  std::string library;  // the path the driver was opened from
  std::string name;
  int driver_version = 0;  // e.g. 13000
  int compute_capability_major = 0, compute_capability_minor = 0;
  int multiprocessors = 0;
  uint64_t total_memory = 0;
  bool emulated = false;  // the CUDA emulator, not a GPU
};

class CudaDriver {
 public:
  // Opens `library` (a path, or a name the dynamic loader finds), initializes it and
  // reads device 0. Fails with the reason: no library, a stub library, no device.
  static StatusOr<std::unique_ptr<CudaDriver>> Open(const std::string& library);
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

// The driver library for a device: "gpu" -> libcuda.so.1 (or `cuda_driver` if given),
// "gpu-emu" -> the CUDA emulator built with graphjit.
StatusOr<std::string> CudaDriverLibrary(const std::string& device, const std::string& cuda_driver);

// The cuBLASLt library for a device: "gpu" -> libcublasLt.so.13, "gpu-emu" -> the CUDA
// emulator's stand-in built with graphjit.
StatusOr<std::string> CublasLtLibrary(const std::string& device);

// "NVIDIA H100 SXM (graphjit CUDA emulator), sm_90, 132 SMs, 4096 MiB, driver 13.0 (path)".
std::string DescribeCudaDevice(const CudaDeviceInfo& info);

}  // namespace graphjit
