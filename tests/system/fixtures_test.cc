// Every fixture written by TensorFlow (tests/data/**/manifest.json) runs in graphjit
// and matches TensorFlow's own outputs within the tolerance its manifest states, with
// and without the graph optimizations; and the two agree with each other.
#include <gtest/gtest.h>
#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/graphdef.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/npy.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

namespace fs = std::filesystem;

// A list of fixtures with why, one per line: "name  why" (tests/system/*.txt).
std::map<std::string, std::string> ReadList(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream f(path);
  EXPECT_TRUE(f) << "cannot read " << path;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find_first_of(" \t");
    out[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
  }
  return out;
}

// The Keras layers graphjit cannot run yet, each with the ops it lacks:
// tests/system/keras_layers_unsupported.txt.
const std::map<std::string, std::string>& UnsupportedKerasLayers() {
  static const auto* list =
      new std::map<std::string, std::string>(ReadList(testing::SourcePath("tests/system/keras_layers_unsupported.txt")));
  return *list;
}

std::string FolderOf(const std::string& manifest) { return fs::path(manifest).parent_path().parent_path().filename(); }
std::string NameOf(const std::string& manifest) { return fs::path(manifest).parent_path().filename(); }

// Every fixture but the Keras layers graphjit cannot run yet.
std::vector<std::string> Manifests() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(testing::SourcePath("tests/data"))) {
    const std::string m = e.path().string();
    if (e.path().filename() != "manifest.json") continue;
    if (FolderOf(m) == "keras_layers" && UnsupportedKerasLayers().count(NameOf(m))) continue;
    out.push_back(m);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string rel = fs::relative(fs::path(info.param).parent_path(), testing::SourcePath("tests/data")).string();
  for (char& c : rel)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return rel;
}

class Fixture : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    RegisterGraphOptimizer();
    RegisterJit();
  }
};

struct Case {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  std::vector<Tensor> expected;  // TensorFlow's outputs
  double rtol = 0, atol = 0;
};

Case Load(const std::string& manifest_path) {
  fs::path dir = fs::path(manifest_path).parent_path();
  nlohmann::json m = nlohmann::json::parse(std::ifstream(manifest_path));
  Case c;
  for (auto& [name, file] : m["feeds"].items()) {
    auto t = ReadNpy((dir / file.get<std::string>()).string());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (t.ok()) c.feeds.emplace_back(name, *t);
  }
  for (auto& [name, file] : m["fetches"].items()) {
    c.fetches.push_back(name);
    auto t = ReadNpy((dir / file.get<std::string>()).string());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    c.expected.push_back(t.ok() ? *t : Tensor());
  }
  c.rtol = m["tolerance"]["rtol"];
  c.atol = m["tolerance"]["atol"];
  return c;
}

// Runs the fixture's model with the given threads, with or without graph optimizations,
// at a JIT level (clustering single ops too with `min_cluster_size` 1), on a device ("gpu-emu":
// the CUDA emulator, every GPU module also checked by ptxas for sm_80 and sm_90; "gpu").
// `cpu_ops`: the ops a GPU session computed on the CPU (StreamCounts::cpu_ops).
std::vector<Tensor> RunFixture(const std::string& manifest_path, const Case& c, int threads, bool optimize,
                               JitLevel jit = JitLevel::kOff, int min_cluster_size = 2, const std::string& device = "",
                               int64_t* cpu_ops = nullptr) {
  fs::path dir = fs::path(manifest_path).parent_path();
  nlohmann::json m = nlohmann::json::parse(std::ifstream(manifest_path));
  auto gd = ReadGraphDefFile((dir / m["model"].get<std::string>()).string());
  EXPECT_TRUE(gd.ok()) << gd.status().ToString();
  if (!gd.ok()) return {};
  SessionOptions options;
  options.intra_op_threads = options.inter_op_threads = threads;
  options.rewrite_options.set_disable_meta_optimizer(!optimize);
  options.jit_level = jit;
  options.min_cluster_size = min_cluster_size;
  options.device = ParseDeviceKind(device).value();
  options.gpu_ptxas_check = !device.empty();
  options.gpu_tf32 = false;  // TensorFlow's CPU build, which made the fixtures, has no TF32
  auto session = Session::Create(options, *gd);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  std::vector<Tensor> outputs;
  Status s = (*session)->Run(c.feeds, c.fetches, {}, &outputs);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (cpu_ops) *cpu_ops = (*session)->LastRunCounts().cpu_ops;
  return outputs;
}

