#include "runtime/placement.h"

#include <cstdio>
#include <mutex>

#include "ir/device.h"
#include "runtime/session_options.h"

namespace graphjit {

bool HasGpu(const SessionOptions& options) {
  return options.device != DeviceKind::kCpu || !options.cuda_driver.empty();
}

bool PlacedOnGpu(const Node& node) {
  auto device = ParseDeviceName(node.device);
  return device.ok() && device->IsGpu();
}

bool PlaceNodes(const SessionOptions& options, Graph* graph) {
  const bool gpu = HasGpu(options);
  bool changed = false;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* node = graph->node(id);
    if (node == nullptr) continue;
    if (node->device.empty()) {
      if (gpu) {
        node->device = "/device:GPU:0";
        changed = true;
      }
      continue;
    }
    auto device = ParseDeviceName(node->device);
    if (gpu || !device.ok() || !device->IsGpu()) continue;
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr, "graphjit: warning: no GPU in this session (see --device); nodes placed on %s run on the CPU\n",
                   device->ToString().c_str());
    });
    if (!device->IsXla()) {  // XLA_GPU stays: it asks for compilation (for the CPU here)
      node->device.clear();
      changed = true;
    }
  }
  return changed;
}

}  // namespace graphjit
