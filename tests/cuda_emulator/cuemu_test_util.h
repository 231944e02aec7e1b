// Helpers shared by the CUDA emulator tests: CUresult checks that print the error's
// name and the emulator's last message, PTX loading (from CUEMU_TEST_PTX_DIR, one file
// per kernel source and architecture), device buffers, launches and comparisons.
#ifndef GRAPHJIT_TESTS_CUDA_EMULATOR_CUEMU_TEST_UTIL_H_
#define GRAPHJIT_TESTS_CUDA_EMULATOR_CUEMU_TEST_UTIL_H_

#include <cuda.h>
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emulator/cuemu.h"

#ifndef CUEMU_TEST_PTX_DIR
#define CUEMU_TEST_PTX_DIR ""
#endif
#ifndef CUEMU_TEST_HAVE_NVCC
#define CUEMU_TEST_HAVE_NVCC 0
#endif

// gtest prints a CUresult by its name (found by argument-dependent lookup).
inline void PrintTo(CUresult result, std::ostream* os) {
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
  *os << name << " (" << static_cast<int>(result) << ")";
}

namespace cuemu_test {

// "CUDA_ERROR_X (n); emulator: <last message>".
inline std::string Describe(CUresult result) {
  std::ostringstream os;
  PrintTo(result, &os);
  const char* message = cuemuGetLastErrorMessage();
  if (message != nullptr && *message != '\0') os << "; emulator: " << message;
  return os.str();
}

inline std::string LastMessage() {
  const char* message = cuemuGetLastErrorMessage();
  return message != nullptr ? message : "";
}

// Sets an environment variable (null: unsets it) for the scope's life; the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Throws (failing the test with the message) when a helper's driver call fails.
inline void Check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + ": " + Describe(result));
}

// `call()` made on a thread of its own with context `ctx` current; its result.
template <class Call>
CUresult OnAnotherThread(CUcontext ctx, Call call) {
  CUresult result = CUDA_SUCCESS;
  std::thread t([&] {
    cuCtxSetCurrent(ctx);
    result = call();
  });
  t.join();
  return result;
}

// `call()` (a library's, returning its status into `*status`) captured alone on `stream`;
// what cuStreamEndCapture says (its graph, if any, destroyed).
template <class Status, class Call>
CUresult CapturedAlone(CUstream stream, Call call, Status* status) {
  EXPECT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  *status = call();
  CUgraph graph = nullptr;
  const CUresult end = cuStreamEndCapture(stream, &graph);
  if (graph) cuGraphDestroy(graph);
  return end;
}

}  // namespace cuemu_test

#define CU_ASSERT_OK(call)                                                                      \
  do {                                                                                          \
    CUresult cu_result_ = (call);                                                               \
    ASSERT_EQ(cu_result_, CUDA_SUCCESS) << #call << ": " << ::cuemu_test::Describe(cu_result_); \
  } while (0)

#define CU_EXPECT_OK(call)                                                                      \
  do {                                                                                          \
    CUresult cu_result_ = (call);                                                               \
    EXPECT_EQ(cu_result_, CUDA_SUCCESS) << #call << ": " << ::cuemu_test::Describe(cu_result_); \
  } while (0)

#define CU_EXPECT_RESULT(expected, call)                                                      \
  do {                                                                                        \
    CUresult cu_result_ = (call);                                                             \
    EXPECT_EQ(cu_result_, (expected)) << #call << ": " << ::cuemu_test::Describe(cu_result_); \
  } while (0)

