// Helpers for graphjit's tests: building GraphDefs in a few lines, making tensors,
// running the graphjit binary.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/proto/graph.pb.h"
#include "runtime/session.h"

namespace graphjit {
// Lets gtest print shapes in failure messages.
inline void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.ToString(); }
}  // namespace graphjit

namespace graphjit::testing {

// Whether this build has the CUDA emulator (--device gpu-emu) and it opens.
bool HaveCudaEmulator();

// The GPU that the GPU suites (fixtures on a GPU, GPU JIT, GPU traces) run on, from
// GRAPHJIT_TEST_DEVICE: gpu-emu (the default: the CUDA emulator) or gpu (the machine's
// GPU, through its libcuda.so.1), so that the same suites check real hardware.
DeviceKind TestGpu();
const char* TestGpuName();  // "gpu-emu" or "gpu"
// Whether that GPU opens.
bool HaveTestGpu();

// Skips a test without the CUDA emulator; under CI=true (where the build has it) fails.
#define REQUIRE_CUDA_EMULATOR()                                                        \
  do {                                                                                 \
    if (!::graphjit::testing::HaveCudaEmulator()) {                                    \
      const char* ci = std::getenv("CI");                                              \
      if (ci && std::string(ci) == "true") FAIL() << "no CUDA emulator in this build"; \
      GTEST_SKIP() << "no CUDA emulator (no CUDA toolkit)";                            \
    }                                                                                  \
  } while (0)

// Skips a test without the GPU of GRAPHJIT_TEST_DEVICE; fails where that GPU was asked for
// (gpu) or the build must have it (gpu-emu under CI=true).
#define REQUIRE_TEST_GPU()                                                                             \
  do {                                                                                                 \
    if (::graphjit::testing::TestGpu() != ::graphjit::DeviceKind::kGpuEmu) {                           \
      if (!::graphjit::testing::HaveTestGpu()) FAIL() << "GRAPHJIT_TEST_DEVICE=gpu, but no GPU opens"; \
    } else {                                                                                           \
      REQUIRE_CUDA_EMULATOR();                                                                         \
    }                                                                                                  \
  } while (0)

// A GraphDef under construction. Each method adds one node and returns its name.
class GraphBuilder {
 public:
  std::string Placeholder(const std::string& name, DType dtype, const std::vector<int64_t>& shape = {},
                          bool unknown_rank = false);
  std::string Const(const std::string& name, const Tensor& value);
  // A node of any op with data inputs and a "T" attr (unless t == kInvalid).
  tensorflow::NodeDef* Op(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                          DType t = DType::kFloat);
  tensorflow::GraphDef& graph_def() { return gd_; }

 private:
  tensorflow::GraphDef gd_;
};

void SetAttrType(tensorflow::NodeDef* n, const std::string& attr, DType t);
void SetAttrInt(tensorflow::NodeDef* n, const std::string& attr, int64_t v);
void SetAttrBool(tensorflow::NodeDef* n, const std::string& attr, bool v);
void SetAttrFloat(tensorflow::NodeDef* n, const std::string& attr, float v);
void SetAttrString(tensorflow::NodeDef* n, const std::string& attr, const std::string& v);
void SetAttrInts(tensorflow::NodeDef* n, const std::string& attr, const std::vector<int64_t>& v);

Tensor MakeFloat(const Shape& shape, const std::vector<float>& values);
Tensor MakeInt32(const Shape& shape, const std::vector<int32_t>& values);
Tensor MakeTensor(DType dtype, const Shape& shape, const std::vector<double>& values);
std::vector<double> Values(const Tensor& t);

// Creates a session (failing the test if that fails) and runs it.
std::unique_ptr<Session> MakeSession(const tensorflow::GraphDef& gd, SessionOptions options = {});
std::vector<Tensor> RunOrDie(Session& s, const std::vector<std::pair<std::string, Tensor>>& feeds,
                             const std::vector<std::string>& fetches);

// Runs `ENV graphjit ARGS` through the shell (ENV: "VAR=value ..." or empty);
// captures exit status, stdout and stderr.
// Sets an environment variable for the scope's life (the CUDA emulator's stand-ins and
// driver read some at each call); the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
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

struct CommandResult {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};
CommandResult RunGraphjit(const std::string& args, const std::string& env = "");

// Where the tests find graphjit's files: the source tree and the build's binary, unless
// GRAPHJIT_TEST_ROOT names another folder laid out the same way (an unpacked release with
// its tests: tests/data, tests/system/*.txt, tests/fuzz/ and bin/graphjit).
std::string SourcePath(const std::string& relative);
std::string GraphjitBinary();
std::string TestData(const std::string& relative);  // SourcePath("tests/data/" + relative)
std::string TempDir();                              // a fresh directory for this test
// The one folder in `dir` whose name starts with `prefix` (a cluster's dump folder,
// "<cluster>-<signature hash>"); empty, with a test failure, unless there is exactly one.
std::string OnlyFolder(const std::string& dir, const std::string& prefix);

}  // namespace graphjit::testing
