#include "jit/jit.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "clustering/pass.h"
#include "ir/device.h"
#include "ir/attr.h"
#include "ir/graphdef.h"
#include "jit/backend.h"
#include "jit/fusion_emitter.h"
#include "jit/fusion_plan.h"
#include "jit/disk_cache.h"
#include "jit/kernel_cache.h"
#include "jit/specialize.h"
#include "runtime/op_registry.h"
#include "runtime/session_options.h"
#include "runtime/trace.h"

namespace graphjit {

namespace {

using Clock = std::chrono::steady_clock;

// Part of every signature: what made the code (the target is added per session). With the
// binary's build id, which changes with the code, when it has one (see BuildId).
const std::string& CompilerId() {
  static const std::string id =
      (BuildId().empty() ? std::string("graphjit ") + GRAPHJIT_VERSION + " (no build id)" : BuildId()) + " fusion/2 O3";
  return id;
}

}  // namespace

const SessionOptions& ProcessOptions() {
  static const SessionOptions* process = [] {
    auto* o = new SessionOptions();
    if (const char* env = std::getenv("GRAPHJIT_FLAGS")) {
      Status s = ApplyFlags(env, o);
      if (!s.ok()) std::fprintf(stderr, "graphjit: warning: %s\n", s.message().c_str());
    }
    return o;
  }();
  return *process;
}

namespace {

// On the CPU, GEMMs of up to this many multiply-adds are compiled as loops with the rest
// of their cluster (ExpandSmallGemms); larger ones are library calls (oneDNN, Eigen).
constexpr int64_t kSmallGemmMultiplyAdds = 32 * 1024;

std::mutex fault_mu;
std::pair<std::string, std::string>& InjectedMiscompile() {
  static auto* miscompile = new std::pair<std::string, std::string>();
  return *miscompile;
}
std::string& InjectedFailure() {
  static auto* reason = new std::string();
  return *reason;
}

KernelCache& Cache() {
  static KernelCache* cache = [] {
    const int64_t mb = ProcessOptions().jit_cache_mb > 0 ? ProcessOptions().jit_cache_mb : 1024;
    return new KernelCache(4096, static_cast<size_t>(mb) << 20);
  }();
  return *cache;
}

// What the JIT keeps per `_JitCluster` node.
struct ClusterState : std::enable_shared_from_this<ClusterState> {
  std::shared_ptr<const void> body_state;  // the reference kernel's (op by op)
  std::string name;
  // What every signature of this cluster starts with: the compiler, the body in canonical
  // serialization (attr maps in key order) and which of its tensors are the outputs, in
  // order (one body with other outputs is other code), as its interned id.
  std::string signature_prefix;
  // The same, whole: signatures on disk start with it (ids are the process's own).
  std::string disk_prefix;
  // The backend the kernels are for, chosen at the first run from the cluster's device and
  // the session's options, and its target's interned id (an error if the options name an
  // unknown CPU).
  mutable std::once_flag backend_once;
  mutable StatusOr<std::shared_ptr<const Backend>> backend = std::shared_ptr<const Backend>();
  mutable std::string target_key;
  mutable bool fuse = true;  // false: each op a kernel of its own
  tensorflow::GraphDef body_def;  // with Softmax and LogSoftmax expanded
  std::vector<std::string> outputs;
  std::vector<bool> value_inputs;  // inputs whose values are part of the signature
  // Counters and flags of the runs (kernels run concurrently on a shared state).
  mutable std::atomic<int64_t> runs{0}, compiles{0};
  mutable std::atomic<bool> fell_back{false}, megamorphic{false};
  mutable std::once_flag warned, numerics_reported;

