// Several emulated devices (CUEMU_DEVICE_COUNT): each with its own primary context and
// memory at addresses of its own, and no peer access between them. The device count is
// read by cuInit, once per process: the tests of two devices (named *TwoDevices*, here and
// in the stand-ins' tests) run in a process of their own, this test binary started again
// with CUEMU_DEVICE_COUNT=2 (they skip themselves in a process of another count).
#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "tests/cuda_emulator/cuemu_test_util.h"

namespace cuemu_test {
namespace {

// This binary run with `env` (NAME=value ...) and a gtest filter: its exit status and output.
int RunSelf(const std::string& env, const std::string& filter, std::string* output) {
  std::vector<char> self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return -1;
  const std::string command = "env " + env + " '" + std::string(self.data(), n) + "' --gtest_filter='" + filter + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  while (size_t got = fread(buffer, 1, sizeof buffer, pipe)) output->append(buffer, got);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CudaEmulatorDevices, SeveralDevicesInAProcessOfTheirOwn) {
  std::string output;
  EXPECT_EQ(RunSelf("CUEMU_DEVICE_COUNT=2 CUEMU_QUIET=1", "*TwoDevices*", &output), 0) << output;
  EXPECT_NE(output.find("[  PASSED  ]"), std::string::npos) << output;
  EXPECT_EQ(output.find("SKIPPED"), std::string::npos) << "every test of two devices runs:\n" << output;
}

TEST(CudaEmulatorDevices, BadDeviceCountsFailCuInit) {
  for (const char* count : {"0", "9", "two"}) {
    std::string output;
    EXPECT_EQ(RunSelf(std::string("CUEMU_DEVICE_COUNT=") + count, "CudaEmulatorBadDeviceCount.*", &output), 0) << output;
    EXPECT_NE(output.find("CUEMU_DEVICE_COUNT='" + std::string(count) + "'"), std::string::npos) << output;
    EXPECT_EQ(output.find("SKIPPED"), std::string::npos) << output;
  }
}

// (Run by BadDeviceCountsFailCuInit.)
TEST(CudaEmulatorBadDeviceCount, CuInitFails) {
  const char* count = std::getenv("CUEMU_DEVICE_COUNT");
  if (!count || std::string(count) == "1" || std::string(count) == "2") GTEST_SKIP() << "needs a bad CUEMU_DEVICE_COUNT";
  EXPECT_EQ(cuInit(0), CUDA_ERROR_INVALID_VALUE);
  int n = -1;
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
}

// The fixture of the tests of two devices: both primary contexts, device 0's current.
class CudaEmulatorTwoDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* count = std::getenv("CUEMU_DEVICE_COUNT");
    if (!count || std::string(count) != "2")
      GTEST_SKIP() << "needs CUEMU_DEVICE_COUNT=2 (run by SeveralDevicesInAProcessOfTheirOwn)";
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    for (int d = 0; d < 2; ++d) {
      ASSERT_EQ(cuDeviceGet(&dev_[d], d), CUDA_SUCCESS);
      ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_[d], dev_[d]), CUDA_SUCCESS);
    }
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (!ctx_[0]) return;
    for (int d = 0; d < 2; ++d) {
      cuCtxSetCurrent(ctx_[d]);
      for (CUdeviceptr p : owned_[d]) cuMemFree(p);
      cuDevicePrimaryCtxRelease(dev_[d]);
    }
  }
  CUdeviceptr Alloc(int d, size_t bytes) {
    CUdeviceptr p = 0;
    Check(cuCtxSetCurrent(ctx_[d]), "cuCtxSetCurrent");
    Check(cuMemAlloc(&p, bytes), "cuMemAlloc");
    owned_[d].push_back(p);
    return p;
  }
  CUdevice dev_[2] = {0, 0};
  CUcontext ctx_[2] = {nullptr, nullptr};
  std::vector<CUdeviceptr> owned_[2];
};

TEST_F(CudaEmulatorTwoDevices, EachDeviceIsTheModel) {
  int count = 0;
  CU_ASSERT_OK(cuDeviceGetCount(&count));
  EXPECT_EQ(count, 2);
  CUdevice d = -1;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 2));
  char name0[256] = {}, name1[256] = {};
  CU_ASSERT_OK(cuDeviceGetName(name0, sizeof name0, dev_[0]));
  CU_ASSERT_OK(cuDeviceGetName(name1, sizeof name1, dev_[1]));
  EXPECT_NE(std::string(name0).find("H100"), std::string::npos) << name0;
  EXPECT_STREQ(name0, name1);
  size_t total0 = 0, total1 = 0;
  CU_ASSERT_OK(cuDeviceTotalMem(&total0, dev_[0]));
  CU_ASSERT_OK(cuDeviceTotalMem(&total1, dev_[1]));
  EXPECT_EQ(total0, total1);
  int major = 0, sms = 0, bus0 = -1, bus1 = -1;
  CU_ASSERT_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_[1]));
  CU_ASSERT_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_[1]));
  EXPECT_EQ(major, 9);
  EXPECT_EQ(sms, 132);
  CU_ASSERT_OK(cuDeviceGetAttribute(&bus0, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev_[0]));
  CU_ASSERT_OK(cuDeviceGetAttribute(&bus1, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev_[1]));
  EXPECT_NE(bus0, bus1);
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 2));
  CUcontext other = nullptr;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRetain(&other, 2));
}

