// runtime/cuda_device: the runtime's CUDA device on the CUDA emulator: the caching
// allocator, copies, PTX kernels launched on a stream, timing points, errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/cuda_device.h"

namespace graphjit {
namespace {

#ifdef GRAPHJIT_TEST_HAVE_CUDA_H

// out[i] = a[i] * 2 + 1 for i < n, hand-written PTX (no toolkit needed to make it).
const char* kScale = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry scale(.param .u64 a, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
DONE:
  ret;
}
)";

std::shared_ptr<CudaDevice> Emulator() {
  auto library = CudaDriverLibrary(DeviceKind::kGpuEmu, "");
  if (!library.ok()) return nullptr;
  auto device = CudaDevice::Get(*library);
  return device.ok() ? *device : nullptr;
}

#define REQUIRE_EMULATOR(device)                                                     \
  auto device = Emulator();                                                          \
  if (!device) {                                                                     \
    const char* ci = std::getenv("CI");                                              \
    if (ci && std::string(ci) == "true") FAIL() << "no CUDA emulator in this build"; \
    GTEST_SKIP() << "no CUDA emulator (no CUDA toolkit)";                            \
  }

TEST(CudaDevice, OpenedOncePerLibrary) {
  REQUIRE_EMULATOR(device);
  EXPECT_EQ(device, Emulator());
  EXPECT_TRUE(device->info().emulated);
  EXPECT_EQ(device->info().compute_capability_major, 9);
}

TEST(CudaDevice, FreedBlocksAreReusedBySizeClass) {
  REQUIRE_EMULATOR(device);
  const size_t in_use = device->bytes_in_use();
  auto a = device->Allocate(1000);  // a 1024-byte block
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(device->bytes_in_use(), in_use + 1024);
  device->Free(*a);
  EXPECT_EQ(device->bytes_in_use(), in_use);
  EXPECT_GE(device->bytes_cached(), 1024u);
  auto b = device->Allocate(600);  // the same size class: the same block
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  auto c = device->Allocate(100);  // 256 bytes: another block
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*c, *a);
  device->Free(*b);
  device->Free(*c);
}

TEST(CudaDevice, KernelsRunOnAStream) {
  REQUIRE_EMULATOR(device);
  auto stream = device->NewStream();
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  auto kernel = device->LoadKernel(kScale, "scale");
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  auto again = device->LoadKernel(kScale, "scale");  // the module is loaded once
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->function, kernel->function);
  int n = 1000;
  std::vector<float> a(n), out(n);
  for (int i = 0; i < n; ++i) a[i] = 0.5f * i;
  uint64_t da = *device->Allocate(4 * n), dout = *device->Allocate(4 * n);
  ASSERT_TRUE((*stream)->CopyToDevice(da, a.data(), 4 * n).ok());
  auto start = (*stream)->Record();
  ASSERT_TRUE(start.ok());
  const unsigned grid[3] = {static_cast<unsigned>((n + 127) / 128), 1, 1}, block[3] = {128, 1, 1};
  Status launched = (*stream)->Launch(*kernel, grid, block, 0, {&da, &dout, &n});
  ASSERT_TRUE(launched.ok()) << launched.message();
  auto end = (*stream)->Record();
  ASSERT_TRUE((*stream)->CopyToHost(out.data(), dout, 4 * n).ok());
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], a[i] * 2 + 1) << i;
  auto ms = (*stream)->ElapsedMillis(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  EXPECT_GE(*ms, 0.0f);
  device->Free(da);
  device->Free(dout);
}

