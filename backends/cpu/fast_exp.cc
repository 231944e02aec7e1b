#include "backends/cpu/fast_exp.h"

#include <cstdint>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace graphjit::cpu {

namespace {

// e^r on [0, ln 2], P(0) = 1: from scripts/fit_exp.py (1.0 ulp evaluated in f32).
constexpr float kP[] = {1.000000000e+00f, 9.999998149e-01f, 5.000056665e-01f, 1.666108352e-01f,
                        4.191375807e-02f, 7.792992760e-03f, 1.948806448e-03f};
constexpr float kLog2E = 1.44269504089f;
// ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with 16 significant bits: k kLn2Hi is exact for |k| <= 2^8.
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.428606765330187e-06f;
// Adding 1.5 * 2^23 to an integer-valued float of magnitude below 2^22 puts the integer
// in the low bits of the sum's representation; adding 127 more, the integer plus 127.
constexpr float kIntegerPlus127InLowBits = 12582912.0f + 127.0f;

struct FastExp : mlir::OpRewritePattern<mlir::math::ExpOp> {
  FastExp(mlir::MLIRContext* context, bool scalef)
      : OpRewritePattern(context, /*benefit=*/2), scalef(scalef) {}  // above MLIR's patterns for math.exp
  const bool scalef;

  mlir::LogicalResult matchAndRewrite(mlir::math::ExpOp op, mlir::PatternRewriter& rewriter) const override {
    if (!op.getType().isF32()) return mlir::failure();
    mlir::ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto f32 = [&](float v) -> mlir::Value { return b.create<mlir::arith::ConstantOp>(b.getF32FloatAttr(v)); };
    auto i32 = [&](int32_t v) -> mlir::Value { return b.create<mlir::arith::ConstantOp>(b.getI32IntegerAttr(v)); };
    // Below -88, k = -127: the scale's bits are 0 and the result is 0. NaN stays NaN
    // (maximumf and minimumf propagate it).
    mlir::Value x = b.create<mlir::arith::MaximumFOp>(op.getOperand(), f32(-88.0f));
    // k <= 127, so 2^k is a float: above 88.72, P(r) 2^127 overflows to Inf, as exp does.
    mlir::Value k = b.create<mlir::arith::MinimumFOp>(
        b.create<mlir::math::FloorOp>(b.create<mlir::arith::MulFOp>(x, f32(kLog2E))), f32(127.0f));
    mlir::Value r = b.create<mlir::math::FmaOp>(k, f32(-kLn2Hi), x);
    r = b.create<mlir::math::FmaOp>(k, f32(-kLn2Lo), r);
    mlir::Value p = f32(kP[6]);
    for (int i = 5; i >= 0; --i) p = b.create<mlir::math::FmaOp>(p, r, f32(kP[i]));
    if (scalef) {
      rewriter.replaceOp(op, b.create<mlir::func::CallOp>(kScalef, b.getF32Type(), mlir::ValueRange{p, k}).getResult(0));
      return mlir::success();
    }
    // 2^k's bits: (k + 127) << 23, k + 127 taken from the low bits of k + 127 + 1.5 * 2^23
    // (no float-to-integer conversion, which LLVM makes poison for NaN); the shift drops
    // the sum's own exponent and leading bit.
    mlir::Value k_bits =
        b.create<mlir::arith::BitcastOp>(b.getI32Type(), b.create<mlir::arith::AddFOp>(k, f32(kIntegerPlus127InLowBits)));
    mlir::Value scale_bits = b.create<mlir::arith::ShLIOp>(k_bits, i32(23));
    mlir::Value scale = b.create<mlir::arith::BitcastOp>(b.getF32Type(), scale_bits);
    rewriter.replaceOp(op, b.create<mlir::arith::MulFOp>(p, scale).getResult());
    return mlir::success();
  }
};

}  // namespace

void AddFastExpPattern(mlir::RewritePatternSet& patterns, mlir::ModuleOp module, bool scalef) {
  bool exp_f32 = false;
  module.walk([&](mlir::math::ExpOp op) { exp_f32 |= op.getType().isF32(); });
  if (!exp_f32) scalef = false;  // nothing to rewrite: no declaration either
  if (scalef && !module.lookupSymbol(kScalef)) {
    mlir::OpBuilder b(module.getBodyRegion());
    auto f32 = b.getF32Type();
    b.create<mlir::func::FuncOp>(module.getLoc(), kScalef, b.getFunctionType({f32, f32}, {f32})).setPrivate();
  }
  patterns.add<FastExp>(patterns.getContext(), scalef);
}

}  // namespace graphjit::cpu
