#include "tools/devices_command.h"

#include <cstdio>
#include <thread>

#include "backends/cpu/cpu_compiler.h"
#include "runtime/build_info.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_driver.h"
#include "tools/options.h"

namespace graphjit {

void AddDevicesCommand(CLI::App& app, DevicesArgs* a) {
  CLI::App* cmd = app.add_subcommand("devices", "List the devices graphjit can run on: the CPU, a GPU through the CUDA driver, the CUDA emulator");
  cmd->add_option("--device", a->device, "Only this device")->check(CLI::IsMember({"cpu", "gpu", "gpu-emu"}));
}

std::string DescribeCpu(const SessionOptions& options) {
  auto jit = cpu::SummarizeTarget({options.jit_cpu, options.jit_cpu_features, options.prefer_vector_width});
  return CpuModelName() + ", " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads; JIT code for " +
         (jit.ok() ? *jit : jit.status().message()) + "; reference kernels for " + KernelsIsa();
}

int DevicesCommand(const DevicesArgs& a) {
  auto loaded = LoadSessionOptions("", "");
  if (!loaded.ok()) return Fail(kExitBadInput, loaded.status().message());
  if (a.device.empty() || a.device == "cpu")
    std::printf("cpu: %s\n", DescribeCpu(*loaded).c_str());
  for (DeviceKind kind : {DeviceKind::kGpu, DeviceKind::kGpuEmu}) {
    const char* device = DeviceKindName(kind);
    if (!a.device.empty() && a.device != device) continue;
    // GRAPHJIT_FLAGS' --cuda_driver names the library of the "gpu" device.
    auto library = CudaDriverLibrary(kind, kind == DeviceKind::kGpu ? loaded->cuda_driver : "");
    if (!library.ok()) {
      std::printf("%s: unavailable: %s\n", device, library.status().message().c_str());
      continue;
    }
    auto driver = CudaDriver::Open(*library);
    if (driver.ok()) std::printf("%s: %s\n", device, DescribeCudaDevice((*driver)->device()).c_str());
    else std::printf("%s: unavailable: %s\n", device, driver.status().message().c_str());
  }
  return 0;
}

Status OpenSessionDevice(const SessionOptions& options) {
  if (options.device == DeviceKind::kCpu) return Status::Ok();
  auto library = CudaDriverLibrary(options.device, options.cuda_driver);
  if (!library.ok()) return library.status();
  auto device = CudaDevice::Get(*library);
  if (!device.ok()) return device.status();
  std::fprintf(stderr, "graphjit: device %s: %s\n", DeviceKindName(options.device), DescribeCudaDevice((*device)->info()).c_str());
  return Status::Ok();
}

}  // namespace graphjit
