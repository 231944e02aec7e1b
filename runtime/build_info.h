// What the runtime library was built for, and the CPU it runs on.
#pragma once

#include <string>

namespace graphjit {

// The x86 vector extensions the reference kernels were compiled for ("x86-64-v4 (AVX-512)",
// "x86-64-v3 (AVX2)", "x86-64 (SSE2)", ...): the build machine's with GRAPHJIT_NATIVE, else
// baseline x86-64. Their answers must not depend on it.
const char* KernelsIsa();

// The CPU's model name as the kernel reports it ("AMD EPYC 7B13"), else "unknown CPU".
std::string CpuModelName();

}  // namespace graphjit
