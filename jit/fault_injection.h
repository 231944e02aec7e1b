// jit/: faults the JIT can be made to have, for tests of what it does then (not part of
// its interface: jit/jit.h).
#pragma once

#include <string>

namespace graphjit {

// While `reason` is not empty, every compile fails with it.
void InjectCompileFailure(const std::string& reason);
// While `from` is not empty, every compile replaces the first `from` in its cluster's MLIR
// with `to`: a wrong kernel, for the numerics guard's tests.
void InjectMiscompile(const std::string& from, const std::string& to);

}  // namespace graphjit
