// PTX semantics the CUDA C kernels do not reach, in hand-written PTX (each module is also
// accepted by ptxas, which the emulator runs on every module): what the ISA says about
// module variables, symbols, parameter addresses, nested blocks, warp-synchronous
// instructions in diverged warps, independent thread scheduling, rounding once and
// comparisons of pairs of halves; and the counters of launches whose every instruction is known.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "tests/cuda_emulator/cuemu_test_util.h"

namespace cuemu_test {
namespace {

class Semantics : public ::testing::Test {
 protected:
  void SetUp() override { CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext())); }
  void TearDown() override {
    mem_.FreeAll();
    for (CUmodule m : modules_) cuModuleUnload(m);
  }
  // The kernel `name` of a module with the usual header and `body`.
  CUfunction Kernel(const std::string& body, const std::string& name, const char* target = "sm_90") {
    std::string ptx = std::string(".version 8.0\n.target ") + target + "\n.address_size 64\n" + body;
    CUmodule module = nullptr;
    std::string log;
    CUresult r = LoadPtx(ptx, &module, &log);
    EXPECT_EQ(r, CUDA_SUCCESS) << log << "\n" << LastMessage();
    if (r != CUDA_SUCCESS) return nullptr;
    modules_.push_back(module);
    CUfunction f = nullptr;
    Check(cuModuleGetFunction(&f, module, name.c_str()), "cuModuleGetFunction");
    return f;
  }
  DeviceMemory mem_;
  std::vector<CUmodule> modules_;
};

// .global variables without an initializer start at zero: an atomic counter hands out
// 0..31, and a table reads as zeros.
TEST_F(Semantics, ModuleVariablesStartAtZero) {
  CUfunction f = Kernel(R"(
.global .align 4 .u32 counter;
.global .align 4 .b8 table[16];
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, counter;
  atom.global.add.u32 %r2, [%rd2], 1;
  mov.u64 %rd3, table;
  ld.global.u32 %r3, [%rd3+12];
  add.u32 %r4, %r2, %r3;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r4;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(32);
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, out));
  std::vector<uint32_t> got = Download<uint32_t>(out, 32);
  std::sort(got.begin(), got.end());
  for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(got[i], i);
}

// Initializers in the literal forms ptxas takes: decimal and hex floats, negative integers, in .global
// and .const variables.
TEST_F(Semantics, InitializedModuleVariables) {
  CUfunction f = Kernel(R"(
.global .align 4 .f32 table[3] = {1.5, 0f40000000, 0fC0000000};
.const .align 8 .f64 quarter = 0.25;
.global .align 4 .s32 minus_seven = -7;
.visible .entry k(.param .u64 out)
{
  .reg .f32 %f<4>;
  .reg .f64 %fd<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, table;
  ld.global.v2.f32 {%f1, %f2}, [%rd2];
  ld.global.f32 %f3, [%rd2+8];
  st.global.v2.f32 [%rd1], {%f1, %f2};
  st.global.f32 [%rd1+8], %f3;
  ld.const.f64 %fd1, [quarter];
  st.global.f64 [%rd1+16], %fd1;
  ld.global.s32 %r1, [minus_seven];
  st.global.s32 [%rd1+24], %r1;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint64_t>(4);
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, nullptr, out));
  std::vector<float> floats = Download<float>(out, 3);
  EXPECT_EQ(floats[0], 1.5f);
  EXPECT_EQ(floats[1], 2.0f);
  EXPECT_EQ(floats[2], -2.0f);
  std::vector<double> doubles = Download<double>(out, 3);
  EXPECT_EQ(doubles[2], 0.25);
  EXPECT_EQ(Download<int32_t>(out, 7)[6], -7);
}

