#include "tools/bench_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/graphdef.h"
#include "jit/jit.h"
#include "runtime/cuda_device.h"
#include "runtime/gpu_model.h"
#include "runtime/thread_pool.h"
#include "runtime/trace.h"
#include "tools/devices_command.h"
#include "tools/options.h"

namespace graphjit {

void AddBenchCommand(CLI::App& app, BenchArgs* a) {
  CLI::App* bench =
      app.add_subcommand("bench", "Time a model with the JIT off and on (interleaved), against the streaming bandwidth");
  bench->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  AddInputOptions(bench, &a->inputs, /*always_random=*/true);
  bench->add_option("--config", a->config, "Text-format TensorFlow ConfigProto");
  bench->add_option("--jit", a->jit, "Configurations to compare, e.g. off,on,on_2")->capture_default_str();
  bench->add_option("--iters", a->iters, "Timed runs per configuration")->capture_default_str()->check(CLI::Range(1, 1000000));
  bench->add_option("--threads", a->threads, "Intra- and inter-op threads; a list (1,2) times each configuration at each")
      ->capture_default_str();
  bench->add_option("--json", a->json, "Also write the results to FILE as JSON");
  bench
      ->add_option("--device", a->device,
                   "Device: cpu, gpu (the CUDA driver), gpu-emu (the CUDA emulator); gpu:N, gpu-emu:N for GPU N")
      ->check(CheckDevice);
}

namespace {

using Clock = std::chrono::steady_clock;

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1) + 0.5)];
}

// Ops that move no data (they forward or alias their input) are not kernels.
bool MovesData(const TraceEvent& e) {
  static const std::set<std::string> no = {"_JitCluster", "compile", "Const",      "NoOp",    "Identity",
                                           "Snapshot",    "Reshape", "ExpandDims", "Squeeze", "Placeholder"};
  return !no.count(e.op);
}

// What a configuration's GPU kernels did in one run (see GpuKernelProfile).
struct GpuSummary {
  int kernels = 0, library_calls = 0;
  bool counted = true;
  int64_t moved = 0, io = 0, requested = 0, request_sectors = 0, flops = 0;
  double worst_moved_ratio = 0, worst_coalescing = 1, predicted_us = 0, measured_us = 0;
  int registers = 0, spill_bytes = 0;
  std::vector<GpuKernelProfile> profiles;
};

GpuSummary Summarize(const GpuModelDevice& device, std::vector<GpuKernelProfile> profiles) {
  GpuSummary g;
  for (const GpuKernelProfile& p : profiles) {
    ++g.kernels;
    g.library_calls += p.library;
    g.counted &= p.counted;
    g.io += p.io_bytes;
    g.measured_us += p.measured_us;
    const KernelWork work = p.Work();  // without counters (a GPU), its inputs and outputs once
    const int64_t moved = work.moved_bytes;
    g.moved += moved;
    g.requested += p.requested_bytes;
    g.request_sectors += p.request_sectors;
    g.flops += p.float_ops;
    g.registers = std::max(g.registers, p.registers);
    g.spill_bytes += p.spill_bytes;
    if (p.io_bytes > 0) g.worst_moved_ratio = std::max(g.worst_moved_ratio, static_cast<double>(moved) / p.io_bytes);
    if (p.request_sectors > 0)
      g.worst_coalescing = std::min(g.worst_coalescing, static_cast<double>(p.requested_bytes) / (32.0 * p.request_sectors));
    g.predicted_us += PredictKernel(device, work).us;
  }
  g.profiles = std::move(profiles);
  return g;
}

struct Config {
  std::string name;
  int threads = 1;
  GpuSummary gpu;
  StreamCounts copies;  // of a run after the first (the second)
  std::unique_ptr<Session> session;
  std::vector<double> ms, stream;
  double compile_ms = 0;
  int compiles = 0, kernels = 0;
  int64_t bytes = 0;
  double stream_gbs = 0;
};

