// tools/: the graphjit command line, run as a user runs it. Every bad-input class has
// a test of its exit status (0 ok, 1 run-time error, 2 bad input) and its message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/graphdef.h"
#include "runtime/npy.h"
#include "runtime/trace.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;
using testing::RunGraphjit;
using testing::TestData;

std::string Mnist() { return TestData("mnist_softmax/model.pb"); }
std::string MnistFeeds() {
  return " --feed x=" + TestData("mnist_softmax/x.npy") + " --feed y_=" + TestData("mnist_softmax/y_.npy");
}

// Writes a GraphDef into a fresh directory and returns its path.
std::string WriteModel(const tensorflow::GraphDef& gd, const std::string& name = "model.pb") {
  std::string path = testing::TempDir() + "/" + name;
  EXPECT_TRUE(WriteGraphDefFile(gd, path).ok());
  return path;
}

void ExpectExit(const testing::CommandResult& r, int code, const std::string& stderr_fragment) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, code) << "stderr: " << r.err;
  EXPECT_NE(r.err.find(stderr_fragment), std::string::npos) << "stderr: " << r.err;
  // One clear line.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, VersionAndHelp) {
  auto v = RunGraphjit("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("graphjit 0."), std::string::npos) << v.out;
  auto h = RunGraphjit("help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("run"), std::string::npos);
  auto rh = RunGraphjit("run --help");
  EXPECT_EQ(rh.exit_code, 0);
  EXPECT_NE(rh.out.find("--random-feeds"), std::string::npos);
}

TEST(Cli, RunPrintsOneLinePerFetchAndWritesNpy) {
  std::string out = testing::TempDir();
  auto r = RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y --fetch xent:0 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("y float32 [8,10] min="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nxent:0 float32 [] min=2.21"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  ASSERT_TRUE(std::filesystem::exists(out + "/y.npy"));
  ASSERT_TRUE(std::filesystem::exists(out + "/xent_0.npy"));
  auto y = ReadNpy(out + "/y.npy");
  auto expected = ReadNpy(TestData("mnist_softmax/out_y.npy"));
  ASSERT_TRUE(y.ok() && expected.ok());
  for (int64_t i = 0; i < y->num_elements(); ++i) EXPECT_NEAR(y->ValueAsDouble(i), expected->ValueAsDouble(i), 1e-6);
}

TEST(Cli, RunReproducesTensorFlowOnBothFixtures) {
  struct Fixture {
    std::string model, feeds;
    std::vector<std::string> fetches;
  };
  std::vector<Fixture> fixtures = {
      {"mnist_softmax/model.pb", MnistFeeds(), {"y", "cross_entropy", "xent"}},
      {"keras_mlp/model.pbtxt", " --feed input=" + TestData("keras_mlp/input.npy"), {"Identity"}},
  };
  for (const auto& f : fixtures) {
    std::string out = testing::TempDir();
    std::string cmd = "run " + TestData(f.model) + f.feeds + " --out " + out;
    for (const auto& fetch : f.fetches) cmd += " --fetch " + fetch;
    auto r = RunGraphjit(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string dir = f.model.substr(0, f.model.find('/'));
    for (const auto& fetch : f.fetches) {
      auto c = RunGraphjit("compare " + out + "/" + fetch + ".npy " + TestData(dir + "/out_" + fetch + ".npy") +
                           " --rtol 1e-5 --atol 1e-6");
      EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
      EXPECT_NE(c.out.find(": match, 0 of"), std::string::npos) << c.out;
    }
  }
  // compare itself detects a difference.
  auto c = RunGraphjit("compare " + TestData("mnist_softmax/out_y.npy") + " " + TestData("mnist_softmax/x.npy"));
  EXPECT_EQ(c.exit_code, 2);
}

// `run --out` writes float16 as float32; compare takes it against TensorFlow's float16 file
// by value (the mixed-precision encoder's float16 activations).
TEST(Cli, CompareTakesFloatsOfTwoTypesByValue) {
  const std::string dir = TestData("bert_encoder_small_mixed"), out = testing::TempDir() + "/mixed";
  const std::string fetch = "bert_encoder_1/ffn1_in_1/BiasAdd", file = "bert_encoder_1_ffn1_in_1_BiasAdd.npy";
  auto r = RunGraphjit("run " + dir + "/model.pb --feed x=" + dir + "/x.npy --fetch " + fetch + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = RunGraphjit("compare " + out + "/" + file + " " + dir + "/out_" + file + " --rtol 3e-2 --atol 3e-2");
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find(": match, 0 of 4096"), std::string::npos) << c.out;
}

TEST(Cli, DefaultFetchesAreNodesWithoutConsumers) {
  auto r = RunGraphjit("run " + TestData("keras_mlp/model.pbtxt") + " --feed input=" + TestData("keras_mlp/input.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The only data sink is "Identity"; the NoOp has no outputs and is not fetched.
  EXPECT_EQ(r.out.substr(0, r.out.find(' ')), "Identity");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(Cli, RandomFeedsAreSeededAndNeedKnownShapes) {
  auto a = RunGraphjit("run " + Mnist() + " --random-feeds --seed 7 --shape x=4,784 --shape y_=4,10 --fetch y");
  auto b = RunGraphjit("run " + Mnist() + " --random-feeds --seed 7 --shape x=4,784 --shape y_=4,10 --fetch y");
  auto c = RunGraphjit("run " + Mnist() + " --random-feeds --seed 8 --shape x=4,784 --shape y_=4,10 --fetch y");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("y float32 [4,10]"), std::string::npos);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  ExpectExit(RunGraphjit("run " + Mnist() + " --random-feeds --fetch y"), 2,
             "placeholder 'x' has shape [?,784]; give its dims with --shape x=d0,d1,...");
  ExpectExit(RunGraphjit("run " + Mnist() + " --random-feeds --shape x=4,783 --fetch y"), 2,
             "does not match the placeholder's [?,784]");
}

TEST(Cli, OutputNameCollisionIsAnError) {
  GraphBuilder b;
  b.Placeholder("a_1", DType::kFloat, {1});
  b.Op("a", "IdentityN", {"a_1", "a_1"}, DType::kInvalid);
  auto* list = (*b.graph_def().mutable_node(1)->mutable_attr())["T"].mutable_list();
  list->add_type(tensorflow::DT_FLOAT);
  list->add_type(tensorflow::DT_FLOAT);
  std::string model = WriteModel(b.graph_def());
  ExpectExit(RunGraphjit("run " + model + " --random-feeds --fetch a:1 --fetch a_1 --out " + testing::TempDir()), 2,
             "would both be written to a_1.npy");
}

TEST(Cli, TraceIsAChromeTraceEventFile) {
  std::string path = testing::TempDir() + "/trace.json";
  auto r = RunGraphjit("run " + Mnist() + MnistFeeds() + " --trace " + path + " --threads 2 --repeat 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_TRUE(doc.contains("traceEvents"));
  const auto& events = doc["traceEvents"];
  ASSERT_TRUE(events.is_array());
  std::set<std::string> names;
  for (const auto& e : events) {
    if (e["ph"] == "M") {  // a row's name
      EXPECT_EQ(e["name"], "thread_name");
      EXPECT_TRUE(e["args"]["name"].get<std::string>().starts_with("host thread ")) << e.dump();
      continue;
    }
    EXPECT_EQ(e["ph"], "X");
    EXPECT_TRUE(e["name"].is_string());
    EXPECT_TRUE(e["ts"].is_number_integer());
    EXPECT_TRUE(e["dur"].is_number_integer());
    EXPECT_GE(e["dur"].get<int64_t>(), 0);
    EXPECT_TRUE(e["pid"].is_number_integer());
    EXPECT_TRUE(e["tid"].is_number_integer());
    EXPECT_TRUE(e["args"]["op"].is_string());
    names.insert(e["name"]);
  }
  // One event per kernel of the last run (Const nodes are not kernels).
  EXPECT_TRUE(names.count("MatMul"));
  EXPECT_TRUE(names.count("y"));
  EXPECT_EQ(names.count("MatMul"), 1u);
}

TEST(Cli, TraceShowsEachCompileStageAndEachFusedKernel) {
  std::string path = testing::TempDir() + "/jit_trace.json";
  auto r = RunGraphjit("run " + Mnist() + MnistFeeds() + " --jit on --trace " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;  // the rows' names
    names.insert(e["name"]);
    if (e["args"]["op"] == "fusion") {
      EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0) << e.dump();
    }
  }
  for (const char* stage : {"specialize", "plan", "emit", "mlir", "llvm"})
    EXPECT_TRUE(names.count(std::string("cluster_0/compile/") + stage)) << stage;
  EXPECT_TRUE(names.count("cluster_0/fusion_0"));
  EXPECT_TRUE(names.count("cluster_0"));
}

// On a GPU the trace has a row for the stream: each input's copy to the device, then each
// kernel (a GEMM as a cuBLASLt call), in order, or with launch graphs (the default) the
// cluster's graph launch, timed by the stream's events, within the cluster's call on the
// host's row. The outputs stay on the device: a fetched one is copied to the host by the
// run, on the host's row, into page-locked memory. Each copy says how its host memory went.
TEST(Cli, TraceShowsGpuKernelsCopiesAndTheStream) {
  REQUIRE_TEST_GPU();
  for (const bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "launch graphs" : "kernels one by one");
    std::string path = testing::TempDir() + "/gpu_trace.json";
    // (Two runs with graphs: a cluster's first call launches its kernels one by one, later
    // calls replay their graph; the trace is the last run's.)
    auto r = RunGraphjit("run " + Mnist() + MnistFeeds() + " --device " + testing::TestGpuName() + " --jit on --trace " + path +
                             (graphs ? " --repeat 2" : ""),
                         graphs ? "" : "GRAPHJIT_FLAGS=--gpu_graphs=off");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
    std::vector<nlohmann::json> stream;
    std::map<std::string, nlohmann::json> host;
    std::string stream_row;
    for (const auto& e : doc["traceEvents"]) {
      if (e["ph"] == "M" && e["tid"] == kGpuStreamRow) stream_row = e["args"]["name"];
      if (e["ph"] != "X") continue;
      if (e["tid"] == kGpuStreamRow)
        stream.push_back(e);
      else
        host[e["name"]] = e;
    }
    EXPECT_EQ(stream_row, "GPU stream");
    ASSERT_FALSE(stream.empty());
    // In order of time (events of the same microsecond in the order they were written).
    std::stable_sort(stream.begin(), stream.end(), [](const auto& a, const auto& b) { return a["ts"] < b["ts"]; });
    // Per cluster: its inputs copied in first, then kernels (the MatMul a cuBLASLt call) or
    // their graph.
    const std::map<std::string, int> phase = {{"HtoD", 0}, {"gpu kernel", 1}, {"cuBLASLt", 1}, {"graph launch", 1}};
    std::map<std::string, int> last_phase;
    std::map<std::string, std::string> first_op;
    std::set<std::string> ops;
    for (const auto& e : stream) {
      const std::string name = e["name"], op = e["args"]["op"];
      ASSERT_TRUE(phase.count(op)) << e.dump();
      ops.insert(op);
      if (op == "HtoD") {  // the feeds are ordinary memory: small ones left to the driver, large ones staged
        const int64_t bytes = e["args"]["bytes"];
        EXPECT_GT(bytes, 0) << e.dump();
        EXPECT_EQ(e["args"]["host_memory"], bytes >= 65536 ? "staged" : "pageable") << e.dump();
      }
      const std::string cluster = name.substr(0, name.find('/'));
      EXPECT_GE(phase.at(op), last_phase[cluster]) << name;
      last_phase[cluster] = phase.at(op);
      first_op.try_emplace(cluster, op);
      // Within its cluster's call on the host (to the microsecond).
      ASSERT_TRUE(host.count(cluster)) << name;
      const int64_t begin = host[cluster]["ts"], end = begin + host[cluster]["dur"].get<int64_t>();
      EXPECT_GE(e["ts"].get<int64_t>(), begin - 1) << name;
      EXPECT_LE(e["ts"].get<int64_t>() + e["dur"].get<int64_t>(), end + 1) << name;
    }
    const std::set<std::string> expected_ops =
        graphs ? std::set<std::string>{"HtoD", "graph launch"} : std::set<std::string>{"HtoD", "gpu kernel", "cuBLASLt"};
    EXPECT_EQ(ops, expected_ops);
    for (const auto& [cluster, op] : first_op) EXPECT_EQ(op, "HtoD") << cluster;
    // The fetched tensors a cluster left on the device, copied to the host once each.
    int fetched = 0;
    for (const auto& [name, e] : host)
      if (e["args"]["op"] == "DtoH") {
        EXPECT_EQ(name.rfind("fetch_", 0), 0u) << name;
        EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0) << name;
        EXPECT_EQ(e["args"]["host_memory"], "pinned") << name;  // into page-locked memory
        ++fetched;
      }
    EXPECT_GE(fetched, 1);
  }
}

// TensorFlow's gpu_options.per_process_gpu_memory_fraction bounds the device's memory:
// running out of it is a clear error, not a crash; a fraction outside [0, 1] is refused.
TEST(Cli, GpuMemoryFractionBoundsTheDeviceAllocator) {
  REQUIRE_TEST_GPU();
  const std::string config = testing::TempDir() + "/gpu_config.pbtxt";
  auto run = [&](const std::string& fraction) {
    std::ofstream(config) << "gpu_options { per_process_gpu_memory_fraction: " << fraction << " allow_growth: true }";
    return RunGraphjit("run " + Mnist() + MnistFeeds() + " --device " + testing::TestGpuName() + " --jit on --config " + config);
  };
  auto roomy = run("0.5");
  EXPECT_EQ(roomy.exit_code, 0) << roomy.err;
  auto tight = run("1e-8");  // 43 bytes on the emulator's 4 GiB, 1.5 KB on a 141 GB GPU: not the 25 KB feed
  EXPECT_NE(tight.exit_code, 0);
  EXPECT_NE(tight.err.find("out of device memory"), std::string::npos) << tight.err;
  EXPECT_NE(tight.err.find("per_process_gpu_memory_fraction"), std::string::npos) << tight.err;
  auto over = run("1.5");
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.err.find("per_process_gpu_memory_fraction must be between 0 and 1"), std::string::npos) << over.err;
}

// A GPU session names, once, the ops that run on the CPU: data ops the JIT does not compile,
// not views or shape-only ops (they move no data), and apart from them the loops the CPU
// drives.
TEST(Cli, GpuSessionNamesWhatRunsOnTheCpu) {
  REQUIRE_TEST_GPU();
  auto run = [](const std::string& fixture) {
    const std::string dir = TestData(fixture);
    const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
    std::string feeds;
    for (const auto& [name, file] : manifest["feeds"].items())
      feeds += " --feed " + name + "=" + dir + "/" + file.get<std::string>();
    auto r = RunGraphjit("run " + dir + "/model.pb" + feeds + " --jit on_2 --repeat 2 --device " + testing::TestGpuName());
    EXPECT_EQ(r.exit_code, 0) << fixture << ": " << r.err;
    return r.err;
  };
  const std::string on_cpu = "ops the JIT does not compile run on the CPU", driven = "the CPU drives these loops";
  // A Keras Dense layer with an ELU (its Identity outputs are views), a mixed_float16
  // encoder (float16 GEMMs): all on the GPU.
  for (const char* model : {"keras_layers/activation_elu", "bert_encoder_small_mixed"}) {
    const std::string err = run(model);
    EXPECT_EQ(err.find(on_cpu), std::string::npos) << model << ": " << err;
    EXPECT_EQ(err.find(driven), std::string::npos) << model << ": " << err;
  }
  std::string err;
  err = run("ops/while_loop_f32");
  EXPECT_EQ(err.find(on_cpu), std::string::npos) << err;
  EXPECT_NE(err.find(driven + " and conditionals (a condition is read on the host): _GraphjitWhile\n"), std::string::npos) << err;
  err = run("ops/where_f32");
  EXPECT_NE(err.find(on_cpu + ": Where\n"), std::string::npos) << err;
}

TEST(Cli, JitVerboseNamesEachCompile) {
  auto r = RunGraphjit("run " + Mnist() + MnistFeeds() + " --jit on --repeat 2", "GRAPHJIT_FLAGS=--jit_verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("graphjit: compiled cluster_0: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" kernels, "), std::string::npos) << r.err;
}

// Every configuration at each thread count, interleaved in one run, and the speed-ups.
TEST(Cli, BenchComparesThreadCounts) {
  std::string json = testing::TempDir() + "/bench_threads.json";
  auto r =
      RunGraphjit("bench " + Mnist() + " --shape x=32,784 --shape y_=32,10 --jit off,on --threads 1,2 --iters 3 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("speed-up off, 1 -> 2 threads: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("speed-up on, 1 -> 2 threads: "), std::string::npos) << r.out;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(doc["threads"], nlohmann::json::array({1, 2}));
  ASSERT_EQ(doc["configs"].size(), 4u);
  std::vector<std::pair<std::string, int>> seen;
  for (const auto& c : doc["configs"]) seen.emplace_back(c["jit"], c["threads"]);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, int>>{{"off", 1}, {"on", 1}, {"off", 2}, {"on", 2}}));
}

