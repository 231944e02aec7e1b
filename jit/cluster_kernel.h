// The compiling `_JitCluster` kernel (internal to jit/). At each call it has the cluster's
// compiler (jit/cluster_compiler.h) find or make the kernel for the call's signature (the
// backend chosen at the first run), asks the compile policy (jit/compile_policy.h) what the
// call does with it, and runs the kernel, or the body op by op, and the numerics guard
// (jit/numerics_guard.h) where asked. What does not compile runs op by op, with one warning
// per cluster saying why.
#pragma once

#include "jit/jit_instance.h"
#include "runtime/op_registry.h"

namespace graphjit {

// `registered`, the reference kernel (the body op by op), with the JIT's prepare and
// compute; clusters report to `jit`.
OpDef MakeClusterKernel(Jit* jit, OpDef registered);

}  // namespace graphjit