// A STREAM-like copy of the model's largest input into a buffer of its size: read it once,
// write as much. Timed right after each run, so it meets the caches that run left (this
// CPU's caches are large: a fixed-size STREAM would mislead).
class StreamCopy {
 public:
  StreamCopy(const Tensor& input, ThreadPool* pool)
      : n_(static_cast<int64_t>(input.bytes() / sizeof(float))),
        src_(static_cast<const float*>(input.raw())),
        dst_(n_),
        pool_(pool) {}
  int64_t bytes() const { return 2 * n_ * static_cast<int64_t>(sizeof(float)); }
  // GB/s of one copy.
  double Run() {
    const auto t0 = Clock::now();
    pool_->ParallelFor(n_, 1 << 14, [&](int64_t begin, int64_t end) {
      float* d = dst_.data();
      for (int64_t i = begin; i < end; ++i) d[i] = src_[i];
    });
    return bytes() / Millis(Clock::now() - t0) / 1e6;
  }

 private:
  int64_t n_;
  const float* src_;
  std::vector<float> dst_;
  ThreadPool* pool_;
};

// The GPU kernels of each configuration: how many, the bytes they move against reading
// their inputs and writing their outputs once, coalescing, registers and spills, an H100's
// predicted time (and the measured one on a GPU), and the copies between the host and the
// device in a run.
void PrintGpuTable(DeviceKind device, const GpuModelDevice& gpu_model, const std::vector<Config>& configs, nlohmann::json* json) {
  const bool emulated = device == DeviceKind::kGpuEmu;
  std::printf(
      "\nGPU kernels per run on %s%s; predicted for the %s (%d SMs, DRAM %.2f TB/s at peak, %.1f TFLOP/s): per "
      "kernel the larger of its bytes over the bandwidth its loads in flight sustain (%.0f%% of the peak at best) "
      "and its flops over its SMs' share, plus %.1f us (runtime/gpu_model.h)\n",
      DeviceKindName(device), emulated ? " (the CUDA emulator: nothing ran on a GPU)" : "", gpu_model.name.c_str(), gpu_model.sms,
      gpu_model.dram_bytes_per_s / 1e12, gpu_model.flops / 1e12, 100 * kDramAchievable, kLaunchUs);
  std::printf("%-5s %7s %8s %10s %14s %11s %11s %7s %8s %14s %12s %16s %16s\n", "jit", "threads", "kernels", "MB moved",
              "moved/io max", "coalescing", "regs max", "spills", "MFLOP", "predicted us", "measured us", "copies in (MB)",
              "copies out (MB)");
  for (const Config& c : configs) {
    const GpuSummary& g = c.gpu;
    const double coalescing = g.request_sectors ? g.requested / (32.0 * g.request_sectors) : 1;
    char measured[32] = "-";
    if (!emulated) std::snprintf(measured, sizeof measured, "%.1f", g.measured_us);
    char in[32], out[32];
    std::snprintf(in, sizeof in, "%lld (%.3f)", static_cast<long long>(c.copies.h2d_copies), c.copies.h2d_bytes / 1e6);
    std::snprintf(out, sizeof out, "%lld (%.3f)", static_cast<long long>(c.copies.d2h_copies), c.copies.d2h_bytes / 1e6);
    std::printf("%-5s %7d %8d %10.2f %14.3f %5.1f%% (%2.0f) %11d %7d %8.2f %14.1f %12s %16s %16s\n", c.name.c_str(), c.threads,
                g.kernels, g.moved / 1e6, g.worst_moved_ratio, 100 * coalescing, 100 * g.worst_coalescing, g.registers,
                g.spill_bytes, g.flops / 1e6, g.predicted_us, measured, in, out);
    for (auto& j : (*json)["configs"])
      if (j["jit"] == c.name && j["threads"] == c.threads)
        j["gpu"] = {{"device", device},
                    {"kernels", g.kernels},
                    {"moved_bytes", g.moved},
                    {"io_bytes", g.io},
                    {"worst_moved_ratio", g.worst_moved_ratio},
                    {"coalescing", coalescing},
                    {"worst_coalescing", g.worst_coalescing},
                    {"max_registers", g.registers},
                    {"spill_bytes", g.spill_bytes},
                    {"flops", g.flops},
                    {"predicted_us", g.predicted_us},
                    {"measured_us", emulated ? nlohmann::json() : nlohmann::json(g.measured_us)},
                    {"h2d_bytes", c.copies.h2d_bytes},
                    {"h2d_copies", c.copies.h2d_copies},
                    {"d2h_bytes", c.copies.d2h_bytes},
                    {"d2h_copies", c.copies.d2h_copies}};
  }
  // Each kernel of the compiled configurations: what it moved, its prediction, and on a GPU
  // its measured time and the bandwidth it achieved against the DRAM's peak. A kernel run
  // in thread-block clusters shows their blocks after its launch ("8 x 1024/2").
  std::printf("\n%-5s %-44s %14s %10s %14s %12s %10s %10s\n", "jit", "kernel", "grid x block", "MB moved", "predicted us",
              "measured us", "GB/s", "of peak");
  for (const Config& c : configs) {
    if (c.name == "off") continue;
    nlohmann::json kernels = nlohmann::json::array();
    for (const GpuKernelProfile& p : c.gpu.profiles) {
      const KernelWork work = p.Work();
      const int64_t moved = work.moved_bytes;
      const double predicted = PredictKernel(gpu_model, work).us;
      char launch[32], measured[32] = "-", gbs[32] = "-", share[32] = "-";
      std::snprintf(launch, sizeof launch, p.cluster > 1 ? "%lld x %lld/%lld" : "%lld x %lld", static_cast<long long>(p.grid),
                    static_cast<long long>(p.block), static_cast<long long>(p.cluster));
      nlohmann::json k = {{"name", p.name},       {"grid", p.grid},       {"block", p.block},
                          {"cluster", p.cluster}, {"moved_bytes", moved}, {"predicted_us", predicted}};
      if (!emulated && p.measured_us > 0) {
        const double bandwidth = moved / (p.measured_us * 1e-6);
        std::snprintf(measured, sizeof measured, "%.1f", p.measured_us);
        std::snprintf(gbs, sizeof gbs, "%.0f", bandwidth / 1e9);
        std::snprintf(share, sizeof share, "%.1f%%", 100 * bandwidth / gpu_model.dram_bytes_per_s);
        k["measured_us"] = p.measured_us;
        k["dram_fraction"] = bandwidth / gpu_model.dram_bytes_per_s;
      }
      std::printf("%-5s %-44s %14s %10.2f %14.1f %12s %10s %10s\n", c.name.c_str(), p.name.c_str(), launch, moved / 1e6,
                  predicted, measured, gbs, share);
      kernels.push_back(std::move(k));
    }
    for (auto& j : (*json)["configs"])
      if (j["jit"] == c.name && j["threads"] == c.threads) j["gpu"]["kernels"] = std::move(kernels);
  }
  if (!configs.empty() && !configs[0].gpu.counted)
    std::printf("(no counters on a GPU: bytes moved are the kernels' inputs and outputs, flops 0)\n");
  if (std::any_of(configs.begin(), configs.end(), [](const Config& c) { return c.gpu.library_calls > 0; }))
    std::printf(
        "(library calls, cuBLASLt's GEMMs and cuDNN's convolutions, are counted as their operands read and written "
        "once and 2 flops per multiply-add; a grid of 0 x 0)\n");
  const Config* off = nullptr;
  for (const Config& c : configs)
    if (c.name == "off") off = &c;
  for (const Config& c : configs)
    if (off && &c != off && c.threads == off->threads && c.gpu.predicted_us > 0)
      std::printf("predicted speed-up of jit %s over off (fused vs unfused): %.2fx\n", c.name.c_str(),
                  off->gpu.predicted_us / c.gpu.predicted_us);
}

}  // namespace

