// The CUDA emulator as a driver: the device it reports, module loading (ptxas errors,
// instructions it may not know), memory allocation, the launch checks that a real
// driver makes, streams (work runs only when synchronized), dynamic shared memory, and
// graphs (stream capture and its rules, instantiation, launch, update).
#include <cuda.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "tests/cuda_emulator/cuemu_test_util.h"

namespace cuemu_test {
namespace {

// --- The device ---------------------------------------------------------------------

int Attribute(CUdevice_attribute attribute) {
  int value = -1;
  Check(cuDeviceGetAttribute(&value, attribute, Device()), "cuDeviceGetAttribute");
  return value;
}

// The emulator reports one H100 SXM (compute capability 9.0) with its limits.
TEST(CudaEmulatorDevice, ReportsAnH100) {
  CU_ASSERT_OK(cuInit(0));
  int count = 0;
  CU_ASSERT_OK(cuDeviceGetCount(&count));
  EXPECT_EQ(count, 1);
  char name[256] = {};
  CU_ASSERT_OK(cuDeviceGetName(name, sizeof(name), Device()));
  EXPECT_NE(std::string(name).find("H100"), std::string::npos) << name;
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 9);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 0);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 132);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), 1024);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y), 1024);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z), 64);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), 2147483647);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y), 65535);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z), 65535);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK), 49152);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), 232448);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK), 65536);
  size_t total = 0;
  CU_ASSERT_OK(cuDeviceTotalMem(&total, Device()));
  const char* mb = std::getenv("CUEMU_MEMORY_MB");
  const size_t expected = mb != nullptr ? std::strtoull(mb, nullptr, 10) << 20 : size_t{4} << 30;
  EXPECT_EQ(total, expected);
}

// After cuInit, a child of fork() cannot use the driver, as with NVIDIA's: every call,
// cuInit included, is CUDA_ERROR_NOT_INITIALIZED; the parent goes on. A thread of the
// parent that holds the driver's lock does not hang the child.
TEST(CudaEmulatorDevice, ForkedChildIsNotInitialized) {
  Primary();
  CUcontext ctx = PrimaryContext();
  CU_ASSERT_OK(cuCtxSetCurrent(ctx));
  std::atomic<bool> stop{false};
  std::thread busy([&] {  // in and out of the driver while the test forks
    cuCtxSetCurrent(ctx);
    size_t free_bytes, total;
    while (!stop) cuMemGetInfo(&free_bytes, &total);
  });
  const pid_t pid = fork();
  if (pid == 0) {
    CUdeviceptr p = 0;
    void* host = nullptr;
    int count = 0;
    CUdevice dev = 0;
    CUstream stream = nullptr;
    const CUresult results[] = {cuInit(0),
                                cuCtxSetCurrent(ctx),
                                cuMemAlloc(&p, 64),
                                cuDeviceGetCount(&count),
                                cuDeviceGet(&dev, 0),
                                cuMemAllocHost(&host, 64),
                                cuStreamCreate(&stream, 0),
                                cuCtxSynchronize(),
                                cuInit(0)};
    for (size_t i = 0; i < std::size(results); ++i)
      if (results[i] != CUDA_ERROR_NOT_INITIALIZED) _exit(static_cast<int>(10 + i));
    _exit(0);
  }
  stop = true;
  busy.join();
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "call " << WEXITSTATUS(status) - 10 << " of the child did not fail as it should";
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAlloc(&p, 64));  // the parent goes on
  CU_EXPECT_OK(cuMemFree(p));
}

// --- Module loading -----------------------------------------------------------------

// PTX with a type error on line 12: ptxas rejects it, so the load fails with
// CUDA_ERROR_INVALID_PTX and ptxas's message goes to the JIT error log.
// (Checked with `ptxas -arch=sm_90`: "line 12; error : Arguments mismatch for
// instruction 'add'". An f32 add on .b32 registers, line 11, is legal PTX.)
constexpr const char* kBadPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry bad_kernel(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  add.f32 %r2, %r1, %r1;
  add.f32 %rd2, %r1, %r1;
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

TEST(CudaEmulatorModule, PtxasRejectionIsInvalidPtxWithTheLog) {
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
  std::vector<char> log(8192, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log.data(), reinterpret_cast<void*>(log.size())};
  CUmodule module = nullptr;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_PTX, cuModuleLoadDataEx(&module, kBadPtx, 2, options, values));
  std::string text = log.data();
  EXPECT_NE(text.find("error"), std::string::npos) << "JIT error log: '" << text << "'";
  EXPECT_NE(text.find("12"), std::string::npos) << "the log should name line 12: '" << text << "'";
  // Without options, the same result.
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_PTX, cuModuleLoadData(&module, kBadPtx));
}

// One warp of a hand-written kernel: out[t] = f(a[t], b[t], t), f one instruction that
// is valid PTX but which an emulator might not implement. Loading must either succeed
// and compute the right value, or fail with CUDA_ERROR_NOT_SUPPORTED and a message that
// names the instruction; never load and compute something else.
struct InstructionCase {
  const char* name;  // the instruction's name, as the message must give it
  const char* ptx;   // computes %r4 from %r1 (lane), %r2 (a), %r3 (b); %rd5 = &a[t]
  std::function<void(unsigned lane, uint32_t* a, uint32_t* b)> input;
  std::function<uint32_t(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, unsigned lane)> expected;
};

// The probe kernel for `arch` with `body` in the middle.
std::string InstructionPtx(const std::string& arch, const std::string& body) {
  std::string ptx = R"(.version 8.0
.target ARCH
.address_size 64

.visible .entry probe(.param .u64 pa, .param .u64 pb, .param .u64 pout)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u32 %r2, [%rd5];
  add.s64 %rd6, %rd2, %rd4;
  ld.global.u32 %r3, [%rd6];
  BODY
  add.s64 %rd7, %rd3, %rd4;
  st.global.u32 [%rd7], %r4;
  ret;
}
)";
  ptx.replace(ptx.find("ARCH"), 4, arch);
  ptx.replace(ptx.find("BODY"), 4, body);
  return ptx;
}

int32_t SignedByte(uint32_t x, int i) { return static_cast<int8_t>(x >> (8 * i)); }