  ~ClusterState();
};

// The clusters alive (by their states) and the counts of those gone with their sessions.
std::mutex states_mu;
std::vector<std::weak_ptr<ClusterState>>& States() {
  static auto* states = new std::vector<std::weak_ptr<ClusterState>>();
  return *states;
}
JitStats& Retired() {
  static auto* retired = new JitStats();
  return *retired;
}

void Count(const ClusterState& state, JitStats* stats) {
  if (state.runs == 0) return;
  ++stats->clusters;
  ++(state.fell_back ? stats->fallback : stats->compiled);
}

ClusterState::~ClusterState() {
  std::lock_guard<std::mutex> lock(states_mu);
  Count(*this, &Retired());
}

OpDef& Reference() {
  static OpDef* reference = new OpDef();
  return *reference;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) std::fprintf(stderr, "graphjit: warning: cannot write %s\n", path.c_str());
}

// Compiles that failed for a reason other than "not supported".
std::atomic<int64_t> internal_errors{0};

// Where a compile reports: the dump directory, the run's tracer, --jit_verbose; and the
// disk cache it first looks in (--cache_dir), if any.
struct CompileReporting {
  std::string dump_dir;
  Tracer* tracer = nullptr;
  bool verbose = false;
  DiskCache* disk = nullptr;
};

std::string DiskSignature(const ClusterState& state, const std::vector<Tensor>& inputs);

// The first line in which two interfaces differ, as "the code's '...', the cluster's '...'";
// empty if they are the same.
std::string FirstDifference(const std::string& stored, const std::string& wanted) {
  std::istringstream code(stored), cluster(wanted);
  for (std::string a, b;;) {
    const bool more_code = static_cast<bool>(std::getline(code, a));
    const bool more_cluster = static_cast<bool>(std::getline(cluster, b));
    if (!more_code && !more_cluster) return "";
    if (!more_code || !more_cluster || a != b)
      return "the code's '" + (more_code ? a : "(nothing)") + "', the cluster's '" + (more_cluster ? b : "(nothing)") + "'";
  }
}

// The body specialized on the actual inputs, planned, emitted and compiled. Each stage is
// written to the dump directory and traced as an event.
KernelCache::Entry Compile(const ClusterState& state, const std::vector<Tensor>& inputs, const CompileReporting& report) {
  KernelCache::Entry entry;
  // Unimplemented: the cluster is not supported (yet); FailedPrecondition: the code is for
  // a CPU this one is not (--jit_cpu). Anything else is a compiler bug.
  auto fail = [&](const Status& s) {
    entry.failure = s.message();
    entry.internal = s.code() != Code::kUnimplemented && s.code() != Code::kFailedPrecondition;
    if (entry.internal) ++internal_errors;
    return entry;
  };
  const std::string& dir = report.dump_dir;
  auto dump = [&](const std::string& file, const std::string& text) {
    if (!dir.empty()) WriteFile(dir + "/" + file, text);
  };
  int64_t stage_start = report.tracer ? report.tracer->NowMicros() : 0;
  auto stage = [&](const std::string& name, int64_t end = -1) {
    if (!report.tracer) return;
    if (end < 0) end = report.tracer->NowMicros();
    report.tracer->Add({state.name + "/compile/" + name, "compile", stage_start, end - stage_start, CurrentThreadId()});
    stage_start = end;
  };
  const auto start = Clock::now();
  {
    std::lock_guard<std::mutex> lock(fault_mu);
    if (!InjectedFailure().empty()) return fail(Internal(InjectedFailure()));
  }
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  // 1. Specialize: static shapes, the values that decide shapes.
  auto body = Specialize(state.body_def, state.outputs, inputs, state.value_inputs);
  if (!body.ok()) return fail(body.status());
  const Backend& backend = **state.backend;
  if (backend.schedule() == Schedule::kCpu && state.fuse) {
    auto expanded = ExpandSmallGemms(&body->graph, kSmallGemmMultiplyAdds);
    if (!expanded.ok()) return fail(expanded.status());
  }
  if (!dir.empty()) (void)WriteGraphDefFile(ExportGraphDef(body->graph.graph), dir + "/00_cluster.pbtxt");
  stage("specialize");
  // 2. Plan the fusions, 3. emit one function per fusion.
  auto plan = PlanFusions(body->graph, body->args, body->outputs, state.fuse);
  if (!plan.ok()) return fail(plan.status());
  dump("01_fusion_plan.txt", plan->ToString(body->graph.graph));
  stage("plan");
  auto module = EmitFusions(body->graph, *plan, backend.schedule());
  if (!module.ok()) return fail(module.status());
  {
    std::lock_guard<std::mutex> lock(fault_mu);
    const auto& [from, to] = InjectedMiscompile();
    const size_t at = from.empty() ? std::string::npos : module->mlir.find(from);
    if (at != std::string::npos) module->mlir.replace(at, from.size(), to);
  }
  dump("02_fusions.mlir", module->mlir);
  stage("emit");
  ClusterProgram program;
  for (const EmittedKernel& k : module->kernels) {
    LibraryCall call;
    if (k.library_node >= 0) {
      const NodeInfo& info = body->graph.info(k.library_node);
      call = {info.op, std::make_shared<const Node>(*body->graph.graph.node(k.library_node)), info.state, info.dtypes,
              info.shapes};
    }
    program.calls.push_back(std::move(call));
  }
  const size_t num_kernels = module->kernels.size();
  const int num_ops = module->num_ops;
  program.module = std::move(module).value();
  program.buffers = plan->buffers;
  program.constants = plan->constants;
  program.outputs = plan->outputs;
  auto finish = [&](std::unique_ptr<ClusterExecutable> kernel, const char* how) {
    entry.bytes = kernel->bytes();
    if (report.verbose)
      std::fprintf(stderr, "graphjit: %s %s: %d ops in %zu kernels, %.1f ms%s\n", how, state.name.c_str(), num_ops,
                   num_kernels, std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                   backend.schedule() == Schedule::kGpu ? " (GPU)" : "");
    entry.kernel = std::shared_ptr<const ClusterExecutable>(std::move(kernel));
    return entry;
  };
  // 4. The disk cache's code for this signature, if it has it, it is the code of this
  // program (its interface says so) and it loads.
  std::string disk_signature, interface;
  if (report.disk) {
    disk_signature = DiskSignature(state, inputs);
    interface = Interface(program);
    std::unique_ptr<ClusterExecutable> loaded;
    report.disk->Load(disk_signature, [&](const DiskEntry& stored) -> std::string {
      if (std::string differs = FirstDifference(stored.interface, interface); !differs.empty())
        return "its code is not this cluster's: " + differs;
      auto executable = backend.Load(program, stored.code);
      if (!executable.ok()) return "its code does not load: " + executable.status().message();
      loaded = std::move(executable).value();
      return "";
    });
    if (loaded) {
      entry.from_disk = true;
      stage("load");
      return finish(std::move(loaded), "loaded from the disk cache");
    }
  }
  // 5. Else the backend: MLIR passes, LLVM, native code or PTX.
  CompileStages stages;
  std::string code;
  auto kernel = backend.Compile(std::move(program), !dir.empty(), &stages, &code);
  int n = 3;  // the stages' files are numbered on from here: "03_math_approximated.mlir", ...
  for (const auto& [file, text] : stages.files) {
    const int i = n++;
    dump((i < 10 ? "0" : "") + std::to_string(i) + "_" + file, text);
  }
  if (!kernel.ok()) return fail(kernel.status());
  stage("mlir", stage_start + static_cast<int64_t>(stages.mlir_ms * 1000));
  stage(backend.schedule() == Schedule::kCpu ? "llvm" : "ptx");
  if (report.disk) report.disk->Store(disk_signature, {interface, code});
  return finish(std::move(kernel).value(), "compiled");
}

// Signature prefixes (the compiler, the device, the body) get ids: equal prefixes,
// compared whole, the same id, and no two different prefixes one. A call's key is then
// the id and its inputs, not the whole body again. (One entry per distinct body seen.)
uint64_t InternPrefix(const std::string& prefix) {
  static std::mutex mu;
  static auto* ids = new std::unordered_map<std::string, uint64_t>();
  std::lock_guard<std::mutex> lock(mu);
  return ids->emplace(prefix, ids->size()).first->second;
}

// The full signature, compared whole by the cache: the prefix's id, the target's, then
// each input's dtype, rank and dims (their bytes: nothing formatted on a cache hit), and
// the value of an input that decides shapes.
void AppendInputs(const ClusterState& state, const std::vector<Tensor>& inputs, std::string* out) {
  std::string& key = *out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const std::vector<int64_t>& dims = t.shape().dims();
    key.push_back(static_cast<char>(t.dtype()));
    const uint32_t rank = static_cast<uint32_t>(dims.size());
    key.append(reinterpret_cast<const char*>(&rank), sizeof rank);
    key.append(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(int64_t));
    if (state.value_inputs[i]) key.append(static_cast<const char*>(t.raw()), t.bytes());
  }
}

