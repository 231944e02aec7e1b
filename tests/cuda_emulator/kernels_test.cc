// The kernels of kernels/*.cu run on the emulator (PTX for sm_80 and sm_90) and are
// compared with the same computation on the CPU: exactly for integer and correctly
// rounded floating-point operations, within the documented error bound for the
// approximate ones.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/cuda_emulator/cuemu_test_util.h"

namespace cuemu_test {
namespace {

class Kernels : public KernelTest {};

// --- Elementwise --------------------------------------------------------------------

// c = a + b over n elements (n not a multiple of the block): exact.
TEST_P(Kernels, VectorAdd) {
  CUEMU_LOAD_KERNEL(f, "basic", "vector_add");
  const int n = 10007;
  std::vector<float> a = RandomFloats(n, -1e3f, 1e3f, 1), b = RandomFloats(n, -1e3f, 1e3f, 2);
  CUdeviceptr da = mem_.Upload(a), db = mem_.Upload(b), dc = mem_.Alloc<float>(n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 256)}, {256}, 0, nullptr, da, db, dc, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = a[i] + b[i];
  EXPECT_TRUE(SameValues(Download<float>(dc, n), want));
}

// y = fma(a, x, y) with a grid-stride loop: 7 blocks of 96 threads over 10000 elements
// (each thread does 14 or 15 iterations): exact.
TEST_P(Kernels, SaxpyGridStride) {
  CUEMU_LOAD_KERNEL(f, "basic", "saxpy_grid_stride");
  const int n = 10000;
  const float a = 1.7f;
  std::vector<float> x = RandomFloats(n, -10, 10, 3), y = RandomFloats(n, -10, 10, 4);
  CUdeviceptr dx = mem_.Upload(x), dy = mem_.Upload(y);
  CU_ASSERT_OK(Launch(f, {7}, {96}, 0, nullptr, n, a, dx, dy));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = std::fma(a, x[i], y[i]);
  EXPECT_TRUE(SameValues(Download<float>(dy, n), want));
}

// --- Warp shuffles ------------------------------------------------------------------

using Warp = std::array<int, 32>;
enum class Shfl { kUp, kDown, kBfly, kIdx };

// shfl.sync as the PTX ISA defines it, for a full warp. `b` is the lane offset, the xor
// mask or the source lane; `width` is CUDA's width argument, which becomes the c operand
// ((32 - width) << 8 | (up ? 0 : 31)).
Warp ModelShfl(Shfl mode, const Warp& v, const std::array<int, 32>& b, int width) {
  const int c = ((32 - width) << 8) | (mode == Shfl::kUp ? 0 : 0x1f);
  const int segmask = (c >> 8) & 0x1f, cval = c & 0x1f;
  Warp out{};
  for (int lane = 0; lane < 32; ++lane) {
    const int bval = b[lane] & 0x1f;
    const int max_lane = (lane & segmask) | (cval & ~segmask);
    const int min_lane = lane & segmask;
    int j = lane;
    bool in_range = false;
    switch (mode) {
      case Shfl::kUp:
        j = lane - bval;
        in_range = j >= max_lane;
        break;
      case Shfl::kDown:
        j = lane + bval;
        in_range = j <= max_lane;
        break;
      case Shfl::kBfly:
        j = lane ^ bval;
        in_range = j <= max_lane;
        break;
      case Shfl::kIdx:
        j = min_lane | (bval & ~segmask);
        in_range = j <= max_lane;
        break;
    }
    out[lane] = v[in_range ? j : lane];
  }
  return out;
}

Warp ModelShfl(Shfl mode, const Warp& v, int b, int width = 32) {
  std::array<int, 32> bs;
  bs.fill(b);
  return ModelShfl(mode, v, bs, width);
}

Warp Plus(const Warp& a, const Warp& b) {
  Warp r;
  for (int i = 0; i < 32; ++i) r[i] = a[i] + b[i];
  return r;
}

// Every mode of shfl.sync (down, bfly, up, idx), over full warps, in segments (width 8
// and 16, including an xor mask as large as the width), with source lanes out of range,
// in divergent branches with partial member masks, and on 64-bit and float values.
// Each lane's value is compared with the model above: exact.
TEST_P(Kernels, WarpShuffles) {
  CUEMU_LOAD_KERNEL(f, "warp", "warp_shuffles");
  const int warps = 4, n = 32 * warps, outputs = 14;
  std::vector<int> in = RandomInts(n, -1000, 1000, 5);
  CUdeviceptr din = mem_.Upload(in), dout = mem_.Alloc<int>(outputs * n), dd = mem_.Alloc<double>(n);
  CU_ASSERT_OK(Launch(f, {2}, {64}, 0, nullptr, din, dout, dd, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<int> got = Download<int>(dout, outputs * n);
  std::vector<double> got_d = Download<double>(dd, n);

  std::vector<int> want(outputs * n);
  std::vector<double> want_d(n);
  for (int w = 0; w < warps; ++w) {
    Warp v;
    std::array<int, 32> lane_plus_33;
    for (int l = 0; l < 32; ++l) {
      v[l] = in[32 * w + l];
      lane_plus_33[l] = l + 33;
    }
    std::array<Warp, outputs> r;
    Warp s = v;
    for (int off = 16; off > 0; off >>= 1) s = Plus(s, ModelShfl(Shfl::kDown, s, off));
    r[0] = s;
    s = v;
    for (int mask = 16; mask > 0; mask >>= 1) s = Plus(s, ModelShfl(Shfl::kBfly, s, mask));
    r[1] = s;
    s = v;
    for (int off = 1; off < 32; off <<= 1) {
      Warp t = ModelShfl(Shfl::kUp, s, off);
      for (int l = 0; l < 32; ++l) s[l] += l >= off ? t[l] : 0;
    }
    r[2] = s;
    r[3] = ModelShfl(Shfl::kIdx, v, 5);
    r[4] = ModelShfl(Shfl::kIdx, v, lane_plus_33, 32);
    s = v;
    for (int mask = 4; mask > 0; mask >>= 1) s = Plus(s, ModelShfl(Shfl::kBfly, s, mask, 8));
    r[5] = s;
    r[6] = ModelShfl(Shfl::kDown, v, 3, 8);
    r[7] = ModelShfl(Shfl::kUp, v, 3, 8);
    r[8] = ModelShfl(Shfl::kIdx, v, 2, 8);
    r[9] = ModelShfl(Shfl::kBfly, v, 16, 16);
    // Partial masks: each half only reads lanes of its own half (width 16).
    Warp lower = v, upper = v;
    for (int off = 8; off > 0; off >>= 1) lower = Plus(lower, ModelShfl(Shfl::kDown, lower, off, 16));
    for (int mask = 8; mask > 0; mask >>= 1) upper = Plus(upper, ModelShfl(Shfl::kBfly, upper, mask, 16));
    for (int l = 0; l < 32; ++l) {
      r[10][l] = l < 16 ? lower[l] : 0;
      r[11][l] = l < 16 ? 0 : upper[l];
    }
    Warp quarter_bits;
    for (int l = 0; l < 32; ++l) quarter_bits[l] = static_cast<int>(FloatBits(v[l] * 0.25f));
    r[12] = ModelShfl(Shfl::kDown, quarter_bits, 1);
    r[13] = v;
    for (int k = 0; k < outputs; ++k)
      for (int l = 0; l < 32; ++l) want[k * n + 32 * w + l] = r[k][l];
    for (int l = 0; l < 32; ++l) want_d[32 * w + l] = v[31 - l] * 0.5 + 1e10;
  }
  const char* names[outputs] = {"down sum",     "bfly sum", "up scan",  "idx 5",       "idx lane+33",      "bfly w8 sum",
                                "down 3 w8",    "up 3 w8",  "idx 2 w8", "bfly 16 w16", "mask 0xffff down", "mask 0xffff0000 bfly",
                                "float down 1", "up 0"};
  for (int k = 0; k < outputs; ++k) {
    std::vector<int> g(got.begin() + k * n, got.begin() + (k + 1) * n);
    std::vector<int> w(want.begin() + k * n, want.begin() + (k + 1) * n);
    EXPECT_TRUE(SameValues(g, w, names[k]));
  }
  EXPECT_TRUE(SameValues(got_d, want_d, "double idx 31-lane"));
}

// __any_sync, __all_sync, __ballot_sync over full warps, and __activemask with votes
// over it inside a divergent branch: exact.
TEST_P(Kernels, WarpVotes) {
  CUEMU_LOAD_KERNEL(f, "warp", "warp_votes");
  const int warps = 6, n = 32 * warps;
  std::vector<int> in = RandomInts(n, -100, 100, 6);
  // Warp 1: all positive; warp 2: none above 50; warp 3: all multiples of 3, all >= 0;
  // warp 4: no multiple of 3; warp 5: all zero.
  for (int l = 0; l < 32; ++l) {
    in[32 + l] = 1 + l * 3;
    in[64 + l] = l - 20;
    in[96 + l] = 3 * l;
    in[128 + l] = 3 * l + 1;
    in[160 + l] = 0;
  }
  CUdeviceptr din = mem_.Upload(in), dout = mem_.Alloc<uint32_t>(6 * n);
  CU_ASSERT_OK(Launch(f, {3}, {64}, 0, nullptr, din, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint32_t> got = Download<uint32_t>(dout, 6 * n);
  std::vector<uint32_t> want(6 * n);
  for (int w = 0; w < warps; ++w) {
    const int* v = &in[32 * w];
    bool any = false, all = true;
    uint32_t ballot = 0, active = 0, inner_ballot = 0;
    for (int l = 0; l < 32; ++l) {
      any |= v[l] > 50;
      all &= v[l] > 0;
      ballot |= static_cast<uint32_t>(v[l] & 1) << l;
      if (v[l] % 3 == 0) active |= 1u << l;
    }
    bool inner_all = true, inner_any = false;
    for (int l = 0; l < 32; ++l) {
      if (!(active >> l & 1)) continue;
      inner_ballot |= static_cast<uint32_t>(v[l] > 40) << l;
      inner_all &= v[l] >= 0;
      inner_any |= v[l] > 90;
    }
    for (int l = 0; l < 32; ++l) {
      const int i = 32 * w + l;
      want[0 * n + i] = any;
      want[1 * n + i] = all;
      want[2 * n + i] = ballot;
      const bool in_branch = active >> l & 1;
      want[3 * n + i] = in_branch ? active : 0;
      want[4 * n + i] = in_branch ? inner_ballot : 0;
      want[5 * n + i] = in_branch ? (inner_all ? 1u : 0u) | (inner_any ? 1u : 0u) << 4 : 2u | 2u << 4;
    }
  }
  // __any_sync/__all_sync return a non-zero int for true: normalize to 0/1.
  for (int i = 0; i < 2 * n; ++i) got[i] = got[i] != 0;
  const char* names[] = {"any", "all", "ballot", "activemask", "ballot in branch", "all/any in branch"};
  for (int k = 0; k < 6; ++k) {
    std::vector<uint32_t> g(got.begin() + k * n, got.begin() + (k + 1) * n);
    std::vector<uint32_t> w(want.begin() + k * n, want.begin() + (k + 1) * n);
    EXPECT_TRUE(SameValues(g, w, names[k]));
  }
}

// Divergent loops (per-lane trip counts, nested if/else, an inner loop with break,
// continue), a full-warp shuffle after reconvergence, then an early return of some
// lanes and a __syncwarp / shuffle / ballot over the lanes that remain: exact.
TEST_P(Kernels, DivergentLoops) {
  CUEMU_LOAD_KERNEL(f, "divergence", "divergent_loops");
  const int warps = 4, n = 32 * warps;
  std::vector<int> trips = RandomInts(n, 0, 40, 7);
  for (int l = 0; l < 32; ++l) trips[96 + l] = 4 * l % 36;  // warp 3: nobody returns early
  CUdeviceptr dtrips = mem_.Upload(trips), dout = mem_.Alloc<int>(4 * n);
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, nullptr, dtrips, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<int> got = Download<int>(dout, 4 * n);

  std::vector<int> want(4 * n);
  for (int w = 0; w < warps; ++w) {
    std::array<int, 32> acc;
    for (int lane = 0; lane < 32; ++lane) {
      int a = lane;
      const int count = trips[32 * w + lane];
      for (int i = 0; i < count; ++i) {
        if ((i + lane) & 1) {
          a += i * 3;
          if (i % 5 == 0) a ^= lane;
        } else {
          for (int j = 0; j < (i & 3); ++j) {
            a -= j;
            if (a < -50) break;
          }
          if (a > 400) {
            a -= 7 * lane;
            continue;
          }
          a += 1;
        }
      }
      acc[lane] = a;
    }
    uint32_t stay = 0;
    for (int lane = 0; lane < 32; ++lane) stay |= (trips[32 * w + lane] % 4 != 3 ? 1u : 0u) << lane;
    const int first = stay ? std::countr_zero(stay) : 0;
    int positive = 0;
    for (int lane = 0; lane < 32; ++lane) positive += (stay >> lane & 1) && acc[lane] > 0;
    for (int lane = 0; lane < 32; ++lane) {
      const int i = 32 * w + lane;
      const bool stays = stay >> lane & 1;
      want[0 * n + i] = acc[lane];
      want[1 * n + i] = acc[31 - lane];
      want[2 * n + i] = stays ? acc[first] : -1;
      want[3 * n + i] = stays ? positive : -1;
    }
  }
  const char* names[] = {"accumulator", "shfl after reconvergence", "shfl after early return", "ballot after early return"};
  for (int k = 0; k < 4; ++k) {
    std::vector<int> g(got.begin() + k * n, got.begin() + (k + 1) * n);
    std::vector<int> w(want.begin() + k * n, want.begin() + (k + 1) * n);
    EXPECT_TRUE(SameValues(g, w, names[k]));
  }
}

// --- Reductions ---------------------------------------------------------------------

// Block reduction through shared memory with __syncthreads (the last block partial).
TEST_P(Kernels, BlockSumThroughSharedMemory) {
  CUEMU_LOAD_KERNEL(f, "reduce", "block_sum");
  const int n = 20000;
  const unsigned blocks = Blocks(n, 512);
  std::vector<float> in = RandomFloats(n, -1.0f, 1.0f, 8);
  CUdeviceptr din = mem_.Upload(in), dout = mem_.Alloc<float>(blocks);
  CU_ASSERT_OK(Launch(f, {blocks}, {256}, 0, nullptr, din, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_TRUE(SameValues(Download<float>(dout, blocks), ModelBlockSum(in, blocks)));
}

// Row softmax (one block of 128 threads per row of 1000): shuffles, shared memory,
// __expf and an IEEE division. Reference: double precision. Tolerance: the relative
// error of one output is at most
//   __expf: ~1e-6 for |x - max| <= 8 (ex2.approx's 2^-22 and the rounding of its
//     argument, see FloatMath)
//   the rounding of x - max before __expf: <= 2^-22 absolute on x ~ 2.4e-7
//   the sum: ~17 roundings (8 per thread, 5 shuffle steps, 2 shared steps) of 2^-24,
//     plus the 1e-6 error of its terms ~ 2e-6
//   the division: 2^-24
// i.e. ~3.5e-6; the tolerance is twice that.
TEST_P(Kernels, SoftmaxRows) {
  CUEMU_LOAD_KERNEL(f, "reduce", "softmax_rows");
  const int rows = 24, cols = 1000;
  std::vector<float> x = RandomFloats(rows * cols, -4.0f, 4.0f, 9);
  CUdeviceptr dx = mem_.Upload(x), dy = mem_.Alloc<float>(rows * cols);
  CU_ASSERT_OK(Launch(f, {rows}, {128}, 0, nullptr, dx, dy, cols));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> y = Download<float>(dy, rows * cols);
  const double tolerance = 8e-6;
  int bad = 0;
  for (int r = 0; r < rows; ++r) {
    const float* row = &x[r * cols];
    const double m = *std::max_element(row, row + cols);
    double sum = 0;
    for (int i = 0; i < cols; ++i) sum += std::exp(row[i] - m);
    double got_sum = 0;
    for (int i = 0; i < cols; ++i) {
      const double want = std::exp(row[i] - m) / sum, got = y[r * cols + i];
      got_sum += got;
      if (!(std::abs(got - want) <= tolerance * want) && bad++ < 8) {
        ADD_FAILURE() << "row " << r << " col " << i << ": got " << got << ", want " << want << " (relative error "
                      << std::abs(got - want) / want << ")";
      }
    }
    EXPECT_NEAR(got_sum, 1.0, 1e-5) << "row " << r;
  }
  EXPECT_EQ(bad, 0);
}

// --- Atomics ------------------------------------------------------------------------

struct AtomicResults {  // as in kernels/atomics.cu
  int sum;
  float fsum;
  int max;
  int min;
  unsigned cas_sum;
  unsigned umax;
  unsigned long long sum64;
  int exch;
  unsigned ticket;
  unsigned or_bits;
  unsigned and_bits;
  unsigned xor_bits;
};

// Every global atomic: the results do not depend on the order of the threads, and the
// old values returned by atomicExch / atomicAdd form permutations: exact. The float sum
// is exact too, since every partial sum is a multiple of 0.25 below 2^22.
TEST_P(Kernels, GlobalAtomics) {
  CUEMU_LOAD_KERNEL(f, "atomics", "atomics_global");
  const int n = 3000;
  std::vector<int> in = RandomInts(n, -1000, 1000, 10);
  for (int i = 0; i < 64; ++i) in[i] = 7;  // many equal values in the first warps
  AtomicResults init{};
  init.max = INT_MIN;
  init.min = INT_MAX;
  init.exch = -1;
  init.and_bits = 0xFFFFFFFFu;
  std::vector<AtomicResults> r0 = {init};
  CUdeviceptr din = mem_.Upload(in), dr = mem_.Upload(r0);
  CUdeviceptr dseen = mem_.Alloc<int>(n), dtickets = mem_.Alloc<unsigned>(n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 128)}, {128}, 0, nullptr, din, n, dr, dseen, dtickets));
  CU_ASSERT_OK(cuCtxSynchronize());
  AtomicResults got = Download<AtomicResults>(dr, 1)[0];

  AtomicResults want = init;
  for (int v : in) {
    want.sum += v;
    want.fsum += v * 0.25f;
    want.max = std::max(want.max, v);
    want.min = std::min(want.min, v);
    want.cas_sum += 2u * static_cast<unsigned>(v & 0xff) + 1u;
    want.umax = std::max(want.umax, static_cast<unsigned>(v) * 2654435761u);
    want.sum64 += static_cast<unsigned long long>(v & 0xffff) << 20;
    want.and_bits &= ~(1u << (v & 31));
    want.xor_bits ^= static_cast<unsigned>(v);
  }
  want.ticket = n;
  want.or_bits = 0xFFFFFFFFu;
  EXPECT_EQ(got.sum, want.sum);
  EXPECT_EQ(got.fsum, want.fsum);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.cas_sum, want.cas_sum);
  EXPECT_EQ(got.umax, want.umax);
  EXPECT_EQ(got.sum64, want.sum64);
  EXPECT_EQ(got.ticket, want.ticket);
  EXPECT_EQ(got.or_bits, want.or_bits);
  EXPECT_EQ(got.and_bits, want.and_bits);
  EXPECT_EQ(got.xor_bits, want.xor_bits);

  // atomicExch: the old values plus the final one are -1, 0, ..., n - 1, once each.
  std::vector<int> seen = Download<int>(dseen, n);
  seen.push_back(got.exch);
  std::sort(seen.begin(), seen.end());
  std::vector<int> all(n + 1);
  std::iota(all.begin(), all.end(), -1);
  EXPECT_TRUE(SameValues(seen, all, "atomicExch old values"));
  // atomicAdd(counter, 1): the old values are 0, ..., n - 1, once each.
  std::vector<unsigned> tickets = Download<unsigned>(dtickets, n);
  std::sort(tickets.begin(), tickets.end());
  std::vector<unsigned> iota(n);
  std::iota(iota.begin(), iota.end(), 0u);
  EXPECT_TRUE(SameValues(tickets, iota, "atomicAdd old values"));
}

std::vector<unsigned char> HistogramInput(int n) {
  std::mt19937 rng(12);
  std::vector<unsigned char> data(n);
  for (unsigned char& d : data) d = rng() % 3 == 0 ? 42 : static_cast<unsigned char>(rng());
  return data;
}

// A 256-bin histogram (one value in three is 42: many lanes of a warp hit the same
// shared word) with shared atomics flushed to global atomics: exact.
TEST_P(Kernels, SharedMemoryHistogram) {
  CUEMU_LOAD_KERNEL(f, "atomics", "histogram256");
  const int n = 40000;
  std::vector<unsigned char> data = HistogramInput(n);
  CUdeviceptr dd = mem_.Upload(data), dbins = mem_.Alloc<unsigned>(256);
  CU_ASSERT_OK(Launch(f, {12}, {256}, 0, nullptr, dd, n, dbins));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned> want(256, 0);
  for (unsigned char d : data) ++want[d];
  EXPECT_TRUE(SameValues(Download<unsigned>(dbins, 256), want));
}

// --- Half precision and bfloat16 ----------------------------------------------------

// float -> IEEE binary16, round to nearest even (NaN -> a quiet NaN).
uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u, abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp >= -14) {  // normal in f16, or overflow
    if (exp > 15) return static_cast<uint16_t>(sign | 0x7C00u);
    uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | ((abs >> 13) & 0x3FFu);
    const uint32_t rest = abs & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // may carry into Inf
    return static_cast<uint16_t>(sign | std::min(h, 0x7C00u));
  }
  // Subnormal in f16 (units of 2^-24), or zero. Float subnormals are far below 2^-25.
  if ((abs >> 23) == 0) return static_cast<uint16_t>(sign);
  const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;  // value = mant * 2^(exp - 23)
  const int shift = -(exp + 1);                         // value / 2^-24 = mant >> shift
  if (shift > 24) return static_cast<uint16_t>(sign);
  uint32_t q = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  return static_cast<uint16_t>(sign | q);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | static_cast<uint32_t>(exp - 15 + 127) << 23 | (mant << 13));
}