std::vector<InstructionCase> InstructionCases() {
  auto random_ab = [](unsigned lane, uint32_t* a, uint32_t* b) {
    *a = 0x9E3779B9u * (lane + 1);
    *b = 0x85EBCA6Bu * (lane + 7) ^ 0xC2B2AE35u;
  };
  return {
      {"dp4a", "dp4a.s32.s32 %r4, %r2, %r3, %r1;", random_ab,
       [](auto& a, auto& b, unsigned t) {
         int32_t sum = static_cast<int32_t>(t);
         for (int i = 0; i < 4; ++i) sum += SignedByte(a[t], i) * SignedByte(b[t], i);
         return static_cast<uint32_t>(sum);
       }},
      {"bmsk", "bmsk.clamp.b32 %r4, %r2, %r3;",
       [](unsigned lane, uint32_t* a, uint32_t* b) {
         *a = lane % 17;  // start bit
         *b = lane / 2;   // width, start + width <= 32
       },
       [](auto& a, auto& b, unsigned t) { return static_cast<uint32_t>(((uint64_t{1} << b[t]) - 1) << a[t]); }},
      {"szext", "szext.clamp.s32 %r4, %r2, %r3;",
       [](unsigned lane, uint32_t* a, uint32_t* b) {
         *a = 0xA5A5F00Fu * (lane + 3);
         *b = 1 + lane % 31;  // width 1..31
       },
       [](auto& a, auto& b, unsigned t) {
         int shift = 32 - static_cast<int>(b[t]);
         return static_cast<uint32_t>(static_cast<int32_t>(a[t] << shift) >> shift);
       }},
      {"redux", "redux.sync.add.u32 %r4, %r2, 0xffffffff;", random_ab,
       [](auto& a, auto&, unsigned) {
         uint32_t sum = 0;
         for (uint32_t x : a) sum += x;
         return sum;
       }},
      {"match", "match.any.sync.b32 %r4, %r3, 0xffffffff;",
       [](unsigned lane, uint32_t* a, uint32_t* b) {
         *a = 0;
         *b = (lane * 7) % 5;
       },
       [](auto&, auto& b, unsigned t) {
         uint32_t mask = 0;
         for (unsigned j = 0; j < 32; ++j) mask |= (b[j] == b[t] ? 1u : 0u) << j;
         return mask;
       }},
      {"prefetch", "prefetch.global.L2::evict_last [%rd5];\n  add.u32 %r4, %r2, %r3;", random_ab,
       [](auto& a, auto& b, unsigned t) { return a[t] + b[t]; }},
      {"nanosleep", "nanosleep.u32 20;\n  xor.b32 %r4, %r2, %r3;", random_ab,
       [](auto& a, auto& b, unsigned t) { return a[t] ^ b[t]; }},
      {"lop3", "lop3.b32 %r4, %r2, %r3, %r1, 0xE8;", random_ab,  // majority(a, b, lane)
       [](auto& a, auto& b, unsigned t) { return (a[t] & b[t]) | (a[t] & t) | (b[t] & t); }},
      {"bfind", "bfind.u32 %r4, %r2;",
       [](unsigned lane, uint32_t* a, uint32_t* b) {
         *a = lane == 0 ? 0u : 0xFFFFFFFFu >> lane;
         *b = 0;
       },
       [](auto& a, auto&, unsigned t) { return a[t] == 0 ? 0xFFFFFFFFu : 31u - static_cast<uint32_t>(std::countl_zero(a[t])); }},
      {"bfi", "bfi.b32 %r4, %r2, %r3, 8, 12;", random_ab,
       [](auto& a, auto& b, unsigned t) {
         uint32_t mask = 0xFFFu << 8;
         return (b[t] & ~mask) | ((a[t] << 8) & mask);
       }},
      {"sad", "sad.u32 %r4, %r2, %r3, %r1;", random_ab,
       [](auto& a, auto& b, unsigned t) { return (a[t] > b[t] ? a[t] - b[t] : b[t] - a[t]) + t; }},
  };
}

class InstructionTest : public KernelTest {};

TEST_P(InstructionTest, LessCommonInstructionsRunOrAreNamedAsUnsupported) {
  for (const InstructionCase& c : InstructionCases()) {
    SCOPED_TRACE(c.name);
    std::vector<uint32_t> a(32), b(32);
    for (unsigned t = 0; t < 32; ++t) c.input(t, &a[t], &b[t]);
    CUmodule module = nullptr;
    std::string log;
    CUresult loaded = LoadPtx(InstructionPtx(Arch(), c.ptx), &module, &log);
    if (loaded == CUDA_ERROR_NOT_SUPPORTED) {
      EXPECT_NE(LastMessage().find(c.name), std::string::npos)
          << "the message should name " << c.name << ": '" << LastMessage() << "'";
      continue;
    }
    ASSERT_EQ(loaded, CUDA_SUCCESS) << log;
    CUfunction f;
    CU_ASSERT_OK(cuModuleGetFunction(&f, module, "probe"));
    CUdeviceptr da = mem_.Upload(a), db = mem_.Upload(b), dout = mem_.Alloc<uint32_t>(32);
    CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, da, db, dout));
    CU_ASSERT_OK(cuCtxSynchronize());
    std::vector<uint32_t> want(32);
    for (unsigned t = 0; t < 32; ++t) want[t] = c.expected(a, b, t);
    EXPECT_TRUE(SameValues(Download<uint32_t>(dout, 32), want, c.name));
    CU_EXPECT_OK(cuModuleUnload(module));
  }
}
CUEMU_INSTANTIATE_ARCHS(InstructionTest);

class ModuleTest : public KernelTest {};

// A kernel name that the module does not have: CUDA_ERROR_NOT_FOUND.
TEST_P(ModuleTest, UnknownKernelNameIsNotFound) {
  CUEMU_LOAD_KERNEL(f, "basic", "vector_add");  // the module loads, with vector_add
  EXPECT_NE(f, nullptr);
  std::string why;
  CUmodule module = CachedModule("basic", Arch(), &why);
  CUfunction missing;
  CU_EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&missing, module, "no_such_kernel"));
}
CUEMU_INSTANTIATE_ARCHS(ModuleTest);