std::string Signature(const ClusterState& state, const std::vector<Tensor>& inputs) {
  std::string key;
  key.reserve(128);
  key += state.signature_prefix;
  key += state.target_key;
  AppendInputs(state, inputs, &key);
  return key;
}

// The signature as the disk cache keeps it: the same, with the compiler, the body and the
// target written out.
std::string DiskSignature(const ClusterState& state, const std::vector<Tensor>& inputs) {
  std::string key = state.disk_prefix + "|" + (*state.backend)->target() + (state.fuse ? "" : " unfused") + "|";
  AppendInputs(state, inputs, &key);
  return key;
}

StatusOr<std::shared_ptr<const void>> Prepare(const Node& node) {
  auto state = std::make_shared<ClusterState>();
  GJ_ASSIGN_OR_RETURN(state->body_state, Reference().prepare(node));
  state->name = node.name;
  GJ_ASSIGN_OR_RETURN(std::string bytes, GetStringAttr(node, "_body"));
  if (!state->body_def.ParseFromString(bytes)) return InvalidArgument(NodeLabel(node) + ": bad '_body'");
  for (const std::string& s : node.FindAttr("_body_outputs")->list().s()) state->outputs.push_back(s);
  ExpandSoftmax(&state->body_def, &state->outputs);
  MarkRowShifts(&state->body_def, state->outputs);
  std::string canonical;
  {
    google::protobuf::io::StringOutputStream stream(&canonical);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    state->body_def.SerializeToCodedStream(&coded);
  }
  state->disk_prefix = CompilerId() + "|" + canonical + "|outputs";
  for (const std::string& output : state->outputs) state->disk_prefix += " " + std::to_string(output.size()) + ":" + output;
  state->signature_prefix = "#" + std::to_string(InternPrefix(state->disk_prefix)) + "|";
  state->value_inputs = ValueInputs(state->body_def, static_cast<int>(node.inputs.size()));
  std::lock_guard<std::mutex> lock(states_mu);
  auto& states = States();
  states.erase(std::remove_if(states.begin(), states.end(), [](const auto& w) { return w.expired(); }), states.end());
  states.push_back(state);
  return std::shared_ptr<const void>(state);
}