// float -> bfloat16, round to nearest even (NaN -> a quiet NaN).
uint16_t FloatToBf16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1)) >> 16);
}

float Bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

bool IsHalfNan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
bool IsBf16Nan(uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x7Fu) != 0; }

// Values at the edges of both formats: zeros, ties, the largest finite values and the
// first values that overflow, subnormals and values that round into / out of them,
// Inf, NaN; then random bit patterns and random values across f16's exponent range.
std::vector<float> ConversionInputs() {
  const float h_ulp1 = std::ldexp(1.0f, -10), h_min_sub = std::ldexp(1.0f, -24);
  std::vector<float> v = {
      0.0f,
      -0.0f,
      1.0f,
      -1.0f,
      0.1f,
      1.0f / 3,
      65504.0f,
      -65504.0f,
      65519.0f,
      65520.0f,
      65536.0f,
      1e6f,
      -1e30f,
      std::numeric_limits<float>::max(),
      std::numeric_limits<float>::lowest(),
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(),
      std::bit_cast<float>(0x7F800001u),
      std::bit_cast<float>(0xFFC12345u),
      1.0f + h_ulp1 / 2,      // tie, even below
      1.0f + 3 * h_ulp1 / 2,  // tie, even above
      1.0f + h_ulp1 / 2 + std::ldexp(1.0f, -23),
      std::ldexp(1.0f, -14),                  // smallest f16 normal
      std::ldexp(1.0f, -14) - h_min_sub / 2,  // rounds up to it
      h_min_sub,
      -h_min_sub,
      h_min_sub / 2,  // tie with 0: rounds to 0
      h_min_sub * 0.5000001f,
      h_min_sub * 1.5f,
      h_min_sub * 2.5f,
      h_min_sub * 3.5f,
      std::ldexp(1.0f, -30),
      std::ldexp(1.0f, -126),
      std::numeric_limits<float>::denorm_min(),
      std::bit_cast<float>(0x00400000u),
      std::bit_cast<float>(0x807FFFFFu),
      1.0f + std::ldexp(1.0f, -8),      // bf16 tie, even below
      1.0f + 3 * std::ldexp(1.0f, -8),  // bf16 tie, even above
      std::bit_cast<float>(0x7F7F8000u),
      std::bit_cast<float>(0x7F7F7FFFu),  // bf16 overflow edge
      std::bit_cast<float>(0x3F808000u),
      std::bit_cast<float>(0x3F818000u),
  };
  std::mt19937 rng(13);
  for (int i = 0; i < 1500; ++i) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-27, 17);
  for (int i = 0; i < 1500; ++i) {
    const float x = std::ldexp(mant(rng), exp(rng));
    v.push_back(i % 2 ? x : -x);
  }
  return v;
}

