#include "tests/support/test_util.h"

#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/attr.h"
#include "runtime/cuda_driver.h"

namespace graphjit::testing {

namespace {
bool DriverOpens(DeviceKind device) {
  auto library = CudaDriverLibrary(device, "");
  return library.ok() && CudaDriver::Open(*library).ok();
}
}  // namespace

bool HaveCudaEmulator() {
  static const bool have = DriverOpens(DeviceKind::kGpuEmu);
  return have;
}

DeviceKind TestGpu() {
  static const DeviceKind device = [] {
    const char* name = std::getenv("GRAPHJIT_TEST_DEVICE");
    if (!name || !*name) return DeviceKind::kGpuEmu;
    auto kind = ParseDeviceKind(name);
    if (!kind.ok() || (*kind != DeviceKind::kGpu && *kind != DeviceKind::kGpuEmu)) {
      std::fprintf(stderr, "GRAPHJIT_TEST_DEVICE must be gpu-emu or gpu, got '%s'\n", name);
      std::exit(2);
    }
    return *kind;
  }();
  return device;
}

const char* TestGpuName() { return DeviceKindName(TestGpu()); }

bool HaveTestGpu() {
  static const bool have = DriverOpens(TestGpu());
  return have;
}

void SetAttrType(tensorflow::NodeDef* n, const std::string& attr, DType t) {
  (*n->mutable_attr())[attr].set_type(static_cast<tensorflow::DataType>(t));
}
void SetAttrInt(tensorflow::NodeDef* n, const std::string& attr, int64_t v) { (*n->mutable_attr())[attr].set_i(v); }
void SetAttrBool(tensorflow::NodeDef* n, const std::string& attr, bool v) { (*n->mutable_attr())[attr].set_b(v); }
void SetAttrFloat(tensorflow::NodeDef* n, const std::string& attr, float v) { (*n->mutable_attr())[attr].set_f(v); }
void SetAttrString(tensorflow::NodeDef* n, const std::string& attr, const std::string& v) { (*n->mutable_attr())[attr].set_s(v); }
void SetAttrInts(tensorflow::NodeDef* n, const std::string& attr, const std::vector<int64_t>& v) {
  auto* list = (*n->mutable_attr())[attr].mutable_list();
  for (int64_t x : v) list->add_i(x);
}

std::string GraphBuilder::Placeholder(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                      bool unknown_rank) {
  tensorflow::NodeDef* n = gd_.add_node();
  n->set_name(name);
  n->set_op("Placeholder");
  SetAttrType(n, "dtype", dtype);
  ShapeToProto(unknown_rank ? Shape::UnknownRank() : Shape(shape), (*n->mutable_attr())["shape"].mutable_shape());
  return name;
}

std::string GraphBuilder::Const(const std::string& name, const Tensor& value) {
  tensorflow::NodeDef* n = gd_.add_node();
  n->set_name(name);
  n->set_op("Const");
  SetAttrType(n, "dtype", value.dtype());
  TensorToProto(value, (*n->mutable_attr())["value"].mutable_tensor());
  return name;
}

tensorflow::NodeDef* GraphBuilder::Op(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                                      DType t) {
  tensorflow::NodeDef* n = gd_.add_node();
  n->set_name(name);
  n->set_op(op);
  for (const auto& in : inputs) n->add_input(in);
  if (t != DType::kInvalid) SetAttrType(n, "T", t);
  return n;
}

Tensor MakeTensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::Allocate(dtype, shape).value();
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.num_elements());
  VisitDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<T>()[i] = static_cast<T>(static_cast<ComputeType<T>>(values[i]));
  });
  return t;
}

Tensor MakeFloat(const Shape& shape, const std::vector<float>& values) {
  return MakeTensor(DType::kFloat, shape, std::vector<double>(values.begin(), values.end()));
}

Tensor MakeInt32(const Shape& shape, const std::vector<int32_t>& values) {
  return MakeTensor(DType::kInt32, shape, std::vector<double>(values.begin(), values.end()));
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.ValueAsDouble(i);
  return v;
}

std::unique_ptr<Session> MakeSession(const tensorflow::GraphDef& gd, SessionOptions options) {
  auto s = Session::Create(options, gd);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<Tensor> RunOrDie(Session& s, const std::vector<std::pair<std::string, Tensor>>& feeds,
                             const std::vector<std::string>& fetches) {
  std::vector<Tensor> out;
  Status st = s.Run(feeds, fetches, {}, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

namespace {
std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

std::string TempDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "test";
  auto dir = std::filesystem::temp_directory_path() /
             ("graphjit_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string OnlyFolder(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().string());
  EXPECT_EQ(found.size(), 1u) << "folders named " << prefix << "* in " << dir;
  return found.size() == 1 ? found[0] : "";
}

CommandResult RunGraphjit(const std::string& args, const std::string& env) {
  std::string dir = TempDir();
  std::string out = dir + "/stdout", err = dir + "/stderr";
  std::string cmd = env + " " + GraphjitBinary() + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CommandResult r;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    // The shell reports a child killed by a signal as 128 + signal.
    r.signaled = r.exit_code > 128;
  } else {
    r.signaled = true;
  }
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

namespace {
const char* TestRoot() {
  const char* root = std::getenv("GRAPHJIT_TEST_ROOT");
  return root && *root ? root : nullptr;
}
}  // namespace

std::string SourcePath(const std::string& relative) {
  return std::string(TestRoot() ? TestRoot() : GRAPHJIT_SOURCE_DIR) + "/" + relative;
}

std::string GraphjitBinary() { return TestRoot() ? std::string(TestRoot()) + "/bin/graphjit" : GRAPHJIT_BINARY; }

std::string TestData(const std::string& relative) { return SourcePath("tests/data/" + relative); }

}  // namespace graphjit::testing
