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
  CLI::App* cmd = app.add_subcommand(
      "devices", "List the devices graphjit can run on: the CPU, a GPU through the CUDA driver, the CUDA emulator");
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
  if (a.device.empty() || a.device == "cpu") std::printf("cpu: %s\n", DescribeCpu(*loaded).c_str());
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
    if (!driver.ok()) {
      std::printf("%s: unavailable: %s\n", device, driver.status().message().c_str());
      continue;
    }
    // One GPU: "gpu: ..."; several: "gpu:0: ...", "gpu:1: ...", each a device of its own.
    const int count = (*driver)->device().device_count;
    for (int i = 0; i < count; ++i) {
      auto each = i == 0 ? std::move(driver) : CudaDriver::Open(*library, i);
      const std::string label = count == 1 ? device : DeviceLabel(kind, i);
      if (each.ok())
        std::printf("%s: %s\n", label.c_str(), DescribeCudaDevice((*each)->device()).c_str());
      else
        std::printf("%s: unavailable: %s\n", label.c_str(), each.status().message().c_str());
    }
  }
  return 0;
}

Status OpenSessionDevice(const SessionOptions& options) {
  if (options.device == DeviceKind::kCpu) return Status::Ok();
  auto library = CudaDriverLibrary(options.device, options.cuda_driver);
  if (!library.ok()) return library.status();
  auto device = CudaDevice::Get(*library, options.gpu_index);
  if (!device.ok()) return device.status();
  std::fprintf(stderr, "graphjit: device %s: %s\n",
               (*device)->info().device_count == 1 ? DeviceKindName(options.device)
                                                   : DeviceLabel(options.device, options.gpu_index).c_str(),
               DescribeCudaDevice((*device)->info()).c_str());
  return Status::Ok();
}

}  // namespace graphjit
