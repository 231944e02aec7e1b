// exp for the CPU: fewer vector operations than MLIR's polynomial approximation.
#pragma once

namespace mlir {
class ModuleOp;
class RewritePatternSet;
}  // namespace mlir

namespace graphjit::cpu {

// p 2^k for f32 p and integral k, as VSCALEFPS computes it: the function the rewritten exp
// calls with `scalef` (the CPU compiler replaces its calls, scalar or vectorized, by the
// instruction: backends/cpu/cpu_compiler.cc).
inline constexpr const char* kScalef = "graphjit_scalef";

// Rewrites f32 math.exp as 2^floor(x log2 e) P(r), with r = x - floor(x log2 e) ln 2 and P
// of degree 6 (scripts/fit_exp.py): 15 arithmetic operations, no selects, 2^k made of k's
// bits; with `scalef` (AVX-512), 13, P(r) 2^k one call of kScalef (declared in `module`). Within 2 ulp
// of exp for results in the normal range; exp(0) = 1 exactly; Inf above 88.722839 and
// +Inf, 0 below -88 and for -Inf (a subnormal with `scalef`), NaN for NaN; results below
// 2^-126 are 0 or subnormal (the elemental emitter makes them 0, as the reference kernels
// do). Above MLIR's approximations, which also match math.exp.
void AddFastExpPattern(mlir::RewritePatternSet& patterns, mlir::ModuleOp module, bool scalef);

}  // namespace graphjit::cpu