// WARP_SZ, a symbol nvcc uses for warpSize; a 0d literal in a .b64 move keeps its bits;
// a generic pointer to a parameter (cvta.param) reads the parameter.
TEST_F(Semantics, WarpSizeLiteralBitsAndParameterAddresses) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out, .param .align 4 .b8 pair[8])
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, WARP_SZ;
  st.global.u32 [%rd1], %r1;
  mov.b64 %rd2, 0d3FF0000000000000;
  st.global.u64 [%rd1+8], %rd2;
  mov.b64 %rd3, pair;
  cvta.param.u64 %rd4, %rd3;
  ld.u32 %r2, [%rd4+4];
  st.global.u32 [%rd1+16], %r2;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(6);
  struct {
    uint32_t a, b;
  } pair{11, 22};
  void* params[] = {&out, &pair};
  CU_ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  std::vector<uint32_t> got = Download<uint32_t>(out, 6);
  EXPECT_EQ(got[0], 32u);
  EXPECT_EQ(got[2] | static_cast<uint64_t>(got[3]) << 32, 0x3FF0000000000000ull);
  EXPECT_EQ(got[4], 22u);
}

// Registers and labels declared in a nested { } block shadow the outer ones.
TEST_F(Semantics, NestedBlocksShadowRegistersAndLabels) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 5;
  { .reg .b32 %r1; .reg .pred p; mov.u32 %r1, 7; setp.eq.u32 p, %r1, 7; @p bra L1; mov.u32 %r1, 9; L1: }
  { .reg .pred p; setp.eq.u32 p, %r1, 5; @p bra L1; mov.u32 %r1, 11; L1: }
  st.global.u32 [%rd1], %r1;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(1);
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, nullptr, out));
  EXPECT_EQ(Download<uint32_t>(out, 1)[0], 5u);
}

// Two groups of 16 lanes shuffle within themselves with their own member masks (as
// cooperative groups' tiled_partition<16> does).
TEST_F(Semantics, GroupsWithTheirOwnMemberMasks) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 16;
  mov.u32 %r3, 65535;
  shl.b32 %r4, %r3, %r2;
  mul.lo.u32 %r5, %r1, 10;
  shfl.sync.down.b32 %r6|%p1, %r5, 1, 4127, %r4;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(32);
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, out));
  std::vector<uint32_t> got = Download<uint32_t>(out, 32);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(got[l], l % 16 == 15 ? 10 * l : 10 * (l + 1)) << "lane " << l;
}

// Lanes that reach a shfl.sync first wait there for members that took a detour placed
// after it in the code, instead of failing as unconverged.
TEST_F(Semantics, ShuffleWaitsForMembersOnALongerPath) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %r1;
  setp.lt.u32 %p1, %r1, 8;
  @%p1 bra LONG;
SHFL:
  shfl.sync.idx.b32 %r3|%p2, %r2, 3, 31, -1;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
LONG:
  add.u32 %r2, %r2, 100;
  bra.uni SHFL;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(32);
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  for (uint32_t v : Download<uint32_t>(out, 32)) EXPECT_EQ(v, 103u);
}

// A lock taken with atom.cas in a loop by every lane of one warp: the lane holding it
// makes progress while the others spin (independent thread scheduling).
TEST_F(Semantics, SpinLockInsideAWarpCompletes) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 lock, .param .u64 count)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [lock];
  ld.param.u64 %rd2, [count];
SPIN:
  atom.global.cas.b32 %r1, [%rd1], 0, 1;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra SPIN;
  ld.volatile.global.u32 %r2, [%rd2];
  add.u32 %r2, %r2, 1;
  st.volatile.global.u32 [%rd2], %r2;
  membar.gl;
  atom.global.exch.b32 %r3, [%rd1], 0;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr lock = mem_.Alloc<uint32_t>(1), count = mem_.Alloc<uint32_t>(1);
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, lock, count));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(Download<uint32_t>(count, 1)[0], 32u);
}