int BenchCommand(const BenchArgs& a) {
  // 1. The configurations, each a session on the same model.
  auto loaded = LoadSessionOptions(a.config, "");
  if (!loaded.ok()) return Fail(kExitBadInput, loaded.status().message());
  if (!a.device.empty()) SetDevice(a.device, &*loaded);
  if (Status s = OpenSessionDevice(*loaded); !s.ok())
    return Fail(kExitBadInput, std::string("--device ") + DeviceKindName(loaded->device) + ": " + s.message());
  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  std::vector<int> thread_counts;
  for (const std::string& t : SplitList(a.threads)) {
    char* end = nullptr;
    const long n = std::strtol(t.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 1024) return Fail(kExitBadInput, "--threads: '" + t + "' is not a count from 1 to 1024");
    thread_counts.push_back(static_cast<int>(n));
  }
  if (thread_counts.empty()) return Fail(kExitBadInput, "--threads lists no thread count");
  std::vector<Config> configs;
  for (int threads : thread_counts)
    for (const std::string& name : SplitList(a.jit)) {
      static const std::map<std::string, JitLevel> levels = {
          {"off", JitLevel::kOff}, {"on", JitLevel::kOn1}, {"on_1", JitLevel::kOn1}, {"on_2", JitLevel::kOn2}};
      auto level = levels.find(name);
      if (level == levels.end()) return Fail(kExitBadInput, "--jit: '" + name + "' is not off, on, on_1 or on_2");
      SessionOptions options = *loaded;
      options.jit_level = level->second;
      options.intra_op_threads = options.inter_op_threads = threads;
      auto session = Session::Create(options, *graph_def);
      if (!session.ok()) return Fail(kExitBadInput, a.model + ": " + session.status().message());
      Config c;
      c.name = name;
      c.threads = threads;
      c.session = std::move(session).value();
      configs.push_back(std::move(c));
    }
  if (configs.empty()) return Fail(kExitBadInput, "--jit lists no configuration");
  auto inputs = PrepareInputs(a.inputs, *configs[0].session, *graph_def);
  if (!inputs.ok()) return Fail(kExitBadInput, inputs.status().message());

  // 2. Warm-up, traced: the first run compiles; the second shows the kernels and bytes.
  std::vector<Tensor> out;
  for (Config& c : configs) {
    for (int run = 0; run < 2; ++run) {
      Tracer tracer;
      RunOptions ro;
      ro.tracer = &tracer;
      Status s = c.session->Run(ro, inputs->feeds, inputs->fetches, {}, &out);
      if (!s.ok()) return Fail(kExitRunError, "jit " + c.name + ": " + s.message());
      std::set<std::string> compiled;
      for (const TraceEvent& e : tracer.events()) {
        if (run == 0 && e.op == "compile") {
          c.compile_ms += e.duration_us / 1000.0;
          compiled.insert(e.name.substr(0, e.name.find("/compile/")));
        }
        if (run == 1 && MovesData(e)) {
          ++c.kernels;
          c.bytes += e.bytes;
        }
      }
      if (run == 0) c.compiles = static_cast<int>(compiled.size());
      if (run == 1) c.copies = c.session->LastRunCounts();
    }
  }

  // On a GPU, one more run of each configuration, each kernel followed by a synchronize and
  // recorded: what it moved and computed (counted by the CUDA emulator), or its time (a GPU).
  const bool gpu = loaded->device != DeviceKind::kCpu;
  GpuModelDevice gpu_model;
  if (gpu) {
    auto library = CudaDriverLibrary(loaded->device, configs.front().session->options().cuda_driver);
    auto cuda = library.ok() ? CudaDevice::Get(*library, loaded->gpu_index) : library.status();
    if (!cuda.ok()) return Fail(kExitBadInput, cuda.status().message());
    gpu_model = ModelDeviceOf((*cuda)->info());
    for (Config& c : configs) {
      SessionOptions options = c.session->options();
      options.gpu_profile = true;
      auto session = Session::Create(options, *graph_def);
      if (!session.ok()) return Fail(kExitBadInput, a.model + ": " + session.status().message());
      TakeGpuProfiles();
      Status s = (*session)->Run(inputs->feeds, inputs->fetches, {}, &out);
      if (!s.ok()) return Fail(kExitRunError, "jit " + c.name + ": " + s.message());
      c.gpu = Summarize(gpu_model, TakeGpuProfiles());
    }
  }

  // 3. Timed runs, interleaved, each followed by a copy of the largest input.
  const Tensor* largest = nullptr;
  for (const auto& [name, t] : inputs->feeds)
    if (largest == nullptr || t.bytes() > largest->bytes()) largest = &t;
  if (largest == nullptr || largest->bytes() < sizeof(float)) return Fail(kExitBadInput, "the model has no input to feed");
  // Per thread count, the sessions' own intra-op pool: a pool of its own would add
  // workers spinning beside theirs.
  std::map<int, std::shared_ptr<ThreadPool>> pools;
  std::map<int, std::unique_ptr<StreamCopy>> copies;
  for (int threads : thread_counts) {
    pools[threads] = ThreadPool::Shared(ThreadPool::Role::kIntraOp, threads);
    copies[threads] = std::make_unique<StreamCopy>(*largest, pools[threads].get());
  }
  // Each timed run follows an untimed one of the same configuration, so it meets what a
  // run in a loop leaves behind (its pool's workers awake, its buffers cached), not what
  // the other configurations left (a pool of another size, its workers asleep).
  for (int i = 0; i < a.iters; ++i)
    for (Config& c : configs) {
      Status s = c.session->Run(inputs->feeds, inputs->fetches, {}, &out);
      const auto t0 = Clock::now();
      if (s.ok()) s = c.session->Run(inputs->feeds, inputs->fetches, {}, &out);
      c.ms.push_back(Millis(Clock::now() - t0));
      if (!s.ok()) return Fail(kExitRunError, "jit " + c.name + ": " + s.message());
      c.stream.push_back(copies[c.threads]->Run());
    }
  for (Config& c : configs) c.stream_gbs = Percentile(c.stream, 0.5);

  // 4. The table, and the JSON.
  const int64_t stream_bytes = copies.begin()->second->bytes();
  const std::string cpu = DescribeCpu(configs.front().session->options());
  std::printf("%s: %s thread%s, %d runs per configuration, interleaved; stream: a copy of %.2f MB\ncpu: %s\n", a.model.c_str(),
              a.threads.c_str(), a.threads == "1" ? "" : "s", a.iters, stream_bytes / 1e6, cpu.c_str());
  std::printf("%-5s %7s %10s %8s %8s %11s %9s %8s %10s %8s %12s %10s\n", "jit", "threads", "median ms", "p10 ms", "p90 ms",
              "compile ms", "compiles", "kernels", "MB moved", "GB/s", "stream GB/s", "of stream");
  nlohmann::json json = {{"model", a.model},
                         {"cpu", cpu},
                         {"threads", thread_counts},
                         {"stream_bytes", stream_bytes},
                         {"configs", nlohmann::json::array()}};
  for (const Config& c : configs) {
    const double median = Percentile(c.ms, 0.5), gbs = c.bytes / median / 1e6;
    std::printf("%-5s %7d %10.3f %8.3f %8.3f %11.1f %9d %8d %10.2f %8.1f %12.1f %9.0f%%\n", c.name.c_str(), c.threads, median,
                Percentile(c.ms, 0.1), Percentile(c.ms, 0.9), c.compile_ms, c.compiles, c.kernels, c.bytes / 1e6, gbs,
                c.stream_gbs, 100 * gbs / c.stream_gbs);
    json["configs"].push_back({{"jit", c.name},
                               {"threads", c.threads},
                               {"median_ms", median},
                               {"p10_ms", Percentile(c.ms, 0.1)},
                               {"p90_ms", Percentile(c.ms, 0.9)},
                               {"compile_ms", c.compile_ms},
                               {"compiles", c.compiles},
                               {"kernels", c.kernels},
                               {"bytes", c.bytes},
                               {"stream_gbs", c.stream_gbs},
                               {"bandwidth_fraction", gbs / c.stream_gbs}});
  }
  if (gpu) PrintGpuTable(loaded->device, gpu_model, configs, &json);
  // What more threads bring each configuration, next to what they bring the copy.
  if (thread_counts.size() > 1) {
    const int base = thread_counts.front();
    for (const Config& c : configs) {
      if (c.threads == base) continue;
      const Config& one =
          *std::find_if(configs.begin(), configs.end(), [&](const Config& o) { return o.threads == base && o.name == c.name; });
      std::printf("speed-up %s, %d -> %d threads: %.2fx (copy: %.2fx)\n", c.name.c_str(), base, c.threads,
                  Percentile(one.ms, 0.5) / Percentile(c.ms, 0.5), c.stream_gbs / one.stream_gbs);
    }
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << json.dump(2) << "\n";
    if (!f) return Fail(kExitBadInput, "cannot write " + a.json);
  }
  return 0;
}

}  // namespace graphjit