// __float2half_rn, __half2float, __float2bfloat16_rn, __bfloat162float and their
// round trips, against the CPU conversions above: exact (any NaN for NaN inputs).
TEST_P(Kernels, HalfAndBfloat16Conversions) {
  CUEMU_LOAD_KERNEL(f, "convert", "float_to_half_bf16");
  std::vector<float> in = ConversionInputs();
  const int n = static_cast<int>(in.size());
  CUdeviceptr din = mem_.Upload(in);
  CUdeviceptr dh = mem_.Alloc<uint16_t>(n), dhb = mem_.Alloc<float>(n);
  CUdeviceptr db = mem_.Alloc<uint16_t>(n), dbb = mem_.Alloc<float>(n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 128)}, {128}, 0, nullptr, din, dh, dhb, db, dbb, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint16_t> h = Download<uint16_t>(dh, n), b = Download<uint16_t>(db, n);
  std::vector<float> h_back = Download<float>(dhb, n), b_back = Download<float>(dbb, n);
  int bad = 0;
  for (int i = 0; i < n && bad < 10; ++i) {
    const uint16_t want_h = FloatToHalf(in[i]), want_b = FloatToBf16(in[i]);
    const bool nan = std::isnan(in[i]);
    const bool ok = nan ? IsHalfNan(h[i]) && IsBf16Nan(b[i]) && std::isnan(h_back[i]) && std::isnan(b_back[i])
                        : h[i] == want_h && b[i] == want_b && FloatBits(h_back[i]) == FloatBits(HalfToFloat(want_h)) &&
                              FloatBits(b_back[i]) == FloatBits(Bf16ToFloat(want_b));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << std::hex << "input 0x" << FloatBits(in[i]) << " (" << in[i] << "): f16 0x" << h[i] << " want 0x" << want_h
                    << ", back 0x" << FloatBits(h_back[i]) << "; bf16 0x" << b[i] << " want 0x" << want_b << ", back 0x"
                    << FloatBits(b_back[i]);
    }
  }
}