// Conversions and f16 arithmetic round once: from f64 and from integers directly, and an
// f16 fma exactly; a signed narrow cvt result is sign-extended in its register; two f32
// pack into an f16x2; an all-false guard skips a bar.sync.
TEST_F(Semantics, RoundingOnceAndSignExtension) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b16 %h<8>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .f64 %fd<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.f64 %fd1, 0d3FF0020000000100;
  cvt.rn.f16.f64 %h1, %fd1;
  mov.f64 %fd2, 0d3FF0100000000100;
  cvt.rn.bf16.f64 %h2, %fd2;
  mov.u32 %r1, 16842753;
  cvt.rn.bf16.s32 %h3, %r1;
  mov.b16 %h4, 0x3C0B;
  mov.b16 %h5, 0x2FA3;
  mov.b16 %h6, 0x3C01;
  fma.rn.f16 %h7, %h4, %h5, %h6;
  st.global.v4.u16 [%rd1], {%h1, %h2, %h3, %h7};
  mov.f32 %f1, 0fBF800000;
  cvt.rzi.s8.f32 %r2, %f1;
  st.global.u32 [%rd1+8], %r2;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f40000000;
  cvt.rn.f16x2.f32 %r3, %f2, %f3;
  st.global.u32 [%rd1+12], %r3;
  mov.u32 %r4, %tid.x;
  setp.eq.u32 %p1, %r4, 1000;
  @%p1 bar.sync 0;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint16_t>(8);
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, out));
  std::vector<uint16_t> got = Download<uint16_t>(out, 8);
  EXPECT_EQ(got[0], 0x3C01);                      // 1 + 2^-11 + 2^-40: above the tie, up (through f32 it would tie to even)
  EXPECT_EQ(got[1], 0x3F81);                      // bf16 of 1 + 2^-8 + 2^-40
  EXPECT_EQ(got[2], 0x4B81);                      // bf16 of 2^24 + 2^16 + 1
  EXPECT_EQ(got[3], 0x3C7D);                      // the exact fma, rounded once
  EXPECT_EQ(got[4] | got[5] << 16, 0xFFFFFFFFu);  // -1 as s8, sign-extended
  EXPECT_EQ(got[6] | got[7] << 16, 0x3C004000u);  // {1.0 (upper), 2.0 (lower)}
}

// Carry chains (libdevice's sinf and cosf reduce a large argument by 2/pi with them): add.cc,
// sub.cc and mad.lo/.hi.cc write each lane's carry (a borrow for sub) into CC.CF, and addc,
// subc and madc add it: a 96-bit and a 64-bit sum, a 64-bit difference and a 32 x 32 -> 64-bit
// product plus a constant, each lane on its own values. A carry chain of floats is refused.
TEST_F(Semantics, CarryChainsCarryPerLane) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 48;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r2, 0xFFFFFFFF;
  mov.u32 %r12, 0;
  add.u32 %r3, %r1, 1;
  add.cc.u32 %r4, %r2, %r3;
  addc.cc.u32 %r5, %r2, %r12;
  addc.u32 %r6, %r1, %r3;
  sub.cc.u32 %r7, %r12, %r3;
  subc.u32 %r8, %r1, %r12;
  mov.u32 %r13, 0x9E3779B9;
  mul.lo.u32 %r9, %r1, %r13;
  mov.u32 %r14, 0x85EBCA6B;
  mov.u32 %r15, 0xFFFFFFF0;
  mad.lo.cc.u32 %r10, %r9, %r14, %r15;
  madc.hi.u32 %r11, %r9, %r14, %r12;
  st.global.v4.u32 [%rd3], {%r4, %r5, %r6, %r7};
  st.global.v4.u32 [%rd3+16], {%r8, %r10, %r11, %r9};
  cvt.u64.u32 %rd4, %r1;
  mov.u64 %rd5, 0xFFFFFFFFFFFFFFFF;
  mov.u64 %rd8, 0;
  add.cc.u64 %rd6, %rd4, %rd5;
  addc.u64 %rd7, %rd8, %rd8;
  st.global.v2.u64 [%rd3+32], {%rd6, %rd7};
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(32 * 12);
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, out));
  std::vector<uint32_t> got = Download<uint32_t>(out, 32 * 12);
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t* g = &got[t * 12];
    // (2^64 - 1 + t * 2^64) + (t + 1 + (t + 1) * 2^64): words t, 0, 2t + 2.
    EXPECT_EQ(g[0], t) << t;
    EXPECT_EQ(g[1], 0u) << t;
    EXPECT_EQ(g[2], 2 * t + 2) << t;
    // t * 2^32 - (t + 1): the low word borrows.
    EXPECT_EQ(g[3], 0u - (t + 1)) << t;
    EXPECT_EQ(g[4], t - 1) << t;
    const uint32_t x = t * 0x9E3779B9u;
    const uint64_t sum = static_cast<uint64_t>(x) * 0x85EBCA6Bu + 0xFFFFFFF0u;
    EXPECT_EQ(g[5], static_cast<uint32_t>(sum)) << t;
    EXPECT_EQ(g[6], static_cast<uint32_t>(sum >> 32)) << t;
    EXPECT_EQ(g[7], x) << t;
    // t + (2^64 - 1): a carry out where t > 0.
    EXPECT_EQ(g[8] | static_cast<uint64_t>(g[9]) << 32, static_cast<uint64_t>(t) - 1) << t;
    EXPECT_EQ(g[10] | static_cast<uint64_t>(g[11]) << 32, t > 0 ? 1u : 0u) << t;
  }
  CUmodule module = nullptr;
  std::string log;
  EXPECT_NE(LoadPtx(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  .reg .f32 %f<3>;\n"
                    "  mov.f32 %f1, 0f3F800000;\n  add.cc.f32 %f2, %f1, %f1;\n  ret;\n}\n",
                    &module, &log),
            CUDA_SUCCESS);
}

