// Float semantics the reference kernels pin down where Eigen 3.4 leaves them open or gets
// them wrong; the JIT computes the same (jit/elemental.cc, jit/fusion_emitter.cc).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include <Eigen/Core>

namespace graphjit {

// Results of exp-based kernels (Exp, Sigmoid, Softplus, Softmax, Erfc) below the f32 normal range
// (2^-126) are 0, as TensorFlow's kernels give them: its threads run with subnormal results
// flushed to zero. (Eigen 3.4's exp, which these kernels use, gives 2.9e-39 for every x below
// -88.72 instead.)
// r < 2^-126 ? 0 : r, for f32 values (f16 and bf16 are computed in f32); f64 is left as is.
struct ZeroBelowNormalOp {
  template <typename C>
  C operator()(const C& r) const {
    if constexpr (std::is_same_v<C, float>) return r < std::numeric_limits<float>::min() ? 0.0f : r;
    return r;
  }
  template <typename P>
  P packetOp(const P& r) const {
    using namespace Eigen::internal;
    using C = typename unpacket_traits<P>::type;
    if constexpr (std::is_same_v<C, float>) return pandnot(r, pcmp_lt(r, pset1<P>(std::numeric_limits<float>::min())));
    return r;
  }
};

template <typename A>
auto ZeroBelowNormal(const A& r) {
  return r.unaryExpr(ZeroBelowNormalOp());
}

// exp(x), finite up to x = ln(FLT_MAX) = 88.72. Eigen 3.4's AVX-512 exp of floats (which
// its f16 and bf16 packets use too) forms 2^m as a float, Inf for m = 128, so it gives Inf
// for x in (88.38, 88.72], where exp is finite. The float packet path takes exp(x / 2)^2
// there; f16 and bf16 take the scalar path (std::exp in float).
template <typename C>
struct ExpOp {
  C operator()(const C& x) const { return Eigen::numext::exp(x); }
  template <typename P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    if constexpr (std::is_same_v<C, float>) {
      const P big = pcmp_lt(pset1<P>(88.3762626f), x);  // 127.5 ln 2: m = 128 from here on
      const P e = pexp(pselect(big, pmul(x, pset1<P>(0.5f)), x));
      return pselect(big, pmul(e, e), e);
    }
    return pexp(x);
  }
};

template <typename A>
auto Exp(const A& x) {
  return x.unaryExpr(ExpOp<typename A::Scalar>());
}

// Maximum and Minimum, and the Max and Min reductions, as IEEE 754-2019 maximum and minimum:
// NaN propagates (as in TensorFlow) and -0 < +0. Eigen's own functors return either zero on
// a tie, one in their vector body and the other in their scalar tail.
template <typename C, bool kMax>
struct IeeeMinMax {
  C operator()(const C& a, const C& b) const {
    if (a < b) return kMax ? b : a;
    if (b < a) return kMax ? a : b;
    if (a == b) return std::signbit(static_cast<double>(a)) != kMax ? a : b;  // +0 and -0: the smaller or larger
    return Eigen::numext::isnan(a) ? a : b;
  }
  template <typename P>
  P packetOp(const P& a, const P& b) const {
    using namespace Eigen::internal;
    const P lo = kMax ? b : a, hi = kMax ? a : b;
    // Neither less: a tie (the zero with the sign bit for the minimum, without for the
    // maximum) or a NaN (any bits OR-ed with a NaN's are a NaN).
    const P tie = kMax ? pselect(pcmp_eq(a, b), pand(a, b), por(a, b)) : por(a, b);
    return pselect(pcmp_lt(lo, hi), a, pselect(pcmp_lt(hi, lo), b, tie));
  }
};

// Floor, Ceil and Round (to nearest, ties to even, as rint) with IEEE's signed zeros: the
// result has x's sign, so ceil(-0.5) = -0 and rint(-0.25) = -0. Eigen 3.4's packets on a CPU
// without SSE4.1's round instruction (a baseline x86-64 build) give +0 there: the sign bit
// of x is put back (a no-op wherever the packets are right). f16 and bf16 round in float.
enum class Rounding { kFloor, kCeil, kNearestEven };
template <typename C, Rounding kMode>
struct IeeeRoundOp {
  C operator()(const C& x) const {
    const float f = static_cast<float>(x);
    if constexpr (std::is_same_v<C, double>) {
      return std::copysign(kMode == Rounding::kFloor ? std::floor(x) : kMode == Rounding::kCeil ? std::ceil(x) : std::rint(x), x);
    } else {
      return C(std::copysign(kMode == Rounding::kFloor  ? std::floor(f)
                             : kMode == Rounding::kCeil ? std::ceil(f)
                                                        : std::rint(f),
                             f));
    }
  }
  template <typename P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P r = kMode == Rounding::kFloor ? pfloor(x) : kMode == Rounding::kCeil ? pceil(x) : print(x);
    return por(r, pand(x, pset1<P>(C(-0.0))));
  }
};

template <Rounding kMode, typename A>
auto IeeeRound(const A& x) {
  return x.unaryExpr(IeeeRoundOp<typename A::Scalar, kMode>());
}

// The maximum (minimum) of a non-empty row, as IEEE maximum (minimum) folds it: Eigen's
// NaN-propagating maxCoeff, then the sign of a zero result: +0 if the row has a +0, for
// the maximum (-0 if it has a -0, for the minimum).
template <bool kMax, typename Row>
typename Row::Scalar IeeeMaxCoeff(const Row& row) {
  using C = typename Row::Scalar;
  const C m = kMax ? row.template maxCoeff<Eigen::PropagateNaN>() : row.template minCoeff<Eigen::PropagateNaN>();
  if (m != C(0)) return m;
  for (Eigen::Index i = 0; i < row.size(); ++i)
    if (row[i] == C(0) && std::signbit(static_cast<double>(row[i])) != kMax) return row[i];
  return kMax ? C(-0.0) : C(0.0);
}

}  // namespace graphjit

namespace Eigen::internal {
template <>
struct functor_traits<graphjit::ZeroBelowNormalOp> {
  enum { Cost = 2, PacketAccess = true };
};
template <typename C>
struct functor_traits<graphjit::ExpOp<C>> {
  enum { Cost = 20, PacketAccess = std::is_same_v<C, float> || std::is_same_v<C, double> };
};
template <typename C, graphjit::Rounding kMode>
struct functor_traits<graphjit::IeeeRoundOp<C, kMode>> {
  enum { Cost = 2, PacketAccess = std::is_same_v<C, float> || std::is_same_v<C, double> };
};
template <typename C, bool kMax>
struct functor_traits<graphjit::IeeeMinMax<C, kMax>> {
  enum { Cost = 4 * NumTraits<C>::AddCost, PacketAccess = std::is_same_v<C, float> || std::is_same_v<C, double> };
};
}  // namespace Eigen::internal
