#include "jit/elemental.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "ir/attr.h"

namespace graphjit {

namespace {

// No contraction: an FMA for x*y+z keeps x*y from overflowing, so an Inf or NaN of the
// reference kernels would become a finite value. Math functions may be approximate (afn);
// divisions are exact (no arcp: x * (1 / d) is 0 or NaN where x / d is not, for a huge or
// subnormal d); never nnan/ninf.
constexpr const char* kArith = " : f32";
constexpr const char* kMath = " fastmath<afn> : f32";

std::string F32(MlirWriter& w, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "arith.constant %.9e : f32", v);
  return w.Let(buf);
}

std::string Binary(const char* op, const std::vector<std::string>& x, MlirWriter& w) {
  return w.Let(std::string(op) + " " + x[0] + ", " + x[1] + kArith);
}
std::string Divide(const std::string& x, const std::string& y, MlirWriter& w) {
  return w.Let("arith.divf " + x + ", " + y + " : f32");
}
std::string Unary(const char* op, const std::string& x, MlirWriter& w) { return w.Let(std::string(op) + " " + x + kMath); }
std::string Cmp(const char* pred, const std::vector<std::string>& x, MlirWriter& w) {
  return w.Let(std::string("arith.cmpf ") + pred + ", " + x[0] + ", " + x[1] + " : f32");
}
std::string Select(const std::string& c, const std::string& a, const std::string& b, MlirWriter& w) {
  return w.Let("arith.select " + c + ", " + a + ", " + b + " : f32");
}
// max(x, 0) with NaN passed through, as the reference Relu does.
std::string Relu(const std::string& x, MlirWriter& w) {
  std::string zero = F32(w, 0);
  return Select(w.Let("arith.cmpf olt, " + x + ", " + zero + " : f32"), zero, x, w);
}

// IEEE 754-2019 maximum or minimum, as the reference kernels compute them: NaN propagates
// and -0 < +0. Neither operand less is a tie, or a NaN: the result's bits are a AND b for
// a tie of the maximum (+0 of +-0), else a OR b (-0 of +-0, a NaN of a NaN). Not
// arith.maximumf: between f16 loads and stores LLVM 19 narrows it to llvm.maximum on half
// vectors, and the x86 code it made of that returned 0 for max(0, NaN) (found by jit_fuzz).
std::string MaxOrMin(bool max, const std::string& a, const std::string& b, MlirWriter& w) {
  auto bits = [&](const std::string& x) { return w.Let("arith.bitcast " + x + " : f32 to i32"); };
  auto bitwise = [&](const char* op) {
    return w.Let("arith.bitcast " + w.Let(std::string(op) + " " + bits(a) + ", " + bits(b) + " : i32") + " : i32 to f32");
  };
  std::string tie = bitwise("arith.ori");
  if (max) tie = Select(Cmp("oeq", {a, b}, w), bitwise("arith.andi"), tie, w);
  const std::string& lo = max ? b : a;
  const std::string& hi = max ? a : b;
  return Select(Cmp("olt", {lo, hi}, w), a, Select(Cmp("olt", {hi, lo}, w), b, tie, w), w);
}

// r < 2^-126 ? 0 : r: the exp-based ops (Exp, Sigmoid, Softplus, Softmax) give 0 below the
// normal range, as the reference kernels and TensorFlow do (runtime/kernels/ieee.h).
// MLIR's exp already gives 0 below 2^-127; this makes the band just below 2^-126 agree.
std::string ZeroBelowNormal(const std::string& r, MlirWriter& w) {
  std::string tiny = w.Let("arith.cmpf olt, " + r + ", " + F32(w, 1.17549435e-38) + " : f32");
  return Select(tiny, F32(w, 0), r, w);
}

std::string Exp(const std::string& x, MlirWriter& w) { return ZeroBelowNormal(Unary("math.exp", x, w), w); }

// exp(x) - 1 as TensorFlow's Elu and Selu compute it (not expm1: for a tiny negative x
// they give +0, and 1 / Selu(x) is +Inf, not -Inf).
std::string ExpMinusOne(const std::string& x, MlirWriter& w) {
  return Binary("arith.subf", {Unary("math.exp", x, w), F32(w, 1)}, w);  // a tiny exp(x) gives -1 either way
}

// c[0] + c[1] t + c[2] t^2 + ..., by Horner's rule with fused multiply-adds.
std::string Polynomial(const std::vector<double>& c, const std::string& t, MlirWriter& w) {
  std::string r = F32(w, c.back());
  for (size_t i = c.size() - 1; i-- > 0;) r = w.Let("math.fma " + r + ", " + t + ", " + F32(w, c[i]) + " : f32");
  return r;
}

// erfc(x) = e^(-x^2) R(|x|) for x >= 0, 2 - e^(-x^2) R(|x|) below: R = P / Q, a rational fit
// of erfcx on [0, 10] by scripts/fit_erfc.py (3.4e-7 relative error in f32), so erfc keeps
// its relative accuracy where it is tiny (1 - erf would not). x^2 is split into the f32
// product t and its rounding error d (an FMA), e^(-x^2) = e^(-t) (1 - d). From |x| = 10 on,
// e^(-100) R(10) is below 2^-126 and the result 0 (or 2), as the reference kernel gives it.
// NaN stays NaN.
std::string Erfc(const std::string& x, MlirWriter& w) {
  static const std::vector<double> p = {1.000000028e+00, 1.249548049e+00, 7.438750972e-01, 2.353138589e-01,
                                        3.417619160e-02};
  static const std::vector<double> q = {1.000000000e+00, 2.377928648e+00, 2.427062535e+00,
                                        1.348380754e+00, 4.171066021e-01, 6.057510185e-02};
  const std::string a = w.Let("arith.minimumf " + Unary("math.absf", x, w) + ", " + F32(w, 10) + " : f32");
  const std::string t = Binary("arith.mulf", {a, a}, w);
  const std::string d = w.Let("math.fma " + a + ", " + a + ", " + w.Let("arith.negf " + t + " : f32") + " : f32");
  const std::string e = Unary("math.exp", w.Let("arith.negf " + t + " : f32"), w);
  const std::string scaled = w.Let("math.fma " + w.Let("arith.negf " + d + " : f32") + ", " + e + ", " + e + " : f32");
  const std::string v = Binary("arith.mulf", {scaled, Divide(Polynomial(p, a, w), Polynomial(q, a, w), w)}, w);
  const std::string negative = w.Let("arith.cmpf olt, " + x + ", " + F32(w, 0) + " : f32");
  return ZeroBelowNormal(Select(negative, Binary("arith.subf", {F32(w, 2), v}, w), v, w), w);
}

// On integers of type `t` (i32, i64).
std::string IntConst(MlirWriter& w, int64_t v, const std::string& t) {
  return w.Let("arith.constant " + std::to_string(v) + " : " + t);
}
std::string IntBinary(const char* op, const std::string& a, const std::string& b, const std::string& t, MlirWriter& w) {
  return w.Let(std::string(op) + " " + a + ", " + b + " : " + t);
}
std::string IntSelect(const std::string& c, const std::string& a, const std::string& b, const std::string& t,
                      MlirWriter& w) {
  return w.Let("arith.select " + c + ", " + a + ", " + b + " : " + t);
}
std::string IntCmp(const char* pred, const std::string& a, const std::string& b, const std::string& t, MlirWriter& w) {
  return w.Let(std::string("arith.cmpi ") + pred + ", " + a + ", " + b + " : " + t);
}

bool IsInt(const std::string& t) { return t == "i32" || t == "i64"; }

// Cast between the computed types (f32, i1, i32, i64), then rounded to a 16-bit float
// type if that is the destination, as the reference kernel's Cast does.
std::string EmitCast(const std::string& x, const std::string& from, DType to_dtype, MlirWriter& w) {
  const std::string to = ElementType(to_dtype);
  std::string v = x;
  if (from == to) {
  } else if (from == "i1") {
    v = to == "f32" ? Select(x, F32(w, 1), F32(w, 0), w) : w.Let("arith.extui " + x + " : i1 to " + to);
  } else if (to == "i1") {
    v = from == "f32" ? w.Let("arith.cmpf une, " + x + ", " + F32(w, 0) + " : f32")
                      : IntCmp("ne", x, IntConst(w, 0, from), from, w);
  } else if (from == "f32") {
    // Truncation toward zero; NaN and what is out of range give the minimum, as x86's
    // conversion does (fptosi alone would be poison there; the select never picks it).
    const double bound = to == "i32" ? 2147483648.0 : 9223372036854775808.0;
    const std::string out_of_range = w.Let(
        "arith.ori " + w.Let("arith.cmpf uno, " + x + ", " + x + " : f32") + ", " +
        w.Let("arith.ori " + w.Let("arith.cmpf olt, " + x + ", " + F32(w, -bound) + " : f32") + ", " +
              w.Let("arith.cmpf oge, " + x + ", " + F32(w, bound) + " : f32") + " : i1") +
        " : i1");
    const std::string minimum = IntConst(w, to == "i32" ? INT32_MIN : INT64_MIN, to);
    v = IntSelect(out_of_range, minimum, w.Let("arith.fptosi " + x + " : f32 to " + to), to, w);
  } else if (to == "f32") {
    v = w.Let("arith.sitofp " + x + " : " + from + " to f32");
  } else {
    v = w.Let(std::string(from == "i32" ? "arith.extsi " : "arith.trunci ") + x + " : " + from + " to " + to);
  }
  if (to_dtype == DType::kHalf || to_dtype == DType::kBFloat16) {  // rounded as stored
    const char* t = to_dtype == DType::kHalf ? "f16" : "bf16";
    v = w.Let("arith.extf " + w.Let("arith.truncf " + v + " : f32 to " + t) + " : " + t + " to f32");
  }
  return v;
}

// How the elemental emitter computes one op: on f32 operands (`f`), on i32 or i64 ones
// (`i`, also on i1 where `bools`), or, for the ops that read their attrs or take operands
// of any computed type, from the node (`any`).
struct Lowering {
  using Float = std::function<std::string(const std::vector<std::string>& x, MlirWriter& w)>;
  using Int = std::function<std::string(const std::vector<std::string>& x, const std::string& t, MlirWriter& w)>;
  using Any = std::function<StatusOr<std::string>(const Node& n, const std::vector<std::string>& x,
                                                  const std::vector<std::string>& types, MlirWriter& w)>;
  Lowering(Float f, Int i = nullptr, bool bools = false) : f(std::move(f)), i(std::move(i)), bools(bools) {}
  explicit Lowering(Any any) : any(std::move(any)) {}
  Float f;
  Int i;
  Any any;
  bool bools = false;
};

Lowering::Float FloatBinary(const char* op) {
  return [op](const auto& x, MlirWriter& w) { return Binary(op, x, w); };
}
Lowering::Float FloatUnary(const char* op) {
  return [op](const auto& x, MlirWriter& w) { return Unary(op, x[0], w); };
}
Lowering::Float FloatCmp(const char* pred) {
  return [pred](const auto& x, MlirWriter& w) { return Cmp(pred, x, w); };
}
Lowering::Int IntBinaryOf(const char* op) {
  return [op](const auto& x, const std::string& t, MlirWriter& w) { return IntBinary(op, x[0], x[1], t, w); };
}
Lowering::Int IntCmpOf(const char* pred) {
  return [pred](const auto& x, const std::string& t, MlirWriter& w) { return IntCmp(pred, x[0], x[1], t, w); };
}
// The operand itself (BroadcastTo: the broadcast is in the operand's index, as for every
// elementwise op).
StatusOr<std::string> AsIs(const Node&, const std::vector<std::string>& x, const std::vector<std::string>&, MlirWriter&) {
  return x[0];
}
std::string SumAll(const char* add, const std::vector<std::string>& x, const std::string& t, MlirWriter& w) {
  std::string sum = x[0];
  for (size_t i = 1; i < x.size(); ++i) sum = IntBinary(add, sum, x[i], t, w);
  return sum;
}

StatusOr<std::string> SelectOf(const Node&, const std::vector<std::string>& x, const std::vector<std::string>& types,
                               MlirWriter& w) {
  return IntSelect(x[0], x[1], x[2], types[1], w);
}
Lowering::Any LogicalOf(const char* op) {
  return [op](const Node&, const auto& x, const auto&, MlirWriter& w) -> StatusOr<std::string> {
    return w.Let(std::string(op) + " " + x[0] + ", " + x[1] + " : i1");
  };
}

// ZerosLike and OnesLike: `c` of the result's type.
Lowering::Any ConstantLike(int c) {
  return [c](const Node&, const auto&, const auto& types, MlirWriter& w) -> StatusOr<std::string> {
    if (types[0] == "f32") return F32(w, c);
    if (types[0] == "i1") return w.Let(c ? "arith.constant true" : "arith.constant false");
    return IntConst(w, c, types[0]);
  };
}

// Every op the elemental emitter computes, as the reference kernels compute it. Floats
// are computed in f32; integers wrap on overflow in two's complement (Abs and Neg of the
// minimum give the minimum).
const std::map<std::string, Lowering, std::less<>>& Lowerings() {
  static const std::map<std::string, Lowering, std::less<>> ops = {
      {"Add", {FloatBinary("arith.addf"), IntBinaryOf("arith.addi")}},
      {"AddV2", {FloatBinary("arith.addf"), IntBinaryOf("arith.addi")}},
      {"BiasAdd", {FloatBinary("arith.addf"), IntBinaryOf("arith.addi")}},
      {"AddN",
       {[](const auto& x, MlirWriter& w) { return SumAll("arith.addf", x, "f32", w); },
        [](const auto& x, const std::string& t, MlirWriter& w) { return SumAll("arith.addi", x, t, w); }}},
      {"Sub", {FloatBinary("arith.subf"), IntBinaryOf("arith.subi")}},
      {"Mul", {FloatBinary("arith.mulf"), IntBinaryOf("arith.muli")}},
      {"RealDiv", {[](const auto& x, MlirWriter& w) { return Divide(x[0], x[1], w); }}},
      {"Maximum",
       {[](const auto& x, MlirWriter& w) { return MaxOrMin(true, x[0], x[1], w); }, IntBinaryOf("arith.maxsi")}},
      {"Minimum",
       {[](const auto& x, MlirWriter& w) { return MaxOrMin(false, x[0], x[1], w); }, IntBinaryOf("arith.minsi")}},
      // Activation gradients as TensorFlow computes them: times 0 or 1, not a select, so a
      // NaN or infinite gradient stays NaN where the activation is flat.
      {"ReluGrad",
       {[](const auto& x, MlirWriter& w) {
         return Binary("arith.mulf", {x[0], Select(Cmp("ogt", {x[1], F32(w, 0)}, w), F32(w, 1), F32(w, 0), w)}, w);
       }}},
      {"Relu6Grad",
       {[](const auto& x, MlirWriter& w) {
         std::string inside = w.Let("arith.andi " + Cmp("ogt", {x[1], F32(w, 0)}, w) + ", " +
                                    Cmp("olt", {x[1], F32(w, 6)}, w) + " : i1");
         return Binary("arith.mulf", {x[0], Select(inside, F32(w, 1), F32(w, 0), w)}, w);
       }}},
      {"TanhGrad",
       {[](const auto& x, MlirWriter& w) {
         return Binary("arith.mulf", {x[1], Binary("arith.subf", {F32(w, 1), Binary("arith.mulf", {x[0], x[0]}, w)}, w)}, w);
       }}},
      {"SigmoidGrad",
       {[](const auto& x, MlirWriter& w) {
         std::string dy_y = Binary("arith.mulf", {x[1], x[0]}, w);
         return Binary("arith.mulf", {dy_y, Binary("arith.subf", {F32(w, 1), x[0]}, w)}, w);
       }}},
      {"SquaredDifference",
       {[](const auto& x, MlirWriter& w) {
          std::string d = Binary("arith.subf", x, w);
          return Binary("arith.mulf", {d, d}, w);
        },
        [](const auto& x, const std::string& t, MlirWriter& w) {
          std::string d = IntBinary("arith.subi", x[0], x[1], t, w);
          return IntBinary("arith.muli", d, d, t, w);
        }}},
      // libm's powf, as the reference kernel calls it (no afn: it would let LLVM rewrite it).
      {"Pow", {[](const auto& x, MlirWriter& w) { return w.Let("math.powf " + x[0] + ", " + x[1] + kArith); }}},
      // Python's // and % on floats, as the reference kernels compute them: floor(x / y),
      // and fmod(x, y) moved to the divisor's sign.
      {"FloorDiv", {[](const auto& x, MlirWriter& w) { return Unary("math.floor", Divide(x[0], x[1], w), w); }}},
      {"FloorMod",
       {[](const auto& x, MlirWriter& w) {
         const std::string r = w.Let("arith.remf " + x[0] + ", " + x[1] + kArith), zero = F32(w, 0);
         const std::string signs_differ = w.Let("arith.xori " + Cmp("olt", {r, zero}, w) + ", " +
                                                Cmp("olt", {x[1], zero}, w) + " : i1");
         const std::string moved = w.Let("arith.andi " + Cmp("une", {r, zero}, w) + ", " + signs_differ + " : i1");
         return Select(moved, Binary("arith.addf", {r, x[1]}, w), r, w);
       }}},
      {"Neg",
       {[](const auto& x, MlirWriter& w) { return w.Let("arith.negf " + x[0] + " : f32"); },
        [](const auto& x, const std::string& t, MlirWriter& w) {
          return IntBinary("arith.subi", IntConst(w, 0, t), x[0], t, w);
        }}},
      {"Abs",
       {FloatUnary("math.absf"),
        [](const auto& x, const std::string& t, MlirWriter& w) { return w.Let("math.absi " + x[0] + " : " + t); }}},
      {"Exp", {[](const auto& x, MlirWriter& w) { return Exp(x[0], w); }}},
      {"Log", {FloatUnary("math.log")}},
      {"Log1p", {FloatUnary("math.log1p")}},
      {"Tanh", {FloatUnary("math.tanh")}},
      {"Erf", {[](const auto& x, MlirWriter& w) { return ScaledErf(x[0], 1, w); }}},
      {"Erfc", {[](const auto& x, MlirWriter& w) { return Erfc(x[0], w); }}},
      {"Sqrt", {FloatUnary("math.sqrt")}},
      // 1 / sqrt(x), not math.rsqrt, which LLVM makes an estimate and a Newton step: that
      // gives NaN for 0 and Inf (0 * Inf), where rsqrt is Inf and 0.
      {"Rsqrt", {[](const auto& x, MlirWriter& w) { return Divide(F32(w, 1), Unary("math.sqrt", x[0], w), w); }}},
      {"Floor", {FloatUnary("math.floor")}},
      {"Ceil", {FloatUnary("math.ceil")}},
      {"Round", {FloatUnary("math.roundeven")}},  // half to even, as TF
      {"Square",
       {[](const auto& x, MlirWriter& w) { return Binary("arith.mulf", {x[0], x[0]}, w); },
        [](const auto& x, const std::string& t, MlirWriter& w) { return IntBinary("arith.muli", x[0], x[0], t, w); }}},
      {"Reciprocal", {[](const auto& x, MlirWriter& w) { return Divide(F32(w, 1), x[0], w); }}},
      {"Sigmoid",
       {[](const auto& x, MlirWriter& w) {
         // exp(-x) unzeroed: a tiny one makes 1 / (1 + e) exactly 1 either way.
         std::string e = Unary("math.exp", w.Let("arith.negf " + x[0] + " : f32"), w);
         return ZeroBelowNormal(Binary("arith.divf", {F32(w, 1), Binary("arith.addf", {F32(w, 1), e}, w)}, w), w);
       }}},
      {"Relu",
       {[](const auto& x, MlirWriter& w) { return Relu(x[0], w); },
        [](const auto& x, const std::string& t, MlirWriter& w) {
          return IntBinary("arith.maxsi", x[0], IntConst(w, 0, t), t, w);
        }}},
      {"Relu6",
       {[](const auto& x, MlirWriter& w) {
          std::string r = Relu(x[0], w), six = F32(w, 6);
          return Select(w.Let("arith.cmpf ogt, " + r + ", " + six + " : f32"), six, r, w);
        },
        [](const auto& x, const std::string& t, MlirWriter& w) {
          return IntBinary("arith.minsi", IntBinary("arith.maxsi", x[0], IntConst(w, 0, t), t, w), IntConst(w, 6, t), t, w);
        }}},
      {"Elu",
       {[](const auto& x, MlirWriter& w) {
         std::string neg = w.Let("arith.cmpf olt, " + x[0] + ", " + F32(w, 0) + " : f32");
         return Select(neg, ExpMinusOne(x[0], w), x[0], w);
       }}},
      {"Sign",
       {[](const auto& x, MlirWriter& w) {  // +-1; NaN stays NaN, and both zeros give +0 (x + 0), as the reference
          std::string zero = F32(w, 0);
          std::string as_is = Binary("arith.addf", {x[0], zero}, w);
          std::string neg = Select(w.Let("arith.cmpf olt, " + x[0] + ", " + zero + " : f32"), F32(w, -1), as_is, w);
          return Select(w.Let("arith.cmpf ogt, " + x[0] + ", " + zero + " : f32"), F32(w, 1), neg, w);
        },
        [](const auto& x, const std::string& t, MlirWriter& w) {
          std::string zero = IntConst(w, 0, t);
          std::string neg = IntSelect(IntCmp("slt", x[0], zero, t, w), IntConst(w, -1, t), zero, t, w);
          return IntSelect(IntCmp("sgt", x[0], zero, t, w), IntConst(w, 1, t), neg, t, w);
        }}},
      {"Selu",
       {[](const auto& x, MlirWriter& w) {
         std::string neg = w.Let("arith.cmpf olt, " + x[0] + ", " + F32(w, 0) + " : f32");
         std::string below = Binary("arith.mulf", {ExpMinusOne(x[0], w), F32(w, 1.7580993408473768599402175208123)}, w);
         return Select(neg, below, Binary("arith.mulf", {x[0], F32(w, 1.0507009873554804934193349852946)}, w), w);
       }}},
      {"Softplus",
       {[](const auto& x, MlirWriter& w) {  // as TensorFlow: x above -t, exp(x) below t, log1p(exp(x)) between
         const double t = std::log(1.1920928955078125e-07) + 2;
         std::string e = Exp(x[0], w);
         std::string between = Select(w.Let("arith.cmpf olt, " + x[0] + ", " + F32(w, t) + " : f32"), e,
                                      Unary("math.log1p", e, w), w);
         return Select(w.Let("arith.cmpf ogt, " + x[0] + ", " + F32(w, -t) + " : f32"), x[0], between, w);
       }}},
      {"Softsign",  // x / (1 + |x|), as TensorFlow computes it (NaN for +-Inf)
       {[](const auto& x, MlirWriter& w) {
         return Divide(x[0], Binary("arith.addf", {F32(w, 1), Unary("math.absf", x[0], w)}, w), w);
       }}},
      {"DivNoNan",
       {[](const auto& x, MlirWriter& w) {
         std::string zero = F32(w, 0);
         return Select(w.Let("arith.cmpf oeq, " + x[1] + ", " + zero + " : f32"), zero, Divide(x[0], x[1], w), w);
       }}},
      {"LeakyRelu",
       Lowering([](const Node& n, const auto& x, const auto& types, MlirWriter& w) -> StatusOr<std::string> {
          if (types[0] != "f32") return Unimplemented(NodeLabel(n) + ": LeakyRelu of " + types[0] + " is not compiled");
          GJ_ASSIGN_OR_RETURN(float alpha, GetFloatAttrOr(n, "alpha", 0.2f));
          std::string positive = w.Let("arith.cmpf ogt, " + x[0] + ", " + F32(w, 0) + " : f32");
          return Select(positive, x[0], Binary("arith.mulf", {x[0], F32(w, alpha)}, w), w);
        })},
      {"Greater", {FloatCmp("ogt"), IntCmpOf("sgt")}},
      {"GreaterEqual", {FloatCmp("oge"), IntCmpOf("sge")}},
      {"Less", {FloatCmp("olt"), IntCmpOf("slt")}},
      {"LessEqual", {FloatCmp("ole"), IntCmpOf("sle")}},
      {"Equal", {FloatCmp("oeq"), IntCmpOf("eq"), /*bools=*/true}},
      {"NotEqual", {FloatCmp("une"), IntCmpOf("ne"), /*bools=*/true}},
      // On operands of any computed type.
      {"Identity", Lowering(AsIs)},
      {"StopGradient", Lowering(AsIs)},
      {"BroadcastTo", Lowering(AsIs)},
      {"Cast", Lowering([](const Node& n, const auto& x, const auto& types, MlirWriter& w) -> StatusOr<std::string> {
         GJ_ASSIGN_OR_RETURN(DType to, GetTypeAttr(n, "DstT"));
         return EmitCast(x[0], types[0], to, w);
       })},
      {"ZerosLike", Lowering(ConstantLike(0))},
      {"OnesLike", Lowering(ConstantLike(1))},
      {"Select", Lowering(SelectOf)},
      {"SelectV2", Lowering(SelectOf)},
      {"LogicalAnd", Lowering(LogicalOf("arith.andi"))},
      {"LogicalOr", Lowering(LogicalOf("arith.ori"))},
      {"LogicalNot", Lowering([](const Node&, const auto& x, const auto&, MlirWriter& w) -> StatusOr<std::string> {
         return w.Let("arith.xori " + x[0] + ", " + w.Let("arith.constant true") + " : i1");
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
std::string ScaledErf(const std::string& x, double s, MlirWriter& w) {
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
  const std::string t = w.Let("arith.mulf " + x + ", " + x + " : f32");
  const std::string num = w.Let("arith.mulf " + x + ", " + Polynomial(ps, t, w) + " : f32");
  const std::string r = w.Let("arith.divf " + num + ", " + Polynomial(qs, t, w) + " : f32");
  const std::string fit =
      w.Let("arith.minimumf " + w.Let("arith.maximumf " + r + ", " + F32(w, -1) + " : f32") + ", " + F32(w, 1) + " : f32");
  // From 4 on, +-1 exactly, as the reference kernel (Eigen's erf) gives it: the fit at 4,
  // evaluated in f32, can be an ulp short, which Pow(erf(x), 1e30) would make 0, not 1.
  const std::string saturated = w.Let("arith.cmpf oge, " + Unary("math.absf", x, w) + ", " + F32(w, 4 / s) + " : f32");
  return Select(saturated, w.Let("math.copysign " + F32(w, 1) + ", " + x + " : f32"), fit, w);
}

std::string ElementType(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
    case DType::kHalf:
    case DType::kBFloat16: return "f32";
    case DType::kBool: return "i1";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    default: return "";
  }
}

bool IsElementalOp(const std::string& op) { return Lowerings().count(op) > 0; }

std::vector<std::string> ElementalOps() {
  std::vector<std::string> ops;
  for (const auto& [op, lowering] : Lowerings()) ops.push_back(op);
  return ops;
}

std::string WhyNotElemental(const std::string& op, const std::vector<std::string>& types) {
  auto it = Lowerings().find(op);
  if (it == Lowerings().end()) return "the elemental emitter does not take " + op;
  const Lowering& l = it->second;
  if (l.any) return "";
  for (const std::string& t : types)
    if (t != types[0]) return op + " of " + types[0] + " and " + t;
  const bool taken = types[0] == "f32" ? bool(l.f) : types[0] == "i1" ? l.bools : IsInt(types[0]) && bool(l.i);
  return taken ? "" : op + " of " + types[0] + " is not compiled";
}

StatusOr<std::string> EmitElemental(const Node& node, const std::vector<std::string>& operands,
                                    const std::vector<std::string>& types, MlirWriter& w) {
  if (std::string why = WhyNotElemental(node.op, types); !why.empty()) return Unimplemented(NodeLabel(node) + ": " + why);
  const Lowering& l = Lowerings().find(node.op)->second;
  if (l.any) return l.any(node, operands, types, w);
  return types[0] == "f32" ? l.f(operands, w) : l.i(operands, types[0], w);
}

}  // namespace graphjit