// setp on .f16x2 and .bf16x2 compares the two halves in parallel: p gets the comparison
// of the low halves, q of the high ones (each on its own, not q = !p). Ordered compares
// are false with a NaN operand, unordered ones (ltu, equ, gtu) true.
TEST_F(Semantics, SetpOnPairsOfHalvesSetsOnePredicatePerHalf) {
  enum V { kOne, kTwo, kThree, kMinusOne, kHalf, kNaN };
  struct Type {
    const char* name;
    uint16_t bits[6];  // the values of V
  };
  const Type types[] = {{"f16x2", {0x3C00, 0x4000, 0x4200, 0xBC00, 0x3800, 0x7E00}},
                        {"bf16x2", {0x3F80, 0x4000, 0x4040, 0xBF80, 0x3F00, 0x7FC0}}};
  struct Case {
    const char* cmp;
    V a_high, a_low, b_high, b_low;
    bool p, q;  // low, high
  };
  const Case cases[] = {
      {"eq", kTwo, kOne, kThree, kOne, true, false},     {"lt", kTwo, kMinusOne, kOne, kHalf, true, false},
      {"gt", kTwo, kMinusOne, kOne, kHalf, false, true}, {"le", kTwo, kOne, kThree, kOne, true, true},
      {"ne", kTwo, kOne, kTwo, kOne, false, false},      {"lt", kOne, kNaN, kTwo, kOne, false, true},
      {"ltu", kOne, kNaN, kTwo, kOne, true, true},       {"eq", kNaN, kOne, kOne, kOne, true, false},
      {"equ", kNaN, kOne, kOne, kOne, true, true},       {"gtu", kNaN, kOne, kOne, kOne, false, true},
  };
  const int n = sizeof(cases) / sizeof(cases[0]);
  for (const Type& t : types) {
    SCOPED_TRACE(t.name);
    std::string body =
        ".visible .entry k(.param .u64 out)\n{\n  .reg .pred %p<3>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<2>;\n"
        "  ld.param.u64 %rd1, [out];\n";
    for (int i = 0; i < n; ++i) {
      const Case& c = cases[i];
      char lines[512];
      std::snprintf(lines, sizeof(lines),
                    "  mov.b32 %%r1, 0x%04X%04X;\n  mov.b32 %%r2, 0x%04X%04X;\n  setp.%s.%s %%p1|%%p2, %%r1, %%r2;\n"
                    "  selp.u32 %%r3, 1, 0, %%p1;\n  selp.u32 %%r4, 2, 0, %%p2;\n  or.b32 %%r5, %%r3, %%r4;\n"
                    "  st.global.u32 [%%rd1+%d], %%r5;\n",
                    t.bits[c.a_high], t.bits[c.a_low], t.bits[c.b_high], t.bits[c.b_low], c.cmp, t.name, 4 * i);
      body += lines;
    }
    body += "  ret;\n}\n";
    CUfunction f = Kernel(body, "k");
    ASSERT_NE(f, nullptr);
    CUdeviceptr out = mem_.Alloc<uint32_t>(n);
    CU_ASSERT_OK(Launch(f, {1}, {1}, 0, nullptr, out));
    std::vector<uint32_t> got = Download<uint32_t>(out, n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(got[i], (cases[i].p ? 1u : 0u) | (cases[i].q ? 2u : 0u)) << "case " << i << ": setp." << cases[i].cmp;
    }
  }
}

