// Floating-point semantics of PTX that C++ does not give directly: f16/bf16 conversions
// with their rounding, flush-to-zero, min/max with NaN and signed zeros, and the error the
// ISA allows its .approx instructions.
#ifndef GRAPHJIT_CUDA_EMULATOR_FP_H_
#define GRAPHJIT_CUDA_EMULATOR_FP_H_

#include <algorithm>
#include <bit>
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

// Round to nearest even (or toward zero when `rz`); NaN becomes the canonical 0x7fff.
inline uint16_t FloatToHalf(float f, bool rz = false) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return 0x7fff;
  if (ax == 0x7f800000) return sign | 0x7c00;
  if (ax < 0x38800000) {  // below 2^-14: a subnormal half (or zero)
    float scaled = std::bit_cast<float>(ax) * 16777216.0f;  // exact: in units of 2^-24
    float r = rz ? std::trunc(scaled) : std::nearbyint(scaled);
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t rebased = ax - (112u << 23);
  uint32_t r = rz ? rebased >> 13 : (rebased + 0xfff + ((rebased >> 13) & 1)) >> 13;
  if (r >= 0x7c00) return sign | (rz ? 0x7bff : 0x7c00);
  return sign | static_cast<uint16_t>(r);
}

inline float Bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t FloatToBf16(float f, bool rz = false) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return 0x7fff;
  if (rz) return static_cast<uint16_t>(x >> 16);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

inline float Ftz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
inline double Ftz(double x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0, x) : x;
}

// min/max: a NaN operand is ignored (both NaN: the canonical NaN), -0 < +0; with `nan`
// (.NaN) a NaN operand gives NaN.
template <class T>
T CanonicalNaN() {
  if constexpr (sizeof(T) == 4) return std::bit_cast<T>(0x7fffffffu);
  else return std::bit_cast<T>(0x7fffffffffffffffull);
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