// The fixtures that compute on the CPU in a GPU session (ops the JIT does not compile),
// each with why: tests/system/gpu_cpu_ops.txt, by the fixture's folder under tests/data. The
// list may only shrink: a case on it that runs wholly on the GPU fails until it is taken off.
// Returns whether the case is listed.
bool ExpectCpuOpsAsListed(const std::string& manifest, int64_t cpu_ops) {
  static const auto* listed =
      new std::map<std::string, std::string>(ReadList(testing::SourcePath("tests/system/gpu_cpu_ops.txt")));
  const std::string name = fs::relative(fs::path(manifest).parent_path(), testing::SourcePath("tests/data")).string();
  auto it = listed->find(name);
  if (it == listed->end())
    EXPECT_EQ(cpu_ops, 0) << name << " computed on the CPU in a GPU session";
  else
    EXPECT_GT(cpu_ops, 0) << name << " runs wholly on the GPU now: take it off tests/system/gpu_cpu_ops.txt (" << it->second
                          << ")";
  return it != listed->end();
}

void ExpectClose(const Case& c, const std::vector<Tensor>& outputs, const std::vector<Tensor>& expected, const char* what) {
  ASSERT_EQ(outputs.size(), c.fetches.size());
  for (size_t i = 0; i < c.fetches.size(); ++i) {
    SCOPED_TRACE("fetch " + c.fetches[i]);
    Tensor got = outputs[i];
    // .npy has no bfloat16: compare such outputs as float32, as written by --out.
    if (got.dtype() == DType::kBFloat16 || (got.dtype() == DType::kHalf && expected[i].dtype() == DType::kFloat))
      got = *CastTensor(got, DType::kFloat);
    Tensor want = expected[i];
    if (want.dtype() == DType::kBFloat16) want = *CastTensor(want, DType::kFloat);
    ASSERT_EQ(DTypeName(got.dtype()), DTypeName(want.dtype()));
    ASSERT_EQ(got.shape(), want.shape());
    int reported = 0;
    for (int64_t j = 0; j < got.num_elements(); ++j) {
      double a = got.ValueAsDouble(j), e = want.ValueAsDouble(j);
      bool ok = (std::isnan(a) && std::isnan(e)) || a == e || std::fabs(a - e) <= c.atol + c.rtol * std::fabs(e);
      if (!ok && reported++ < 5) ADD_FAILURE() << "element " << j << ": graphjit " << a << ", " << what << " " << e;
    }
  }
}

TEST_P(Fixture, MatchesTensorFlow) {
  Case c = Load(GetParam());
  ExpectClose(c, RunFixture(GetParam(), c, 0, true), c.expected, "TensorFlow");
}

TEST_P(Fixture, MatchesTensorFlowOnOneThread) {
  Case c = Load(GetParam());
  ExpectClose(c, RunFixture(GetParam(), c, 1, true), c.expected, "TensorFlow");
}

TEST_P(Fixture, MatchesTensorFlowUnoptimized) {
  Case c = Load(GetParam());
  ExpectClose(c, RunFixture(GetParam(), c, 1, false), c.expected, "TensorFlow");
}

// The differential test of the graph optimizations: same outputs with and without.
TEST_P(Fixture, OptimizationKeepsOutputs) {
  Case c = Load(GetParam());
  std::vector<Tensor> plain = RunFixture(GetParam(), c, 1, false);
  ASSERT_EQ(plain.size(), c.fetches.size());
  ExpectClose(c, RunFixture(GetParam(), c, 1, true), plain, "unoptimized");
}