// Pageable host memory is copied through page-locked staging: the copy takes the bytes as
// they were at the call (the emulator runs queued copies at the next synchronization, so
// an unstaged copy would see the later writes), and a staging block is not reused by the
// next copy before the stream is synchronized.
TEST(CudaDevice, PageableCopiesAreStagedThroughPinnedMemory) {
  REQUIRE_EMULATOR(device);
  auto stream = device->NewStream();
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  const size_t n = (size_t{3} << 20) / 4 + 17;  // 3 MiB and a bit: chunks and a remainder
  std::vector<float> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = -static_cast<float>(i);
  const std::vector<float> a0 = a, b0 = b;
  EXPECT_FALSE(device->IsPinned(a.data(), 4 * n));
  EXPECT_STREQ(device->HostMemoryKind(a.data(), 4 * n), "staged");
  EXPECT_STREQ(device->HostMemoryKind(a.data(), 64), "pageable");
  Allocator& pinned = *device->host_allocator();
  const int64_t pinned_in_use = pinned.stats().bytes_in_use;
  uint64_t da = *device->Allocate(4 * n), db = *device->Allocate(4 * n);
  ASSERT_TRUE((*stream)->CopyToDevice(da, a.data(), 4 * n).ok());
  std::fill(a.begin(), a.end(), 7.0f);  // the caller may reuse its memory at once
  ASSERT_TRUE((*stream)->CopyToDevice(db, b.data(), 4 * n).ok());
  EXPECT_EQ(pinned.stats().bytes_in_use, pinned_in_use + static_cast<int64_t>(8 * n));  // two staging blocks
  ASSERT_TRUE((*stream)->CopyToHost(out.data(), da, 4 * n).ok());
  EXPECT_EQ(out, a0);
  ASSERT_TRUE((*stream)->CopyToHost(out.data(), db, 4 * n).ok());
  EXPECT_EQ(out, b0);
  EXPECT_EQ(pinned.stats().bytes_in_use, pinned_in_use);  // given back at the synchronization
  // Page-locked memory is copied from directly, when the stream runs the copy.
  auto host = pinned.Allocate(4 * n);
  ASSERT_TRUE(host.ok());
  float* p = static_cast<float*>(*host);
  EXPECT_TRUE(device->IsPinned(p, 4 * n));
  EXPECT_FALSE(device->IsPinned(p + 1, 4 * n + 4096 * 64));  // past the block's end
  EXPECT_STREQ(device->HostMemoryKind(p, 4 * n), "pinned");
  std::copy(b0.begin(), b0.end(), p);
  const int64_t allocations = pinned.stats().num_allocations;
  ASSERT_TRUE((*stream)->CopyToDevice(da, p, 4 * n).ok());
  EXPECT_EQ(pinned.stats().num_allocations, allocations);  // no staging
  ASSERT_TRUE((*stream)->CopyToHost(out.data(), da, 4 * n).ok());
  EXPECT_EQ(out, b0);
  pinned.Deallocate(p, 4 * n);
  device->Free(da);
  device->Free(db);
}

TEST(CudaDevice, ErrorsNameTheCallAndTheDevice) {
  REQUIRE_EMULATOR(device);
  auto missing = device->LoadKernel(kScale, "no_such_kernel");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cuModuleGetFunction failed on NVIDIA H100 SXM (graphjit CUDA emulator): "
                                            "CUDA_ERROR_NOT_FOUND"),
            std::string::npos)
      << missing.status().message();
  auto bad = device->LoadKernel("not PTX", "scale");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cuModuleLoadData failed"), std::string::npos) << bad.status().message();
  auto huge = device->Allocate(size_t{1} << 40);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), Code::kResourceExhausted) << huge.status().message();
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (std::filesystem::exists(stub)) {
    auto no_gpu = CudaDevice::Get(stub);
    ASSERT_FALSE(no_gpu.ok());
    EXPECT_NE(no_gpu.status().message().find("no GPU"), std::string::npos) << no_gpu.status().message();
  }
}

// A free may synchronize the device, which breaks a capture under way (the emulator, as the
// strict reading of the driver's rules, invalidates it from any thread): an allocation that
// must give the cache back first waits for the capture to end. (Last in this file: it sets
// the process's memory limit.)
TEST(CudaDevice, TheCacheIsNotGivenBackDuringACapture) {
  REQUIRE_EMULATOR(device);
  ASSERT_EQ(device->LimitMemory(size_t{96} << 20), size_t{96} << 20) << "another test set the process's limit";
  auto a = device->Allocate(256), b = device->Allocate(256);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_LT(device->bytes_in_use(), size_t{16} << 20);
  auto cached = device->Allocate(size_t{40} << 20);  // a block of the 64 MiB class, kept in the cache
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  device->Free(*cached);
  auto stream = device->NewStream();
  ASSERT_TRUE(stream.ok());
  std::atomic<bool> capturing{false}, ending{false};
  Status captured = Status::Ok();
  std::thread capture([&] {
    captured = (*stream)->BeginCapture();
    capturing = true;
    if (!captured.ok()) return;
    captured = (*stream)->CopyOnDevice(*b, *a, 256);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ending = true;
    auto graph = (*stream)->EndCapture();
    if (captured.ok()) captured = graph.status();
  });
  while (!capturing) std::this_thread::yield();
  auto big = device->Allocate(size_t{20} << 20);  // 32 MiB more: the cache must go first
  const bool after_the_capture = ending;
  capture.join();
  EXPECT_TRUE(captured.ok()) << captured.ToString();
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_TRUE(after_the_capture) << "the cache was given back while the capture was under way";
  EXPECT_EQ(device->bytes_cached(), 0u) << "the cache was not given back";
  for (uint64_t address : {*big, *a, *b}) device->Free(address);
}

#endif

}  // namespace
}  // namespace graphjit