// --- Memory -------------------------------------------------------------------------

// More than the device's total memory: CUDA_ERROR_OUT_OF_MEMORY, and the context stays
// usable (a real driver's out-of-memory is not sticky). On a small device (the ctest
// cuda_emulator_small_device sets CUEMU_MEMORY_MB=256) also: two allocations that fit
// alone but not together.
TEST(CudaEmulatorMemory, AllocBeyondTotalMemoryIsOutOfMemory) {
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
  size_t total = 0;
  CU_ASSERT_OK(cuDeviceTotalMem(&total, Device()));
  CUdeviceptr p = 0;
  CU_EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, total + (size_t{1} << 20)));
  CU_EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, size_t{1} << 40));
  if (total <= (size_t{512} << 20)) {
    const size_t more_than_half = total / 2 + (size_t{1} << 20);
    CUdeviceptr half = 0;
    CU_ASSERT_OK(cuMemAlloc(&half, more_than_half));
    CU_EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, more_than_half));
    CU_EXPECT_OK(cuMemFree(half));
    CU_ASSERT_OK(cuMemAlloc(&half, more_than_half));  // the memory came back
    CU_EXPECT_OK(cuMemFree(half));
  }
  CU_ASSERT_OK(cuMemAlloc(&p, 1024));
  CU_EXPECT_OK(cuMemsetD32(p, 7, 256));
  CU_EXPECT_OK(cuMemFree(p));
}

// cuMemFree of a pointer that cuMemAlloc did not return (or already freed):
// CUDA_ERROR_INVALID_VALUE.
TEST(CudaEmulatorMemory, FreeOfUnallocatedPointerIsInvalidValue) {
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(static_cast<CUdeviceptr>(0x1234)));
  CUdeviceptr p = 0;
  CU_ASSERT_OK(cuMemAlloc(&p, 4096));
  CU_ASSERT_OK(cuMemFree(p));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(p));
}

// Page-locked host memory is page-aligned, as the driver's; cuMemFreeHost of anything else
// (or of a block already freed) is CUDA_ERROR_INVALID_VALUE.
TEST(CudaEmulatorMemory, PageLockedHostMemory) {
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
  void* p = nullptr;
  CU_ASSERT_OK(cuMemHostAlloc(&p, 100, 0));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  static_cast<char*>(p)[99] = 1;
  CU_ASSERT_OK(cuMemFreeHost(p));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(p));
  std::vector<char> pageable(100);
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(pageable.data()));
}

// Copies and memsets round-trip through device memory (synchronous forms).
TEST(CudaEmulatorMemory, CopiesAndMemsets) {
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
  std::vector<uint32_t> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint32_t>(i * 2654435761u);
  CUdeviceptr a = 0, b = 0;
  CU_ASSERT_OK(cuMemAlloc(&a, 4000));
  CU_ASSERT_OK(cuMemAlloc(&b, 4000));
  CU_ASSERT_OK(cuMemcpyHtoD(a, host.data(), 4000));
  CU_ASSERT_OK(cuMemcpyDtoD(b, a, 4000));
  CU_ASSERT_OK(cuMemsetD8(b + 4, 0xAB, 3));
  CU_ASSERT_OK(cuMemsetD32(b + 400, 0xDEADBEEF, 10));
  std::vector<uint32_t> got(1000);
  CU_ASSERT_OK(cuMemcpyDtoH(got.data(), b, 4000));
  std::vector<uint32_t> want = host;
  want[1] = (host[1] & 0xFF000000u) | 0x00ABABABu;
  for (int i = 100; i < 110; ++i) want[i] = 0xDEADBEEF;
  EXPECT_TRUE(SameValues(got, want));
  CU_EXPECT_OK(cuMemFree(a));
  CU_EXPECT_OK(cuMemFree(b));
}

// --- Launches -----------------------------------------------------------------------

class LaunchTest : public KernelTest {};

// A 3-D grid of 3-D blocks: every thread sees its own %tid, %ctaid, %ntid, %nctaid.
TEST_P(LaunchTest, ThreeDimensionalGridAndBlocks) {
  CUEMU_LOAD_KERNEL(f, "basic", "thread_coords");
  const Dim grid(3, 2, 2), block(4, 3, 2);
  const unsigned blocks = 12, threads = 24;
  CUdeviceptr out = mem_.Alloc<uint32_t>(4 * blocks * threads);
  CU_ASSERT_OK(Launch(f, grid, block, 0, nullptr, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint32_t> want;
  auto pack = [](unsigned x, unsigned y, unsigned z) { return x | (y << 10) | (z << 20); };
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              want.push_back(pack(tx, ty, tz));
              want.push_back(pack(bx, by, bz));
              want.push_back(pack(4, 3, 2));
              want.push_back(pack(3, 2, 2));
            }
  EXPECT_TRUE(SameValues(Download<uint32_t>(out, want.size()), want));
}

// Block shapes over the limits (1024 threads; 1024 x 1024 x 64): CUDA_ERROR_INVALID_VALUE
// from cuLaunchKernel itself. The largest legal shapes launch.
TEST_P(LaunchTest, BlockOverTheLimitsIsInvalidValue) {
  CUEMU_LOAD_KERNEL(f, "basic", "vector_add");
  CUdeviceptr buf = mem_.Alloc<float>(1);
  const int n = 0;  // every thread returns at once
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1}, {1025}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1}, {32, 32, 2}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1}, {1, 1, 65}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1}, {1, 1025, 1}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1}, {0, 1, 1}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_OK(Launch(f, {1}, {1024}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_OK(Launch(f, {1}, {1, 1024, 1}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_OK(Launch(f, {1}, {16, 1, 64}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_OK(cuCtxSynchronize());
}

// Grid y or z over 65535: CUDA_ERROR_INVALID_VALUE. 65535 itself launches.
TEST_P(LaunchTest, GridOverTheLimitsIsInvalidValue) {
  CUEMU_LOAD_KERNEL(f, "basic", "vector_add");
  CUdeviceptr buf = mem_.Alloc<float>(1);
  const int n = 0;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1, 65536, 1}, {32}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {1, 1, 65536}, {32}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, Launch(f, {0, 1, 1}, {32}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_OK(Launch(f, {1, 65535, 1}, {1}, 0, nullptr, buf, buf, buf, n));
  CU_EXPECT_OK(cuCtxSynchronize());
}

// A kernel with parameters launched with neither kernelParams nor extra, or with a
// nullptr among kernelParams: CUDA_ERROR_INVALID_VALUE.
TEST_P(LaunchTest, MissingParametersAreInvalidValue) {
  CUEMU_LOAD_KERNEL(f, "basic", "vector_add");
  CUdeviceptr buf = mem_.Alloc<float>(32);
  int n = 32;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  void* with_null[] = {&buf, nullptr, &buf, &n};
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, with_null, nullptr));
  void* complete[] = {&buf, &buf, &buf, &n};
  CU_EXPECT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, complete, nullptr));
  CU_EXPECT_OK(cuCtxSynchronize());
}

// The `extra` form: a buffer of the packed parameters. fill_affine(u32 n, u64 out) packs
// into 16 bytes (out at offset 8); any other size is CUDA_ERROR_INVALID_VALUE.
TEST_P(LaunchTest, ExtraParameterBuffer) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  const unsigned n = 100;
  CUdeviceptr out = mem_.Alloc<uint32_t>(128);
  unsigned char buffer[24] = {};
  std::memcpy(buffer, &n, 4);
  std::memcpy(buffer + 8, &out, 8);
  auto launch = [&](size_t size) {
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    return cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra);
  };
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, launch(12));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, launch(20));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, launch(24));
  CU_ASSERT_OK(launch(16));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint32_t> want(128, 0);
  for (unsigned i = 0; i < n; ++i) want[i] = 3 * i + 1;
  EXPECT_TRUE(SameValues(Download<uint32_t>(out, 128), want));
}