// Every 16-bit pattern widened from f16 and from bf16 to float: exact.
TEST_P(Kernels, EveryHalfAndBfloat16PatternWidens) {
  CUEMU_LOAD_KERNEL(f, "convert", "bits_to_float");
  CUdeviceptr dh = mem_.Alloc<float>(65536), db = mem_.Alloc<float>(65536);
  CU_ASSERT_OK(Launch(f, {256}, {256}, 0, nullptr, dh, db));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> want_h(65536), want_b(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    want_h[i] = HalfToFloat(static_cast<uint16_t>(i));
    want_b[i] = Bf16ToFloat(static_cast<uint16_t>(i));
  }
  EXPECT_TRUE(SameValues(Download<float>(dh, 65536), want_h, "f16 -> f32"));
  EXPECT_TRUE(SameValues(Download<float>(db, 65536), want_b, "bf16 -> f32"));
}

// --- Memory widths ------------------------------------------------------------------

struct MemoryIn {  // as in kernels/memory.cu
  CUdeviceptr i2, d, s8, u8, s16, u16, u64;
};
struct MemoryOut {
  CUdeviceptr i2, d, s8, s16, u64, widened;
};
struct Float4 {
  float x, y, z, w;
};
struct Int2 {
  int x, y;
};

// int2 vector loads/stores, double, 8/16-bit loads with sign and zero extension and
// 8/16-bit stores, 64-bit integers; the kernel's arguments are two structs passed by
// value: exact.
TEST_P(Kernels, LoadsAndStoresOfEveryWidth) {
  CUEMU_LOAD_KERNEL(f, "memory", "vector_memory");
  const int n = 1000;
  std::mt19937_64 rng(14);
  std::vector<Int2> i2(n);
  std::vector<double> d(n);
  std::vector<int8_t> s8(n);
  std::vector<uint8_t> u8(n);
  std::vector<int16_t> s16(n);
  std::vector<uint16_t> u16(n);
  std::vector<uint64_t> u64(n);
  for (int i = 0; i < n; ++i) {
    const uint64_t r = rng();
    i2[i] = {static_cast<int>(r), static_cast<int>(r >> 32)};
    d[i] = std::ldexp(static_cast<double>(static_cast<int64_t>(rng())), -40);
    s8[i] = static_cast<int8_t>(r >> 8);
    u8[i] = static_cast<uint8_t>(r >> 16);
    s16[i] = static_cast<int16_t>(r >> 24);
    u16[i] = static_cast<uint16_t>(r >> 40);
    u64[i] = rng();
  }
  MemoryIn in{mem_.Upload(i2),  mem_.Upload(d),   mem_.Upload(s8), mem_.Upload(u8),
              mem_.Upload(s16), mem_.Upload(u16), mem_.Upload(u64)};
  MemoryOut out{mem_.Alloc<Int2>(n),    mem_.Alloc<double>(n),   mem_.Alloc<int8_t>(n),
                mem_.Alloc<int16_t>(n), mem_.Alloc<uint64_t>(n), mem_.Alloc<int>(4 * n)};
  CU_ASSERT_OK(Launch(f, {Blocks(n, 128)}, {128}, 0, nullptr, in, out, n));
  CU_ASSERT_OK(cuCtxSynchronize());

  std::vector<int> got_i2, want_i2, want_widened;
  std::vector<double> want_d(n);
  std::vector<int8_t> want_s8(n);
  std::vector<int16_t> want_s16(n);
  std::vector<uint64_t> want_u64(n);
  for (const Int2& v : Download<Int2>(out.i2, n)) got_i2.insert(got_i2.end(), {v.x, v.y});
  for (int i = 0; i < n; ++i) {
    want_i2.insert(want_i2.end(),
                   {static_cast<int>(static_cast<uint32_t>(i2[i].y) - static_cast<uint32_t>(i2[i].x)), i2[i].x ^ i2[i].y});
    want_d[i] = -2.0 * d[n - 1 - i];
    want_s8[i] = static_cast<int8_t>(s8[i] * 3);
    want_s16[i] = static_cast<int16_t>(s16[i] >> 1);
    want_u64[i] = (u64[i] ^ (u64[i] >> 17)) * 0x9E3779B97F4A7C15ull;
    want_widened.insert(want_widened.end(), {s8[i], u8[i], s16[i], u16[i]});
  }
  EXPECT_TRUE(SameValues(got_i2, want_i2, "int2"));
  EXPECT_TRUE(SameValues(Download<double>(out.d, n), want_d, "double"));
  EXPECT_TRUE(SameValues(Download<int8_t>(out.s8, n), want_s8, "s8 store"));
  EXPECT_TRUE(SameValues(Download<int16_t>(out.s16, n), want_s16, "s16 store"));
  EXPECT_TRUE(SameValues(Download<uint64_t>(out.u64, n), want_u64, "u64"));
  EXPECT_TRUE(SameValues(Download<int>(out.widened, 4 * n), want_widened, "s8/u8/s16/u16 loads"));
}