TEST(Cli, BenchComparesConfigurationsAndWritesJson) {
  std::string json = testing::TempDir() + "/bench.json";
  auto r = RunGraphjit("bench " + Mnist() + " --shape x=32,784 --shape y_=32,10 --jit off,on --iters 3 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median ms"), std::string::npos) << r.out;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(doc["threads"], nlohmann::json::array({1}));
  ASSERT_EQ(doc["configs"].size(), 2u);
  EXPECT_EQ(doc["configs"][0]["jit"], "off");
  EXPECT_EQ(doc["configs"][1]["jit"], "on");
  for (const auto& c : doc["configs"]) {
    for (const char* key : {"median_ms", "p10_ms", "p90_ms", "compile_ms", "stream_gbs", "bandwidth_fraction"})
      EXPECT_TRUE(c[key].is_number()) << key;
    EXPECT_LE(c["p10_ms"].get<double>(), c["p90_ms"].get<double>());
    EXPECT_GT(c["kernels"].get<int>(), 0);
    EXPECT_GT(c["bytes"].get<int64_t>(), 0);
  }
  // The JIT fuses: fewer kernels, fewer bytes moved; compiling took time.
  EXPECT_LT(doc["configs"][1]["kernels"].get<int>(), doc["configs"][0]["kernels"].get<int>());
  EXPECT_LT(doc["configs"][1]["bytes"].get<int64_t>(), doc["configs"][0]["bytes"].get<int64_t>());
  EXPECT_GT(doc["configs"][1]["compile_ms"].get<double>(), 0);
  ExpectExit(RunGraphjit("bench " + Mnist() + " --shape x=2,784 --shape y_=2,10 --jit off,fast"), 2, "'fast' is not");
  ExpectExit(RunGraphjit("bench " + Mnist() + " --shape x=2,784 --shape y_=2,10 --threads 1,zero"), 2, "'zero' is not");
  ExpectExit(RunGraphjit("bench " + Mnist()), 2, "give its dims with --shape");
}