// Dynamic shared memory: up to 48 KB without asking; more only after
// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), up to the opt-in
// maximum (232448 bytes) minus the kernel's static shared memory. The module is loaded
// afresh, so the attribute starts at its default.
TEST_P(LaunchTest, DynamicSharedMemoryLimits) {
  std::string ptx = ReadPtx("basic", Arch());
  if (ptx.empty()) {
    if (InCi()) FAIL() << MissingPtxMessage("basic", Arch());
    GTEST_SKIP() << MissingPtxMessage("basic", Arch());
  }
  CUmodule module = nullptr;
  std::string log;
  ASSERT_EQ(LoadPtx(ptx, &module, &log), CUDA_SUCCESS) << log;
  CUfunction reverse, with_static;
  CU_ASSERT_OK(cuModuleGetFunction(&reverse, module, "dyn_shared_reverse"));
  CU_ASSERT_OK(cuModuleGetFunction(&with_static, module, "dyn_plus_static_shared"));

  const int max_floats = 232448 / 4;
  std::vector<float> in = RandomFloats(max_floats, -1000.0f, 1000.0f, 11);
  CUdeviceptr din = mem_.Upload(in), dout = mem_.Alloc<float>(max_floats);
  // Runs `f` over n floats with n * 4 bytes of dynamic shared memory.
  auto run = [&](CUfunction f, int n) { return Launch(f, {1}, {256}, static_cast<unsigned>(n) * 4, nullptr, din, dout, n); };
  auto reversed = [&](int n, float (*plus)(int)) {
    std::vector<float> want(n);
    for (int i = 0; i < n; ++i) want[i] = in[n - 1 - i] + plus(i);
    return want;
  };
  auto zero = [](int) { return 0.0f; };
  auto fixed = [](int i) { return static_cast<float>(i & 1023) + 0.5f; };

  // 48 KB: no attribute needed.
  CU_ASSERT_OK(run(reverse, 12288));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_TRUE(SameValues(Download<float>(dout, 12288), reversed(12288, zero), "48 KB"));
  // 48 KB + 4 and 64 KB without the attribute.
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, run(reverse, 12289));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, run(reverse, 16384));
  // 64 KB with it; more than the attribute's value still fails.
  CU_ASSERT_OK(cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536));
  CU_ASSERT_OK(run(reverse, 16384));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_TRUE(SameValues(Download<float>(dout, 16384), reversed(16384, zero), "64 KB"));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, run(reverse, 16385));
  // The opt-in maximum.
  CU_ASSERT_OK(cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448));
  CU_ASSERT_OK(run(reverse, max_floats));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_TRUE(SameValues(Download<float>(dout, max_floats), reversed(max_floats, zero), "227 KB"));
  // Beyond it: either the attribute or the launch is refused.
  CUresult set = cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232452);
  if (set == CUDA_SUCCESS) {
    CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, run(reverse, max_floats + 1));
  } else {
    EXPECT_EQ(set, CUDA_ERROR_INVALID_VALUE);
  }

  // 4 KB of static shared memory: 232448 - 4096 bytes of dynamic memory is the most.
  const int static_max_floats = (232448 - 4096) / 4;
  CU_ASSERT_OK(cuFuncSetAttribute(with_static, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448 - 4096));
  CU_ASSERT_OK(run(with_static, static_max_floats));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_TRUE(SameValues(Download<float>(dout, static_max_floats), reversed(static_max_floats, fixed), "static + dynamic"));
  set = cuFuncSetAttribute(with_static, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448);
  if (set == CUDA_SUCCESS) {
    CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, run(with_static, max_floats));
  } else {
    EXPECT_EQ(set, CUDA_ERROR_INVALID_VALUE);
  }
  CU_EXPECT_OK(cuModuleUnload(module));
}