// 16-byte vector loads and stores (ld/st.global.v4.f32): exact.
TEST_P(Kernels, Float4LoadsAndStores) {
  CUEMU_LOAD_KERNEL(f, "memory", "float4_memory");
  const int n = 1000;
  std::vector<float> fl = RandomFloats(4 * n, -100, 100, 15);
  std::vector<Float4> in(n);
  std::vector<float> want;
  for (int i = 0; i < n; ++i) {
    in[i] = {fl[4 * i], fl[4 * i + 1], fl[4 * i + 2], fl[4 * i + 3]};
    want.insert(want.end(), {in[i].w, in[i].z * 2.0f, in[i].y + 1.0f, in[i].x});
  }
  CUdeviceptr din = mem_.Upload(in), dout = mem_.Alloc<Float4>(n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 128)}, {128}, 0, nullptr, din, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> got;
  for (const Float4& v : Download<Float4>(dout, n)) got.insert(got.end(), {v.x, v.y, v.z, v.w});
  EXPECT_TRUE(SameValues(got, want));
}

// --- Math ---------------------------------------------------------------------------

// The error of `got` in ulps: how many floats lie between it and the correctly rounded
// value of `exact` (the measure of the CUDA Programming Guide's error tables).
int64_t UlpError(float got, double exact) {
  auto ordered = [](float f) {
    const int64_t bits = static_cast<int32_t>(FloatBits(f));
    return bits < 0 ? INT32_MIN - bits : bits;  // monotonic in f, -0 next to +0
  };
  const int64_t d = ordered(got) - ordered(static_cast<float>(exact));
  return d < 0 ? -d : d;
}