TEST(Cli, DumpWritesEachClusterStage) {
  std::string dir = testing::TempDir() + "/dump";
  auto r = RunGraphjit("dump " + Mnist() + MnistFeeds() + " --to " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file :
       {"00_cluster.pbtxt", "01_fusion_plan.txt", "02_fusions.mlir", "03_cleaned_up.mlir", "04_math_approximated.mlir",
        "05_control_flow.mlir", "06_llvm_dialect.mlir", "07_llvm_ir.ll", "08_asm.s"}) {
    const std::string path = testing::OnlyFolder(dir, "cluster_0-") + "/" + file;
    EXPECT_TRUE(std::filesystem::file_size(path) > 0) << path;
    EXPECT_NE(r.out.find(path), std::string::npos) << r.out;
  }
  ExpectExit(RunGraphjit("dump " + Mnist() + MnistFeeds()), 2, "--to is required");
}

TEST(Cli, JitLevelPrecedence) {
  // The level is reported on stderr with the timings: command line, then
  // GRAPHJIT_FLAGS, then --config.
  std::string config = testing::TempDir() + "/c.pbtxt";
  std::ofstream(config) << "graph_options { optimizer_options { global_jit_level: ON_1 } }";
  std::string base = "run " + Mnist() + MnistFeeds() + " --fetch y";
  EXPECT_NE(RunGraphjit(base).err.find("jit DEFAULT"), std::string::npos);
  EXPECT_NE(RunGraphjit(base + " --config " + config).err.find("jit ON_1"), std::string::npos);
  std::string env = "GRAPHJIT_FLAGS=--jit_level=on_2";
  EXPECT_NE(RunGraphjit(base + " --config " + config, env).err.find("jit ON_2"), std::string::npos);
  EXPECT_NE(RunGraphjit(base + " --config " + config + " --jit off", env).err.find("jit OFF"), std::string::npos);
  ExpectExit(RunGraphjit(base, "GRAPHJIT_FLAGS=--jit_level=bogus"), 2, "--jit_level must be");
  ExpectExit(RunGraphjit(base, "GRAPHJIT_FLAGS=--jit_cpu=pentium-9000"), 2, "LLVM does not know the CPU 'pentium-9000'");
  ExpectExit(RunGraphjit(base, "GRAPHJIT_FLAGS=--jit_cpu_features=+no-such"), 2, "LLVM does not know the CPU feature");
  // A 32-bit CPU or features without x86-64's baseline (config_fuzzer's find: they were
  // internal compiler errors).
  ExpectExit(RunGraphjit(base, "GRAPHJIT_FLAGS=--jit_cpu=pentium4"), 2, "lacks x86-64's 64-bit mode or SSE2");
  ExpectExit(RunGraphjit(base, "GRAPHJIT_FLAGS=--jit_cpu_features=-sse2"), 2, "lacks x86-64's 64-bit mode or SSE2");
  ExpectExit(RunGraphjit(base, "GRAPHJIT_FLAGS=--prefer_vector_width=100"), 2, "must be 128, 256 or 512");
}

