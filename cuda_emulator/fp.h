// Floating-point semantics of PTX that C++ does not give directly: f16/bf16 conversions
// with their rounding, flush-to-zero, min/max with NaN and signed zeros, and the error the
// ISA allows its .approx instructions.
#ifndef GRAPHJIT_CUDA_EMULATOR_FP_H_
#define GRAPHJIT_CUDA_EMULATOR_FP_H_

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>

namespace cuemu {

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// A double rounded once to a 16-bit float format (`mantissa` stored bits, exponent `bias`,
// all-ones exponent = Inf/NaN): to nearest even, or toward zero when `rz`. NaN becomes
// the canonical 0x7fff. Rounding from double directly (not through float) rounds once.
inline uint16_t RoundToSmallFloat(double d, int mantissa, int bias, int max_field, bool rz) {
  const uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  const double a = std::fabs(d);
  if (std::isnan(d)) return 0x7fff;
  if (std::isinf(a)) return sign | static_cast<uint16_t>(max_field << mantissa);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int exponent = e - 1, min_normal = 1 - bias;
  const int quantum = std::max(exponent, min_normal) - mantissa;  // the last bit's weight
  const double scaled = std::ldexp(a, -quantum);                  // exact
  // Nearest even without the FPU's mode (callers may have changed it).
  double r_floor = std::floor(scaled), rest = scaled - r_floor;
  uint64_t r = static_cast<uint64_t>(r_floor);
  if (!rz && (rest > 0.5 || (rest == 0.5 && (r & 1)))) ++r;
  if (exponent < min_normal) return sign | static_cast<uint16_t>(r);  // 2^mantissa: the smallest normal
  int field = exponent + bias;
  if (r == (uint64_t{2} << mantissa)) r >>= 1, ++field;
  if (field >= max_field)
    return sign | static_cast<uint16_t>(rz ? ((max_field - 1) << mantissa) | ((1 << mantissa) - 1) : max_field << mantissa);
  return sign | static_cast<uint16_t>(field << mantissa | (r - (uint64_t{1} << mantissa)));
}
inline uint16_t DoubleToHalf(double d, bool rz = false) { return RoundToSmallFloat(d, 10, 15, 31, rz); }
inline uint16_t DoubleToBf16(double d, bool rz = false) { return RoundToSmallFloat(d, 7, 127, 255, rz); }
inline uint16_t FloatToHalf(float f, bool rz = false) { return DoubleToHalf(f, rz); }

inline float Bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
// A float operand as the tensor cores read it in TF32: rounded to 10 mantissa bits, to
// nearest with ties away from zero (cvt.rna.tf32.f32).
inline float RoundToTf32(float x) {
  if (!std::isfinite(x)) return x;
  return std::bit_cast<float>((std::bit_cast<uint32_t>(x) + 0x1000u) & ~0x1fffu);
}

inline uint16_t FloatToBf16(float f, bool rz = false) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return 0x7fff;
  if (rz) return static_cast<uint16_t>(x >> 16);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

// A double with the last bit set when the true value was not representable ("round to
// odd"): rounding such a value once more to a format at least 2 bits narrower gives the
// correctly rounded result, which rounding a nearest-even double would not always.
inline double RoundToOdd(double toward_zero, bool inexact) {
  if (!inexact || !std::isfinite(toward_zero)) return toward_zero;
  return std::bit_cast<double>(std::bit_cast<uint64_t>(toward_zero) | 1);
}
// f(), computed in double and rounded to odd. The caller has set the FPU to round toward
// zero (RoundingScope); f's one rounding then tells whether it was exact.
template <class F>
double ComputeRoundedToOdd(F f) {
  std::feclearexcept(FE_INEXACT);
  double r = f();
  return RoundToOdd(r, std::fetestexcept(FE_INEXACT) != 0);
}
// An integer as a double rounded to odd (exact below 2^53).
inline double IntegerToOdd(bool negative, uint64_t magnitude) {
  int shift = 64 - std::countl_zero(magnitude | 1) - 53;
  double d;
  if (shift <= 0) {
    d = static_cast<double>(magnitude);
  } else {
    uint64_t kept = magnitude >> shift << shift;
    d = RoundToOdd(static_cast<double>(kept), kept != magnitude);
  }
  return negative ? -d : d;
}

inline float Ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
inline double Ftz(double x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0, x) : x; }

// min/max: a NaN operand is ignored (both NaN: the canonical NaN), -0 < +0; with `nan`
// (.NaN) a NaN operand gives NaN.
template <class T>
T CanonicalNaN() {
  if constexpr (sizeof(T) == 4)
    return std::bit_cast<T>(0x7fffffffu);
  else
    return std::bit_cast<T>(0x7fffffffffffffffull);
}
template <class T>
T FMin(T a, T b, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan || (std::isnan(a) && std::isnan(b))) return CanonicalNaN<T>();
    return std::isnan(a) ? b : a;
  }
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
template <class T>
T FMax(T a, T b, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan || (std::isnan(a) && std::isnan(b))) return CanonicalNaN<T>();
    return std::isnan(a) ? b : a;
  }
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// The .approx instructions: the exact result moved by an error that the PTX ISA allows,
// chosen from the input's bits (so it is deterministic), as large as the ISA allows. A
// test whose tolerance is tighter than the ISA's bound fails here as it could on a GPU.
inline double ApproxNoise(uint64_t input_bits) {
  uint64_t z = input_bits + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;  // in [-1, 1)
}
// `exact` moved by at most `bound` (relative to `exact`, or absolute), rounded to float,
// then stepped toward `exact` until the rounding has not pushed it past the bound.
inline float WithError(double exact, float input, double bound, bool relative) {
  if (!std::isfinite(exact) || exact == 0) return static_cast<float>(exact);
  double allowed = relative ? bound * std::fabs(exact) : bound;
  float r = static_cast<float>(exact + allowed * ApproxNoise(std::bit_cast<uint32_t>(input)));
  while (std::fabs(static_cast<double>(r) - exact) > allowed) r = std::nextafter(r, static_cast<float>(exact));
  return r;
}
inline float WithRelativeError(double exact, float input, double rel) { return WithError(exact, input, rel, true); }
inline float WithAbsoluteError(double exact, float input, double abs) { return WithError(exact, input, abs, false); }
// The correctly rounded result moved by up to `ulps` units in the last place.
inline float WithUlpError(double exact, float input, int ulps) {
  float r = static_cast<float>(exact);
  if (!std::isfinite(r) || r == 0) return r;
  int k = static_cast<int>(std::floor((ApproxNoise(std::bit_cast<uint32_t>(input)) + 1) * (ulps + 0.5))) - ulps;
  k = std::clamp(k, -ulps, ulps);
  for (; k > 0; --k) r = std::nextafter(r, INFINITY);
  for (; k < 0; ++k) r = std::nextafter(r, -INFINITY);
  return r;
}

}  // namespace cuemu

#endif  // GRAPHJIT_CUDA_EMULATOR_FP_H_