// The JIT's differential test: compiled clusters give what the reference kernels give,
// and every cluster of every fixture compiles (none runs op by op).
TEST_P(Fixture, JitMatchesTheReferenceKernels) {
  Case c = Load(GetParam());
  std::vector<Tensor> reference = RunFixture(GetParam(), c, 1, true);
  ASSERT_EQ(reference.size(), c.fetches.size());
  const JitStats before = GetJitStats();
  ExpectClose(c, RunFixture(GetParam(), c, 1, true, JitLevel::kOn1), reference, "JIT off");
  ExpectClose(c, RunFixture(GetParam(), c, 1, true, JitLevel::kOn2), reference, "JIT off");
  EXPECT_EQ(GetJitStats().fallback - before.fallback, 0) << "a cluster ran op by op";
}

INSTANTIATE_TEST_SUITE_P(TensorFlow, Fixture, ::testing::ValuesIn(Manifests()), CaseName);

// The op fixtures the JIT does not compile, each with why: tests/system/jit_uncompiled_ops.txt.
// The list may only shrink: a case on it that compiles fails until it is taken off.
std::map<std::string, std::string> UncompiledOps() {
  return ReadList(testing::SourcePath("tests/system/jit_uncompiled_ops.txt"));
}

std::vector<std::string> ManifestsIn(const std::string& folder, bool in) {
  std::vector<std::string> out;
  for (const std::string& m : Manifests())
    if ((FolderOf(m) == folder) == in) out.push_back(m);
  return out;
}
std::vector<std::string> OpManifests() { return ManifestsIn("ops", true); }

class OpFixture : public Fixture {};

// Every op fixture alone through the JIT (min_cluster_size 1, ON_2): it compiles, and the
// compiled kernel matches TensorFlow at the fixture's tolerance.
TEST_P(OpFixture, CompilesAloneAndMatchesTensorFlow) {
  static const std::map<std::string, std::string> uncompiled = UncompiledOps();
  const std::string name = fs::path(GetParam()).parent_path().filename().string();
  Case c = Load(GetParam());
  const JitStats before = GetJitStats();
  ExpectClose(c, RunFixture(GetParam(), c, 1, true, JitLevel::kOn2, /*min_cluster_size=*/1), c.expected, "TensorFlow");
  const JitStats after = GetJitStats();
  const bool compiled = after.compiled > before.compiled && after.fallback == before.fallback;
  auto listed = uncompiled.find(name);
  if (listed == uncompiled.end())
    EXPECT_TRUE(compiled) << name << " did not compile (clusters " << after.clusters - before.clusters << ", op by op "
                          << after.fallback - before.fallback << ")";
  else
    EXPECT_FALSE(compiled) << name << " compiles now: take it off tests/system/jit_uncompiled_ops.txt (" << listed->second << ")";
}

// The same on the GPU (GRAPHJIT_TEST_DEVICE's: the CUDA emulator unless it says gpu): it
// matches TensorFlow, nothing runs on the CPU unless tests/system/gpu_cpu_ops.txt says why,
// and an op the JIT compiles for the GPU runs as at least one GPU kernel (GEMMs: a cuBLASLt
// call), unless its outputs are empty.
TEST_P(OpFixture, RunsOnTheGpu) {
  REQUIRE_TEST_GPU();
  static const std::map<std::string, std::string> uncompiled = UncompiledOps();
  const std::string name = fs::path(GetParam()).parent_path().filename().string();
  Case c = Load(GetParam());
  const JitStats before = GetJitStats();
  int64_t cpu_ops = 0;
  ExpectClose(c, RunFixture(GetParam(), c, 1, true, JitLevel::kOn2, 1, testing::TestGpuName(), &cpu_ops), c.expected,
              "TensorFlow");
  const bool on_the_cpu = ExpectCpuOpsAsListed(GetParam(), cpu_ops);
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.internal_errors, before.internal_errors);
  if (uncompiled.count(name)) return;
  EXPECT_EQ(after.fallback, before.fallback) << name << ": a cluster ran op by op";
  const bool empty = std::all_of(c.expected.begin(), c.expected.end(), [](const Tensor& t) { return t.num_elements() == 0; });
  if (!on_the_cpu && !empty) {
    EXPECT_GT(after.gpu_launches + after.graph_launches, before.gpu_launches + before.graph_launches)
        << name << " launched no GPU kernel";
  }
}