// The footprint counts each 32-byte sector once per launch: two blocks of one warp each
// read the same 128 floats (16 sectors), lane l the floats l, l+32, l+64 and l+96, so
// the per-request sectors add up to twice the footprint; they write 64 floats (8 sectors).
TEST_F(Semantics, FootprintSectorsCountEachSectorOnce) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 in, .param .u64 out)
{
  .reg .f32 %f<8>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f2, [%rd4+128];
  ld.global.f32 %f3, [%rd4+256];
  ld.global.f32 %f4, [%rd4+384];
  add.f32 %f5, %f1, %f2;
  add.f32 %f6, %f3, %f4;
  add.f32 %f7, %f5, %f6;
  mad.lo.u32 %r3, %r2, 32, %r1;
  mul.wide.u32 %rd5, %r3, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f7;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  std::vector<float> host(128);
  for (int i = 0; i < 128; ++i) host[i] = static_cast<float>(i);
  CUdeviceptr in = mem_.Upload(host), out = mem_.Alloc<float>(64);
  CU_ASSERT_OK(Launch(f, {2}, {32}, 0, nullptr, in, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  CUemuCounters c{};
  CU_ASSERT_OK(cuemuGetLastLaunchCounters(&c));
  EXPECT_EQ(c.global_load_requests, 8u);
  EXPECT_EQ(c.global_load_bytes, 1024u);
  EXPECT_EQ(c.global_load_sectors, 32u);
  EXPECT_EQ(c.global_load_footprint_sectors, 16u);
  EXPECT_EQ(c.global_store_requests, 2u);
  EXPECT_EQ(c.global_store_sectors, 8u);
  EXPECT_EQ(c.global_store_footprint_sectors, 8u);
  std::vector<float> got = Download<float>(out, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], 4.0f * (t % 32) + 192) << "thread " << t;
}

// float_ops counts per thread that executes the instruction: add.f32 1, fma.rn.f32 2,
// add.rn.f16x2 2 (two halves), an add under a predicate only where it holds; integer
// arithmetic (mad.lo.u32 included), moves, setp on integers and branches count nothing.
TEST_F(Semantics, FloatOpsCountEachExecutedOperation) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .f32 %f<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f40000000;
  add.f32 %f3, %f1, %f2;
  mov.u32 %r5, 0;
LOOP:
  fma.rn.f32 %f3, %f3, %f2, %f1;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, 3;
  @%p1 bra LOOP;
  mov.b32 %r6, 0x3C003C00;
  add.rn.f16x2 %r7, %r6, %r6;
  setp.lt.u32 %p2, %r1, 8;
  @%p2 add.f32 %f3, %f3, %f1;
  mov.b32 %f4, %r7;
  add.f32 %f5, %f3, %f4;
  st.global.f32 [%rd3], %f5;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  // 3 blocks of 40 threads (a full warp and one of 8 lanes); per thread add 1 + 3 fma 6 +
  // f16x2 add 2 + add 1 = 10, and 1 for the 8 threads per block with tid.x < 8.
  CUdeviceptr out = mem_.Alloc<float>(120);
  CU_ASSERT_OK(Launch(f, {3}, {40}, 0, nullptr, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  CUemuCounters c{};
  CU_ASSERT_OK(cuemuGetLastLaunchCounters(&c));
  EXPECT_EQ(c.threads, 120u);
  EXPECT_EQ(c.float_ops, 120u * 10 + 3 * 8);
  // 3 -> 7 -> 15 -> 31, (+1), + the bits 0x40004000 of {2, 2} as an f32: 2 + 2^-8.
  std::vector<float> got = Download<float>(out, 120);
  for (int t = 0; t < 120; ++t) EXPECT_EQ(got[t], (t % 40 < 8 ? 32.0f : 31.0f) + 2.00390625f) << "thread " << t;
}

// atom.add.f32 on global memory flushes subnormals, as the ISA notes.
TEST_F(Semantics, GlobalFloatAtomicAddFlushesSubnormals) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .f32 %f<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.f32 %f1, 0f00400000;
  atom.global.add.f32 %f2, [%rd1], %f1;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<float>(1);
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, nullptr, out));
  EXPECT_EQ(Download<float>(out, 1)[0], 0.0f);
}