// ---- bad input: exit status 2 ----

TEST(CliErrors, BadUsage) {
  ExpectExit(RunGraphjit("frobnicate"), 2, "graphjit:");
  ExpectExit(RunGraphjit("run"), 2, "model is required");
  ExpectExit(RunGraphjit("run " + Mnist() + " --jit sideways"), 2, "--jit");
  ExpectExit(RunGraphjit("run " + Mnist() + " --feed x"), 2, "--feed expects NAME=FILE.npy");
  ExpectExit(RunGraphjit("run " + Mnist() + " --shape x=1 --fetch y"), 2, "--shape only applies with --random-feeds");
  ExpectExit(RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch nothing_here"), 2,
             "--fetch nothing_here: no node named 'nothing_here'");
}

TEST(CliErrors, MissingOrUnreadableFiles) {
  ExpectExit(RunGraphjit("run /no/such/model.pb"), 2, "cannot read '/no/such/model.pb'");
  ExpectExit(RunGraphjit("run " + Mnist() + " --feed x=/no/such.npy"), 2, "cannot read '/no/such.npy'");
  ExpectExit(RunGraphjit("run " + Mnist() + " --config /no/such.pbtxt"), 2, "cannot read '/no/such.pbtxt'");
}

TEST(CliErrors, MalformedNpy) {
  std::string bad = testing::TempDir() + "/bad.npy";
  std::ofstream(bad) << "this is not numpy";
  ExpectExit(RunGraphjit("run " + Mnist() + " --feed x=" + bad), 2, "malformed .npy file '" + bad + "'");
}

