// Placement, as TensorFlow's placer does it for the devices a session has: the CPU and,
// with SessionOptions::device "gpu" or "gpu-emu", one GPU.
//  - with a GPU, a node the graph does not place goes to the GPU (/device:GPU:0), but a
//    convolution stays on the CPU where cuDNN cannot be opened (said once on stderr);
//  - without one, nodes the graph places on a GPU run on the CPU: their device is cleared
//    (XLA_GPU stays: it also asks for compilation), and the first such graph of the
//    process says so once on stderr;
//  - nodes placed on the CPU or XLA_CPU stay where they are.
// On the GPU, what the JIT compiles runs as GPU kernels; every other op runs on the CPU
// (soft placement: a tensor a cluster made on the GPU is copied to the host for it, once).
#pragma once

#include "ir/graph.h"

namespace graphjit {

struct SessionOptions;

// Whether the options give the session a GPU.
bool HasGpu(const SessionOptions& options);

// Returns whether it changed any node's device.
bool PlaceNodes(const SessionOptions& options, Graph* graph);

// Whether the node is placed on a GPU (it runs there if the session has one).
bool PlacedOnGpu(const Node& node);

}  // namespace graphjit