// Shared memory holds 0xFF bytes at the start of every block: a float read before any
// write is NaN (all bits set), an int is -1; later blocks do not see earlier blocks'
// values.
TEST_P(LaunchTest, SharedMemoryStartsAsAllOnes) {
  CUEMU_LOAD_KERNEL(f, "basic", "shared_uninitialized");
  const unsigned blocks = 4;
  CUdeviceptr fout = mem_.Alloc<float>(64 * blocks), iout = mem_.Alloc<int>(64 * blocks);
  CU_ASSERT_OK(Launch(f, {blocks}, {32}, 0, nullptr, fout, iout));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> floats = Download<float>(fout, 64 * blocks);
  std::vector<int> ints = Download<int>(iout, 64 * blocks);
  for (unsigned i = 0; i < 32 * blocks; ++i) {
    EXPECT_EQ(FloatBits(floats[i]), 0xFFFFFFFFu) << "float read before write, thread " << i;
    EXPECT_EQ(ints[i], -1) << "int read before write, thread " << i;
    EXPECT_EQ(floats[32 * blocks + i], 1.0f);
    EXPECT_EQ(ints[32 * blocks + i], static_cast<int>(i / 32));
  }
}

CUEMU_INSTANTIATE_ARCHS(LaunchTest);

// --- Streams: work runs when synchronized -------------------------------------------

class StreamTest : public KernelTest {
 protected:
  void TearDown() override {
    for (CUstream s : streams_) cuStreamDestroy(s);
    KernelTest::TearDown();
  }
  CUstream NewStream(unsigned flags) {
    CUstream s = nullptr;
    Check(cuStreamCreate(&s, flags), "cuStreamCreate");
    streams_.push_back(s);
    return s;
  }
  std::vector<CUstream> streams_;
};

// cuMemcpyDtoHAsync is queued: without cuStreamSynchronize the host buffer still holds
// its old contents (a missing synchronization shows as a wrong result).
TEST_P(StreamTest, AsyncCopyWithoutSyncLeavesHostBufferUnchanged) {
  CUstream s = NewStream(CU_STREAM_DEFAULT);
  CUdeviceptr d = mem_.Alloc<uint32_t>(256);
  CU_ASSERT_OK(cuMemsetD32(d, 7, 256));
  std::vector<uint32_t> host(256, 0xABABABABu);
  CU_ASSERT_OK(cuMemcpyDtoHAsync(host.data(), d, 256 * 4, s));
  EXPECT_TRUE(SameValues(host, std::vector<uint32_t>(256, 0xABABABABu), "before the sync"));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(SameValues(host, std::vector<uint32_t>(256, 7u), "after the sync"));
}

// A launch and an async memset on a stream run in order when an event recorded after
// them is synchronized.
TEST_P(StreamTest, EventSynchronizeRunsTheQueuedWork) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  const unsigned n = 1000;
  CUdeviceptr out = mem_.Alloc<uint32_t>(n);
  std::vector<uint32_t> host(n, 0);
  CU_ASSERT_OK(cuMemsetD32Async(out, 5, n, s));
  CU_ASSERT_OK(Launch(f, {Blocks(n / 2, 128)}, {128}, 0, s, n / 2, out));
  CU_ASSERT_OK(cuMemcpyDtoHAsync(host.data(), out, n * 4, s));
  CUevent done;
  CU_ASSERT_OK(cuEventCreate(&done, CU_EVENT_DEFAULT));
  CU_ASSERT_OK(cuEventRecord(done, s));
  EXPECT_TRUE(SameValues(host, std::vector<uint32_t>(n, 0u), "before the sync"));
  CU_ASSERT_OK(cuEventSynchronize(done));
  std::vector<uint32_t> want(n, 5);
  for (unsigned i = 0; i < n / 2; ++i) want[i] = 3 * i + 1;
  EXPECT_TRUE(SameValues(host, want, "after the sync"));
  CU_EXPECT_OK(cuEventDestroy(done));
}

// A kernel on a CU_STREAM_NON_BLOCKING stream is not run by a synchronous copy (which
// synchronizes only the NULL stream and blocking streams): the copy reads the old
// contents until the stream is synchronized.
TEST_P(StreamTest, SynchronousCopyDoesNotWaitForNonBlockingStream) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  const unsigned n = 256;
  CUdeviceptr out = mem_.Alloc<uint32_t>(n);
  CU_ASSERT_OK(Launch(f, {2}, {128}, 0, s, n, out));
  EXPECT_TRUE(SameValues(Download<uint32_t>(out, n), std::vector<uint32_t>(n, 0u), "before the sync"));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  std::vector<uint32_t> want(n);
  for (unsigned i = 0; i < n; ++i) want[i] = 3 * i + 1;
  EXPECT_TRUE(SameValues(Download<uint32_t>(out, n), want, "after the sync"));
}

// A kernel on the NULL stream or on a blocking stream runs before a synchronous copy.
TEST_P(StreamTest, SynchronousCopyWaitsForNullAndBlockingStreams) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_DEFAULT);
  const unsigned n = 256;
  std::vector<uint32_t> want(n);
  for (unsigned i = 0; i < n; ++i) want[i] = 3 * i + 1;
  CUdeviceptr a = mem_.Alloc<uint32_t>(n), b = mem_.Alloc<uint32_t>(n);
  CU_ASSERT_OK(Launch(f, {2}, {128}, 0, nullptr, n, a));
  EXPECT_TRUE(SameValues(Download<uint32_t>(a, n), want, "NULL stream"));
  CU_ASSERT_OK(Launch(f, {2}, {128}, 0, s, n, b));
  EXPECT_TRUE(SameValues(Download<uint32_t>(b, n), want, "blocking stream"));
}

// cuCtxSynchronize runs the work of every stream.
TEST_P(StreamTest, ContextSynchronizeRunsAllStreams) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s1 = NewStream(CU_STREAM_NON_BLOCKING), s2 = NewStream(CU_STREAM_NON_BLOCKING);
  const unsigned n = 128;
  CUdeviceptr a = mem_.Alloc<uint32_t>(n), b = mem_.Alloc<uint32_t>(n);
  std::vector<uint32_t> ha(n, 0), hb(n, 0);
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s1, n, a));
  CU_ASSERT_OK(cuMemcpyDtoHAsync(ha.data(), a, n * 4, s1));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s2, n / 2, b));
  CU_ASSERT_OK(cuMemcpyDtoHAsync(hb.data(), b, n * 4, s2));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<uint32_t> want_a(n), want_b(n, 0);
  for (unsigned i = 0; i < n; ++i) want_a[i] = 3 * i + 1;
  for (unsigned i = 0; i < n / 2; ++i) want_b[i] = 3 * i + 1;
  EXPECT_TRUE(SameValues(ha, want_a));
  EXPECT_TRUE(SameValues(hb, want_b));
}

