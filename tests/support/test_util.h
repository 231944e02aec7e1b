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

// Skips a test without the CUDA emulator; under CI=true (where the build has it) fails.
#define REQUIRE_CUDA_EMULATOR()                                                                          \
  do {                                                                                                   \
    if (!::graphjit::testing::HaveCudaEmulator()) {                                                      \
      const char* ci = std::getenv("CI");                                                                \
      if (ci && std::string(ci) == "true") FAIL() << "no CUDA emulator in this build";                   \
      GTEST_SKIP() << "no CUDA emulator (no CUDA toolkit)";                                              \
    }                                                                                                    \
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
struct CommandResult {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};
CommandResult RunGraphjit(const std::string& args, const std::string& env = "");

std::string TestData(const std::string& relative);  // path under tests/data
std::string TempDir();                              // a fresh directory for this test
// The one folder in `dir` whose name starts with `prefix` (a cluster's dump folder,
// "<cluster>-<signature hash>"); empty, with a test failure, unless there is exactly one.
std::string OnlyFolder(const std::string& dir, const std::string& prefix);

}  // namespace graphjit::testing
