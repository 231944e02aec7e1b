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
};

// Parses a TensorFlow device string. An empty string, or one without a device part,
// is the default device CPU:0; only the local job/replica/task are accepted.
StatusOr<DeviceName> ParseDeviceName(std::string_view device);

}  // namespace graphjit
