#include "runtime/placement.h"

#include <mutex>

#include "ir/device.h"
#include "ir/logging.h"
#include "runtime/cuda_driver.h"
#include "runtime/op_traits.h"
#include "runtime/session_options.h"

namespace graphjit {

bool HasGpu(const SessionOptions& options) { return options.device != DeviceKind::kCpu || !options.cuda_driver.empty(); }

bool PlacedOnGpu(const Node& node) {
  auto device = ParseDeviceName(node.device);
  return device.ok() && device->IsGpu();
}

namespace {

// Whether `node` is a convolution and the session's GPU has no cuDNN: it runs on the CPU
// (the first such graph of the process says so once).
bool ConvolutionsRunOnTheCpu(const SessionOptions& options, const Node& node) {
  if (TraitsOf(node.op).pattern != OpPattern::kConv) return false;
  const Status cudnn = CudnnOpens(options.device == DeviceKind::kCpu ? DeviceKind::kGpu : options.device);
  if (cudnn.ok()) return false;
  static std::once_flag warned;
  std::call_once(warned,
                 [&] { GJ_LOG(WARNING) << "no cuDNN for the GPU (" << cudnn.message() << "); convolutions run on the CPU"; });
  return true;
}

}  // namespace

bool PlaceNodes(const SessionOptions& options, Graph* graph) {
  const bool gpu = HasGpu(options);
  bool changed = false;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* node = graph->node(id);
    if (node == nullptr) continue;
    if (node->device.empty()) {
      if (gpu) {
        node->device = ConvolutionsRunOnTheCpu(options, *node) ? "/device:CPU:0" : "/device:GPU:0";
        changed = true;
      }
      continue;
    }
    auto device = ParseDeviceName(node->device);
    if (gpu || !device.ok() || !device->IsGpu()) continue;
    static std::once_flag warned;
    std::call_once(warned, [&] {
      GJ_LOG(WARNING) << "no GPU in this session (see --device); nodes placed on " << device->ToString() << " run on the CPU";
    });
    if (!device->IsXla()) {  // XLA_GPU stays: it asks for compilation (for the CPU here)
      node->device.clear();
      changed = true;
    }
  }
  return changed;
}

}  // namespace graphjit
