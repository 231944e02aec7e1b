// Device names. "", "/cpu:0", "/device:CPU:0" and
// "/job:localhost/replica:0/task:0/device:CPU:0" all name the same device.
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"

namespace graphjit {

struct DeviceName {
  std::string type = "CPU";  // upper case: CPU, GPU, XLA_CPU, XLA_GPU, ...
  int index = 0;
  std::string ToString() const { return "/device:" + type + ":" + std::to_string(index); }
  bool operator==(const DeviceName&) const = default;
  // A CPU or a GPU, named by TensorFlow (CPU, GPU) or by XLA (XLA_CPU, XLA_GPU: a device
  // that asks for compilation).
  bool IsCpu() const { return type == "CPU" || type == "XLA_CPU"; }
  bool IsGpu() const { return type == "GPU" || type == "XLA_GPU"; }
  bool IsXla() const { return type == "XLA_CPU" || type == "XLA_GPU"; }
};

// The device a session runs its compiled clusters on: the CPU, a GPU through its CUDA
// driver, or the CUDA emulator (a GPU's kernels run on the CPU).
enum class DeviceKind { kCpu, kGpu, kGpuEmu };
// "cpu" (or ""), "gpu", "gpu-emu"; InvalidArgument for anything else.
StatusOr<DeviceKind> ParseDeviceKind(std::string_view name);
const char* DeviceKindName(DeviceKind kind);  // "cpu", "gpu", "gpu-emu"
// A device with its number among the driver's GPUs: "gpu:1", "gpu-emu:0"; "gpu" is gpu:0.
struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;
};
// "cpu", "gpu", "gpu-emu", "gpu:N", "gpu-emu:N" (N from 0 to 63); InvalidArgument else.
StatusOr<Device> ParseDevice(std::string_view name);
// "cpu", "gpu:N", "gpu-emu:N".
std::string DeviceLabel(DeviceKind kind, int index);

// Parses a TensorFlow device string. An empty string, or one without a device part,
// is the default device CPU:0; only the local job/replica/task are accepted.
StatusOr<DeviceName> ParseDeviceName(std::string_view device);

}  // namespace graphjit
