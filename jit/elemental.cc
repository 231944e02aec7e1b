#include "jit/elemental.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "ir/attr.h"

namespace graphjit {

using emitter::Builder;
using emitter::Cast;
using emitter::Op;
using emitter::Pred;
using emitter::Type;
using emitter::Value;

namespace {

// No contraction: an FMA for x*y+z keeps x*y from overflowing, so an Inf or NaN of the
// reference kernels would become a finite value. Math functions may be approximate (afn);
// divisions are exact (no arcp: x * (1 / d) is 0 or NaN where x / d is not, for a huge or
// subnormal d); never nnan/ninf.
Value F32(Builder& b, double v) { return b.Float(v); }
Value Binary(Op op, const Value& x, const Value& y, Builder& b) { return b.Apply(op, {x, y}); }
Value Math(Op op, const Value& x, Builder& b) { return b.Apply(op, {x}, emitter::kAfn); }
Value Divide(const Value& x, const Value& y, Builder& b) { return b.Apply(Op::kDivF, {x, y}); }

// `v`, or 0 where x is 0 (TensorFlow's Xlogy, Xlog1py and Xdivy).
Value ZeroWhereZero(const Value& x, const Value& v, Builder& b) {
  return b.Select(b.Cmp(Pred::kOeq, x, b.Float(0)), b.Float(0), v);
}

// std::max(std::min(t, hi), lo): each a comparison `less` and a select.
Value Clip(const std::vector<Value>& x, Pred less, Builder& b) {
  const Value low = b.Select(b.Cmp(less, x[2], x[0]), x[2], x[0]);
  return b.Select(b.Cmp(less, low, x[1]), x[1], low);
}

// TensorFlow's erfinv, ndtri(x / 2 + 1 / 2) / sqrt(2), with its float32 rounding of
// y = x / 2 + 1 / 2: -inf at y = 0, inf at y = 1 (x = 0.99999994 rounds there), NaN outside
// [0, 1]. Between, erfinv of the x that y stands for (x itself where x <= 0, where y is
// exact; 2y - 1 above, where y rounds) by M. Giles' single-precision approximation
// ("Approximating the erfinv function", GPU Computing Gems, 2011): a polynomial in
// w = -log((1 - x)(1 + x)) - 2.5 below w = 5, in sqrt(w) - 3 above.
Value Erfinv(const Value& x, Builder& b) {
  const Value y = Binary(Op::kAddF, Binary(Op::kMulF, x, b.Float(0.5f), b), b.Float(0.5f), b);
  const Value t =
      b.Select(b.Cmp(Pred::kOle, x, b.Float(0)), x, Binary(Op::kSubF, Binary(Op::kMulF, y, b.Float(2), b), b.Float(1), b));
  const Value w = b.Apply(
      Op::kNegF,
      {Math(Op::kLog, Binary(Op::kMulF, Binary(Op::kSubF, b.Float(1), t, b), Binary(Op::kAddF, b.Float(1), t, b), b), b)});
  auto horner = [&](const std::vector<float>& c, const Value& v) {
    Value p = b.Float(c[0]);
    for (size_t i = 1; i < c.size(); ++i) p = Binary(Op::kAddF, b.Float(c[i]), Binary(Op::kMulF, p, v, b), b);
    return p;
  };
  const Value central = horner({2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
                                -0.00125372503f, -0.00417768164f, 0.246640727f, 1.50140941f},
                               Binary(Op::kSubF, w, b.Float(2.5f), b));
  const Value tail = horner({-0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f, -0.0076224613f,
                             0.00943887047f, 1.00167406f, 2.83297682f},
                            Binary(Op::kSubF, Math(Op::kSqrt, w, b), b.Float(3), b));
  Value r = Binary(Op::kMulF, b.Select(b.Cmp(Pred::kOlt, w, b.Float(5)), central, tail), t, b);
  const float inf = std::numeric_limits<float>::infinity();
  r = b.Select(b.Cmp(Pred::kOeq, y, b.Float(1)), b.Float(inf), r);
  r = b.Select(b.Cmp(Pred::kOeq, y, b.Float(0)), b.Float(-inf), r);
  const Value outside = b.Apply(Op::kOrI, {b.Cmp(Pred::kOlt, y, b.Float(0)), b.Cmp(Pred::kOgt, y, b.Float(1))});
  return b.Select(outside, b.Float(std::numeric_limits<float>::quiet_NaN()), r);
}

// max(x, 0) with NaN passed through, as the reference Relu does.
Value Relu(const Value& x, Builder& b) {
  const Value zero = F32(b, 0);
  return b.Select(b.Cmp(Pred::kOlt, x, zero), zero, x);
}

// IEEE 754-2019 maximum or minimum, as the reference kernels compute them: NaN propagates
// and -0 < +0. Neither operand less is a tie, or a NaN: the result's bits are a AND b for
// a tie of the maximum (+0 of +-0), else a OR b (-0 of +-0, a NaN of a NaN). Not
// arith.maximumf: between f16 loads and stores LLVM 19 narrows it to llvm.maximum on half
// vectors, and the x86 code it made of that returned 0 for max(0, NaN) (found by jit_fuzz).
Value MaxOrMin(bool max, const Value& a, const Value& c, Builder& b) {
  auto bits = [&](const Value& x) { return b.Convert(Cast::kBitcast, x, Type::I32()); };
  auto bitwise = [&](Op op) { return b.Convert(Cast::kBitcast, b.Apply(op, {bits(a), bits(c)}), Type::F32()); };
  Value tie = bitwise(Op::kOrI);
  if (max) tie = b.Select(b.Cmp(Pred::kOeq, a, c), bitwise(Op::kAndI), tie);
  const Value& lo = max ? c : a;
  const Value& hi = max ? a : c;
  return b.Select(b.Cmp(Pred::kOlt, lo, hi), a, b.Select(b.Cmp(Pred::kOlt, hi, lo), c, tie));
}

// r < 2^-126 ? 0 : r: the exp-based ops (Exp, Sigmoid, Softplus, Softmax) give 0 below the
// normal range, as the reference kernels and TensorFlow do (runtime/kernels/ieee.h).
// MLIR's exp already gives 0 below 2^-127; this makes the band just below 2^-126 agree.
Value ZeroBelowNormal(const Value& r, Builder& b) { return b.Select(b.Cmp(Pred::kOlt, r, F32(b, 1.17549435e-38)), F32(b, 0), r); }

Value Exp(const Value& x, Builder& b) { return ZeroBelowNormal(Math(Op::kExp, x, b), b); }

// exp(x) - 1 as TensorFlow's Elu and Selu compute it (not expm1: for a tiny negative x
// they give +0, and 1 / Selu(x) is +Inf, not -Inf).
Value ExpMinusOne(const Value& x, Builder& b) {
  return Binary(Op::kSubF, Math(Op::kExp, x, b), F32(b, 1), b);  // a tiny exp(x) gives -1 either way
}

// c[0] + c[1] t + c[2] t^2 + ..., by Horner's rule with fused multiply-adds.
Value Polynomial(const std::vector<double>& c, const Value& t, Builder& b) {
  Value r = F32(b, c.back());
  for (size_t i = c.size() - 1; i-- > 0;) r = b.Apply(Op::kFma, {r, t, F32(b, c[i])});
  return r;
}

// erfc(x) = e^(-x^2) R(|x|) for x >= 0, 2 - e^(-x^2) R(|x|) below: R = P / Q, a rational fit
// of erfcx on [0, 10] by scripts/fit_erfc.py (3.4e-7 relative error in f32), so erfc keeps
// its relative accuracy where it is tiny (1 - erf would not). x^2 is split into the f32
// product t and its rounding error d (an FMA), e^(-x^2) = e^(-t) (1 - d). From |x| = 10 on,
// e^(-100) R(10) is below 2^-126 and the result 0 (or 2), as the reference kernel gives it.
// NaN stays NaN.
Value Erfc(const Value& x, Builder& b) {
  static const std::vector<double> p = {1.000000028e+00, 1.249548049e+00, 7.438750972e-01, 2.353138589e-01, 3.417619160e-02};
  static const std::vector<double> q = {1.000000000e+00, 2.377928648e+00, 2.427062535e+00,
                                        1.348380754e+00, 4.171066021e-01, 6.057510185e-02};
  const Value a = Binary(Op::kMinimumF, Math(Op::kAbsF, x, b), F32(b, 10), b);
  const Value t = Binary(Op::kMulF, a, a, b);
  const Value d = b.Apply(Op::kFma, {a, a, b.Apply(Op::kNegF, {t})});
  const Value e = Math(Op::kExp, b.Apply(Op::kNegF, {t}), b);
  const Value scaled = b.Apply(Op::kFma, {b.Apply(Op::kNegF, {d}), e, e});
  const Value v = Binary(Op::kMulF, scaled, Divide(Polynomial(p, a, b), Polynomial(q, a, b), b), b);
  const Value negative = b.Cmp(Pred::kOlt, x, F32(b, 0));
  return ZeroBelowNormal(b.Select(negative, Binary(Op::kSubF, F32(b, 2), v, b), v), b);
}

// Cast between the computed types (f32, i1, i32, i64), then rounded to a 16-bit float
// type if that is the destination, as the reference kernel's Cast does.
Value EmitCast(const Value& x, DType to_dtype, Builder& b) {
  const Type from = x.type, to = ElementType(to_dtype);
  Value v = x;
  if (from == to) {
  } else if (from == Type::I1()) {
    v = to == Type::F32() ? b.Select(x, F32(b, 1), F32(b, 0)) : b.Convert(Cast::kExtUI, x, to);
  } else if (to == Type::I1()) {
    v = from == Type::F32() ? b.Cmp(Pred::kUne, x, F32(b, 0)) : b.Cmp(Pred::kNe, x, b.Int(0, from));
  } else if (from == Type::F32()) {
    // Truncation toward zero; NaN and what is out of range give the minimum, as x86's
    // conversion does (fptosi alone would be poison there; the select never picks it).
    const double bound = to == Type::I32() ? 2147483648.0 : 9223372036854775808.0;
    const Value out_of_range =
        b.Apply(Op::kOrI, {b.Cmp(Pred::kUno, x, x),
                           b.Apply(Op::kOrI, {b.Cmp(Pred::kOlt, x, F32(b, -bound)), b.Cmp(Pred::kOge, x, F32(b, bound))})});
    const Value minimum = b.Int(to == Type::I32() ? INT32_MIN : INT64_MIN, to);
    v = b.Select(out_of_range, minimum, b.Convert(Cast::kFPToSI, x, to));
  } else if (to == Type::F32()) {
    v = b.Convert(Cast::kSIToFP, x, Type::F32());
  } else {
    v = b.Convert(from == Type::I32() ? Cast::kExtSI : Cast::kTruncI, x, to);
  }
  if (to_dtype == DType::kHalf || to_dtype == DType::kBFloat16)  // rounded as stored
    v = b.Convert(Cast::kExtF, b.Convert(Cast::kTruncF, v, to_dtype == DType::kHalf ? Type::F16() : Type::BF16()), Type::F32());
  return v;
}

// How the elemental emitter computes one op: on f32 operands (`f`), on i32 or i64 ones
// (`i`, also on i1 where `bools`), or, for the ops that read their attrs or take operands
// of any computed type, from the node (`any`).
struct Lowering {
  using Scalar = std::function<Value(const std::vector<Value>& x, Builder& b)>;
  using Any = std::function<StatusOr<Value>(const Node& n, const std::vector<Value>& x, Builder& b)>;
  Lowering(Scalar f, Scalar i = nullptr, bool bools = false) : f(std::move(f)), i(std::move(i)), bools(bools) {}
  explicit Lowering(Any any) : any(std::move(any)) {}
  Scalar f, i;
  Any any;
  bool bools = false;
};

Lowering::Scalar BinaryOf(Op op) {
  return [op](const auto& x, Builder& b) { return Binary(op, x[0], x[1], b); };
}
Lowering::Scalar MathOf(Op op) {
  return [op](const auto& x, Builder& b) { return Math(op, x[0], b); };
}
// A libm function, called as it is (no afn: the GPU's lowering would pick a fast variant).
Lowering::Scalar LibmOf(Op op) {
  return [op](const auto& x, Builder& b) { return b.Apply(op, {x.begin(), x.end()}); };
}
Lowering::Scalar CmpOf(Pred pred) {
  return [pred](const auto& x, Builder& b) { return b.Cmp(pred, x[0], x[1]); };
}
// The operand itself (BroadcastTo: the broadcast is in the operand's index, as for every
// elementwise op).
StatusOr<Value> AsIs(const Node&, const std::vector<Value>& x, Builder&) { return x[0]; }
Value SumAll(Op add, const std::vector<Value>& x, Builder& b) {
  Value sum = x[0];
  for (size_t i = 1; i < x.size(); ++i) sum = Binary(add, sum, x[i], b);
  return sum;
}
StatusOr<Value> SelectOf(const Node&, const std::vector<Value>& x, Builder& b) { return b.Select(x[0], x[1], x[2]); }
Lowering::Any LogicalOf(Op op) {
  return [op](const Node&, const auto& x, Builder& b) -> StatusOr<Value> { return Binary(op, x[0], x[1], b); };
}

// ZerosLike and OnesLike: `c` of the result's type.
Lowering::Any ConstantLike(int c) {
  return [c](const Node&, const auto& x, Builder& b) -> StatusOr<Value> {
    return x[0].type == Type::F32() ? F32(b, c) : b.Int(c, x[0].type);
  };
}

// Every op the elemental emitter computes, as the reference kernels compute it. Floats
// are computed in f32; integers wrap on overflow in two's complement (Abs and Neg of the
// minimum give the minimum).
const std::map<std::string, Lowering, std::less<>>& Lowerings() {
  static const std::map<std::string, Lowering, std::less<>> ops = {
      {"Add", {BinaryOf(Op::kAddF), BinaryOf(Op::kAddI)}},
      {"AddV2", {BinaryOf(Op::kAddF), BinaryOf(Op::kAddI)}},
      {"BiasAdd", {BinaryOf(Op::kAddF), BinaryOf(Op::kAddI)}},
      {"AddN",
       {[](const auto& x, Builder& b) { return SumAll(Op::kAddF, x, b); },
        [](const auto& x, Builder& b) { return SumAll(Op::kAddI, x, b); }}},
      {"Sub", {BinaryOf(Op::kSubF), BinaryOf(Op::kSubI)}},
      {"Mul", {BinaryOf(Op::kMulF), BinaryOf(Op::kMulI)}},
      {"RealDiv", {BinaryOf(Op::kDivF)}},
      {"Maximum", {[](const auto& x, Builder& b) { return MaxOrMin(true, x[0], x[1], b); }, BinaryOf(Op::kMaxSI)}},
      {"Minimum", {[](const auto& x, Builder& b) { return MaxOrMin(false, x[0], x[1], b); }, BinaryOf(Op::kMinSI)}},
      // Activation gradients as TensorFlow computes them: times 0 or 1, not a select, so a
      // NaN or infinite gradient stays NaN where the activation is flat.
      {"ReluGrad", {[](const auto& x, Builder& b) {
         return Binary(Op::kMulF, x[0], b.Select(b.Cmp(Pred::kOgt, x[1], F32(b, 0)), F32(b, 1), F32(b, 0)), b);
       }}},
      {"Relu6Grad", {[](const auto& x, Builder& b) {
         const Value inside = b.Apply(Op::kAndI, {b.Cmp(Pred::kOgt, x[1], F32(b, 0)), b.Cmp(Pred::kOlt, x[1], F32(b, 6))});
         return Binary(Op::kMulF, x[0], b.Select(inside, F32(b, 1), F32(b, 0)), b);
       }}},
      {"TanhGrad", {[](const auto& x, Builder& b) {
         return Binary(Op::kMulF, x[1], Binary(Op::kSubF, F32(b, 1), Binary(Op::kMulF, x[0], x[0], b), b), b);
       }}},
      {"SigmoidGrad", {[](const auto& x, Builder& b) {
         return Binary(Op::kMulF, Binary(Op::kMulF, x[1], x[0], b), Binary(Op::kSubF, F32(b, 1), x[0], b), b);
       }}},
      {"SquaredDifference",
       {[](const auto& x, Builder& b) {
          const Value d = Binary(Op::kSubF, x[0], x[1], b);
          return Binary(Op::kMulF, d, d, b);
        },
        [](const auto& x, Builder& b) {
          const Value d = Binary(Op::kSubI, x[0], x[1], b);
          return Binary(Op::kMulI, d, d, b);
        }}},
      // libm's powf, as the reference kernel calls it (no afn: it would let LLVM rewrite it).
      {"Pow", {BinaryOf(Op::kPowF)}},
      // Python's // and % on floats, as the reference kernels compute them: floor(x / y),
      // and fmod(x, y) moved to the divisor's sign.
      {"FloorDiv", {[](const auto& x, Builder& b) { return Math(Op::kFloor, Divide(x[0], x[1], b), b); }}},
      {"FloorMod", {[](const auto& x, Builder& b) {
         const Value r = Binary(Op::kRemF, x[0], x[1], b), zero = F32(b, 0);
         const Value signs_differ = b.Apply(Op::kXOrI, {b.Cmp(Pred::kOlt, r, zero), b.Cmp(Pred::kOlt, x[1], zero)});
         const Value moved = b.Apply(Op::kAndI, {b.Cmp(Pred::kUne, r, zero), signs_differ});
         return b.Select(moved, Binary(Op::kAddF, r, x[1], b), r);
       }}},
      {"Neg",
       {[](const auto& x, Builder& b) { return b.Apply(Op::kNegF, {x[0]}); },
        [](const auto& x, Builder& b) { return Binary(Op::kSubI, b.Int(0, x[0].type), x[0], b); }}},
      {"Abs", {MathOf(Op::kAbsF), [](const auto& x, Builder& b) { return b.Apply(Op::kAbsI, {x[0]}); }}},
      {"Exp", {[](const auto& x, Builder& b) { return Exp(x[0], b); }}},
      {"Log", {MathOf(Op::kLog)}},
      {"Log1p", {MathOf(Op::kLog1p)}},
      {"Tanh", {MathOf(Op::kTanh)}},
      // libm's accuracy on every float (the CPU backend calls glibc's vector sinf and cosf,
      // the GPU's libdevice's), not MLIR's polynomials, whose reduction by pi/2 in f32 loses
      // every digit of a large argument (rotary position embeddings reach thousands).
      {"Sin", {MathOf(Op::kSin)}},
      {"Cos", {MathOf(Op::kCos)}},
      // The others libm's too (glibc's vector functions on the CPU, libdevice's on the GPU),
      // as the reference kernels call them.
      {"Tan", {LibmOf(Op::kTan)}},
      {"Asin", {LibmOf(Op::kAsin)}},
      {"Acos", {LibmOf(Op::kAcos)}},
      {"Atan", {LibmOf(Op::kAtan)}},
      {"Atan2", {LibmOf(Op::kAtan2)}},
      {"Sinh", {LibmOf(Op::kSinh)}},
      {"Cosh", {LibmOf(Op::kCosh)}},
      {"Asinh", {LibmOf(Op::kAsinh)}},
      {"Acosh", {LibmOf(Op::kAcosh)}},
      {"Atanh", {LibmOf(Op::kAtanh)}},
      {"Expm1", {LibmOf(Op::kExpm1)}},
      {"Erfinv", {[](const auto& x, Builder& b) { return Erfinv(x[0], b); }}},
      // x * log(y), x * log1p(y), x / y; 0 where x is 0, whatever y is.
      {"Xlogy",
       {[](const auto& x, Builder& b) { return ZeroWhereZero(x[0], Binary(Op::kMulF, x[0], Math(Op::kLog, x[1], b), b), b); }}},
      {"Xlog1py",
       {[](const auto& x, Builder& b) { return ZeroWhereZero(x[0], Binary(Op::kMulF, x[0], Math(Op::kLog1p, x[1], b), b), b); }}},
      {"Xdivy", {[](const auto& x, Builder& b) { return ZeroWhereZero(x[0], Divide(x[0], x[1], b), b); }}},
      // std::max(std::min(t, max), min), as the reference kernel: a NaN t stays, a NaN bound
      // is passed over.
      {"ClipByValue",
       {[](const auto& x, Builder& b) { return Clip(x, Pred::kOlt, b); },
        [](const auto& x, Builder& b) { return Clip(x, Pred::kSlt, b); }}},
      {"Erf", {[](const auto& x, Builder& b) { return ScaledErf(x[0], 1, b); }}},
      {"Erfc", {[](const auto& x, Builder& b) { return Erfc(x[0], b); }}},
      {"Sqrt", {MathOf(Op::kSqrt)}},
      // 1 / sqrt(x), not math.rsqrt, which LLVM makes an estimate and a Newton step: that
      // gives NaN for 0 and Inf (0 * Inf), where rsqrt is Inf and 0.
      {"Rsqrt", {[](const auto& x, Builder& b) { return Divide(F32(b, 1), Math(Op::kSqrt, x[0], b), b); }}},
      {"Floor", {MathOf(Op::kFloor)}},
      {"Ceil", {MathOf(Op::kCeil)}},
      {"Round", {MathOf(Op::kRoundEven)}},  // half to even, as TF
      {"Square",
       {[](const auto& x, Builder& b) { return Binary(Op::kMulF, x[0], x[0], b); },
        [](const auto& x, Builder& b) { return Binary(Op::kMulI, x[0], x[0], b); }}},
      {"Reciprocal", {[](const auto& x, Builder& b) { return Divide(F32(b, 1), x[0], b); }}},
      {"Sigmoid", {[](const auto& x, Builder& b) {
         // exp(-x) unzeroed: a tiny one makes 1 / (1 + e) exactly 1 either way.
         const Value e = Math(Op::kExp, b.Apply(Op::kNegF, {x[0]}), b);
         return ZeroBelowNormal(Divide(F32(b, 1), Binary(Op::kAddF, F32(b, 1), e, b), b), b);
       }}},
      {"Relu",
       {[](const auto& x, Builder& b) { return Relu(x[0], b); },
        [](const auto& x, Builder& b) { return Binary(Op::kMaxSI, x[0], b.Int(0, x[0].type), b); }}},
      {"Relu6",
       {[](const auto& x, Builder& b) {
          const Value r = Relu(x[0], b), six = F32(b, 6);
          return b.Select(b.Cmp(Pred::kOgt, r, six), six, r);
        },
        [](const auto& x, Builder& b) {
          const Type t = x[0].type;
          return Binary(Op::kMinSI, Binary(Op::kMaxSI, x[0], b.Int(0, t), b), b.Int(6, t), b);
        }}},
      {"Elu",
       {[](const auto& x, Builder& b) { return b.Select(b.Cmp(Pred::kOlt, x[0], F32(b, 0)), ExpMinusOne(x[0], b), x[0]); }}},
      {"Sign",
       {[](const auto& x, Builder& b) {  // +-1; NaN stays NaN, and both zeros give +0 (x + 0), as the reference
          const Value zero = F32(b, 0);
          const Value neg = b.Select(b.Cmp(Pred::kOlt, x[0], zero), F32(b, -1), Binary(Op::kAddF, x[0], zero, b));
          return b.Select(b.Cmp(Pred::kOgt, x[0], zero), F32(b, 1), neg);
        },
        [](const auto& x, Builder& b) {
          const Type t = x[0].type;
          const Value zero = b.Int(0, t);
          const Value neg = b.Select(b.Cmp(Pred::kSlt, x[0], zero), b.Int(-1, t), zero);
          return b.Select(b.Cmp(Pred::kSgt, x[0], zero), b.Int(1, t), neg);
        }}},
      {"Selu", {[](const auto& x, Builder& b) {
         const Value below = Binary(Op::kMulF, ExpMinusOne(x[0], b), F32(b, 1.7580993408473768599402175208123), b);
         return b.Select(b.Cmp(Pred::kOlt, x[0], F32(b, 0)), below,
                         Binary(Op::kMulF, x[0], F32(b, 1.0507009873554804934193349852946), b));
       }}},
      {"Softplus", {[](const auto& x, Builder& b) {  // as TensorFlow: x above -t, exp(x) below t, log1p(exp(x)) between
         const double t = std::log(1.1920928955078125e-07) + 2;
         const Value e = Exp(x[0], b);
         const Value between = b.Select(b.Cmp(Pred::kOlt, x[0], F32(b, t)), e, Math(Op::kLog1p, e, b));
         return b.Select(b.Cmp(Pred::kOgt, x[0], F32(b, -t)), x[0], between);
       }}},
      {"Softsign",  // x / (1 + |x|), as TensorFlow computes it (NaN for +-Inf)
       {[](const auto& x, Builder& b) { return Divide(x[0], Binary(Op::kAddF, F32(b, 1), Math(Op::kAbsF, x[0], b), b), b); }}},
      {"DivNoNan", {[](const auto& x, Builder& b) {
         const Value zero = F32(b, 0);
         return b.Select(b.Cmp(Pred::kOeq, x[1], zero), zero, Divide(x[0], x[1], b));
       }}},
      {"LeakyRelu", Lowering([](const Node& n, const auto& x, Builder& b) -> StatusOr<Value> {
         if (!(x[0].type == Type::F32()))
           return Unimplemented(NodeLabel(n) + ": LeakyRelu of " + x[0].type.str() + " is not compiled");
         GJ_ASSIGN_OR_RETURN(float alpha, GetFloatAttrOr(n, "alpha", 0.2f));
         return b.Select(b.Cmp(Pred::kOgt, x[0], F32(b, 0)), x[0], Binary(Op::kMulF, x[0], F32(b, alpha), b));
       })},
      {"Greater", {CmpOf(Pred::kOgt), CmpOf(Pred::kSgt)}},
      {"GreaterEqual", {CmpOf(Pred::kOge), CmpOf(Pred::kSge)}},
      {"Less", {CmpOf(Pred::kOlt), CmpOf(Pred::kSlt)}},
      {"LessEqual", {CmpOf(Pred::kOle), CmpOf(Pred::kSle)}},
      {"Equal", {CmpOf(Pred::kOeq), CmpOf(Pred::kEq), /*bools=*/true}},
      {"NotEqual", {CmpOf(Pred::kUne), CmpOf(Pred::kNe), /*bools=*/true}},
      // A float's class, on the f32 value (a 16-bit float's Inf and NaN stay Inf and NaN).
      {"IsNan", {[](const auto& x, Builder& b) { return b.Cmp(Pred::kUno, x[0], x[0]); }}},
      {"IsInf", {[](const auto& x, Builder& b) { return b.Cmp(Pred::kOeq, Math(Op::kAbsF, x[0], b), F32(b, INFINITY)); }}},
      {"IsFinite", {[](const auto& x, Builder& b) { return b.Cmp(Pred::kOlt, Math(Op::kAbsF, x[0], b), F32(b, INFINITY)); }}},
      // On operands of any computed type.
      {"Identity", Lowering(AsIs)},
      {"StopGradient", Lowering(AsIs)},
      {"BroadcastTo", Lowering(AsIs)},
      {"Cast", Lowering([](const Node& n, const auto& x, Builder& b) -> StatusOr<Value> {
         GJ_ASSIGN_OR_RETURN(DType to, GetTypeAttr(n, "DstT"));
         return EmitCast(x[0], to, b);
       })},
      {"ZerosLike", Lowering(ConstantLike(0))},
      {"OnesLike", Lowering(ConstantLike(1))},
      {"Select", Lowering(SelectOf)},
      {"SelectV2", Lowering(SelectOf)},
      {"LogicalAnd", Lowering(LogicalOf(Op::kAndI))},
      {"LogicalOr", Lowering(LogicalOf(Op::kOrI))},
      {"LogicalNot", Lowering([](const Node&, const auto& x, Builder& b) -> StatusOr<Value> {
         return b.Apply(Op::kXOrI, {x[0], b.Bool(true)});
       })},
  };
  return ops;
}

}  // namespace

// erf(s x) = s x P(s^2 x^2) / Q(s^2 x^2) for |s x| < 4 and +-1 beyond: a rational fit made
// by scripts/fit_erf.py, at most 3.3e-7 relative error in f32. The powers of s are folded
// into the coefficients, and both polynomials divided by Q's leading one, so Q's last
// Horner step is an addition. MLIR's polynomial approximation of math.erf is piecewise,
// with selects between coefficient sets, and costs about twice as much. NaN stays NaN.
Value ScaledErf(const Value& x, double s, Builder& b) {
  static const std::vector<double> p = {1.128379169e+00, 1.851618970e-01, 5.430507681e-02, 3.847185292e-03,
                                        3.793017771e-04, 4.676924728e-06, -1.315557803e-08};
  static const std::vector<double> q = {1.000000000e+00, 4.974288699e-01, 1.139357257e-01,
                                        1.545603109e-02, 1.306681211e-03, 6.303869787e-05};
  const double lead = q.back() * std::pow(s, 2.0 * (q.size() - 1));  // of Q(s^2 t)
  std::vector<double> ps(p.size()), qs(q.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double power = std::pow(s, 2.0 * i);
    ps[i] = p[i] * power * s / lead;
    if (i < q.size()) qs[i] = q[i] * power / lead;
  }
  // Unclamped: where |s x| >= 4 (the fit may be Inf / Inf there) the select below takes +-1.
  const Value t = Binary(Op::kMulF, x, x, b);
  const Value num = Binary(Op::kMulF, x, Polynomial(ps, t, b), b);
  const Value r = Divide(num, Polynomial(qs, t, b), b);
  const Value fit = Binary(Op::kMinimumF, Binary(Op::kMaximumF, r, F32(b, -1), b), F32(b, 1), b);
  // From 4 on, +-1 exactly, as the reference kernel (Eigen's erf) gives it: the fit at 4,
  // evaluated in f32, can be an ulp short, which Pow(erf(x), 1e30) would make 0, not 1.
  const Value saturated = b.Cmp(Pred::kOge, Math(Op::kAbsF, x, b), F32(b, 4 / s));
  return b.Select(saturated, Binary(Op::kCopySign, F32(b, 1), x, b), fit);
}

Type ElementType(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
    case DType::kHalf:
    case DType::kBFloat16: return Type::F32();
    case DType::kBool: return Type::I1();
    case DType::kInt32: return Type::I32();
    case DType::kInt64: return Type::I64();
    default: return Type();
  }
}