CUEMU_INSTANTIATE_ARCHS(StreamTest);

// CU_STREAM_PER_THREAD is each thread's own default stream: another thread's
// synchronization of its own does not run this one's work. It is a blocking stream: work
// on the legacy default stream waits for it, and it for earlier legacy work.
TEST(CudaEmulatorPerThreadStream, EachThreadHasItsOwn) {
  Primary();
  CUcontext ctx = PrimaryContext();
  CU_ASSERT_OK(cuCtxSetCurrent(ctx));
  DeviceMemory memory;
  const size_t n = 64;
  const CUdeviceptr a = memory.Alloc<uint32_t>(n), b = memory.Alloc<uint32_t>(n);
  uint32_t* host_a = nullptr;
  CU_ASSERT_OK(cuemuDeviceMemory(a, n * 4, reinterpret_cast<void**>(&host_a)));  // a view, no synchronization
  auto on_thread = [&](auto call) { return OnAnotherThread(ctx, call); };
  // Thread 1 queues on its stream; thread 2's and this thread's per-thread synchronizations
  // leave that work queued.
  CU_ASSERT_OK(on_thread([&] { return cuMemsetD32Async(a, 7, n, CU_STREAM_PER_THREAD); }));
  CU_ASSERT_OK(on_thread([&] { return cuStreamSynchronize(CU_STREAM_PER_THREAD); }));
  CU_ASSERT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  EXPECT_EQ(host_a[0], 0u) << "another thread's per-thread stream ran";
  CU_ASSERT_OK(cuStreamQuery(CU_STREAM_PER_THREAD));
  // Legacy work waits for it.
  CU_ASSERT_OK(cuMemcpyDtoDAsync(b, a, n * 4, CU_STREAM_LEGACY));
  CU_ASSERT_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT_EQ(Download<uint32_t>(b, n), std::vector<uint32_t>(n, 7u));
  // It waits for earlier legacy work.
  CU_ASSERT_OK(cuMemsetD32Async(a, 9, n, CU_STREAM_LEGACY));
  CU_ASSERT_OK(cuMemcpyDtoDAsync(b, a, n * 4, CU_STREAM_PER_THREAD));
  CU_ASSERT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  std::vector<uint32_t> seen(n);
  CU_ASSERT_OK(cuMemcpyDtoHAsync(seen.data(), b, n * 4, CU_STREAM_PER_THREAD));
  CU_ASSERT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  EXPECT_EQ(seen, std::vector<uint32_t>(n, 9u));
  // An event recorded on one thread's per-thread stream orders another stream's work.
  CUevent event;
  CU_ASSERT_OK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  CU_ASSERT_OK(on_thread([&] {
    if (CUresult r = cuMemsetD32Async(a, 11, n, CU_STREAM_PER_THREAD)) return r;
    return cuEventRecord(event, CU_STREAM_PER_THREAD);
  }));
  CU_EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuEventQuery(event));
  CUstream s = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_ASSERT_OK(cuStreamWaitEvent(s, event, 0));
  CU_ASSERT_OK(cuMemcpyDtoDAsync(b, a, n * 4, s));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  CU_ASSERT_OK(cuMemcpyDtoHAsync(seen.data(), b, n * 4, s));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(seen, std::vector<uint32_t>(n, 11u));
  CU_EXPECT_OK(cuEventQuery(event));
  // Likewise an event recorded on the legacy default stream.
  CU_ASSERT_OK(cuMemsetD32Async(a, 13, n, CU_STREAM_LEGACY));
  CU_ASSERT_OK(cuEventRecord(event, CU_STREAM_LEGACY));
  CU_ASSERT_OK(cuStreamWaitEvent(s, event, 0));
  CU_ASSERT_OK(cuMemcpyDtoDAsync(b, a, n * 4, s));
  CU_ASSERT_OK(cuMemcpyDtoHAsync(seen.data(), b, n * 4, s));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(seen, std::vector<uint32_t>(n, 13u));
  CU_EXPECT_OK(cuStreamDestroy(s));
  CU_EXPECT_OK(cuEventDestroy(event));
}

// --- Graphs: stream capture, launch, update -------------------------------------------

