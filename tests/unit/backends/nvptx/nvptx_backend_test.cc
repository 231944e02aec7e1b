// backends/nvptx: gpu.module kernels in MLIR -> PTX for sm_80 and sm_90 that ptxas
// accepts without spills, and that compute the right values when launched through the
// CUDA driver API on the CUDA emulator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/nvptx/nvptx_compiler.h"
#include "runtime/cuda_driver.h"

#ifdef GRAPHJIT_TEST_HAVE_CUDA_H
#include <cuda.h>
#endif

namespace graphjit {
namespace {

// y[i] = exp(max(x[i] + b[i], 0)): a loop fusion, one thread per element.
const char* kBiasReluExp = R"(
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @bias_relu_exp(%x: memref<1000xf32>, %b: memref<1000xf32>, %y: memref<1000xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %n = arith.constant 1000 : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %a = memref.load %x[%i] : memref<1000xf32>
        %c = memref.load %b[%i] : memref<1000xf32>
        %s = arith.addf %a, %c : f32
        %z = arith.constant 0.0 : f32
        %r = arith.maximumf %s, %z : f32
        %e = math.exp %r : f32
        memref.store %e, %y[%i] : memref<1000xf32>
      }
      gpu.return
    }
  }
}
)";

// out[row] = the sum of a 32-float row, one warp per row, through warp shuffles.
const char* kRowSum = R"(
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @row_sum(%x: memref<64x32xf32>, %out: memref<64xf32>) kernel {
      %row = gpu.block_id x
      %lane = gpu.thread_id x
      %v = memref.load %x[%row, %lane] : memref<64x32xf32>
      %w = arith.constant 32 : i32
      %c16 = arith.constant 16 : i32
      %c8 = arith.constant 8 : i32
      %c4 = arith.constant 4 : i32
      %c2 = arith.constant 2 : i32
      %c1 = arith.constant 1 : i32
      %s16, %p16 = gpu.shuffle xor %v, %c16, %w : f32
      %a16 = arith.addf %v, %s16 : f32
      %s8, %p8 = gpu.shuffle xor %a16, %c8, %w : f32
      %a8 = arith.addf %a16, %s8 : f32
      %s4, %p4 = gpu.shuffle xor %a8, %c4, %w : f32
      %a4 = arith.addf %a8, %s4 : f32
      %s2, %p2 = gpu.shuffle xor %a4, %c2, %w : f32
      %a2 = arith.addf %a4, %s2 : f32
      %s1, %p1 = gpu.shuffle xor %a2, %c1, %w : f32
      %a1 = arith.addf %a2, %s1 : f32
      %zero = arith.constant 0 : index
      %first = arith.cmpi eq, %lane, %zero : index
      scf.if %first {
        memref.store %a1, %out[%row] : memref<64xf32>
      }
      gpu.return
    }
  }
}
)";

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// The toolkit (libdevice, ptxas) is needed; without it the tests skip, except in CI.
#define REQUIRE_CUDA_TOOLKIT()                                        \
  do {                                                                \
    if (nvptx::CudaRoot().empty()) {                                  \
      if (InCi()) FAIL() << "no CUDA toolkit (CI machines have one)"; \
      GTEST_SKIP() << "no CUDA toolkit (libdevice, ptxas)";           \
    }                                                                 \
  } while (0)

TEST(NvptxBackend, KernelsBecomePtxThatPtxasAcceptsWithoutSpills) {
  REQUIRE_CUDA_TOOLKIT();
  for (int sm : {80, 90}) {
    SCOPED_TRACE("sm_" + std::to_string(sm));
    nvptx::CompileOptions options;
    options.sm = sm;
    options.keep_stages = true;
    auto loop = nvptx::Compile(kBiasReluExp, options);
    ASSERT_TRUE(loop.ok()) << loop.status().message();
    EXPECT_NE(loop->ptx.find(".target sm_" + std::to_string(sm)), std::string::npos) << loop->ptx;
    EXPECT_NE(loop->ptx.find(".entry bias_relu_exp("), std::string::npos) << loop->ptx;
    EXPECT_NE(loop->ptx.find("ex2.approx"), std::string::npos) << "libdevice's expf, inlined: " << loop->ptx;
    EXPECT_EQ(loop->ptx.find("__nv_"), std::string::npos) << "libdevice not linked: " << loop->ptx;
    EXPECT_EQ(loop->ptx.back(), '\n');
    ASSERT_EQ(loop->report.mlir_stages.size(), 2u);
    EXPECT_EQ(loop->report.mlir_stages[0].first, "cleaned_up");
    EXPECT_EQ(loop->report.mlir_stages[1].first, "nvvm");
    EXPECT_NE(loop->report.mlir_stages[1].second.find("nvvm.read.ptx.sreg.tid.x"), std::string::npos);

    auto reduce = nvptx::Compile(kRowSum, options);
    ASSERT_TRUE(reduce.ok()) << reduce.status().message();
    EXPECT_NE(reduce->ptx.find("shfl.sync.bfly.b32"), std::string::npos) << reduce->ptx;

    for (const std::string* ptx : {&loop->ptx, &reduce->ptx}) {
      auto assembled = nvptx::Assemble(*ptx, sm, /*spills_are_errors=*/true);
      ASSERT_TRUE(assembled.ok()) << assembled.status().message();
      ASSERT_EQ(assembled->kernels.size(), 1u) << assembled->log;
      EXPECT_GT(assembled->kernels[0].registers, 0) << assembled->log;
      EXPECT_EQ(assembled->kernels[0].spill_stores, 0);
      EXPECT_EQ(assembled->kernels[0].stack_bytes, 0);
      EXPECT_TRUE(assembled->cubin.empty());
    }
    // The cubin a GPU is given: an ELF object for the architecture.
    auto cubin = nvptx::Assemble(loop->ptx, sm, /*spills_are_errors=*/true, /*keep_cubin=*/true);
    ASSERT_TRUE(cubin.ok()) << cubin.status().message();
    ASSERT_GT(cubin->cubin.size(), 64u);
    EXPECT_EQ(cubin->cubin.substr(0, 4),
              "\x7f"
              "ELF");
    // The optimized LLVM IR, libdevice's expf linked in and inlined, no flush to zero.
    EXPECT_NE(loop->report.llvm_ir.find("define void @bias_relu_exp("), std::string::npos) << loop->report.llvm_ir;
    EXPECT_EQ(loop->report.llvm_ir.find("call float @__nv_expf"), std::string::npos) << loop->report.llvm_ir;
    EXPECT_NE(loop->report.llvm_ir.find("\"nvvm-reflect-ftz\", i32 0"), std::string::npos);
  }
}