// PTX for sm_90a (arch-specific features) loads on this sm_90 device.
TEST_F(Semantics, Sm90aModulesLoad) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)",
                        "k", "sm_90a");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(1);
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, nullptr, out));
  EXPECT_EQ(Download<uint32_t>(out, 1)[0], 7u);
}

// Events and streams: an event recorded again marks only its last record; a stream
// waiting on an event of a stream destroyed since still runs.
TEST_F(Semantics, EventRecordedAgainAndWaitsOnDestroyedStreams) {
  CUfunction f = Kernel(R"(
.visible .entry k(.param .u64 out, .param .u32 v)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [v];
  st.global.u32 [%rd1], %r1;
  ret;
}
)",
                        "k");
  ASSERT_NE(f, nullptr);
  CUdeviceptr out = mem_.Alloc<uint32_t>(1);
  CUstream s1, s2;
  CUevent e;
  CU_ASSERT_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_ASSERT_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CU_ASSERT_OK(cuEventCreate(&e, 0));
  CU_ASSERT_OK(cuEventRecord(e, s1));
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, s2, out, 42u));
  CU_ASSERT_OK(cuEventRecord(e, s2));
  CU_ASSERT_OK(cuStreamSynchronize(s1));  // runs s1's stale record only
  CU_ASSERT_OK(cuEventSynchronize(e));    // must run s2's launch
  uint32_t host = 0;
  CU_ASSERT_OK(cuMemcpyDtoH(&host, out, 4));
  EXPECT_EQ(host, 42u);

  CU_ASSERT_OK(cuEventRecord(e, s1));
  CU_ASSERT_OK(cuStreamWaitEvent(s2, e, 0));
  CU_ASSERT_OK(cuStreamDestroy(s1));
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, s2, out, 43u));
  CU_ASSERT_OK(cuStreamSynchronize(s2));
  CU_ASSERT_OK(cuMemcpyDtoH(&host, out, 4));
  EXPECT_EQ(host, 43u);
  CU_EXPECT_OK(cuEventDestroy(e));
  CU_EXPECT_OK(cuStreamDestroy(s2));
}

// An async host-to-device copy takes the host data when it is issued (as drivers stage
// pageable memory): the caller may reuse its buffer at once.
TEST_F(Semantics, AsyncHostToDeviceCopiesStageTheHostData) {
  CUdeviceptr p = mem_.Alloc<uint32_t>(4);
  CUstream s;
  CU_ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<uint32_t> host = {1, 2, 3, 4};
  CU_ASSERT_OK(cuMemcpyHtoDAsync(p, host.data(), 16, s));
  host.assign(4, 99);
  host.clear();
  host.shrink_to_fit();  // the buffer is gone before the copy runs
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(Download<uint32_t>(p, 4), (std::vector<uint32_t>{1, 2, 3, 4}));
  CU_EXPECT_OK(cuStreamDestroy(s));
}

}  // namespace
}  // namespace cuemu_test
