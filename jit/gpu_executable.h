// jit/: a cluster's GPU executable: its module's kernels and its library calls (GEMMs,
// convolutions) launched on the session's stream, one by one or replayed as a CUDA graph.
// A call takes its inputs where they are: on the device (another cluster's outputs), or on
// the host, copied to the device at their first reader and kept with their buffer for the
// next (a session constant for the session, a feed or a CPU op's output for the run); it
// runs the kernels in order and leaves its outputs on the device, for the executor to copy
// to the host only where something there reads them. The body's own constants are copied
// once, when it is made.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jit/backend.h"
#include "jit/gpu_library.h"
#include "runtime/cuda_device.h"

namespace graphjit {

// The executable of `program` on `cuda`: `module` (PTX, or a cubin for the device) loaded,
// its constants copied to the device, its convolutions' constant filters reordered once.
// `calls` is the plan of each kernel's library call (empty for the module's kernels).
StatusOr<std::unique_ptr<ClusterExecutable>> MakeGpuExecutable(ClusterProgram program, std::shared_ptr<CudaDevice> cuda,
                                                               std::string module, std::shared_ptr<const nvptx::CublasLt> blas,
                                                               std::shared_ptr<const nvptx::Cudnn> dnn,
                                                               std::vector<LibraryPlan> calls, RunRecorder* recorder);

}  // namespace graphjit