// The results of float_math (kernels/float_math.cu) for x in [-10, 10], y in [0.05, 50]
// (an eighth of them in [0.5, 2)).
struct FloatMathRun {
  std::vector<float> x, y, out;
  float at(int k, int i) const { return out[k * x.size() + i]; }
};

FloatMathRun RunFloatMath(CUfunction f, DeviceMemory& mem) {
  const int n = 4096;
  FloatMathRun r{RandomFloats(n, -10.0f, 10.0f, 16), RandomFloats(n, 0.05f, 50.0f, 17), {}};
  for (int i = 0; i < 512; ++i) r.y[i] = 0.5f + 1.5f * static_cast<float>(i) / 512;
  CUdeviceptr dx = mem.Upload(r.x), dy = mem.Upload(r.y), dout = mem.Alloc<float>(10 * n);
  Check(Launch(f, {Blocks(n, 256)}, {256}, 0, nullptr, dx, dy, dout, n), "cuLaunchKernel");
  Check(cuCtxSynchronize(), "cuCtxSynchronize");
  r.out = Download<float>(dout, 10 * n);
  return r;
}

// Counts the elements of one output that fail `ok`, reporting the first three.
class ErrorTally {
 public:
  ErrorTally(const FloatMathRun& run, int k, const char* name) : run_(run), k_(k), name_(name) {}
  ~ErrorTally() { EXPECT_EQ(failures_, 0) << name_ << ": " << failures_ << " of " << run_.x.size(); }
  void Check(int i, bool ok, double want) {
    if (ok || failures_++ >= 3) return;
    const float got = run_.at(k_, i);
    ADD_FAILURE() << name_ << " at x=" << run_.x[i] << ", y=" << run_.y[i] << ": got " << got << ", want " << want << " ("
                  << UlpError(got, want) << " ulp, absolute error " << std::abs(got - want) << ", relative "
                  << std::abs(got - want) / std::abs(want) << ")";
  }

 private:
  const FloatMathRun& run_;
  int k_;
  const char* name_;
  int failures_ = 0;
};