TEST(CliErrors, InvalidModels) {
  // Parse errors.
  std::string dir = testing::TempDir();
  std::ofstream(dir + "/garbage.pb") << "\x0a\xff\xff\xff\xff";
  ExpectExit(RunGraphjit("run " + dir + "/garbage.pb"), 2, "cannot parse");
  std::ofstream(dir + "/garbage.pbtxt") << "node { name: 'a' op: 'Const' oops }";
  ExpectExit(RunGraphjit("run " + dir + "/garbage.pbtxt"), 2, "1:");

  // Unsupported ops, all listed.
  GraphBuilder u;
  u.Placeholder("x", DType::kFloat);
  u.Placeholder("p", DType::kBool);
  u.Op("s", "Switch", {"x", "p"});
  u.Op("m", "Merge", {"s"});
  ExpectExit(RunGraphjit("run " + WriteModel(u.graph_def())), 2, "2 unsupported ops: Merge (1 node: 'm'); Switch");

  // A cycle.
  GraphBuilder c;
  c.Op("a", "Relu", {"b"});
  c.Op("b", "Relu", {"a"});
  ExpectExit(RunGraphjit("run " + WriteModel(c.graph_def())), 2, "cycle");

  // A dangling input.
  GraphBuilder d;
  d.Op("a", "Relu", {"ghost"});
  ExpectExit(RunGraphjit("run " + WriteModel(d.graph_def())), 2,
             "node 'a' (Relu): input 'ghost' refers to a node that does not exist");

  // A bad attr.
  GraphBuilder at;
  at.Placeholder("x", DType::kFloat, {2, 2});
  testing::SetAttrString(at.Op("m", "MatMul", {"x", "x"}), "transpose_b", "yes");
  ExpectExit(RunGraphjit("run " + WriteModel(at.graph_def())), 2, "node 'm' (MatMul): attr 'transpose_b' must be a bool");

  // Mismatched dtypes.
  GraphBuilder dt;
  dt.Placeholder("x", DType::kFloat);
  dt.Placeholder("i", DType::kInt32);
  dt.Op("a", "Add", {"x", "i"});
  ExpectExit(RunGraphjit("run " + WriteModel(dt.graph_def())), 2, "node 'a' (Add): input 1 has type int32");

  // A constant whose content does not match its shape.
  GraphBuilder k;
  tensorflow::NodeDef* n = k.graph_def().add_node();
  n->set_name("k");
  n->set_op("Const");
  testing::SetAttrType(n, "dtype", DType::kFloat);
  auto* t = (*n->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(4);
  t->set_tensor_content(std::string(8, '\0'));
  ExpectExit(RunGraphjit("run " + WriteModel(k.graph_def())), 2, "node 'k' (Const): constant tensor of shape [4]");
}

TEST(Cli, OptimizeWritesTheOptimizedGraphAndReportsEachPass) {
  const std::string out = testing::TempDir() + "/opt.pb";
  auto r = RunGraphjit("optimize " + TestData("keras_mlp/model.pb") + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* pass : {"prune", "constant_folding", "arithmetic", "cse", "remapper"})
    EXPECT_NE(r.out.find(pass), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("24 -> 12 nodes"), std::string::npos) << r.out;
  auto gd = ReadGraphDefFile(out);
  ASSERT_TRUE(gd.ok()) << gd.status().ToString();
  EXPECT_EQ(gd->node_size(), 12);
  // The written graph runs and gives what the original gives.
  const std::string feed = " --feed input=" + TestData("keras_mlp/input.npy") + " --fetch Identity";
  auto original = RunGraphjit("run --no-optimize " + TestData("keras_mlp/model.pb") + feed);
  auto optimized = RunGraphjit("run " + out + feed);
  ASSERT_EQ(optimized.exit_code, 0) << optimized.err;
  EXPECT_EQ(optimized.out, original.out);
  // --disable_pass and --fetch.
  r = RunGraphjit("optimize " + TestData("keras_mlp/model.pb") + " -o " + out + " --disable_pass=remapper,cse");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("remapper                  -        -  disabled"), std::string::npos) << r.out;
  EXPECT_EQ(ReadGraphDefFile(out)->node_size(), 17);
}