// The cluster's body op by op, into `outputs` (default: the node's own).
Status RunReference(KernelContext& ctx, const ClusterState& state, std::vector<Tensor>* outputs = nullptr) {
  KernelContext reference{ctx.node,      ctx.inputs,   ctx.output_dtypes,      ctx.output_shapes, outputs ? *outputs : ctx.outputs,
                          ctx.allocator, ctx.intra_op, state.body_state.get(), ctx.options,       outputs ? nullptr : ctx.tracer};
  return Reference().compute(reference);
}

// ---- asynchronous compilation ------------------------------------------------------------

std::atomic<int64_t> async_runs{0};

bool AsyncOf(const SessionOptions* options) { return (options && options->jit_async) || ProcessOptions().jit_async; }

// One background thread compiles, in the order asked; the process waits for it at exit
// (LLVM's globals must outlive a compile).
class CompileThread {
 public:
  static CompileThread& Get() {
    static auto* thread = new CompileThread();
    return *thread;
  }
  void Start(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Loop(); }).detach();
      std::atexit([] { Get().WaitIdle(); });
    }
    tasks_.push_back(std::move(task));
    ++pending_;
    wake_.notify_one();
  }
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) idle_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  int pending_ = 0;
  bool started_ = false;
};

void CompileInBackground(std::function<void()> task) { CompileThread::Get().Start(std::move(task)); }

// ---- the numerics guard -------------------------------------------------------------

std::atomic<int64_t> numerics_checked{0}, numerics_mismatches{0};

SessionOptions::NumericsCheck NumericsCheckOf(const SessionOptions* options) {
  if (options && options->jit_check_numerics != SessionOptions::NumericsCheck::kOff) return options->jit_check_numerics;
  return ProcessOptions().jit_check_numerics;
}

