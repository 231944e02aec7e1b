// MLIR's clean-up of the kernels jit/ emits, which both backends run first. The emitters
// write each op where they need it; canonicalization folds what is constant, CSE removes
// what is computed twice, and loop-invariant code motion moves out of each scf loop (inner
// loops first) what does not change along it:
// - ops with no effect on memory that may run where the loop would not (MLIR's
//   speculatable ops: no integer division by a value that may be zero), and branches
//   (scf.if) made only of such ops;
// - loads of a buffer the function only loads from (a kernel's inputs), at an index that
//   does not change along the loop.
// Nothing is moved out of a branch: its loads may be out of bounds where its condition
// does not hold.
#pragma once

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "mlir/Transforms/Passes.h"

namespace graphjit::kernel_cleanup {

inline bool Speculatable(mlir::Operation* op) {
  if (!mlir::isa<mlir::scf::IfOp>(op)) return mlir::isMemoryEffectFree(op) && mlir::isSpeculatable(op);
  const mlir::WalkResult walked = op->walk([&](mlir::Operation* inner) {
    const bool ok =
        inner == op || mlir::isa<mlir::scf::YieldOp>(inner) || (mlir::isMemoryEffectFree(inner) && mlir::isSpeculatable(inner));
    return ok ? mlir::WalkResult::advance() : mlir::WalkResult::interrupt();
  });
  return !walked.wasInterrupted();
}

// A load of a buffer that every use in the function loads from (or prefetches).
inline bool ReadOnlyLoad(mlir::Operation* op) {
  auto load = mlir::dyn_cast<mlir::memref::LoadOp>(op);
  if (!load) return false;
  for (mlir::Operation* user : load.getMemRef().getUsers())
    if (!mlir::isa<mlir::memref::LoadOp, mlir::memref::PrefetchOp>(user)) return false;
  return true;
}

inline mlir::LogicalResult Run(mlir::ModuleOp module) {
  mlir::PassManager simplify(module.getContext());
  simplify.addPass(mlir::createCanonicalizerPass());
  simplify.addPass(mlir::createCSEPass());
  if (mlir::failed(simplify.run(module))) return mlir::failure();
  module.walk([](mlir::LoopLikeOpInterface loop) {  // post-order: inner loops first
    mlir::moveLoopInvariantCode(
        loop.getLoopRegions(), [&](mlir::Value v, mlir::Region*) { return loop.isDefinedOutsideOfLoop(v); },
        [](mlir::Operation* op, mlir::Region*) { return Speculatable(op) || ReadOnlyLoad(op); },
        [&](mlir::Operation* op, mlir::Region*) { loop.moveOutOfLoop(op); });
  });
  mlir::PassManager merge(module.getContext());
  merge.addPass(mlir::createCSEPass());
  return merge.run(module);
}

}  // namespace graphjit::kernel_cleanup
