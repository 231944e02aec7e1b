#include "tools/run_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "ir/attr.h"
#include "ir/graphdef.h"
#include "jit/jit.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "tools/devices_command.h"
#include "tools/inputs.h"
#include "tools/options.h"

namespace graphjit {

void AddRunCommand(CLI::App& app, RunArgs* a) {
  CLI::App* run = app.add_subcommand("run", "Run a model (GraphDef .pb or .pbtxt) and print what it fetched");
  run->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  AddInputOptions(run, &a->inputs, /*always_random=*/false);
  run->add_option("--out", a->out_dir, "Write each fetched tensor to DIR/<name>.npy");
  run->add_option("--config", a->config, "Text-format TensorFlow ConfigProto");
  run->add_option("--jit", a->jit, "Global JIT level: off, on (= on_1), on_2")
      ->check(CLI::IsMember({"off", "on", "on_1", "on_2", "default"}));
  run->add_option("--threads", a->threads, "Intra- and inter-op threads (default: one per core)")->check(CLI::Range(1, 1024));
  run->add_option("--repeat", a->repeat, "Run N times (timings, caches)")->check(CLI::Range(1, 1000000));
  run->add_option("--trace", a->trace, "Write a Chrome trace-event file of the (last) run");
  auto* on = run->add_flag("--optimize", a->optimize, "Run the graph optimizations (the default)");
  run->add_flag("--no-optimize", a->no_optimize, "Skip the graph optimizations (pruning, folding, remapping, ...)")->excludes(on);
  run->add_option("--device", a->device,
                  "Device: cpu, gpu (the CUDA driver), gpu-emu (the CUDA emulator); gpu:N, gpu-emu:N for GPU N")
      ->check(CheckDevice);
  run->add_flag("--stats", a->stats,
                "Print the JIT's counters last: clusters, compiled, fallback, cache hits and misses, compile ms");
}

namespace {

double Millis(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string Summary(const std::string& name, const Tensor& t) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  bool nan = false;
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double v = t.ValueAsDouble(i);
    nan |= std::isnan(v);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (n == 0 || nan) lo = hi = NAN;
  char buf[256];
  std::snprintf(buf, sizeof buf, " min=%.6g max=%.6g mean=%.6g", lo, hi, n ? sum / n : NAN);
  return name + " " + DTypeName(t.dtype()) + " " + t.shape().ToString() + buf;
}

// "y" -> "y.npy", "y:1" -> "y_1.npy", "a/b" -> "a_b.npy".
std::string OutputFileName(const std::string& fetch) {
  std::string f = fetch;
  std::replace(f.begin(), f.end(), '/', '_');
  std::replace(f.begin(), f.end(), ':', '_');
  return f + ".npy";
}

}  // namespace

int RunCommand(const RunArgs& a) {
  using Clock = std::chrono::steady_clock;
  // 1. Options: --config, then GRAPHJIT_FLAGS, then the command line.
  auto loaded = LoadSessionOptions(a.config, a.jit);
  if (!loaded.ok()) return Fail(kExitBadInput, loaded.status().message());
  SessionOptions options = *loaded;
  if (a.threads > 0) options.intra_op_threads = options.inter_op_threads = a.threads;
  if (a.optimize || a.no_optimize) options.rewrite_options.set_disable_meta_optimizer(a.no_optimize);
  if (!a.device.empty()) SetDevice(a.device, &options);
  if (Status s = OpenSessionDevice(options); !s.ok())
    return Fail(kExitBadInput, std::string("--device ") + DeviceKindName(options.device) + ": " + s.message());

  // 2. The model.
  auto t0 = Clock::now();
  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  auto session = Session::Create(options, *graph_def);
  if (!session.ok()) return Fail(kExitBadInput, a.model + ": " + session.status().message());
  auto t1 = Clock::now();

  // 3. Feeds and fetches.
  auto inputs = PrepareInputs(a.inputs, **session, *graph_def);
  if (!inputs.ok()) return Fail(kExitBadInput, inputs.status().message());
  const std::vector<std::pair<std::string, Tensor>>& feeds = inputs->feeds;
  const std::vector<std::string>& fetches = inputs->fetches;
  const AnalyzedGraph& ag = (*session)->graph();
  if (!a.out_dir.empty()) {
    std::map<std::string, std::string> files;
    for (const std::string& f : fetches) {
      auto [it, inserted] = files.emplace(OutputFileName(f), f);
      if (!inserted)
        return Fail(kExitBadInput, "fetches '" + it->second + "' and '" + f + "' would both be written to " + it->first);
    }
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    if (ec) return Fail(kExitBadInput, "cannot create output directory '" + a.out_dir + "': " + ec.message());
  }

  // 5. Run, --repeat times.
  std::vector<Tensor> outputs;
  std::vector<double> run_ms;
  Tracer tracer;
  for (int r = 0; r < a.repeat; ++r) {
    RunOptions ro;
    if (!a.trace.empty() && r == a.repeat - 1) ro.tracer = &tracer;
    auto s0 = Clock::now();
    Status s = (*session)->Run(ro, feeds, fetches, {}, &outputs);
    run_ms.push_back(Millis(Clock::now() - s0));
    if (!s.ok()) return Fail(kExitRunError, s.message());
  }

  // 6. Results.
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::printf("%s\n", Summary(fetches[i], outputs[i]).c_str());
    if (!a.out_dir.empty()) {
      Status s = WriteNpy((std::filesystem::path(a.out_dir) / OutputFileName(fetches[i])).string(), outputs[i]);
      if (!s.ok()) return Fail(kExitBadInput, s.message());
    }
  }
  if (!a.trace.empty()) {
    Status s = tracer.WriteChromeTrace(a.trace);
    if (!s.ok()) return Fail(kExitBadInput, s.message());
  }
  std::sort(run_ms.begin(), run_ms.end());
  std::fprintf(stderr, "graphjit: load %.2f ms, run %.3f ms (median of %d, min %.3f ms), %d nodes, jit %s\n", Millis(t1 - t0),
               run_ms[run_ms.size() / 2], a.repeat, run_ms.front(), ag.graph.num_nodes(), JitLevelName(options.jit_level));
  if (a.stats) std::printf("%s %s\n", JitStatsLine().c_str(), (*session)->LastRunCounts().ToString().c_str());
  return 0;
}

}  // namespace graphjit