INSTANTIATE_TEST_SUITE_P(TensorFlow, OpFixture, ::testing::ValuesIn(OpManifests()), CaseName);

class ModelFixture : public Fixture {};

// Every model fixture and Keras layer on the GPU (GRAPHJIT_TEST_DEVICE's) at both JIT levels
// matches TensorFlow with nothing on the CPU unless tests/system/gpu_cpu_ops.txt says why;
// each model runs GPU kernels (a single layer may have nothing the JIT compiles: a Reshape
// alone).
TEST_P(ModelFixture, RunsOnTheGpu) {
  REQUIRE_TEST_GPU();
  Case c = Load(GetParam());
  const JitStats before = GetJitStats();
  int64_t cpu_ops[2] = {0, 0};
  ExpectClose(c, RunFixture(GetParam(), c, 1, true, JitLevel::kOn1, 2, testing::TestGpuName(), &cpu_ops[0]), c.expected,
              "TensorFlow");
  ExpectClose(c, RunFixture(GetParam(), c, 1, true, JitLevel::kOn2, 2, testing::TestGpuName(), &cpu_ops[1]), c.expected,
              "TensorFlow");
  for (int64_t ops : cpu_ops) ExpectCpuOpsAsListed(GetParam(), ops);
  EXPECT_EQ(GetJitStats().internal_errors, before.internal_errors);
  const JitStats after = GetJitStats();
  if (FolderOf(GetParam()) != "keras_layers") {
    EXPECT_GT(after.gpu_launches + after.graph_launches, before.gpu_launches + before.graph_launches);
  }
}

INSTANTIATE_TEST_SUITE_P(TensorFlow, ModelFixture, ::testing::ValuesIn(ManifestsIn("ops", false)), CaseName);

// A model fixture in a session on the test GPU at ON_2, with its output (the manifest's, else
// Identity) and TensorFlow's value of it.
struct ModelOnGpu {
  Case c;
  std::string output;
  Tensor expected;
  std::unique_ptr<Session> session;
};
void LoadModelOnGpu(const std::string& name, ModelOnGpu* m) {
  const std::string manifest = testing::TestData(name) + "/manifest.json";
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(manifest));
  m->c = Load(manifest);
  m->output = json.contains("output") ? json["output"].get<std::string>() : "Identity";
  const auto at = std::find(m->c.fetches.begin(), m->c.fetches.end(), m->output);
  ASSERT_NE(at, m->c.fetches.end());
  m->expected = m->c.expected[at - m->c.fetches.begin()];
  m->c.fetches = {m->output};
  m->c.expected = {m->expected};
  auto gd = ReadGraphDefFile(testing::TestData(name) + "/model.pb");
  ASSERT_TRUE(gd.ok()) << gd.status().ToString();
  SessionOptions options;
  options.device = testing::TestGpu();
  options.jit_level = JitLevel::kOn2;
  options.gpu_tf32 = false;
  auto session = Session::Create(options, *gd);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  m->session = std::move(*session);
}

// The transformer models (a Keras encoder block, a two-block BERT-like encoder) keep their
// work on the GPU: from the second run on, only the feed goes in and the fetched output
// comes out (within 5%: nothing else crosses), and each cluster is one launch graph (no
// kernel launched on its own).
TEST(Fixtures, TransformersStayOnTheGpuBetweenFeedAndFetch) {
  REQUIRE_TEST_GPU();
  RegisterGraphOptimizer();
  RegisterJit();
  for (const char* name : {"transformer_block", "bert_encoder_small"}) {
    SCOPED_TRACE(name);
    ModelOnGpu m;
    ASSERT_NO_FATAL_FAILURE(LoadModelOnGpu(name, &m));
    int64_t feed_bytes = 0;
    for (const auto& [feed, t] : m.c.feeds) feed_bytes += static_cast<int64_t>(t.bytes());
    const JitStats first = GetJitStats();
    for (int run = 0; run < 3; ++run) {
      SCOPED_TRACE("run " + std::to_string(run));
      const JitStats before = GetJitStats();
      std::vector<Tensor> outputs;
      ASSERT_TRUE(m.session->Run(m.c.feeds, m.c.fetches, {}, &outputs).ok());
      ExpectClose(m.c, outputs, m.c.expected, "TensorFlow");
      const JitStats after = GetJitStats();
      EXPECT_EQ(after.fallback, first.fallback);
      if (run == 0) continue;
      const StreamCounts counts = m.session->LastRunCounts();
      EXPECT_LE(counts.h2d_bytes, feed_bytes * 105 / 100) << counts.ToString();
      EXPECT_LE(counts.d2h_bytes, static_cast<int64_t>(m.expected.bytes()) * 105 / 100) << counts.ToString();
      EXPECT_EQ(after.gpu_launches, before.gpu_launches) << "kernels launched outside a graph";
      EXPECT_GE(counts.graph_launches, after.clusters - first.clusters) << "a cluster without its launch graph";
      EXPECT_GE(counts.graph_launches, 1);
    }
  }
}