// Where `got`, a compiled kernel's output, is further from `want`, op by op's, than the
// JIT's tolerance (jit.h, JitStats): the first such element, described; "" if none.
std::string FirstMismatch(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "it is " + DTypeName(got.dtype()) + got.shape().ToString() + ", op by op's " + DTypeName(want.dtype()) +
           want.shape().ToString();
  const bool exact = !IsFloatingPoint(got.dtype());
  const double rtol = got.dtype() == DType::kHalf ? 1e-2 : got.dtype() == DType::kBFloat16 ? 3e-2 : 1e-4;
  double largest = 0;
  for (int64_t i = 0; !exact && i < want.num_elements(); ++i) {
    const double w = std::fabs(want.ValueAsDouble(i));
    if (std::isfinite(w)) largest = std::max(largest, w);
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    bool ok;
    double a = 0, w = 0, tolerance = 0;
    if (exact) {
      ok = got.ValueAsInt(i) == want.ValueAsInt(i);
    } else {
      a = got.ValueAsDouble(i), w = want.ValueAsDouble(i);
      tolerance = rtol * (std::fabs(w) + largest);
      if (std::isnan(w) || std::isinf(w)) ok = std::isnan(w) ? std::isnan(a) : a == w;
      else ok = std::isfinite(a) && std::fabs(a - w) <= tolerance;
    }
    if (ok) continue;
    std::string where = "element " + std::to_string(i) + " [";
    int64_t flat = i;
    std::vector<int64_t> index(got.shape().rank());
    for (int d = got.shape().rank() - 1; d >= 0; --d) {
      index[d] = got.shape().dim(d) ? flat % got.shape().dim(d) : 0;
      flat = got.shape().dim(d) ? flat / got.shape().dim(d) : 0;
    }
    for (size_t d = 0; d < index.size(); ++d) where += (d ? ", " : "") + std::to_string(index[d]);
    char values[160];
    if (exact)
      std::snprintf(values, sizeof values, "]: compiled %lld, op by op %lld", static_cast<long long>(got.ValueAsInt(i)),
                    static_cast<long long>(want.ValueAsInt(i)));
    else
      std::snprintf(values, sizeof values, "]: compiled %.9g, op by op %.9g (tolerance %.3g)", a, w, tolerance);
    return where + values;
  }
  return "";
}

// The guard: the cluster's outputs (already in ctx.outputs) against its body run op by op
// on the same inputs. A cluster's first mismatch is reported, naming the output and the
// element, with its kernel's stages written to a directory (compiled once more, with a
// dump); under kFail every mismatch is the run's error.
Status CheckNumerics(KernelContext& ctx, const ClusterState& state, const CompileReporting& report) {
  std::vector<Tensor> want(ctx.outputs.size());
  GJ_RETURN_IF_ERROR(RunReference(ctx, state, &want));
  ++numerics_checked;
  std::string mismatch;
  for (size_t i = 0; i < want.size() && mismatch.empty(); ++i) {
    const std::string why = FirstMismatch(ctx.outputs[i], want[i]);
    if (!why.empty())
      mismatch = "output " + std::to_string(i) + " ('" + state.outputs[i] + "' of its body), " + why;
  }
  if (mismatch.empty()) return Status::Ok();
  ++numerics_mismatches;
  const SessionOptions::NumericsCheck check = NumericsCheckOf(ctx.options);
  std::call_once(state.numerics_reported, [&] {
    CompileReporting dump = report;
    const std::string base = ctx.options && !ctx.options->dump_to.empty()
                                 ? ctx.options->dump_to
                                 : (std::filesystem::temp_directory_path() / ("graphjit-numerics-" + std::to_string(getpid())))
                                       .string();
    dump.dump_dir = base + "/" + state.name;
    dump.tracer = nullptr;
    dump.disk = nullptr;  // compiled again, for its stages
    (void)Compile(state, ctx.inputs, dump);
    std::fprintf(stderr, "graphjit: %s: cluster %s differs from op by op: %s; its kernel's stages are in %s\n",
                 check == SessionOptions::NumericsCheck::kFail ? "error" : "warning", state.name.c_str(),
                 mismatch.c_str(), dump.dump_dir.c_str());
  });
  if (check == SessionOptions::NumericsCheck::kFail)
    return ctx.Error("--jit_check_numerics=fail: cluster " + state.name + " differs from op by op: " + mismatch);
  return Status::Ok();
}