namespace cuemu_test {

inline const char* kArchs[] = {"sm_80", "sm_90"};

// True when the tests run in continuous integration, where missing PTX is an error.
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

inline std::string PtxPath(const std::string& name, const std::string& arch) {
  return std::string(CUEMU_TEST_PTX_DIR) + "/" + name + "." + arch + ".ptx";
}

// The text of ptx/<name>.<arch>.ptx, or "" when it does not exist.
inline std::string ReadPtx(const std::string& name, const std::string& arch) {
  std::ifstream file(PtxPath(name, arch), std::ios::binary);
  if (!file) return "";
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// Why the PTX of <name> is missing, for GTEST_SKIP / FAIL.
inline std::string MissingPtxMessage(const std::string& name, const std::string& arch) {
  return PtxPath(name, arch) +
         " does not exist: " + (CUEMU_TEST_HAVE_NVCC ? "it was not built" : "nvcc was not found when the tests were configured");
}

// Loads PTX text into the current context (cuModuleLoadDataEx with an error log); on
// failure returns the result and puts the log and the emulator's message in *log.
inline CUresult LoadPtx(const std::string& ptx, CUmodule* module, std::string* log) {
  std::vector<char> error_log(16384, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size())};
  CUresult result = cuModuleLoadDataEx(module, ptx.c_str(), 2, options, values);
  if (result != CUDA_SUCCESS && log != nullptr) {
    *log = "cuModuleLoadDataEx: " + Describe(result) + "; JIT log: " + error_log.data();
  }
  return result;
}

// The device (ordinal 0) and its primary context, retained once for the whole run.
struct PrimaryState {
  bool ready = false;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::map<std::string, CUmodule> modules;  // "<name>.<arch>"
};
// The state, initialized or not.
inline PrimaryState& PrimaryStorage() {
  static PrimaryState state;
  return state;
}
inline PrimaryState& Primary() {
  PrimaryState& state = PrimaryStorage();
  if (!state.ready) {
    Check(cuInit(0), "cuInit");
    Check(cuDeviceGet(&state.device, 0), "cuDeviceGet");
    Check(cuDevicePrimaryCtxRetain(&state.context, state.device), "cuDevicePrimaryCtxRetain");
    state.ready = true;
  }
  return state;
}
inline CUdevice Device() { return Primary().device; }
inline CUcontext PrimaryContext() { return Primary().context; }
// After cuDevicePrimaryCtxReset: retains the primary context again, makes it current
// and forgets the modules loaded in it.
inline void ReacquirePrimaryContext() {
  PrimaryState& state = Primary();
  state.modules.clear();
  Check(cuDevicePrimaryCtxRetain(&state.context, state.device), "cuDevicePrimaryCtxRetain");
  Check(cuCtxSetCurrent(state.context), "cuCtxSetCurrent");
}

// The module of ptx/<name>.<arch>.ptx in the primary context, loaded once; nullptr and
// *why if the file is missing or does not load.
inline CUmodule CachedModule(const std::string& name, const std::string& arch, std::string* why) {
  PrimaryState& state = Primary();
  const std::string key = name + "." + arch;
  auto it = state.modules.find(key);
  if (it != state.modules.end()) return it->second;
  std::string ptx = ReadPtx(name, arch);
  if (ptx.empty()) {
    *why = MissingPtxMessage(name, arch);
    return nullptr;
  }
  CUmodule module = nullptr;
  if (LoadPtx(ptx, &module, why) != CUDA_SUCCESS) return nullptr;
  state.modules[key] = module;
  return module;
}

// Skips the test (fails it when CI=true) if the PTX of <module> for the test's arch is
// missing; fails it if it does not load or has no kernel <kernel>.
#define CUEMU_LOAD_KERNEL(var, module, kernel)                                       \
  CUfunction var = nullptr;                                                          \
  do {                                                                               \
    std::string why_;                                                                \
    if (::cuemu_test::ReadPtx(module, Arch()).empty()) {                             \
      why_ = ::cuemu_test::MissingPtxMessage(module, Arch());                        \
      if (::cuemu_test::InCi()) FAIL() << why_;                                      \
      GTEST_SKIP() << why_;                                                          \
    }                                                                                \
    CUmodule module_ = ::cuemu_test::CachedModule(module, Arch(), &why_);            \
    ASSERT_NE(module_, nullptr) << why_;                                             \
    CUresult get_ = cuModuleGetFunction(&var, module_, kernel);                      \
    ASSERT_EQ(get_, CUDA_SUCCESS) << kernel << ": " << ::cuemu_test::Describe(get_); \
  } while (0)

// Grid and block dimensions.
struct Dim {
  unsigned x = 1, y = 1, z = 1;
  Dim(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// cuLaunchKernel with the arguments given by value.
template <typename... Args>
CUresult Launch(CUfunction f, Dim grid, Dim block, unsigned shared_bytes, CUstream stream, Args... args) {
  void* params[] = {static_cast<void*>(&args)..., nullptr};
  return cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream, params, nullptr);
}

inline unsigned Blocks(size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Device memory of the current context, freed at the end of the test (see
// KernelTest::TearDown). Helpers throw on failure.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { FreeAll(); }

  // Zero-filled.
  CUdeviceptr Alloc(size_t bytes) {
    CUdeviceptr p = 0;
    Check(cuMemAlloc(&p, bytes == 0 ? 1 : bytes), "cuMemAlloc");
    owned_.push_back(p);
    Check(cuMemsetD8(p, 0, bytes == 0 ? 1 : bytes), "cuMemsetD8");
    return p;
  }
  template <typename T>
  CUdeviceptr Alloc(size_t count) {
    return Alloc(count * sizeof(T));
  }
  template <typename T>
  CUdeviceptr Upload(const std::vector<T>& host) {
    CUdeviceptr p = Alloc(host.size() * sizeof(T));
    Check(cuMemcpyHtoD(p, host.data(), host.size() * sizeof(T)), "cuMemcpyHtoD");
    return p;
  }
  // After a context reset, which freed everything.
  void Forget() { owned_.clear(); }
  void FreeAll() {
    for (CUdeviceptr p : owned_) cuMemFree(p);
    owned_.clear();
  }

 private:
  std::vector<CUdeviceptr> owned_;
};

template <typename T>
std::vector<T> Download(CUdeviceptr p, size_t count) {
  std::vector<T> host(count);
  Check(cuMemcpyDtoH(host.data(), p, count * sizeof(T)), "cuMemcpyDtoH");
  return host;
}

// Random data, reproducible (fixed seeds).
inline std::vector<float> RandomFloats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}
inline std::vector<int> RandomInts(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = dist(rng);
  return v;
}

inline uint32_t FloatBits(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t DoubleBits(double d) { return std::bit_cast<uint64_t>(d); }

// Element-by-element equality; reports the first few differences. Floats are compared
// bit for bit, except that any NaN equals any NaN.
template <typename T>
::testing::AssertionResult SameValues(const std::vector<T>& got, const std::vector<T>& want, const std::string& what = "") {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != " << want.size();
  }
  std::ostringstream diffs;
  size_t count = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool same;
    if constexpr (std::is_floating_point_v<T>) {
      same = (std::isnan(got[i]) && std::isnan(want[i])) || std::memcmp(&got[i], &want[i], sizeof(T)) == 0;
    } else {
      same = got[i] == want[i];
    }
    if (!same) {
      if (count < 8) {
        diffs << "\n  [" << i << "] got " << +got[i] << ", want " << +want[i];
        if constexpr (std::is_same_v<T, float>) {
          diffs << std::hex << " (0x" << FloatBits(got[i]) << " vs 0x" << FloatBits(want[i]) << ")" << std::dec;
        }
      }
      ++count;
    }
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << count << " of " << got.size() << " elements differ" << diffs.str();
}

// The shared-memory tree of block_sum, in the same order: the float results are
// reproducible bit for bit.
inline std::vector<float> ModelBlockSum(const std::vector<float>& in, unsigned blocks) {
  const unsigned bd = 256, n = static_cast<unsigned>(in.size());
  std::vector<float> out(blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    std::array<float, 256> s;
    for (unsigned t = 0; t < bd; ++t) {
      const unsigned i = b * bd * 2 + t;
      float v = 0.0f;
      if (i < n) v = in[i];
      if (i + bd < n) v += in[i + bd];
      s[t] = v;
    }
    for (unsigned stride = bd / 2; stride > 0; stride >>= 1)
      for (unsigned t = 0; t < stride; ++t) s[t] += s[t + stride];
    out[b] = s[0];
  }
  return out;
}

// The base of the tests that run kernels: parameterized by the PTX architecture, run in
// the primary context, with device memory freed at the end.
class KernelTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    Check(cuCtxSetCurrent(PrimaryContext()), "cuCtxSetCurrent");
    Check(cuemuSetThreadOrder(CUEMU_ORDER_FORWARD, 0), "cuemuSetThreadOrder");
  }
  void TearDown() override {
    if (!PrimaryStorage().ready) return;  // cuInit failed: nothing to undo
    cuemuSetThreadOrder(CUEMU_ORDER_FORWARD, 0);
    cuCtxSetCurrent(PrimaryContext());
    CUresult sync = cuCtxSynchronize();
    if (sync != CUDA_SUCCESS) {
      // The test left the primary context broken (e.g. by a faulting kernel): reset it
      // so that the following tests start from a clean context.
      ADD_FAILURE() << "the primary context is broken at the end of the test: " << Describe(sync);
      mem_.Forget();
      cuDevicePrimaryCtxReset(Device());
      ReacquirePrimaryContext();
      return;
    }
    mem_.FreeAll();
  }
  std::string Arch() const { return GetParam(); }

  DeviceMemory mem_;
};

// "sm_80" / "sm_90" as the test-name suffix.
struct ArchName {
  std::string operator()(const ::testing::TestParamInfo<const char*>& info) const { return info.param; }
};

}  // namespace cuemu_test

#define CUEMU_INSTANTIATE_ARCHS(fixture) \
  INSTANTIATE_TEST_SUITE_P(Arch, fixture, ::testing::ValuesIn(::cuemu_test::kArchs), ::cuemu_test::ArchName())

#endif  // GRAPHJIT_TESTS_CUDA_EMULATOR_CUEMU_TEST_UTIL_H_
