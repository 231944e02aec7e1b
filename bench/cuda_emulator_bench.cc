// The CUDA emulator's speed (cuda_emulator/): warp-instructions and thread-instructions
// per second of CPU time on memory-bound, warp-synchronous and arithmetic kernels,
// launched through the driver API as a GPU program would. The kernels are CUDA C
// (bench/cuda_emulator/kernels.cu) compiled to PTX by nvcc at build time.
#include <benchmark/benchmark.h>
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "bench/machine.h"
#include "cuda_emulator/cuemu.h"

namespace {

void Check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "?";
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "%s: %s: %s\n", what, name, cuemuGetLastErrorMessage());
  std::exit(1);
}

CUfunction Kernel(const char* name) {
  static CUmodule module = [] {
    Check(cuInit(0), "cuInit");
    CUdevice dev;
    CUcontext ctx;
    Check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    Check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    Check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    std::ifstream in(CUEMU_BENCH_PTX);
    std::stringstream text;
    text << in.rdbuf();
    CUmodule m;
    Check(cuModuleLoadData(&m, text.str().c_str()), "cuModuleLoadData");
    return m;
  }();
  CUfunction f;
  Check(cuModuleGetFunction(&f, module, name), name);
  return f;
}

CUdeviceptr Upload(const std::vector<float>& v) {
  CUdeviceptr p;
  Check(cuMemAlloc(&p, v.size() * 4), "cuMemAlloc");
  Check(cuMemcpyHtoD(p, v.data(), v.size() * 4), "cuMemcpyHtoD");
  return p;
}

// Runs the launch per iteration and reports the emulator's own counts as rates.
template <class Launch>
void Measure(benchmark::State& state, Launch launch) {
  CUemuCounters c{};
  for (auto _ : state) {
    launch();
    Check(cuCtxSynchronize(), "cuCtxSynchronize");
    Check(cuemuGetLastLaunchCounters(&c), "counters");
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["warp_instr/s"] = benchmark::Counter(c.warp_instructions * n, benchmark::Counter::kIsRate);
  state.counters["thread_instr/s"] = benchmark::Counter(c.thread_instructions * n, benchmark::Counter::kIsRate);
  state.counters["warp_instr"] = static_cast<double>(c.warp_instructions);
  state.counters["coalescing"] =
      c.global_load_sectors ? static_cast<double>(c.global_load_bytes) / (32.0 * c.global_load_sectors) : 0;
}

void BM_VectorAdd(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  CUfunction f = Kernel("bench_vector_add");
  CUdeviceptr a = Upload(std::vector<float>(n, 1.0f)), b = Upload(std::vector<float>(n, 2.0f)),
              c = Upload(std::vector<float>(n, 0.0f));
  void* args[] = {&a, &b, &c, &n};
  Measure(state, [&] { Check(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), "launch"); });
  cuMemFree(a), cuMemFree(b), cuMemFree(c);
}
BENCHMARK(BM_VectorAdd)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_Softmax(benchmark::State& state) {
  int rows = static_cast<int>(state.range(0)), cols = static_cast<int>(state.range(1));
  CUfunction f = Kernel("bench_softmax");
  std::vector<float> x(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * i);
  CUdeviceptr dx = Upload(x), dy = Upload(x);
  void* args[] = {&dx, &dy, &cols};
  Measure(state, [&] { Check(cuLaunchKernel(f, rows, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), "launch"); });
  cuMemFree(dx), cuMemFree(dy);
}
BENCHMARK(BM_Softmax)->Args({256, 4096})->Unit(benchmark::kMillisecond);

void BM_FmaChain(benchmark::State& state) {
  int steps = static_cast<int>(state.range(0));
  CUfunction f = Kernel("bench_fma_chain");
  CUdeviceptr out = Upload(std::vector<float>(64 * 256, 0.0f));
  void* args[] = {&out, &steps};
  Measure(state, [&] { Check(cuLaunchKernel(f, 64, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), "launch"); });
  cuMemFree(out);
}
BENCHMARK(BM_FmaChain)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) { return graphjit::bench::Main(argc, argv); }