// The session's disk cache (else GRAPHJIT_FLAGS'), if it has one and the binary a build id.
DiskCache* DiskCacheOf(const SessionOptions* options) {
  const SessionOptions& process = ProcessOptions();
  const SessionOptions& own = options && !options->cache_dir.empty() ? *options : process;
  if (own.cache_dir.empty()) return nullptr;
  if (BuildId().empty()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      std::fprintf(stderr, "graphjit: warning: --cache_dir is ignored: this binary has no build id to key kernels by\n");
    });
    return nullptr;
  }
  const int64_t mb = own.cache_max_mb > 0 ? own.cache_max_mb : 1024;
  return &DiskCacheAt(own.cache_dir, mb << 20);
}

// A cluster runs on the session's GPU if it has one and the cluster is placed there (see
// runtime/placement.h), else on the CPU.
StatusOr<std::shared_ptr<const Backend>> ChooseBackend(const KernelContext& ctx) {
  auto device = ParseDeviceName(ctx.node.device);
  if (ctx.gpu && device.ok() && (device->type == "GPU" || device->type == "XLA_GPU")) return GpuBackend(*ctx.gpu, ctx.options);
  return CpuBackend(ctx.options);
}

std::atomic<int64_t> gpu_launches{0};

// Cache hits and the nanoseconds their calls spent outside kernels.
std::atomic<int64_t> hit_calls{0}, hit_overhead_ns{0};