bool IsElementalOp(const std::string& op) { return Lowerings().count(op) > 0; }

std::vector<std::string> ElementalOps() {
  std::vector<std::string> ops;
  for (const auto& [op, lowering] : Lowerings()) ops.push_back(op);
  return ops;
}

std::string WhyNotElemental(const std::string& op, const std::vector<Type>& types) {
  auto it = Lowerings().find(op);
  if (it == Lowerings().end()) return "the elemental emitter does not take " + op;
  const Lowering& l = it->second;
  if (l.any) return "";
  for (const Type& t : types)
    if (!(t == types[0])) return op + " of " + types[0].str() + " and " + t.str();
  const Type t = types[0];
  const bool taken = t == Type::F32()  ? bool(l.f)
                     : t == Type::I1() ? l.bools
                                       : (t == Type::I32() || t == Type::I64()) && bool(l.i);
  return taken ? "" : op + " of " + t.str() + " is not compiled";
}

StatusOr<Value> EmitElemental(const Node& node, const std::vector<Value>& operands, Builder& b) {
  std::vector<Type> types;
  for (const Value& v : operands) types.push_back(v.type);
  if (std::string why = WhyNotElemental(node.op, types); !why.empty()) return Unimplemented(NodeLabel(node) + ": " + why);
  const Lowering& l = Lowerings().find(node.op)->second;
  if (l.any) return l.any(node, operands, b);
  return types[0] == Type::F32() ? l.f(operands, b) : l.i(operands, b);
}

}  // namespace graphjit