TEST(CliErrors, OptimizeAndPassFlags) {
  const std::string out = testing::TempDir() + "/opt.pbtxt";
  ExpectExit(
      RunGraphjit("optimize " + Mnist() + " -o " + out + " --disable_pass=folding"), 2,
      "no graph pass named 'folding' (the passes are: prune, constant_folding, arithmetic, cse, dilated_convolutions, remapper)");
  ExpectExit(RunGraphjit("optimize " + Mnist() + " -o " + out + " --fetch nope"), 2, "--fetch nope: no node with that name");
  ExpectExit(RunGraphjit("optimize " + Mnist() + " -o " + out + " --fetch y:3"), 2, "--fetch y:3: y has no output 3");
  ExpectExit(RunGraphjit("run " + Mnist() + MnistFeeds(), "GRAPHJIT_FLAGS=--disable_pass=bogus"), 2,
             "no graph pass named 'bogus'");
  ExpectExit(RunGraphjit("run " + Mnist() + " --optimize --no-optimize"), 2, "excludes");
}

// ---- run-time errors: exit status 1 ----

TEST(CliErrors, RunTimeErrors) {
  ExpectExit(RunGraphjit("run " + Mnist() + " --feed x=" + TestData("mnist_softmax/x.npy") + " --fetch cross_entropy"), 1,
             "a value must be fed for placeholder 'y_'");
  std::string dir = testing::TempDir();
  ASSERT_TRUE(WriteNpy(dir + "/x_i32.npy", testing::MakeInt32(Shape{1, 784}, std::vector<int32_t>(784, 1))).ok());
  ExpectExit(RunGraphjit("run " + Mnist() + " --feed x=" + dir + "/x_i32.npy --fetch y"), 1,
             "feed 'x' has type int32, but the graph expects float32");
  ASSERT_TRUE(WriteNpy(dir + "/x_short.npy", testing::MakeFloat(Shape{2, 783}, std::vector<float>(2 * 783, 1))).ok());
  ExpectExit(RunGraphjit("run " + Mnist() + " --feed x=" + dir + "/x_short.npy --fetch y"), 1,
             "feed 'x' has shape [2,783], which does not match the graph's [?,784]");

  GraphBuilder b;
  b.Placeholder("a", DType::kFloat, {}, true);
  b.Placeholder("c", DType::kFloat, {}, true);
  b.Op("sum", "AddV2", {"a", "c"});
  std::string model = WriteModel(b.graph_def());
  ASSERT_TRUE(WriteNpy(dir + "/a.npy", testing::MakeFloat(Shape{3}, {1, 2, 3})).ok());
  ASSERT_TRUE(WriteNpy(dir + "/c.npy", testing::MakeFloat(Shape{2}, {1, 2})).ok());
  ExpectExit(RunGraphjit("run " + model + " --feed a=" + dir + "/a.npy --feed c=" + dir + "/c.npy"), 1,
             "node 'sum' (AddV2): incompatible shapes for broadcasting: [3] and [2]");
}