Status Compute(KernelContext& ctx) {
  const auto call_start = Clock::now();
  const auto& state = *static_cast<const ClusterState*>(ctx.state);
  const int64_t runs = ++state.runs;
  if (state.megamorphic) {
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  const SessionOptions* options = ctx.options;
  std::call_once(state.backend_once, [&] {
    state.backend = ChooseBackend(ctx);
    // On a GPU with the JIT level off, each op runs as a kernel of its own: the unfused
    // baseline (clustering takes every op placed on a GPU, whatever the level).
    const JitLevel level = options ? options->jit_level : JitLevel::kDefault;
    state.fuse = !(state.backend.ok() && (*state.backend)->schedule() == Schedule::kGpu &&
                   (level == JitLevel::kOff || level == JitLevel::kDefault));
    if (state.backend.ok())
      state.target_key = "#" + std::to_string(InternPrefix((*state.backend)->target() + (state.fuse ? "" : " unfused"))) + "|";
  });
  if (!state.backend.ok()) return ctx.Error(state.backend.status().message());
  CompileReporting report;
  const std::string signature = Signature(state, ctx.inputs);
  if (options && !options->dump_to.empty()) {
    // One folder per cluster and signature: two graphs' cluster_0, or one cluster at two
    // shapes, never share one. The suffix is an FNV-1a hash of the signature.
    const uint64_t hash = Fnv1a(signature.data(), signature.size());
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "-%08x", static_cast<unsigned>(hash ^ (hash >> 32)));
    report.dump_dir = options->dump_to + "/" + state.name + suffix;
  }
  report.tracer = ctx.tracer;
  report.verbose = options && options->jit_verbose;
  report.disk = DiskCacheOf(options);
  bool hit = false;
  std::shared_ptr<const KernelCache::Entry> entry;
  if (AsyncOf(options)) {
    // The compile outlives this call: it holds the cluster's state and its own copies of
    // the inputs (the executor may reuse their buffers once this kernel returns).
    auto make_compile = [&]() -> KernelCache::CompileFn {
      std::vector<Tensor> inputs;
      for (const Tensor& t : ctx.inputs) inputs.push_back(t.Clone().value_or(Tensor()));
      CompileReporting background = report;
      background.tracer = nullptr;
      return [self = state.shared_from_this(), inputs = std::move(inputs), background] {
        for (const Tensor& t : inputs)
          if (!t.valid()) return KernelCache::Entry{nullptr, "no memory for a copy of the inputs", false, 0};
        return Compile(*self, inputs, background);
      };
    };
    entry = Cache().GetIfCompiled(signature, make_compile, CompileInBackground, &hit);
  } else {
    entry = Cache().Get(signature, [&] { return Compile(state, ctx.inputs, report); }, &hit);
  }
  if (!hit) {
    // TensorFlow's rule: more than 10 compiles at fewer than 50 runs per compile.
    const int64_t compiles = ++state.compiles;
    if (compiles > 10 && runs < 50 * compiles && !state.megamorphic.exchange(true))
      std::fprintf(stderr, "graphjit: cluster %s is megamorphic (%lld compiles in %lld runs); it runs op by op from now on\n",
                   state.name.c_str(), static_cast<long long>(compiles), static_cast<long long>(runs));
  }
  if (!entry) {  // being compiled in the background
    ++async_runs;
    return RunReference(ctx, state);
  }
  if (!entry->kernel) {
    const char* what = entry->internal ? "internal compiler error" : "cannot be compiled";
    if (options && options->jit_strict)
      return ctx.Error("cluster " + state.name + " " + what + " (--jit_strict): " + entry->failure);
    std::call_once(state.warned, [&] {
      if (entry->internal)
        std::fprintf(stderr, "graphjit: error: internal compiler error in cluster %s (it runs op by op): %s\n",
                     state.name.c_str(), entry->failure.c_str());
      else
        std::fprintf(stderr, "graphjit: warning: cluster %s runs op by op: %s\n", state.name.c_str(),
                     entry->failure.c_str());
    });
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  const auto& kernel = *static_cast<const ClusterExecutable*>(entry->kernel.get());
  // A kernel runs only on a call it was made for: another cluster's would read and write
  // past the call's tensors. (A signature that leaves out what the code depends on is a
  // compiler bug.)
  if (Status fits = CheckCall(kernel.program(), ctx); !fits.ok()) {
    ++internal_errors;
    if (options && options->jit_strict)
      return ctx.Error("cluster " + state.name + ": internal compiler error (--jit_strict): " + fits.message());
    std::call_once(state.warned, [&] {
      std::fprintf(stderr, "graphjit: error: internal compiler error in cluster %s (it runs op by op): its cached kernel does not fit it: %s\n",
                   state.name.c_str(), fits.message().c_str());
    });
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  Clock::duration in_kernels{0};
  GJ_RETURN_IF_ERROR(kernel.Run(ctx, state.name, &in_kernels));
  if (NumericsCheckOf(options) != SessionOptions::NumericsCheck::kOff) return CheckNumerics(ctx, state, report);
  if (hit) {
    ++hit_calls;
    hit_overhead_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - call_start - in_kernels).count();
  }
  return Status::Ok();
}

// Clustering's question, answered by the emitters (WhyNotCompilable) for the devices this
// JIT compiles for: the CPU, the GPU (GEMMs through cuBLASLt: float32, with its epilogues),
// and XLA's CPU and GPU device names.
class JitCompilability : public CompilabilityOracle {
 public:
  std::string WhyNotCompilable(const Node& node, const std::vector<DType>& input_types,
                               const std::vector<DType>& output_types, const DeviceName& device) const override {
    if (device.type != "CPU" && device.type != "GPU" && device.type != "XLA_CPU" && device.type != "XLA_GPU")
      return "no compiler for device " + device.ToString();
    if ((device.type == "GPU" || device.type == "XLA_GPU") && IsLibraryOp(node.op)) {
      for (DType t : input_types)
        if (t != DType::kFloat) return "GEMMs on the GPU (cuBLASLt) are float32 only";
      if (node.op == "_FusedMatMul") {
        std::vector<std::string> ops;
        if (const auto* fused = node.FindAttr("fused_ops"))
          for (const std::string& op : fused->list().s()) ops.push_back(op);
        if (ops != std::vector<std::string>{"BiasAdd"} && ops != std::vector<std::string>{"BiasAdd", "Relu"})
          return "cuBLASLt's epilogues on the GPU are BiasAdd and BiasAdd + Relu";
      }
    }
    return graphjit::WhyNotCompilable(node, input_types, output_types);
  }
  // Specialize computes them from the inputs' shapes (jit/specialize.h).
  bool ComputesShapeValues() const override { return true; }
};

}  // namespace

