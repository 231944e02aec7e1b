// Results of exp-based kernels (Exp, Sigmoid, Softplus, Softmax) below the f32 normal range
// (2^-126) are 0, as TensorFlow's kernels give them: its threads run with subnormal results
// flushed to zero. (Eigen 3.4's exp, which these kernels use, gives 2.9e-39 for every x below
// -88.72 instead.) The JIT gives the same (jit/elemental.cc).
#pragma once

#include <limits>
#include <type_traits>

#include <Eigen/Core>

namespace graphjit {

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

}  // namespace graphjit

namespace Eigen::internal {
template <>
struct functor_traits<graphjit::ZeroBelowNormalOp> {
  enum { Cost = 2, PacketAccess = true };
};
}  // namespace Eigen::internal
