// The compiling `_JitCluster` kernel (internal to jit/). At a cluster's first run it
// chooses its backend (the session's GPU if the cluster is placed there, else the CPU);
// at each call it computes the signature (the body and its outputs, the target, the
// inputs' dtypes and shapes, the values of inputs that decide shapes), finds or compiles
// the kernel in the Jit's cache (jit/pipeline.h, then the backend), and runs it. What does
// not compile runs op by op, with one warning per cluster saying why.
#pragma once

#include "jit/jit_instance.h"
#include "runtime/op_registry.h"

namespace graphjit {

// `registered`, the reference kernel (the body op by op), with the JIT's prepare and
// compute; clusters report to `jit`.
OpDef MakeClusterKernel(Jit* jit, OpDef registered);

}  // namespace graphjit
