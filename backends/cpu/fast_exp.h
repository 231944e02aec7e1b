// exp for the CPU: fewer vector operations than MLIR's polynomial approximation.
#pragma once

namespace mlir {
class RewritePatternSet;
}  // namespace mlir

namespace graphjit::cpu {

// Rewrites f32 math.exp as 2^floor(x log2 e) P(r), with r = x - floor(x log2 e) ln 2 and P
// of degree 6 (scripts/fit_exp.py): 16 operations, no selects. Within 2 ulp of exp for
// results in the normal range; exp(0) = 1 exactly; Inf above 88.722839 and +Inf, 0 below
// -88 and for -Inf, NaN for NaN; results below 2^-126 are 0 or subnormal (the elemental
// emitter makes them 0, as the reference kernels do). Run before MLIR's approximations.
void AddFastExpPattern(mlir::RewritePatternSet& patterns);

}  // namespace graphjit::cpu