// The approximate intrinsics, each checked against the PTX ISA's bound for the .approx
// instruction it compiles to (nvcc -O3, no fast-math), applied to the same float
// operand the kernel computes:
//   __expf(x)   = ex2.approx(x * 0f3FB8AA3B): ex2 within 2 ulp of the correctly rounded 2^t
//   __logf(x)   = lg2.approx(x) * 0f3F317218: lg2 within 2^-22 absolute for x in (0.5, 2),
//                 2^-22 relative otherwise; then the multiply's rounding (half an ulp)
//   rsqrtf(x)   = rsqrt.approx(x): 2^-22.9 relative
//   __sinf/__cosf(x * 0.3f) = sin/cos.approx: 2^-20.5 absolute on [-2 pi, 2 pi]
//   __fdividef  = div.approx.f32: within 2 ulp for |y| in [2^-126, 2^126]
// (The CUDA Programming Guide's bounds for the intrinsics are what NVIDIA's hardware
// achieves; the ISA's, used here, are what any implementation of PTX must achieve.)
TEST_P(Kernels, ApproximateMathWithinPtxBounds) {
  CUEMU_LOAD_KERNEL(f, "float_math", "float_math");
  const FloatMathRun r = RunFloatMath(f, mem_);
  ErrorTally ex2(r, 0, "__expf (ex2.approx)"), lg2(r, 1, "__logf (lg2.approx)"), rsqrt(r, 2, "rsqrtf (rsqrt.approx)"),
      sin(r, 3, "__sinf (sin.approx)"), cos(r, 4, "__cosf (cos.approx)"), div(r, 5, "__fdividef (div.approx)");
  const float log2e = std::bit_cast<float>(0x3FB8AA3Bu), ln2 = std::bit_cast<float>(0x3F317218u);
  for (size_t i = 0; i < r.x.size(); ++i) {
    const float a = r.x[i], b = r.y[i];
    const double e2 = std::exp2(static_cast<double>(a * log2e));
    ex2.Check(i, UlpError(r.at(0, i), e2) <= 2, e2);
    const double lg = std::log2(static_cast<double>(b));
    const double lg_error = b > 0.5f && b < 2.0f ? std::exp2(-22) : std::exp2(-22) * std::abs(lg);
    const double half_ulp = std::ldexp(1.0, std::ilogb(r.at(1, i)) - 24);
    lg2.Check(i, std::abs(r.at(1, i) - lg * ln2) <= lg_error * ln2 + half_ulp, lg * ln2);
    const double rs = 1.0 / std::sqrt(static_cast<double>(b));
    rsqrt.Check(i, std::abs(r.at(2, i) - rs) <= std::exp2(-22.9) * rs, rs);
    const float t = a * 0.3f;
    const double sine = std::sin(static_cast<double>(t)), cosine = std::cos(static_cast<double>(t));
    sin.Check(i, std::abs(r.at(3, i) - sine) <= std::exp2(-20.5), sine);
    cos.Check(i, std::abs(r.at(4, i) - cosine) <= std::exp2(-20.5), cosine);
    const double q = static_cast<double>(a) / b;
    div.Check(i, UlpError(r.at(5, i), q) <= 2, q);
  }
}

// sqrtf, x / y, fmaf, __frcp_rn, __fmul_rn (sqrt.rn, div.rn, fma.rn, rcp.rn, mul.rn):
// correctly rounded, so exact.
TEST_P(Kernels, CorrectlyRoundedFloatMath) {
  CUEMU_LOAD_KERNEL(f, "float_math", "float_math");
  const FloatMathRun r = RunFloatMath(f, mem_);
  ErrorTally sqrt(r, 6, "sqrtf (sqrt.rn)"), div(r, 7, "x / y (div.rn)"), fma(r, 8, "fmaf (fma.rn)"), rcp(r, 9, "rcp.rn + mul.rn");
  for (size_t i = 0; i < r.x.size(); ++i) {
    const float a = r.x[i], b = r.y[i];
    sqrt.Check(i, FloatBits(r.at(6, i)) == FloatBits(std::sqrt(b)), std::sqrt(b));
    div.Check(i, FloatBits(r.at(7, i)) == FloatBits(a / b), a / b);
    fma.Check(i, FloatBits(r.at(8, i)) == FloatBits(std::fma(a, b, -1.0f)), std::fma(a, b, -1.0f));
    const float r9 = 1.0f / b + a * b;
    rcp.Check(i, FloatBits(r.at(9, i)) == FloatBits(r9), r9);
  }
}

// Correctly rounded double operations: exact.
TEST_P(Kernels, DoubleMath) {
  CUEMU_LOAD_KERNEL(f, "float_math", "double_math");
  const int n = 2048;
  std::mt19937_64 rng(18);
  std::uniform_real_distribution<double> dist(-1e3, 1e3), pos(1e-3, 1e6);
  std::vector<double> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = pos(rng);
  }
  CUdeviceptr dx = mem_.Upload(x), dy = mem_.Upload(y), dout = mem_.Alloc<double>(4 * n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 256)}, {256}, 0, nullptr, dx, dy, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<double> got = Download<double>(dout, 4 * n), want(4 * n);
  for (int i = 0; i < n; ++i) {
    want[0 * n + i] = x[i] / y[i];
    want[1 * n + i] = std::sqrt(y[i]);
    want[2 * n + i] = std::fma(x[i], y[i], 0.5);
    want[3 * n + i] = (x[i] + y[i]) * 3.0;
  }
  EXPECT_TRUE(SameValues(got, want));
}

std::vector<uint32_t> IntInputs(int n, unsigned seed) {
  std::vector<uint32_t> v = {0,          1,          2,          3,          31,         32,
                             0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678,
                             0x0000FFFF, 0xFFFF0000, 0x00010000, 0x55555555, 0xAAAAAAAA, 1u << 20};
  std::mt19937 rng(seed);
  while (static_cast<int>(v.size()) < n) {
    uint32_t r = rng();
    v.push_back(rng() % 4 == 0 ? r >> (rng() % 32) : r);
  }
  return v;
}

