// The JIT off against on: the bench graphs (bench/graphs, written by TensorFlow) and the
// fixture models, one Session::Run per iteration on random (bench graphs) or the
// fixture's (models) inputs. Memory-bound graphs report bytes moved per second: the
// input read and the output written once.
//
//   build/bin/jit_bench --benchmark_enable_random_interleaving=true --benchmark_repetitions=10
//   build/bin/jit_bench --benchmark_filter=vector_width   # 128-, 256- and 512-bit vectors
//   build/bin/jit_bench --benchmark_filter=StreamingStores  # stores cached or around the caches
#include <filesystem>
#include <fstream>
#include <random>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_compiler.h"
#include "bench/machine.h"
#include "ir/graphdef.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace graphjit {
namespace {

namespace fs = std::filesystem;

struct Work {
  tensorflow::GraphDef graph;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  int64_t bytes = 0;  // bench graphs: input + output
};

Tensor RandomTensor(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::Allocate(DType::kFloat, shape).value();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

StatusOr<Work> BenchGraph(const std::string& name, const nlohmann::json& entry) {
  Work w;
  GJ_ASSIGN_OR_RETURN(w.graph, ReadGraphDefFile((fs::path(GRAPHJIT_BENCH_GRAPHS) / (name + ".pb")).string()));
  const Shape shape(entry["shape"].get<std::vector<int64_t>>());
  w.feeds.emplace_back(entry["input"].get<std::string>(), RandomTensor(shape, 1));
  w.fetches.push_back(entry["output"].get<std::string>());
  w.bytes = 2 * shape.num_elements() * 4;
  return w;
}

StatusOr<Work> Fixture(const std::string& model) {
  const fs::path dir = fs::path(GRAPHJIT_TEST_DATA) / model;
  nlohmann::json m = nlohmann::json::parse(std::ifstream(dir / "manifest.json"));
  Work w;
  GJ_ASSIGN_OR_RETURN(w.graph, ReadGraphDefFile((dir / m["model"].get<std::string>()).string()));
  for (auto& [name, file] : m["feeds"].items()) {
    GJ_ASSIGN_OR_RETURN(Tensor t, ReadNpy((dir / file.get<std::string>()).string()));
    w.feeds.emplace_back(name, std::move(t));
  }
  for (auto& [name, file] : m["fetches"].items()) w.fetches.push_back(name);
  return w;
}

// state.range(0): threads. vector_width: the JIT's preferred width (0: its default).
void Run(benchmark::State& state, const StatusOr<Work>& work, JitLevel level, int vector_width = 0) {
  if (!work.ok()) return state.SkipWithError(work.status().message().c_str());
  SessionOptions options;
  options.jit_level = level;
  options.intra_op_threads = options.inter_op_threads = static_cast<int>(state.range(0));
  options.prefer_vector_width = vector_width;
  auto session = Session::Create(options, work->graph);
  if (!session.ok()) return state.SkipWithError(session.status().message().c_str());
  std::vector<Tensor> out;
  const JitStats before = GetJitStats();
  Status s = (*session)->Run(work->feeds, work->fetches, {}, &out);  // compiles, outside the timing
  if (!s.ok()) return state.SkipWithError(s.message().c_str());
  if (GetJitStats().fallback > before.fallback) return state.SkipWithError("a cluster ran op by op (see stderr)");
  for (auto _ : state) {
    s = (*session)->Run(work->feeds, work->fetches, {}, &out);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
  if (work->bytes) state.SetBytesProcessed(state.iterations() * work->bytes);
}

// What a cache hit costs besides the kernels: the signature, the lookup, the buffers.
// A cluster of two ops on 16 floats, so the kernel itself is a few nanoseconds.
void CacheHit(benchmark::State& state) {
  tensorflow::GraphDef gd;
  auto* x = gd.add_node();
  x->set_name("x");
  x->set_op("Placeholder");
  (*x->mutable_attr())["dtype"].set_type(tensorflow::DT_FLOAT);
  for (const char* op : {"Relu", "Tanh"}) {
    auto* n = gd.add_node();
    n->set_name(op);
    n->set_op(op);
    n->add_input(gd.node(gd.node_size() - 2).name());
    (*n->mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
  }
  SessionOptions options;
  options.jit_level = JitLevel::kOn1;
  options.intra_op_threads = options.inter_op_threads = 1;
  auto session = Session::Create(options, gd);
  if (!session.ok()) return state.SkipWithError(session.status().message().c_str());
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", RandomTensor(Shape{16}, 2)}};
  std::vector<Tensor> out;
  (void)(*session)->Run(feeds, {"Tanh"}, {}, &out);
  const JitStats before = GetJitStats();
  for (auto _ : state) (void)(*session)->Run(feeds, {"Tanh"}, {}, &out);
  const JitStats after = GetJitStats();
  const double hits = static_cast<double>(after.cache_hits - before.cache_hits);
  state.counters["hit_overhead_us"] =
      hits ? (after.hit_overhead_us * after.cache_hits - before.hit_overhead_us * before.cache_hits) / hits : 0;
}
BENCHMARK(CacheHit)->Unit(benchmark::kMicrosecond);

void Register(const std::string& name, std::shared_ptr<StatusOr<Work>> work) {
  for (auto [level, label] : {std::pair{JitLevel::kOff, "off"}, std::pair{JitLevel::kOn1, "on"}})
    benchmark::RegisterBenchmark((name + "/jit_" + label).c_str(), [work, level](benchmark::State& s) { Run(s, *work, level); })
        ->Arg(1)
        ->ArgName("threads")
        ->Unit(benchmark::kMicrosecond);
}

// The fused kernels with 128-, 256- and 512-bit vectors, per bench graph (each a fusion kind:
// loop fusions, row fusions, a GEMM with a row fusion). On a CPU without AVX-512 the
// 512-bit runs are skipped: their code cannot run there.
void RegisterVectorWidths(const std::string& name, std::shared_ptr<StatusOr<Work>> work) {
  static const bool avx512 = cpu::HostCpu().find("+avx512f,") != std::string::npos;
  benchmark::RegisterBenchmark(("vector_width/" + name).c_str(),
                               [work](benchmark::State& s) {
                                 if (s.range(1) == 512 && !avx512) return s.SkipWithError("this CPU has no AVX-512");
                                 Run(s, *work, JitLevel::kOn1, static_cast<int>(s.range(1)));
                               })
      ->ArgsProduct({{1}, {128, 256, 512}})
      ->ArgNames({"threads", "bits"})
      ->Unit(benchmark::kMicrosecond);
}

// What non-temporal stores are worth (cpu::CompileOptions::streaming_store_bytes, which the
// JIT turns on from 8 x the L2 cache): y = 1.5 x + 1, then z = 1.5 y + 1, over range(0) MiB
// of floats in rows of 1024, one thread, with the stores cached (range(1) = 0) or streamed
// (1): two kernels, the second reading what the first wrote, as a model's kernels do.
void StreamingStores(benchmark::State& state) {
  const int64_t rows = state.range(0) * 256;
  const std::string type = "memref<" + std::to_string(rows) + "x1024xf32>";
  const std::string facts = "llvm.noalias, llvm.dereferenceable = " + std::to_string(rows * 4096) + " : i64";
  const std::string mlir = "func.func @scale(%x: " + type + " {" + facts + "}, %y: " + type + " {" + facts +
                           ", llvm.align = 64 : i64}) {\n"
                           "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
                           "  %rows = arith.constant " +
                           std::to_string(rows) +
                           " : index\n"
                           "  %cols = arith.constant 1024 : index\n"
                           "  %a = arith.constant 1.5 : f32\n  %b = arith.constant 1.0 : f32\n"
                           "  scf.for %r = %c0 to %rows step %c1 {\n    scf.for %c = %c0 to %cols step %c1 {\n"
                           "      %v = memref.load %x[%r, %c] : " +
                           type +
                           "\n"
                           "      %m = arith.mulf %v, %a : f32\n      %s = arith.addf %m, %b : f32\n"
                           "      memref.store %s, %y[%r, %c] : " +
                           type + "\n    }\n  }\n  return\n}\n";
  cpu::CompileOptions options;
  options.streaming_store_bytes = state.range(1) ? 1 : 0;
  auto exe = cpu::Compile(mlir, options);
  if (!exe.ok()) return state.SkipWithError(exe.status().ToString().c_str());
  Tensor x = RandomTensor(Shape{rows, 1024}, 1), y = Tensor::Allocate(DType::kFloat, Shape{rows, 1024}).value(),
         z = Tensor::Allocate(DType::kFloat, Shape{rows, 1024}).value();
  for (auto _ : state) {
    Status s = (*exe)->Call("scale", {x.raw(), y.raw()});
    if (s.ok()) s = (*exe)->Call("scale", {y.raw(), z.raw()});
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * 4 * static_cast<int64_t>(x.bytes()));
}
BENCHMARK(StreamingStores)
    ->ArgsProduct({{1, 2, 4, 8, 16, 32, 64}, {0, 1}})
    ->ArgNames({"MiB", "streamed"})
    ->Unit(benchmark::kMicrosecond);

const bool kRegistered = [] {
  RegisterGraphOptimizer();
  RegisterJit();
  nlohmann::json manifest = nlohmann::json::parse(std::ifstream(fs::path(GRAPHJIT_BENCH_GRAPHS) / "manifest.json"));
  for (auto& [name, entry] : manifest.items())
    if (name[0] != '_') {
      auto work = std::make_shared<StatusOr<Work>>(BenchGraph(name, entry));
      Register(name, work);
      RegisterVectorWidths(name, work);
    }
  for (const char* model : {"mnist_softmax", "keras_mlp", "small_cnn", "transformer_block"})
    Register(model, std::make_shared<StatusOr<Work>>(Fixture(model)));
  return true;
}();

}  // namespace
}  // namespace graphjit

int main(int argc, char** argv) {
  return graphjit::bench::Main(argc, argv, {{"jit_target", graphjit::cpu::SummarizeTarget().value()}});
}