// `graphjit devices` names the CPU and the code the JIT makes for it: the host's, or the
// target GRAPHJIT_FLAGS pins, at its vector width.
TEST(Cli, DevicesNameTheJitsCode) {
  auto host = RunGraphjit("devices --device cpu");
  ASSERT_EQ(host.exit_code, 0) << host.err;
  EXPECT_NE(host.out.find("hardware threads; JIT code for "), std::string::npos) << host.out;
  EXPECT_NE(host.out.find("-bit vectors; reference kernels for x86-64"), std::string::npos) << host.out;
  auto v3 = RunGraphjit("devices --device cpu", "GRAPHJIT_FLAGS=--jit_cpu=x86-64-v3");
  EXPECT_NE(v3.out.find("JIT code for x86-64-v3, 256-bit vectors;"), std::string::npos) << v3.out;
  auto narrow = RunGraphjit("devices --device cpu", "GRAPHJIT_FLAGS='--jit_cpu=znver4 --prefer_vector_width=128'");
  EXPECT_NE(narrow.out.find("JIT code for znver4, 128-bit vectors;"), std::string::npos) << narrow.out;
  auto wide = RunGraphjit("devices --device cpu", "GRAPHJIT_FLAGS=--jit_cpu=znver4");
  EXPECT_NE(wide.out.find("JIT code for znver4, 512-bit vectors;"), std::string::npos) << wide.out;
}