class GraphTest : public StreamTest {
 protected:
  void TearDown() override {
    for (CUgraphExec e : execs_) cuGraphExecDestroy(e);
    for (CUgraph g : graphs_) cuGraphDestroy(g);
    StreamTest::TearDown();
  }
  // fill_affine(n, out) on `s`, captured into a graph.
  CUgraph CaptureFill(CUfunction f, CUstream s, unsigned n, CUdeviceptr out) {
    Check(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    Check(Launch(f, {Blocks(n, 128)}, {128}, 0, s, n, out), "cuLaunchKernel");
    return EndCapture(s);
  }
  CUgraph EndCapture(CUstream s) {
    CUgraph g = nullptr;
    Check(cuStreamEndCapture(s, &g), "cuStreamEndCapture");
    graphs_.push_back(g);
    return g;
  }
  CUgraphExec Instantiate(CUgraph g) {
    CUgraphExec e = nullptr;
    Check(cuGraphInstantiate(&e, g, 0), "cuGraphInstantiate");
    execs_.push_back(e);
    return e;
  }
  static std::vector<uint32_t> Affine(unsigned n, unsigned size, uint32_t rest = 0) {
    std::vector<uint32_t> v(size, rest);
    for (unsigned i = 0; i < n; ++i) v[i] = 3 * i + 1;
    return v;
  }
  std::vector<CUgraph> graphs_;
  std::vector<CUgraphExec> execs_;
};

// Captured work is recorded, not run; each launch of the instantiated graph runs it all, in
// the order it was captured.
TEST_P(GraphTest, CapturedWorkRunsEachTimeTheGraphIsLaunched) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  const unsigned n = 256;
  CUdeviceptr out = mem_.Alloc<uint32_t>(n);
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus status;
  CU_ASSERT_OK(cuStreamIsCapturing(s, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cuuint64_t id = 0;
  CUgraph capturing = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t ndeps = 9;
  CU_ASSERT_OK(cuStreamGetCaptureInfo(s, &status, &id, &capturing, &deps, nullptr, &ndeps));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(id, 0u);
  EXPECT_NE(capturing, nullptr);
  EXPECT_EQ(ndeps, 0u);
  CU_ASSERT_OK(cuMemsetD32Async(out, 5, n, s));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, n / 2, out));
  CU_ASSERT_OK(cuStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &ndeps));
  EXPECT_EQ(ndeps, 1u);
  CUgraph g = EndCapture(s);
  CU_ASSERT_OK(cuStreamGetCaptureInfo(s, &status, nullptr, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  CU_ASSERT_OK(cuStreamGetCaptureInfo(CU_STREAM_LEGACY, &status, nullptr, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(SameValues(Download<uint32_t>(out, n), std::vector<uint32_t>(n, 0u), "after the capture"));
  size_t count = 0;
  CU_ASSERT_OK(cuGraphGetNodes(g, nullptr, &count));
  ASSERT_EQ(count, 2u);
  CUgraphNode nodes[2];
  CU_ASSERT_OK(cuGraphGetNodes(g, nodes, &count));
  CUgraphNodeType type;
  CU_ASSERT_OK(cuGraphNodeGetType(nodes[0], &type));
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMSET);
  CU_ASSERT_OK(cuGraphNodeGetType(nodes[1], &type));
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_KERNEL);
  CUgraphExec e = Instantiate(g);
  for (int launch = 0; launch < 2; ++launch) {
    CU_ASSERT_OK(cuMemsetD32(out, 9, n));
    CU_ASSERT_OK(cuGraphLaunch(e, s));
    EXPECT_TRUE(SameValues(Download<uint32_t>(out, n), std::vector<uint32_t>(n, 9u), "before the sync"));
    CU_ASSERT_OK(cuStreamSynchronize(s));
    EXPECT_TRUE(SameValues(Download<uint32_t>(out, n), Affine(n / 2, n, 5), "launch " + std::to_string(launch)));
  }
}

// What needs the device at once, or an ordering the capture cannot record, fails during
// capture and invalidates it: the stream's later work and cuStreamEndCapture say so, and
// the stream works normally afterwards.
TEST_P(GraphTest, IllegalCallsDuringCaptureFailAndInvalidateIt) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  CUdeviceptr out = mem_.Alloc<uint32_t>(128);
  CUevent event;
  CU_ASSERT_OK(cuEventCreate(&event, CU_EVENT_DEFAULT));
  CU_ASSERT_OK(cuEventRecord(event, nullptr));
  std::vector<uint32_t> host(128);
  const CUdeviceptr spare = mem_.Alloc<uint32_t>(1);
  struct Case {
    const char* what;
    CUresult expected;
    std::function<CUresult()> call;
  };
  const std::vector<Case> cases = {
      {"cuMemAlloc", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
       [] {
         CUdeviceptr p;
         return cuMemAlloc(&p, 64);
       }},
      {"cuMemFree", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [&] { return cuMemFree(spare); }},
      {"cuMemAllocHost", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
       [] {
         void* p;
         return cuMemAllocHost(&p, 64);
       }},
      {"cuMemcpyDtoH", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [&] { return cuMemcpyDtoH(host.data(), out, 512); }},
      {"cuMemsetD32", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [&] { return cuMemsetD32(out, 1, 128); }},
      {"cuCtxSynchronize", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [] { return cuCtxSynchronize(); }},
      {"cuStreamSynchronize", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [&] { return cuStreamSynchronize(s); }},
      {"cuStreamQuery", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [&] { return cuStreamQuery(s); }},
      {"cuStreamWaitEvent", CUDA_ERROR_STREAM_CAPTURE_ISOLATION, [&] { return cuStreamWaitEvent(s, event, 0); }},
      {"cuEventRecord", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, [&] { return cuEventRecord(event, s); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, 128u, out));
    CU_EXPECT_RESULT(c.expected, c.call());
    CUstreamCaptureStatus status;
    CU_ASSERT_OK(cuStreamIsCapturing(s, &status));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, Launch(f, {1}, {128}, 0, s, 128u, out));
    CUgraph g = reinterpret_cast<CUgraph>(1);
    CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    EXPECT_EQ(g, nullptr);
    CU_ASSERT_OK(cuStreamIsCapturing(s, &status));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  }
  CU_ASSERT_OK(cuMemsetD32(out, 0, 128));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, 128u, out));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(SameValues(Download<uint32_t>(out, 128), Affine(128, 128)));
  CU_EXPECT_OK(cuEventDestroy(event));
}

// The capture mode decides who else may make such calls: in global mode no thread may, in
// relaxed mode every thread may (and the capture goes on).
TEST_P(GraphTest, CaptureModesBoundOtherThreads) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  CUdeviceptr out = mem_.Alloc<uint32_t>(128);
  CUcontext ctx = nullptr;
  CU_ASSERT_OK(cuCtxGetCurrent(&ctx));
  auto alloc_elsewhere = [&] {
    CUresult result = CUDA_SUCCESS;
    std::thread t([&] {
      cuCtxSetCurrent(ctx);
      CUdeviceptr p = 0;
      result = cuMemAlloc(&p, 64);
      if (result == CUDA_SUCCESS) cuMemFree(p);
    });
    t.join();
    return result;
  };
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CU_EXPECT_OK(alloc_elsewhere());
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, 128u, out));
  EndCapture(s);
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, alloc_elsewhere());
  CUgraph g = nullptr;
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  // Ending the capture belongs to the thread that began it (unless relaxed).
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUresult elsewhere = CUDA_SUCCESS;
  std::thread t([&] {
    cuCtxSetCurrent(ctx);
    CUgraph other = nullptr;
    elsewhere = cuStreamEndCapture(s, &other);
  });
  t.join();
  EXPECT_EQ(elsewhere, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  EndCapture(s);
}