// Each device has its own primary context and memory; a pointer says which device it is
// on, whatever the current context (unified addressing).
TEST_F(CudaEmulatorTwoDevices, ContextsAndMemoryPerDevice) {
  EXPECT_NE(ctx_[0], ctx_[1]);
  for (int d = 0; d < 2; ++d) {
    CU_ASSERT_OK(cuCtxSetCurrent(ctx_[d]));
    CUdevice current = -1;
    CU_ASSERT_OK(cuCtxGetDevice(&current));
    EXPECT_EQ(current, dev_[d]);
  }
  CUcontext created = nullptr;
  CU_ASSERT_OK(cuCtxCreate(&created, nullptr, 0, dev_[1]));
  CUdevice current = -1;
  CU_ASSERT_OK(cuCtxGetDevice(&current));
  EXPECT_EQ(current, dev_[1]);
  CU_ASSERT_OK(cuCtxDestroy(created));
  size_t free_before[2], total[2];
  for (int d = 0; d < 2; ++d) {
    CU_ASSERT_OK(cuCtxSetCurrent(ctx_[d]));
    CU_ASSERT_OK(cuMemGetInfo(&free_before[d], &total[d]));
  }
  const CUdeviceptr a = Alloc(0, 1 << 20), b = Alloc(1, 64 << 20);
  EXPECT_GT(b > a ? b - a : a - b, uint64_t{1} << 32) << "distinct address ranges";
  for (int d = 0; d < 2; ++d) {
    size_t free_now = 0, t = 0;
    CU_ASSERT_OK(cuCtxSetCurrent(ctx_[d]));
    CU_ASSERT_OK(cuMemGetInfo(&free_now, &t));
    EXPECT_EQ(free_before[d] - free_now, d == 0 ? size_t{1} << 20 : size_t{64} << 20) << "device " << d;
  }
  for (int current_device = 0; current_device < 2; ++current_device) {
    CU_ASSERT_OK(cuCtxSetCurrent(ctx_[current_device]));
    int ordinal = -1;
    CU_ASSERT_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a + 100));
    EXPECT_EQ(ordinal, 0);
    CU_ASSERT_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
    EXPECT_EQ(ordinal, 1);
    CUcontext owner = nullptr;
    CU_ASSERT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, b + 5));
    EXPECT_EQ(owner, ctx_[1]);
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_ASSERT_OK(cuMemGetAddressRange(&base, &size, b + 7));
    EXPECT_EQ(base, b);
    EXPECT_EQ(size, size_t{64} << 20);
    CU_ASSERT_OK(cuMemGetAddressRange(&base, &size, a + 7));
    EXPECT_EQ(base, a);
  }
  int ordinal = -1;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a + (1 << 20)));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0));
}

// Without peer access another device's memory is out of reach: a copy or memset with it is
// CUDA_ERROR_INVALID_VALUE, as is freeing it; a kernel that touches it faults with an
// illegal address, which breaks its own context only.
TEST_F(CudaEmulatorTwoDevices, AnotherDevicesMemoryIsOutOfReach) {
  const size_t n = 256;
  const CUdeviceptr on0 = Alloc(0, n * 4), on1 = Alloc(1, n * 4), out1 = Alloc(1, n * 4);
  std::vector<float> host(n, 1.0f);
  CU_ASSERT_OK(cuCtxSetCurrent(ctx_[0]));
  CU_ASSERT_OK(cuMemcpyHtoD(on0, host.data(), n * 4));
  CU_ASSERT_OK(cuCtxSetCurrent(ctx_[1]));
  CU_ASSERT_OK(cuMemcpyHtoD(on1, host.data(), n * 4));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(on0, host.data(), n * 4));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(host.data(), on0, n * 4));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoD(on1, on0, n * 4));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoDAsync(on1, on0, n * 4, nullptr));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(on0, 0, n));
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(on0));
  void* host_view = nullptr;
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuemuDeviceMemory(on0, 4, &host_view));
  CU_EXPECT_OK(cuemuDeviceMemory(on1, 4, &host_view));
  // A kernel of device 1: its own memory, then device 0's.
  const std::string ptx = ReadPtx("basic", "sm_90");
  if (ptx.empty()) {
    if (InCi()) FAIL() << MissingPtxMessage("basic", "sm_90");
    GTEST_SKIP() << MissingPtxMessage("basic", "sm_90");
  }
  CUmodule module = nullptr;
  std::string log;
  ASSERT_EQ(LoadPtx(ptx, &module, &log), CUDA_SUCCESS) << log;
  CUfunction add = nullptr;
  CU_ASSERT_OK(cuModuleGetFunction(&add, module, "vector_add"));
  CU_ASSERT_OK(Launch(add, Dim(1), Dim(256), 0, nullptr, on1, on1, out1, static_cast<int>(n)));
  CU_ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(Download<float>(out1, n), std::vector<float>(n, 2.0f));
  CU_ASSERT_OK(Launch(add, Dim(1), Dim(256), 0, nullptr, on1, on0, out1, static_cast<int>(n)));
  CU_EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CUdeviceptr more = 0;
  CU_EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&more, 16));  // sticky for device 1's context
  CU_ASSERT_OK(cuCtxSetCurrent(ctx_[0]));
  CU_EXPECT_OK(cuMemAlloc(&more, 16));
  CU_EXPECT_OK(cuMemFree(more));
  std::vector<float> back(n, 0.0f);
  CU_EXPECT_OK(cuMemcpyDtoH(back.data(), on0, n * 4));
  CU_ASSERT_OK(cuDevicePrimaryCtxReset(dev_[1]));
  owned_[1].clear();
}

}  // namespace
}  // namespace cuemu_test
