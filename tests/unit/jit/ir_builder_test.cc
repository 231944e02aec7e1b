// jit/ir_builder: the typed layer every kernel is written through. A type error fails where
// it is written, naming the emitter, the op and the node; literals are exact; ops carry
// their node as location, and the canonical form (no locations) is the same for the same
// code.
#include "jit/ir_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace graphjit::emitter {
namespace {

class IrBuilder : public ::testing::Test {
 protected:
  IrBuilder() { b.StartFunction(); }
  std::string Error() const { return b.status().ok() ? "(no error)" : b.status().message(); }
  Builder b{"the loop emitter (fusion_7)"};
};

TEST_F(IrBuilder, ATypeMismatchFailsWhereItIsWrittenNamingTheEmitterOpAndNode) {
  const auto at = b.At("bias_add");
  const Value sum = b.Apply(Op::kAddF, {b.Float(1), b.Int(2, Type::I32())});
  EXPECT_FALSE(b.status().ok());
  EXPECT_EQ(Error(), "the loop emitter (fusion_7): arith.addf: operands of types f32, i32 (node 'bias_add')");
  EXPECT_EQ(sum.type, Type::F32()) << "writing goes on, with the declared type";
  // The first error is the one kept.
  b.Apply(Op::kAddI, {b.Float(1), b.Float(2)});
  EXPECT_NE(Error().find("arith.addf"), std::string::npos) << Error();
}

TEST_F(IrBuilder, EachOpChecksItsOperands) {
  struct Case {
    const char* what;
    std::function<void(Builder&)> write;
    const char* error;
  };
  const Case cases[] = {
      {"an integer op on floats", [](Builder& b) { b.Apply(Op::kMulI, {b.Float(1), b.Float(2)}); },
       "arith.muli: an op on integers of f32"},
      {"a float op on indices", [](Builder& b) { b.Apply(Op::kExp, {b.IndexConst(3)}); }, "math.exp: an op on floats of index"},
      {"an arity", [](Builder& b) { b.Apply(Op::kFma, {b.Float(1), b.Float(2)}); }, "math.fma: operands of types f32, f32"},
      {"bits of i1 are fine, fast-math on integers is not",
       [](Builder& b) { b.Apply(Op::kAndI, {b.Bool(true), b.Bool(false)}, kAfn); }, "arith.andi: fast-math flags on integers"},
      {"a float predicate on integers", [](Builder& b) { b.Cmp(Pred::kOlt, b.Int(1, Type::I64()), b.Int(2, Type::I64())); },
       "arith.cmpf: predicate olt on i64"},
      {"a condition", [](Builder& b) { b.Select(b.Float(0), b.Float(1), b.Float(2)); }, "arith.select: a condition of type f32"},
      {"a widening to a narrower type", [](Builder& b) { b.Convert(Cast::kExtF, b.Float(1), Type::F16()); },
       "arith.extf: from f32 to f16"},
      {"a bitcast of other widths", [](Builder& b) { b.Convert(Cast::kBitcast, b.Float(1), Type::I64()); },
       "arith.bitcast: from f32 to i64"},
      {"a store of another type",
       [](Builder& b) { b.Store(b.Float(1), b.Parameter("%b0", Type::MemRef({4}, Type::F16())), {b.IndexConst(0)}); },
       "memref.store: f32 into memref<4xf16>"},
      {"an index of another rank",
       [](Builder& b) { b.Load(b.Parameter("%b0", Type::MemRef({4, 4}, Type::F32())), {b.IndexConst(0)}); },
       "memref.load: memref<4x4xf32> at [index]"},
      {"a loop's carried values",
       [](Builder& b) {
         b.OpenScope();
         const Value iv = b.InductionVar(), acc = b.CarriedArg(Type::F32());
         Block body = b.CloseScope();
         b.For(iv, b.IndexConst(0), b.IndexConst(4), b.IndexConst(1), {acc}, {b.Float(0)}, std::move(body),
               {b.Int(0, Type::I32())});
       },
       "scf.for: carries (f32) from (f32) yielding (i32)"},
  };
  for (const Case& c : cases) {
    Builder b("the row emitter (fusion_2)");
    b.StartFunction();
    c.write(b);
    ASSERT_FALSE(b.status().ok()) << c.what;
    EXPECT_EQ(b.status().message(), std::string("the row emitter (fusion_2): ") + c.error) << c.what;
  }
}

TEST_F(IrBuilder, WellTypedCodeHasNoError) {
  const Value x = b.Load(b.Parameter("%b0", Type::MemRef({8}, Type::F16())), {b.IndexConst(3)});
  const Value wide = b.Convert(Cast::kExtF, x, Type::F32());
  const Value y = b.Select(b.Cmp(Pred::kOgt, wide, b.Float(0)), wide, b.Apply(Op::kMulF, {wide, b.Float(0.25)}));
  b.Store(b.Convert(Cast::kTruncF, y, Type::F16()), b.Parameter("%b1", Type::MemRef({8}, Type::F16())), {b.IndexConst(3)});
  EXPECT_TRUE(b.status().ok()) << Error();
}

TEST(FloatLiteral, IsExactForEveryFloat) {
  const Type f32 = Type::F32();
  EXPECT_EQ(FloatLiteral(1.0, f32), "0x3F800000");
  EXPECT_EQ(FloatLiteral(-0.0, f32), "0x80000000");
  EXPECT_EQ(FloatLiteral(INFINITY, f32), "0x7F800000");
  EXPECT_EQ(FloatLiteral(-INFINITY, f32), "0xFF800000");
  EXPECT_EQ(FloatLiteral(std::numeric_limits<float>::quiet_NaN(), f32), "0x7FC00000");
  EXPECT_EQ(FloatLiteral(std::numeric_limits<float>::denorm_min(), f32), "0x00000001");
  EXPECT_EQ(FloatLiteral(std::numeric_limits<float>::max(), f32), "0x7F7FFFFF");
  // A double is rounded to the nearest float once.
  EXPECT_EQ(FloatLiteral(0.1, f32), "0x3DCCCCCD");
}

TEST_F(IrBuilder, OpsCarryTheirNodeAndTheCanonicalFormDropsIt) {
  auto write = [](Builder& b, const char* node) {
    b.StartFunction();
    const Value p = b.Parameter("%b0", Type::MemRef({4}, Type::F32()));
    const auto at = b.At(node);
    const Value v = b.Apply(Op::kTanh, {b.Load(p, {b.IndexConst(1)})}, kAfn);
    b.Store(v, p, {b.IndexConst(1)});
    return std::vector<FunctionParam>{{p, /*noalias=*/true}};
  };
  Builder one("e"), other("e");
  const auto params = write(one, "layer_1/tanh");
  write(other, "a \"quoted\" name");
  const std::string text = one.Function("fusion_0", params);
  EXPECT_NE(text.find("math.tanh %v0 fastmath<afn> : f32 loc(\"layer_1/tanh\")\n"), std::string::npos) << text;
  EXPECT_NE(other.Function("fusion_0", params).find("loc(\"a \\\"quoted\\\" name\")"), std::string::npos);
  Builder odd("e");
  write(odd, "line\nbreak\xff");  // a node name may hold any byte: escaped as MLIR's \XX
  EXPECT_NE(odd.Function("fusion_0", params).find("loc(\"line\\0Abreak\\FF\")"), std::string::npos)
      << odd.Function("fusion_0", params);
  EXPECT_EQ(text.find("loc(\"layer_1/tanh\")", text.find("return")), std::string::npos) << "ops only";
  EXPECT_EQ(one.Function("kernel", params, false), other.Function("kernel", params, false));
  EXPECT_EQ(one.Function("kernel", params, false).find("loc("), std::string::npos);
}

TEST_F(IrBuilder, ConstantsAreWrittenOnceInTheEntry) {
  b.OpenScope();
  const Value a = b.Float(2.5), again = b.Float(2.5), c = b.Int(2, Type::I32());
  EXPECT_EQ(a.name, again.name);
  EXPECT_EQ(a.level, 0);
  EXPECT_NE(a.name, c.name);
  EXPECT_EQ(b.IndexConst(7).name, "%i7");
  b.CloseScope();
}

// Ops are written where they are asked for (MLIR's loop-invariant code motion moves them
// out of loops); a value's level says what it reads.
TEST_F(IrBuilder, OpsAreWrittenInPlaceWithTheLevelOfWhatTheyRead) {
  b.OpenScope();
  const Value iv = b.InductionVar();
  const Value invariant = b.Apply(Op::kMulI, {b.IndexConst(2), b.IndexConst(3)});
  const Value variant = b.Apply(Op::kAddI, {iv, invariant});
  EXPECT_EQ(invariant.scope, 1);
  EXPECT_EQ(invariant.level, 0);
  EXPECT_EQ(variant.scope, 1);
  EXPECT_EQ(variant.level, 1);
  const Block body = b.CloseScope();
  ASSERT_EQ(body.size(), 2u);
  EXPECT_NE(body[0].text.find("arith.muli %i2, %i3"), std::string::npos) << body[0].text;
}

}  // namespace
}  // namespace graphjit::emitter