void CountGpuLaunches(int64_t launches) { gpu_launches += launches; }

namespace {
std::mutex profiles_mu;
std::vector<GpuKernelProfile>& Profiles() {
  static auto* profiles = new std::vector<GpuKernelProfile>();
  return *profiles;
}
}  // namespace

void RecordGpuProfile(GpuKernelProfile profile) {
  std::lock_guard<std::mutex> lock(profiles_mu);
  Profiles().push_back(std::move(profile));
}

std::vector<GpuKernelProfile> TakeGpuProfiles() {
  std::lock_guard<std::mutex> lock(profiles_mu);
  return std::exchange(Profiles(), {});
}

void RegisterJit() {
  static std::once_flag once;
  std::call_once(once, [] {
    OpDef def = *OpRegistry::Global()->Find("_JitCluster");
    def.prepare = Prepare;
    def.compute = Compute;
    Reference() = OpRegistry::Global()->Replace(std::move(def)).value();
    static const JitCompilability oracle;
    RegisterClusteringPass(&oracle);
  });
}

Status CheckJitTarget(const SessionOptions& options) { return CpuBackend(&options).status(); }

void InjectCompileFailure(const std::string& reason) {
  std::lock_guard<std::mutex> lock(fault_mu);
  InjectedFailure() = reason;
}

void WaitForBackgroundCompiles() { CompileThread::Get().WaitIdle(); }

void InjectMiscompile(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(fault_mu);
  InjectedMiscompile() = {from, to};
}

JitStats GetJitStats() {
  JitStats stats;
  {
    std::lock_guard<std::mutex> lock(states_mu);
    stats = Retired();
    for (const auto& weak : States())
      if (auto state = weak.lock()) Count(*state, &stats);
  }
  CacheStats cache = Cache().stats();
  stats.cache_hits = cache.hits;
  stats.cache_misses = cache.misses;
  stats.cache_entries = cache.entries;
  stats.cache_bytes = cache.bytes;
  stats.cache_evictions = cache.evictions;
  stats.compile_ms = cache.compile_ms;
  stats.compiles = cache.compiles;
  const DiskCacheStats disk = GetDiskCacheStats();
  stats.disk_hits = disk.hits;
  stats.disk_writes = disk.writes;
  stats.disk_dropped = disk.dropped;
  stats.disk_evictions = disk.evicted;
  stats.internal_errors = internal_errors.load();
  stats.gpu_launches = gpu_launches.load();
  stats.numerics_checked = numerics_checked.load();
  stats.numerics_mismatches = numerics_mismatches.load();
  stats.async_runs = async_runs.load();
  if (const int64_t calls = hit_calls.load()) stats.hit_overhead_us = hit_overhead_ns.load() / 1e3 / calls;
  return stats;
}

std::string JitStatsLine() {
  JitStats s = GetJitStats();
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "jit: clusters=%d compiled=%d fallback=%d cache_hits=%lld cache_misses=%lld compile_ms=%.1f "
                "internal_errors=%lld cache_kernels=%lld cache_mb=%.1f cache_evictions=%lld gpu_launches=%lld "
                "numerics_checked=%lld numerics_mismatches=%lld async_runs=%lld compiles=%lld disk_hits=%lld "
                "disk_writes=%lld disk_dropped=%lld disk_evictions=%lld",
                s.clusters, s.compiled, s.fallback, static_cast<long long>(s.cache_hits),
                static_cast<long long>(s.cache_misses), s.compile_ms, static_cast<long long>(s.internal_errors),
                static_cast<long long>(s.cache_entries), s.cache_bytes / 1048576.0,
                static_cast<long long>(s.cache_evictions), static_cast<long long>(s.gpu_launches),
                static_cast<long long>(s.numerics_checked), static_cast<long long>(s.numerics_mismatches),
                static_cast<long long>(s.async_runs), static_cast<long long>(s.compiles),
                static_cast<long long>(s.disk_hits), static_cast<long long>(s.disk_writes),
                static_cast<long long>(s.disk_dropped), static_cast<long long>(s.disk_evictions));
  return buf;
}

}  // namespace graphjit
