// Whole fixture models (tests/data), graph optimizations off against on: time per
// Session::Run and the node count of the graph that runs.
//
//   build/bin/models_bench --benchmark_repetitions=5 --benchmark_min_time=0.5
#include <filesystem>
#include <fstream>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "bench/machine.h"
#include "ir/graphdef.h"
#include "passes/passes.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace graphjit {
namespace {

namespace fs = std::filesystem;

void RunModel(benchmark::State& state, const std::string& model, bool optimize) {
  const fs::path dir = fs::path(GRAPHJIT_TEST_DATA) / model;
  nlohmann::json m = nlohmann::json::parse(std::ifstream(dir / "manifest.json"));
  auto gd = ReadGraphDefFile((dir / m["model"].get<std::string>()).string());
  if (!gd.ok()) return state.SkipWithError(gd.status().message().c_str());
  SessionOptions options;
  options.intra_op_threads = options.inter_op_threads = static_cast<int>(state.range(0));
  options.rewrite_options.set_disable_meta_optimizer(!optimize);
  auto session = Session::Create(options, *gd);
  if (!session.ok()) return state.SkipWithError(session.status().message().c_str());
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> feed_names, fetches;
  for (auto& [name, file] : m["feeds"].items()) {
    auto t = ReadNpy((dir / file.get<std::string>()).string());
    if (!t.ok()) return state.SkipWithError(t.status().message().c_str());
    feeds.emplace_back(name, *t);
    feed_names.push_back(name);
  }
  for (auto& [name, file] : m["fetches"].items()) fetches.push_back(name);
  auto graph = (*session)->OptimizedGraph(feed_names, fetches);
  if (!graph.ok()) return state.SkipWithError(graph.status().message().c_str());
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status s = (*session)->Run(feeds, fetches, {}, &out);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
  state.counters["nodes"] = (*graph)->graph.num_nodes();
}

const bool kRegistered = [] {
  RegisterGraphOptimizer();
  for (const char* model : {"mnist_softmax", "keras_mlp", "small_cnn", "transformer_block"})
    for (bool optimize : {false, true})
      benchmark::RegisterBenchmark((std::string(model) + (optimize ? "/optimized" : "/unoptimized")).c_str(),
                                   [model, optimize](benchmark::State& s) { RunModel(s, model, optimize); })
          ->Arg(1)
          ->Arg(2)
          ->ArgName("threads")
          ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
}  // namespace graphjit

int main(int argc, char** argv) { return graphjit::bench::Main(argc, argv); }
