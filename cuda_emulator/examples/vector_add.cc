// Vector addition through the CUDA driver API, in the style of the CUDA samples'
// vectorAddDrv: loads the PTX of vector_add.cu (path given on the command line), adds
// two vectors on the device and checks the result on the host. It uses nothing but
// cuda.h, so it runs unchanged on a real GPU or on the emulator's libcuda.so.1.
//
//   vector_add <vector_add.ptx> [N]
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Reports a failed driver call (with the error's name) and exits.
void Check(CUresult result, const char* call, int line) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS) name = "unknown error";
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS) text = "";
  std::fprintf(stderr, "vector_add: %s failed (line %d): %s (%d) %s\n", call, line, name, static_cast<int>(result), text);
  std::exit(1);
}

#define CHECK_CU(call) Check((call), #call, __LINE__)

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <vector_add.ptx> [N]\n", argv[0]);
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 50000;
  if (n <= 0) {
    std::fprintf(stderr, "vector_add: N must be positive\n");
    return 2;
  }

  std::ifstream file(argv[1], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "vector_add: cannot read %s\n", argv[1]);
    return 1;
  }
  std::stringstream text;
  text << file.rdbuf();
  const std::string ptx = text.str();

  std::printf("Vector Addition (Driver API)\n");
  CHECK_CU(cuInit(0));
  int device_count = 0;
  CHECK_CU(cuDeviceGetCount(&device_count));
  if (device_count == 0) {
    std::fprintf(stderr, "vector_add: no CUDA device\n");
    return 1;
  }
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  char name[256] = {};
  CHECK_CU(cuDeviceGetName(name, sizeof(name), device));
  int major = 0, minor = 0;
  CHECK_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  std::printf("Device 0: \"%s\" with compute capability %d.%d\n", name, major, minor);

  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));

  // The JIT's messages go to these buffers (the PTX is compiled for the device here).
  char error_log[8192] = {};
  char info_log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* option_values[] = {error_log, reinterpret_cast<void*>(sizeof(error_log)), info_log,
                           reinterpret_cast<void*>(sizeof(info_log))};
  CUmodule module;
  CUresult loaded = cuModuleLoadDataEx(&module, ptx.c_str(), 4, options, option_values);
  if (loaded != CUDA_SUCCESS) std::fprintf(stderr, "vector_add: JIT log: %s\n", error_log);
  CHECK_CU(loaded);
  CUfunction kernel;
  CHECK_CU(cuModuleGetFunction(&kernel, module, "VecAdd_kernel"));

  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> h_a(n), h_b(n), h_c(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    h_a[i] = static_cast<float>(i % 1000) * 0.5f;
    h_b[i] = 1.0f / static_cast<float>(1 + i % 97);
  }

  CUdeviceptr d_a, d_b, d_c;
  CHECK_CU(cuMemAlloc(&d_a, bytes));
  CHECK_CU(cuMemAlloc(&d_b, bytes));
  CHECK_CU(cuMemAlloc(&d_c, bytes));
  CHECK_CU(cuMemcpyHtoD(d_a, h_a.data(), bytes));
  CHECK_CU(cuMemcpyHtoD(d_b, h_b.data(), bytes));

  const unsigned threads_per_block = 256;
  const unsigned blocks = (static_cast<unsigned>(n) + threads_per_block - 1) / threads_per_block;
  int count = n;
  void* args[] = {&d_a, &d_b, &d_c, &count};
  std::printf("Launching %u blocks of %u threads\n", blocks, threads_per_block);
  CHECK_CU(cuLaunchKernel(kernel, blocks, 1, 1, threads_per_block, 1, 1, 0, nullptr, args, nullptr));
  CHECK_CU(cuCtxSynchronize());
  CHECK_CU(cuMemcpyDtoH(h_c.data(), d_c, bytes));

  // A float sum is exactly rounded on the device, so it must match the host bit for bit.
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    if (h_c[i] != h_a[i] + h_b[i]) {
      if (mismatches < 5) {
        std::fprintf(stderr, "vector_add: C[%d] = %.9g, expected %.9g\n", i, h_c[i], h_a[i] + h_b[i]);
      }
      ++mismatches;
    }
  }

  CHECK_CU(cuMemFree(d_a));
  CHECK_CU(cuMemFree(d_b));
  CHECK_CU(cuMemFree(d_c));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(device));

  std::printf("%d of %d elements match\n", n - mismatches, n);
  std::printf("Result = %s\n", mismatches == 0 ? "PASS" : "FAIL");
  return mismatches == 0 ? 0 : 1;
}