// __umulhi, __mulhi, __popc, __clz, __brev, __byte_perm, arithmetic and logical
// shifts, 32-bit multiply / divide / remainder: exact.
TEST_P(Kernels, Int32Operations) {
  CUEMU_LOAD_KERNEL(f, "int_ops", "int32_ops");
  const int n = 1024, k = 12;
  std::vector<uint32_t> a = IntInputs(n, 19), b = IntInputs(n, 20);
  std::rotate(b.begin(), b.begin() + 5, b.end());
  CUdeviceptr da = mem_.Upload(a), db = mem_.Upload(b), dout = mem_.Alloc<uint32_t>(k * n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 256)}, {256}, 0, nullptr, da, db, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint32_t> got = Download<uint32_t>(dout, k * n), want(k * n);
  auto byte_perm = [](uint32_t x, uint32_t y, uint32_t s) {
    const uint64_t bytes = static_cast<uint64_t>(y) << 32 | x;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>(bytes >> (8 * ((s >> (4 * i)) & 7)) & 0xFF) << (8 * i);
    return r;
  };
  for (int i = 0; i < n; ++i) {
    const uint32_t x = a[i], y = b[i];
    const int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
    want[0 * n + i] = static_cast<uint32_t>((static_cast<uint64_t>(x) * y) >> 32);
    want[1 * n + i] = static_cast<uint32_t>((static_cast<int64_t>(sx) * sy) >> 32);
    want[2 * n + i] = std::popcount(x);
    want[3 * n + i] = std::countl_zero(x);
    uint32_t rev = 0;
    for (int bit = 0; bit < 32; ++bit) rev |= ((x >> bit) & 1u) << (31 - bit);
    want[4 * n + i] = rev;
    want[5 * n + i] = byte_perm(x, y, 0x7531);
    want[6 * n + i] = byte_perm(x, y, 0x0426);
    want[7 * n + i] = static_cast<uint32_t>(sx >> (y & 31));
    want[8 * n + i] = x >> (y & 31);
    want[9 * n + i] = x * y;
    want[10 * n + i] = y != 0 ? x / y : 0;
    want[11 * n + i] = (y != 0 && !(sx == INT32_MIN && sy == -1)) ? static_cast<uint32_t>(sx % sy) : 0;
  }
  const char* names[k] = {"__umulhi",           "__mulhi", "__popc",  "__clz",  "__brev",  "__byte_perm 0x7531",
                          "__byte_perm 0x0426", "shr.s32", "shr.u32", "mul.lo", "div.u32", "rem.s32"};
  for (int j = 0; j < k; ++j) {
    std::vector<uint32_t> g(got.begin() + j * n, got.begin() + (j + 1) * n);
    std::vector<uint32_t> w(want.begin() + j * n, want.begin() + (j + 1) * n);
    EXPECT_TRUE(SameValues(g, w, names[j]));
  }
}

// 64-bit multiply (low and high halves, signed and unsigned), signed and unsigned
// division and remainder, shifts, __popcll / __clzll: exact.
TEST_P(Kernels, Int64Operations) {
  CUEMU_LOAD_KERNEL(f, "int_ops", "int64_ops");
  const int n = 1024, k = 10;
  std::vector<int64_t> a(n), b(n);
  std::vector<uint32_t> lo = IntInputs(2 * n, 21), hi = IntInputs(2 * n, 22);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<int64_t>(static_cast<uint64_t>(hi[i]) << 32 | lo[i]);
    b[i] = static_cast<int64_t>(static_cast<uint64_t>(hi[n + i] >> (i % 33 == 0 ? 0 : i % 31)) << 32 | lo[n + i]);
    if (i % 7 == 0) b[i] = static_cast<int32_t>(lo[n + i]);  // small divisors, negative ones too
  }
  a[0] = INT64_MIN, b[0] = -1;
  a[1] = INT64_MIN, b[1] = 0;
  a[2] = -7, b[2] = 2;
  a[3] = 7, b[3] = -2;
  CUdeviceptr da = mem_.Upload(a), db = mem_.Upload(b), dout = mem_.Alloc<uint64_t>(k * n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 256)}, {256}, 0, nullptr, da, db, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint64_t> got = Download<uint64_t>(dout, k * n), want(k * n);
  for (int i = 0; i < n; ++i) {
    const int64_t x = a[i], y = b[i];
    const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    const bool safe = y != 0 && !(x == INT64_MIN && y == -1);
    want[0 * n + i] = ux * uy;
    want[1 * n + i] = safe ? static_cast<uint64_t>(x / y) : 0;
    want[2 * n + i] = safe ? static_cast<uint64_t>(x % y) : 0;
    want[3 * n + i] = uy != 0 ? ux / uy : 0;
    want[4 * n + i] = uy != 0 ? ux % uy : 0;
    want[5 * n + i] = static_cast<uint64_t>(x >> (uy & 63));
    want[6 * n + i] = ux >> (uy & 63);
    want[7 * n + i] = static_cast<uint64_t>((static_cast<unsigned __int128>(ux) * uy) >> 64);
    want[8 * n + i] = static_cast<uint64_t>(static_cast<int64_t>((static_cast<__int128>(x) * y) >> 64));
    want[9 * n + i] = static_cast<uint64_t>(std::popcount(ux)) | static_cast<uint64_t>(std::countl_zero(ux)) << 8;
  }
  const char* names[k] = {"mul.lo.u64", "div.s64", "rem.s64",    "div.u64",   "rem.u64",
                          "shr.s64",    "shr.u64", "__umul64hi", "__mul64hi", "popc/clz"};
  for (int j = 0; j < k; ++j) {
    std::vector<uint64_t> g(got.begin() + j * n, got.begin() + (j + 1) * n);
    std::vector<uint64_t> w(want.begin() + j * n, want.begin() + (j + 1) * n);
    EXPECT_TRUE(SameValues(g, w, names[j]));
  }
}

// __ffs and __ffsll (1 + the index of the lowest set bit, 0 for 0): exact.
TEST_P(Kernels, FindFirstSet) {
  CUEMU_LOAD_KERNEL(f, "bit_scan", "find_first_set");
  const int n = 512;
  std::vector<uint32_t> a = IntInputs(n, 23), lo = IntInputs(n, 24), hi = IntInputs(n, 25);
  std::vector<int64_t> b(n);
  for (int i = 0; i < n; ++i) b[i] = static_cast<int64_t>(static_cast<uint64_t>(i % 3 ? hi[i] : 0) << 32 | (i % 5 ? lo[i] : 0));
  CUdeviceptr da = mem_.Upload(a), db = mem_.Upload(b), dout = mem_.Alloc<int>(2 * n);
  CU_ASSERT_OK(Launch(f, {Blocks(n, 128)}, {128}, 0, nullptr, da, db, dout, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<int> want(2 * n);
  for (int i = 0; i < n; ++i) {
    const uint64_t ub = static_cast<uint64_t>(b[i]);
    want[2 * i] = a[i] == 0 ? 0 : std::countr_zero(a[i]) + 1;
    want[2 * i + 1] = ub == 0 ? 0 : std::countr_zero(ub) + 1;
  }
  EXPECT_TRUE(SameValues(Download<int>(dout, 2 * n), want));
}

CUEMU_INSTANTIATE_ARCHS(Kernels);

}  // namespace
}  // namespace cuemu_test
