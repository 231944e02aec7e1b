#include "runtime/cuda_driver.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#ifdef GRAPHJIT_HAVE_CUDA_H
#include <cuda.h>
#endif

namespace graphjit {

namespace {
// The process that first initialized a CUDA driver (0: none yet). A child made by fork()
// inherits the value and sees another pid: the driver's state it inherited is unusable.
std::atomic<pid_t> cuda_process{0};
}  // namespace

Status CheckNotForkedAfterCuda() {
  const pid_t parent = cuda_process.load();
  if (parent == 0 || parent == getpid()) return Status::Ok();
  return FailedPrecondition("this process was made by fork() from process " + std::to_string(parent) +
                            ", which had initialized CUDA: CUDA cannot be used in a forked child (the driver "
                            "refuses every call there); start the child from a new program instead (exec, or "
                            "Python multiprocessing's 'spawn' start method)");
}

#ifdef GRAPHJIT_HAVE_CUDA_H
namespace {
// The entry points' own types: calling through a pointer of another type is undefined.
template <class F>
F Get(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}
}  // namespace
#endif

StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Open(const std::string& library, int ordinal) {
#ifndef GRAPHJIT_HAVE_CUDA_H
  return Unimplemented("this build of graphjit has no CUDA support (the CUDA toolkit's cuda.h was not found)");
#else
  GJ_RETURN_IF_ERROR(CheckNotForkedAfterCuda());
  std::unique_ptr<CudaDriver> driver(new CudaDriver);
  driver->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver->handle_) return NotFound("cannot open the CUDA driver " + library + ": " + dlerror());
  driver->device_.library = library;
  void* h = driver->handle_;
  auto init = Get<decltype(&cuInit)>(h, "cuInit");
  auto version = Get<decltype(&cuDriverGetVersion)>(h, "cuDriverGetVersion");
  auto device_get = Get<decltype(&cuDeviceGet)>(h, "cuDeviceGet");
  auto count = Get<decltype(&cuDeviceGetCount)>(h, "cuDeviceGetCount");
  auto name = Get<decltype(&cuDeviceGetName)>(h, "cuDeviceGetName");
  auto attribute = Get<decltype(&cuDeviceGetAttribute)>(h, "cuDeviceGetAttribute");
  auto total = Get<decltype(&cuDeviceTotalMem)>(h, "cuDeviceTotalMem_v2");
  auto error_name = Get<decltype(&cuGetErrorName)>(h, "cuGetErrorName");
  if (!init || !version || !device_get || !count || !name || !attribute || !total || !error_name)
    return InvalidArgument(library + " is not a CUDA driver (it lacks cuInit, cuDeviceGet, ...)");
  auto failed = [&](const char* call, CUresult r) {
    const char* text = nullptr;
    if (error_name(r, &text) != CUDA_SUCCESS) text = nullptr;
    return NotFound(library + ": " + call + " failed with " + (text ? text : std::to_string(r)) +
                    (r == CUDA_ERROR_STUB_LIBRARY ? " (the toolkit's stub, not a driver: no GPU)" : ""));
  };
  if (CUresult r = init(0)) return failed("cuInit", r);
  pid_t none = 0;
  cuda_process.compare_exchange_strong(none, getpid());
  int devices = 0;
  if (CUresult r = count(&devices)) return failed("cuDeviceGetCount", r);
  if (devices == 0) return NotFound(library + ": no CUDA device");
  if (ordinal < 0 || ordinal >= devices)
    return NotFound(library + ": no device gpu:" + std::to_string(ordinal) + " (the driver has " + std::to_string(devices) +
                    (devices == 1 ? " device, gpu:0)" : " devices, gpu:0 to gpu:" + std::to_string(devices - 1) + ")"));
  CUdevice dev;
  if (CUresult r = device_get(&dev, ordinal)) return failed("cuDeviceGet", r);
  char text[256] = {};
  size_t memory = 0;
  CudaDeviceInfo& info = driver->device_;
  info.ordinal = ordinal;
  info.device_count = devices;
  if (CUresult r = name(text, sizeof text, dev)) return failed("cuDeviceGetName", r);
  info.name = text;
  version(&info.driver_version);
  attribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  attribute(&info.compute_capability_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  attribute(&info.compute_capability_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  attribute(&info.warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
  attribute(&info.max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
  attribute(&info.max_blocks_per_multiprocessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, dev);
  attribute(&info.max_threads_per_multiprocessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
  attribute(&info.shared_memory_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev);
  attribute(&info.shared_memory_per_block_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
  attribute(&info.registers_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, dev);
  attribute(&info.l2_cache_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
  attribute(&info.clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
  attribute(&info.memory_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev);
  attribute(&info.memory_bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
  if (info.warp_size <= 0 || info.max_threads_per_block <= 0 || info.multiprocessors <= 0 ||
      info.max_blocks_per_multiprocessor <= 0 || info.max_threads_per_multiprocessor <= 0)
    return InvalidArgument(library + " describes device " + std::to_string(ordinal) +
                           " without a warp size, a block size or SMs");
  total(&memory, dev);
  info.total_memory = memory;
  info.emulated = driver->Symbol("cuemuGetLastLaunchCounters") != nullptr;
  return driver;
#endif
}

CudaDriver::~CudaDriver() {
  // Drivers are not unloaded (their threads and atexit handlers outlive us), as TensorFlow does.
}

void* CudaDriver::Symbol(const char* name) const { return dlsym(handle_, name); }

namespace {

// A library that ships with graphjit (the CUDA emulator and its cuBLASLt stand-in), by its
// path under lib/: found from the file that holds this code, wherever graphjit was
// unpacked or built. That file is lib/libgraphjit_runtime.so in a build tree,
// lib/libgraphjit.so in a release, or a program that links the runtime in (its ../lib).
StatusOr<std::string> ShippedLibrary(const std::string& under_lib) {
  namespace fs = std::filesystem;
  std::vector<fs::path> folders;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ShippedLibrary), &info) != 0 && info.dli_fname) {
    std::error_code error;
    const fs::path own = fs::weakly_canonical(info.dli_fname, error);
    if (!error) folders.push_back(own.parent_path());
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);  // dli_fname of a program may be relative
  if (!error) folders.push_back(exe.parent_path());
  std::string tried;
  for (const fs::path& folder : folders) {
    for (const fs::path& lib : {folder, folder.parent_path() / "lib"}) {
      const fs::path candidate = lib / under_lib;
      if (fs::exists(candidate, error)) return candidate.string();
      tried += (tried.empty() ? "" : ", ") + candidate.string();
    }
  }
  return NotFound("graphjit's " + under_lib + " is not where it belongs (looked at " + tried +
                  "): a release keeps it in lib/ beside bin/");
}

}  // namespace

StatusOr<std::string> CudaDriverLibrary(DeviceKind device, const std::string& cuda_driver) {
  if (!cuda_driver.empty()) return cuda_driver;
  if (device == DeviceKind::kGpu) return std::string("libcuda.so.1");
  if (device == DeviceKind::kGpuEmu) {
#ifdef GRAPHJIT_HAVE_CUDA_EMULATOR
    return ShippedLibrary("cuda_emulator/libcuda.so.1");
#else
    return NotFound("this build of graphjit has no CUDA emulator (the CUDA toolkit's cuda.h was not found)");
#endif
  }
  return InvalidArgument(std::string("no CUDA driver for device '") + DeviceKindName(device) + "'");
}

namespace {

#ifdef GRAPHJIT_HAVE_CUBLASLT_EMULATOR
constexpr bool kCublasLtStandIn = true;
#else
constexpr bool kCublasLtStandIn = false;
#endif
#ifdef GRAPHJIT_HAVE_CUDNN_EMULATOR
constexpr bool kCudnnStandIn = true;
#else
constexpr bool kCudnnStandIn = false;
#endif

// One of CUDA's libraries (`soname`, `what` in messages) for a device: NVIDIA's on a GPU, the
// CUDA emulator's stand-in of the same name for kGpuEmu where this build has it (it is built
// from `header`).
StatusOr<std::string> CudaLibrary(DeviceKind device, const std::string& soname, const std::string& what, bool stand_in,
                                  const std::string& header) {
  if (device == DeviceKind::kGpu) return soname;
  if (device == DeviceKind::kGpuEmu) {
    if (stand_in) return ShippedLibrary("cuda_emulator/" + soname);
    return NotFound("this build of graphjit has no " + what + " stand-in for the CUDA emulator (no " + header + ")");
  }
  return InvalidArgument("no " + what + " for device '" + DeviceKindName(device) + "'");
}

}  // namespace

StatusOr<std::string> CublasLtLibrary(DeviceKind device) {
  return CudaLibrary(device, "libcublasLt.so.13", "cuBLASLt", kCublasLtStandIn, "cublasLt.h");
}

StatusOr<std::string> CudnnLibrary(DeviceKind device) {
  return CudaLibrary(device, "libcudnn.so.9", "cuDNN", kCudnnStandIn, "cudnn.h");
}

Status CudnnOpens(DeviceKind device) {
  static std::mutex mu;
  static auto* known = new std::map<DeviceKind, Status>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known->find(device); it != known->end()) return it->second;
  Status status = Status::Ok();
  auto library = CudnnLibrary(device);
  if (!library.ok()) {
    status = library.status();
  } else if (!dlopen(library->c_str(), RTLD_NOW | RTLD_LOCAL)) {  // kept open: the JIT opens it again
    status = NotFound("cannot open " + *library + ": " + dlerror());
  }
  known->emplace(device, status);
  return status;
}

CudaDeviceInfo NominalCudaDevice(int sm) {
  CudaDeviceInfo info;
  const bool hopper = sm >= 90;
  info.name = hopper ? "NVIDIA H100 SXM (nominal)" : "NVIDIA A100 (nominal)";
  info.compute_capability_major = sm / 10;
  info.compute_capability_minor = sm % 10;
  info.multiprocessors = hopper ? 132 : 108;
  info.warp_size = 32;
  info.max_threads_per_block = 1024;
  info.max_blocks_per_multiprocessor = 32;
  info.max_threads_per_multiprocessor = 2048;
  info.shared_memory_per_block = 48 << 10;
  info.shared_memory_per_block_optin = hopper ? 227 << 10 : 163 << 10;
  info.registers_per_block = 65536;
  info.l2_cache_bytes = hopper ? 50 << 20 : 40 << 20;
  info.clock_khz = hopper ? 1980000 : 1410000;
  info.memory_clock_khz = hopper ? 2619000 : 1215000;
  info.memory_bus_bits = 5120;
  return info;
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