TEST(NvptxBackend, BadInputIsAClearError) {
  REQUIRE_CUDA_TOOLKIT();
  auto bad = nvptx::Compile("module { this is not MLIR }", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("does not parse"), std::string::npos) << bad.status().message();
  nvptx::CompileOptions sm70;
  sm70.sm = 70;
  EXPECT_EQ(nvptx::Compile(kBiasReluExp, sm70).status().code(), Code::kInvalidArgument);
  auto no_kernels = nvptx::Compile("module {}", {});
  ASSERT_FALSE(no_kernels.ok());
  EXPECT_EQ(no_kernels.status().code(), Code::kInvalidArgument);
  EXPECT_NE(no_kernels.status().message().find("no gpu.module"), std::string::npos) << no_kernels.status().message();
  auto rejected = nvptx::Assemble(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n", 90, true);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("ptxas -arch=sm_90 rejects the PTX"), std::string::npos)
      << rejected.status().message();
}

#ifdef GRAPHJIT_TEST_HAVE_CUDA_H
// The PTX, launched through the driver API of the CUDA emulator (opened as graphjit opens
// any driver), computes what the CPU computes.
TEST(NvptxBackend, PtxRunsOnTheCudaEmulator) {
  REQUIRE_CUDA_TOOLKIT();
  auto library = CudaDriverLibrary(DeviceKind::kGpuEmu, "");
  ASSERT_TRUE(library.ok()) << library.status().message();
  auto driver = CudaDriver::Open(*library);
  ASSERT_TRUE(driver.ok()) << driver.status().message();
  auto fn = [&](const char* name) { return (*driver)->Symbol(name); };
  auto retain = reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(fn("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<decltype(&cuCtxSetCurrent)>(fn("cuCtxSetCurrent"));
  auto load = reinterpret_cast<decltype(&cuModuleLoadData)>(fn("cuModuleLoadData"));
  auto function = reinterpret_cast<decltype(&cuModuleGetFunction)>(fn("cuModuleGetFunction"));
  auto alloc = reinterpret_cast<decltype(&cuMemAlloc)>(fn("cuMemAlloc_v2"));
  auto to_device = reinterpret_cast<decltype(&cuMemcpyHtoD)>(fn("cuMemcpyHtoD_v2"));
  auto to_host = reinterpret_cast<decltype(&cuMemcpyDtoH)>(fn("cuMemcpyDtoH_v2"));
  auto launch = reinterpret_cast<decltype(&cuLaunchKernel)>(fn("cuLaunchKernel"));
  auto free = reinterpret_cast<decltype(&cuMemFree)>(fn("cuMemFree_v2"));
  CUcontext context;
  ASSERT_EQ(retain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(set_current(context), CUDA_SUCCESS);

  auto loop = nvptx::Compile(kBiasReluExp, {});
  ASSERT_TRUE(loop.ok()) << loop.status().message();
  CUmodule module;
  ASSERT_EQ(load(&module, loop->ptx.c_str()), CUDA_SUCCESS);
  CUfunction kernel;
  ASSERT_EQ(function(&kernel, module, "bias_relu_exp"), CUDA_SUCCESS);
  const int n = 1000;
  std::vector<float> x(n), b(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = 4 * std::sin(0.37f * i), b[i] = std::cos(0.1f * i);
  CUdeviceptr dx, db, dy;
  ASSERT_EQ(alloc(&dx, 4 * n), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&db, 4 * n), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&dy, 4 * n), CUDA_SUCCESS);
  ASSERT_EQ(to_device(dx, x.data(), 4 * n), CUDA_SUCCESS);
  ASSERT_EQ(to_device(db, b.data(), 4 * n), CUDA_SUCCESS);
  void* args[] = {&dx, &db, &dy};
  ASSERT_EQ(launch(kernel, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(to_host(y.data(), dy, 4 * n), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) {
    // libdevice's expf is within 2 ulp; the emulator's ex2.approx within 2 more.
    double want = std::exp(std::max(0.0, static_cast<double>(x[i] + b[i])));
    EXPECT_NEAR(y[i], want, 5e-7 * want) << "element " << i;
  }
  for (CUdeviceptr p : {dx, db, dy}) free(p);
}
#endif

}  // namespace
}  // namespace graphjit