// The Keras LSTM's loop (8 steps) stays on the GPU: its state and TensorLists live there,
// its input sequence is read there (TensorListGetItem as a gather), each step's output is
// written there (SetItem); between the host and the device, beyond the feed and the fetch,
// at most 64 bytes per step go (the loop's condition).
TEST(Fixtures, LstmLoopStaysOnTheGpu) {
  REQUIRE_TEST_GPU();
  RegisterGraphOptimizer();
  RegisterJit();
  ModelOnGpu m;
  ASSERT_NO_FATAL_FAILURE(LoadModelOnGpu("lstm_classifier_small", &m));
  const int64_t steps = m.c.feeds[0].second.shape().dim(1);
  const int64_t outside = static_cast<int64_t>(m.c.feeds[0].second.bytes() + m.expected.bytes());
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outputs;
    ASSERT_TRUE(m.session->Run(m.c.feeds, m.c.fetches, {}, &outputs).ok());
    ExpectClose(m.c, outputs, m.c.expected, "TensorFlow");
  }
  const StreamCounts counts = m.session->LastRunCounts();
  EXPECT_LE(counts.h2d_bytes + counts.d2h_bytes - outside, 64 * steps) << counts.ToString();
}

// A Keras layer on tests/system/keras_layers_unsupported.txt is rejected up front, with an
// error that names the first op the list gives; one that loads fails until taken off.
TEST(Fixtures, UnsupportedKerasLayersAreRejectedNamingTheirOps) {
  for (const auto& [name, why] : UnsupportedKerasLayers()) {
    SCOPED_TRACE(name);
    const fs::path dir = fs::path(testing::TestData("keras_layers")) / name;
    ASSERT_TRUE(fs::exists(dir / "model.pb")) << "no fixture " << dir;
    auto gd = ReadGraphDefFile((dir / "model.pb").string());
    ASSERT_TRUE(gd.ok()) << gd.status().ToString();
    auto session = Session::Create(SessionOptions{}, *gd);
    ASSERT_FALSE(session.ok()) << name << " loads now: take it off tests/system/keras_layers_unsupported.txt";
    const std::string first_op = why.substr(0, why.find_first_of(" ,"));
    EXPECT_NE(session.status().message().find(first_op), std::string::npos) << session.status().ToString();
  }
}

TEST(Fixtures, UncompiledOpsAreOpFixtures) {
  std::set<std::string> cases;
  for (const std::string& m : OpManifests()) cases.insert(fs::path(m).parent_path().filename().string());
  for (const auto& [name, why] : UncompiledOps()) {
    EXPECT_TRUE(cases.count(name)) << name << " in jit_uncompiled_ops.txt is not an op fixture";
    EXPECT_FALSE(why.empty()) << name << " in jit_uncompiled_ops.txt says not why";
  }
}

TEST(Fixtures, ArePresent) {
  auto m = Manifests();
  EXPECT_GE(m.size(), 2u);
  bool mnist = false, mlp = false;
  for (const auto& p : m) {
    mnist |= p.find("mnist_softmax") != std::string::npos;
    mlp |= p.find("keras_mlp") != std::string::npos;
  }
  EXPECT_TRUE(mnist && mlp);
}

}  // namespace
}  // namespace graphjit