// The CUDA device: `--device gpu-emu` opens the CUDA emulator built with graphjit,
// GRAPHJIT_FLAGS' --cuda_driver any driver library; a missing driver, the toolkit's stub
// (no GPU) and an unknown device are each one clear error.
TEST(Cli, CudaDevices) {
  auto d = RunGraphjit("devices");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("cpu: "), std::string::npos) << d.out;
  if (d.out.find("gpu-emu: unavailable: this build of graphjit has no CUDA emulator") != std::string::npos) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "no CUDA emulator in this build (CI must have the CUDA toolkit)";
    GTEST_SKIP() << "no CUDA toolkit: the CUDA emulator was not built";
  }
  EXPECT_NE(d.out.find("gpu-emu: NVIDIA H100 SXM (graphjit CUDA emulator), sm_90, 132 SMs, 4096 MiB, driver 13.0"),
            std::string::npos)
      << d.out;
  // Its memory is configurable.
  auto small = RunGraphjit("devices --device gpu-emu", "CUEMU_MEMORY_MB=1024");
  EXPECT_NE(small.out.find("sm_90, 132 SMs, 1024 MiB"), std::string::npos) << small.out;
  EXPECT_EQ(small.out.find("cpu: "), std::string::npos) << small.out;

  auto r = RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y --device gpu-emu");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("device gpu-emu: NVIDIA H100 SXM (graphjit CUDA emulator)"), std::string::npos) << r.err;
  // Every GPU of the machine (here two emulated ones): a line each, a session on any.
  auto two = RunGraphjit("devices --device gpu-emu", "CUEMU_DEVICE_COUNT=2");
  EXPECT_NE(two.out.find("gpu-emu:0: NVIDIA H100 SXM (graphjit CUDA emulator), sm_90"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("gpu-emu:1: NVIDIA H100 SXM (graphjit CUDA emulator), sm_90"), std::string::npos) << two.out;
  auto second = RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y --device gpu-emu:1 --jit on", "CUEMU_DEVICE_COUNT=2");
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("device gpu-emu:1: NVIDIA H100 SXM"), std::string::npos) << second.err;
  ExpectExit(RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y --device gpu-emu:1"), 2,
             "no device gpu:1 (the driver has 1 device, gpu:0)");
  ExpectExit(RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y --device gpu-emu:one"), 2,
             "the device must be cpu, gpu, gpu-emu, gpu:N or gpu-emu:N");

  ExpectExit(
      RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y", "GRAPHJIT_FLAGS=--cuda_driver=/nonexistent/libcuda.so.1"), 2,
      "cannot open the CUDA driver /nonexistent/libcuda.so.1");
  ExpectExit(
      RunGraphjit("bench " + Mnist() + MnistFeeds() + " --device gpu", "GRAPHJIT_FLAGS=--cuda_driver=/nonexistent/libcuda.so.1"),
      2, "--device gpu: cannot open the CUDA driver /nonexistent/libcuda.so.1");
  ExpectExit(RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y", "GRAPHJIT_FLAGS=--device=tpu"), 2,
             "--device must be cpu, gpu, gpu-emu, gpu:N or gpu-emu:N, got 'tpu'");
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (std::filesystem::exists(stub))
    ExpectExit(RunGraphjit("run " + Mnist() + MnistFeeds() + " --fetch y", "GRAPHJIT_FLAGS=--cuda_driver=" + stub), 2,
               "the toolkit's stub, not a driver: no GPU");
}

}  // namespace
}  // namespace graphjit