// A free may synchronize the device: from another thread it invalidates a capture in
// thread-local mode too (and fails), not a relaxed one. Other calls from another thread
// (an allocation, an event recorded on another stream) leave a thread-local capture be.
TEST_P(GraphTest, FreesOfOtherThreadsBreakThreadLocalCaptures) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING), other = NewStream(CU_STREAM_NON_BLOCKING);
  CUdeviceptr out = mem_.Alloc<uint32_t>(128);
  CUcontext ctx = nullptr;
  CU_ASSERT_OK(cuCtxGetCurrent(&ctx));
  CUevent event;
  CU_ASSERT_OK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  auto elsewhere = [&](auto call) { return OnAnotherThread(ctx, call); };
  CUdeviceptr spare[3] = {};
  void* host[2] = {};
  for (CUdeviceptr& p : spare) CU_ASSERT_OK(cuMemAlloc(&p, 64));
  for (void*& p : host) CU_ASSERT_OK(cuMemAllocHost(&p, 64));
  // Thread-local: an allocation and an event record elsewhere are fine, a free is not.
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, 128u, out));
  CUdeviceptr p = 0;
  CU_EXPECT_OK(elsewhere([&] { return cuMemAlloc(&p, 64); }));
  CU_EXPECT_OK(elsewhere([&] { return cuEventRecord(event, other); }));
  CU_EXPECT_OK(elsewhere([&] { return cuStreamWaitEvent(other, event, 0); }));
  CUstreamCaptureStatus status;
  CU_ASSERT_OK(cuStreamIsCapturing(s, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, elsewhere([&] { return cuMemFree(spare[0]); }));
  CUgraph g = nullptr;
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, elsewhere([&] { return cuMemFreeHost(host[0]); }));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  // Global: likewise.
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, elsewhere([&] { return cuMemFree(spare[1]); }));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  // Relaxed: the frees happen and the capture goes on.
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, 128u, out));
  CU_EXPECT_OK(elsewhere([&] { return cuMemFree(spare[2]); }));
  CU_EXPECT_OK(elsewhere([&] { return cuMemFreeHost(host[1]); }));
  EndCapture(s);
  for (CUdeviceptr q : {spare[0], spare[1], p}) CU_EXPECT_OK(cuMemFree(q));
  CU_EXPECT_OK(cuMemFreeHost(host[0]));
  CU_EXPECT_OK(cuEventDestroy(event));
}

// The legacy default stream is not captured; a capture does not nest; cuStreamEndCapture
// needs one.
TEST_P(GraphTest, CaptureNeedsAStreamOfItsOwn) {
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraph g = nullptr;
  CU_EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(s, &g));
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EndCapture(s);
  // A blocking stream's capture cannot wait for the legacy stream's work: using that stream
  // breaks it.
  CUstream blocking = NewStream(CU_STREAM_DEFAULT);
  CUdeviceptr out = mem_.Alloc<uint32_t>(16);
  CU_ASSERT_OK(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD32Async(out, 1, 16, nullptr));
  CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(blocking, &g));
}

// CUEMU_INVALIDATE_CAPTURES=1 makes every capture fail at its end (for programs' tests of
// what they do then); unset, the same capture succeeds.
TEST_P(GraphTest, CapturesFailOnRequest) {
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  CUdeviceptr out = mem_.Alloc<uint32_t>(16);
  CUgraph g = nullptr;
  {
    cuemu_test::ScopedEnv fail("CUEMU_INVALIDATE_CAPTURES", "1");
    CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_ASSERT_OK(cuMemsetD32Async(out, 1, 16, s));
    CU_EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    EXPECT_EQ(g, nullptr);
  }
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CU_ASSERT_OK(cuMemsetD32Async(out, 1, 16, s));
  CU_ASSERT_OK(cuStreamEndCapture(s, &g));
  ASSERT_NE(g, nullptr);
  CU_ASSERT_OK(cuGraphDestroy(g));
}

// cuGraphExecUpdate takes a graph of the same nodes with other parameters (here another
// output buffer); a launch already queued keeps the parameters it was launched with.
TEST_P(GraphTest, UpdateChangesParametersNotTheGraph) {
  CUEMU_LOAD_KERNEL(f, "basic", "fill_affine");
  CUEMU_LOAD_KERNEL(other, "basic", "vector_add");
  CUstream s = NewStream(CU_STREAM_NON_BLOCKING);
  const unsigned n = 128;
  CUdeviceptr a = mem_.Alloc<uint32_t>(n), b = mem_.Alloc<uint32_t>(n);
  CUgraphExec e = Instantiate(CaptureFill(f, s, n, a));
  CU_ASSERT_OK(cuGraphLaunch(e, s));
  CUgraphExecUpdateResultInfo info;
  CU_ASSERT_OK(cuGraphExecUpdate(e, CaptureFill(f, s, n / 2, b), &info));
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  CU_ASSERT_OK(cuGraphLaunch(e, s));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(SameValues(Download<uint32_t>(a, n), Affine(n, n), "the launch before the update"));
  EXPECT_TRUE(SameValues(Download<uint32_t>(b, n), Affine(n / 2, n), "the launch after it"));
  // Another kernel, or another number of nodes, is not an update.
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_ASSERT_OK(Launch(other, {1}, {128}, 0, s, a, a, b, n));
  CU_EXPECT_RESULT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(e, EndCapture(s), &info));
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE);
  CU_ASSERT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, n, a));
  CU_ASSERT_OK(Launch(f, {1}, {128}, 0, s, n, b));
  CU_EXPECT_RESULT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(e, EndCapture(s), &info));
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  // The graph can go once instantiated; the instantiation can go with a launch queued.
  CU_ASSERT_OK(cuMemsetD32(a, 0, n));
  CUgraph g = CaptureFill(f, s, n, a);
  CUgraphExec last = nullptr;
  CU_ASSERT_OK(cuGraphInstantiate(&last, g, 0));
  graphs_.pop_back();
  CU_ASSERT_OK(cuGraphDestroy(g));
  CU_ASSERT_OK(cuGraphLaunch(last, s));
  CU_ASSERT_OK(cuGraphExecDestroy(last));
  CU_ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(SameValues(Download<uint32_t>(a, n), Affine(n, n), "launched, then destroyed"));
}

CUEMU_INSTANTIATE_ARCHS(GraphTest);

}  // namespace
}  // namespace cuemu_test
