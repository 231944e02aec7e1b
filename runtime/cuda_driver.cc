#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <cstdio>

namespace graphjit {
namespace {

// The few driver types this file uses, with cuda.h's sizes (the driver's ABI).
using CuResult = int;
using CuDevice = int;
using CuInit = CuResult (*)(unsigned);
using CuDriverGetVersion = CuResult (*)(int*);
using CuDeviceGet = CuResult (*)(CuDevice*, int);
using CuDeviceGetCount = CuResult (*)(int*);
using CuDeviceGetName = CuResult (*)(char*, int, CuDevice);
using CuDeviceGetAttribute = CuResult (*)(int*, int, CuDevice);
using CuDeviceTotalMem = CuResult (*)(size_t*, CuDevice);
using CuGetErrorName = CuResult (*)(CuResult, const char**);

constexpr int kAttributeMultiprocessors = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttributeMajor = 75;            // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttributeMinor = 76;            // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr CuResult kStubLibrary = 34;          // CUDA_ERROR_STUB_LIBRARY

}  // namespace

StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Open(const std::string& library) {
  std::unique_ptr<CudaDriver> driver(new CudaDriver);
  driver->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver->handle_) return NotFound("cannot open the CUDA driver " + library + ": " + dlerror());
  driver->device_.library = library;
  auto get = [&](const char* name) { return driver->Symbol(name); };
  auto init = reinterpret_cast<CuInit>(get("cuInit"));
  auto version = reinterpret_cast<CuDriverGetVersion>(get("cuDriverGetVersion"));
  auto device_get = reinterpret_cast<CuDeviceGet>(get("cuDeviceGet"));
  auto count = reinterpret_cast<CuDeviceGetCount>(get("cuDeviceGetCount"));
  auto name = reinterpret_cast<CuDeviceGetName>(get("cuDeviceGetName"));
  auto attribute = reinterpret_cast<CuDeviceGetAttribute>(get("cuDeviceGetAttribute"));
  auto total = reinterpret_cast<CuDeviceTotalMem>(get("cuDeviceTotalMem_v2"));
  auto error_name = reinterpret_cast<CuGetErrorName>(get("cuGetErrorName"));
  if (!init || !version || !device_get || !count || !name || !attribute || !total || !error_name)
    return InvalidArgument(library + " is not a CUDA driver (it lacks cuInit, cuDeviceGet, ...)");
  auto failed = [&](const char* call, CuResult r) {
    const char* text = nullptr;
    error_name(r, &text);
    return NotFound( library + ": " + call + " failed with " + (text ? text : std::to_string(r)) +
                    (r == kStubLibrary ? " (the toolkit's stub, not a driver: no GPU)" : ""));
  };
  if (CuResult r = init(0)) return failed("cuInit", r);
  int devices = 0;
  if (CuResult r = count(&devices)) return failed("cuDeviceGetCount", r);
  if (devices == 0) return NotFound(library + ": no CUDA device");
  CuDevice dev;
  if (CuResult r = device_get(&dev, 0)) return failed("cuDeviceGet", r);
  char text[256] = {};
  size_t memory = 0;
  CudaDeviceInfo& info = driver->device_;
  if (CuResult r = name(text, sizeof text, dev)) return failed("cuDeviceGetName", r);
  info.name = text;
  version(&info.driver_version);
  attribute(&info.multiprocessors, kAttributeMultiprocessors, dev);
  attribute(&info.compute_capability_major, kAttributeMajor, dev);
  attribute(&info.compute_capability_minor, kAttributeMinor, dev);
  total(&memory, dev);
  info.total_memory = memory;
  info.emulated = get("cuemuGetLastLaunchCounters") != nullptr;
  return driver;
}

CudaDriver::~CudaDriver() {
  // Drivers are not unloaded (their threads and atexit handlers outlive us), as TensorFlow does.
}

void* CudaDriver::Symbol(const char* name) const { return dlsym(handle_, name); }

StatusOr<std::string> CudaDriverLibrary(const std::string& device, const std::string& cuda_driver) {
  if (!cuda_driver.empty()) return cuda_driver;
  if (device == "gpu") return std::string("libcuda.so.1");
  if (device == "gpu-emu") {
#ifdef GRAPHJIT_CUDA_EMULATOR
    return std::string(GRAPHJIT_CUDA_EMULATOR);
#else
    return NotFound("this build of graphjit has no CUDA emulator (the CUDA toolkit's cuda.h was not found)");
#endif
  }
  return InvalidArgument("no CUDA driver for device '" + device + "'");
}

std::string DescribeCudaDevice(const CudaDeviceInfo& info) {
  char text[512];
  std::snprintf(text, sizeof text, "%s, sm_%d%d, %d SMs, %llu MiB, driver %d.%d (%s)", info.name.c_str(),
                info.compute_capability_major, info.compute_capability_minor, info.multiprocessors,
                static_cast<unsigned long long>(info.total_memory >> 20), info.driver_version / 1000,
                info.driver_version % 1000 / 10, info.library.c_str());
  return text;
}

}  // namespace graphjit
