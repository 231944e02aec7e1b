// What the runtime library was built for.
#pragma once

namespace graphjit {

// The x86 vector extensions the reference kernels were compiled for ("x86-64-v4 (AVX-512)",
// "x86-64-v3 (AVX2)", "x86-64 (SSE2)", ...): the build machine's with GRAPHJIT_NATIVE, else
// baseline x86-64. Their answers must not depend on it.
const char* KernelsIsa();

}  // namespace graphjit
