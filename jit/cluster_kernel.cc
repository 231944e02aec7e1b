#include "jit/cluster_kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "ir/attr.h"
#include "jit/passes/expand_small_gemms.h"
#include "jit/pipeline.h"
#include "runtime/cuda_device.h"
#include "runtime/placement.h"
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

// What the JIT keeps per `_JitCluster` node.
struct ClusterState : ClusterCounters, std::enable_shared_from_this<ClusterState> {
  explicit ClusterState(Jit* jit) : ClusterCounters(jit) {}
  std::shared_ptr<const void> body_state;  // the reference kernel's (op by op)
  std::string name;
  // The least precise float type the body computes in (float16, bfloat16, else float32):
  // an output computed from float16 values is compared as float16 by the numerics guard.
  DType narrowest_float = DType::kFloat;
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
  PreparedBody body;         // with the row ops written out
  // Counters and flags of the runs (kernels run concurrently on a shared state).
  mutable std::atomic<int64_t> compiles{0};
  mutable std::atomic<bool> megamorphic{false};
  mutable std::once_flag warned, numerics_reported;
};

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) std::fprintf(stderr, "graphjit: warning: cannot write %s\n", path.c_str());
}

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

// The body specialized on the actual inputs, planned, emitted (jit/pipeline.h) and
// compiled by the cluster's backend. Each stage is written to the dump directory and
// traced as an event.
KernelCache::Entry Compile(const ClusterState& state, const std::vector<Tensor>& inputs, const CompileReporting& report) {
  Jit& jit = *state.jit;
  KernelCache::Entry entry;
  // Unimplemented: the cluster is not supported (yet); FailedPrecondition: the code is for
  // a CPU this one is not (--jit_cpu); ResourceExhausted: its constants do not fit in the
  // device's memory. Anything else is a compiler bug.
  auto fail = [&](const Status& s) {
    entry.failure = s.message();
    entry.out_of_memory = s.code() == Code::kResourceExhausted;
    entry.internal = s.code() != Code::kUnimplemented && s.code() != Code::kFailedPrecondition && !entry.out_of_memory;
    if (entry.internal) ++jit.internal_errors;
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
  if (std::string failure = jit.injected_failure(); !failure.empty()) return fail(Internal(failure));
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  // 1-3. Specialize, plan, emit.
  const Backend& backend = **state.backend;
  PipelineOptions pipeline;
  pipeline.fuse = state.fuse;
  pipeline.small_gemm_multiply_adds = kSmallGemmMultiplyAdds;
  if (!dir.empty()) pipeline.dump = dump;
  pipeline.stage_done = [&](const char* name) { stage(name); };
  pipeline.rewrite_mlir = [&](std::string* mlir) {
    const auto [from, to] = jit.injected_miscompile();
    const size_t at = from.empty() ? std::string::npos : mlir->find(from);
    if (at != std::string::npos) mlir->replace(at, from.size(), to);
  };
  auto built = BuildProgram(state.body, inputs, backend.description(), pipeline);
  if (!built.ok()) return fail(built.status());
  ClusterProgram program = std::move(built).value();
  const size_t num_kernels = program.module.kernels.size();
  const int num_ops = program.module.num_ops;
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
    if (state.body.value_inputs[i]) key.append(static_cast<const char*>(t.raw()), t.bytes());
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

// The least precise of float16 and bfloat16 among the types of a body's nodes, else float32.
DType NarrowestFloat(const tensorflow::GraphDef& body) {
  DType narrowest = DType::kFloat;
  for (const tensorflow::NodeDef& n : body.node())
    for (const auto& [name, value] : n.attr()) {
      if (value.value_case() != tensorflow::AttrValue::kType) continue;
      if (value.type() == tensorflow::DT_BFLOAT16) narrowest = DType::kBFloat16;
      if (value.type() == tensorflow::DT_HALF && narrowest == DType::kFloat) narrowest = DType::kHalf;
    }
  return narrowest;
}

StatusOr<std::shared_ptr<const void>> Prepare(Jit* jit, const Node& node) {
  auto state = std::make_shared<ClusterState>(jit);
  GJ_ASSIGN_OR_RETURN(state->body_state, jit->reference().prepare(node));
  state->name = node.name;
  GJ_ASSIGN_OR_RETURN(std::string bytes, GetStringAttr(node, "_body"));
  tensorflow::GraphDef body;
  if (!body.ParseFromString(bytes)) return InvalidArgument(NodeLabel(node) + ": bad '_body'");
  std::vector<std::string> outputs;
  for (const std::string& s : node.FindAttr("_body_outputs")->list().s()) outputs.push_back(s);
  state->narrowest_float = NarrowestFloat(body);
  GJ_ASSIGN_OR_RETURN(state->body, PrepareBody(std::move(body), std::move(outputs), static_cast<int>(node.inputs.size()),
                                               /*unfuse_matmuls=*/false));
  std::string canonical;
  {
    google::protobuf::io::StringOutputStream stream(&canonical);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    state->body.graph.SerializeToCodedStream(&coded);
  }
  state->disk_prefix = CompilerId() + "|" + canonical + "|outputs";
  for (const std::string& output : state->body.outputs)
    state->disk_prefix += " " + std::to_string(output.size()) + ":" + output;
  state->signature_prefix = "#" + std::to_string(jit->Intern(state->disk_prefix)) + "|";
  jit->Track(state);
  return std::shared_ptr<const void>(state);
}

// The cluster's body op by op, into `outputs` (default: the node's own).
Status RunReference(KernelContext& ctx, const ClusterState& state, std::vector<Tensor>* outputs = nullptr) {
  KernelContext reference{ctx.node,      ctx.inputs,   ctx.output_dtypes,      ctx.output_shapes, outputs ? *outputs : ctx.outputs,
                          ctx.allocator, ctx.intra_op, state.body_state.get(), ctx.options,       outputs ? nullptr : ctx.tracer};
  return state.jit->reference().compute(reference);
}

// A session's option, else the process's.
bool AsyncOf(const Jit& jit, const SessionOptions* options) {
  return (options && options->jit_async) || jit.process_options().jit_async;
}

// ---- the numerics guard -------------------------------------------------------------

SessionOptions::NumericsCheck NumericsCheckOf(const Jit& jit, const SessionOptions* options) {
  if (options && options->jit_check_numerics != SessionOptions::NumericsCheck::kOff) return options->jit_check_numerics;
  return jit.process_options().jit_check_numerics;
}

// The JIT's relative tolerance for floats of `dtype` (jit.h, JitStats).
double RelativeTolerance(DType dtype) { return dtype == DType::kHalf ? 1e-2 : dtype == DType::kBFloat16 ? 3e-2 : 1e-4; }

// Where `got`, a compiled kernel's output, is further from `want`, op by op's, than the
// JIT's tolerance (jit.h, JitStats) for its type or for `computed_in`, the body's narrowest
// float type: the first such element, described; "" if none.
std::string FirstMismatch(const Tensor& got, const Tensor& want, DType computed_in) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "it is " + DTypeName(got.dtype()) + got.shape().ToString() + ", op by op's " + DTypeName(want.dtype()) +
           want.shape().ToString();
  const bool exact = !IsFloatingPoint(got.dtype());
  const double rtol = std::max(RelativeTolerance(got.dtype()), RelativeTolerance(computed_in));
  const int64_t n = got.num_elements();
  double largest = 0;
  for (int64_t i = 0; !exact && i < n; ++i) {
    const double w = std::fabs(want.ValueAsDouble(i));
    if (std::isfinite(w)) largest = std::max(largest, w);
  }
  for (int64_t i = 0; i < n; ++i) {
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
  for (size_t i = 0; i < ctx.outputs.size(); ++i)
    if (OnDeviceOnly(ctx.outputs[i]))
      GJ_RETURN_IF_ERROR(ctx.gpu->CopyToHost(ctx.outputs[i], nullptr, state.name + "/output_" + std::to_string(i)));
  ++state.jit->numerics_checked;
  std::string mismatch;
  for (size_t i = 0; i < want.size() && mismatch.empty(); ++i) {
    const std::string why = FirstMismatch(ctx.outputs[i], want[i], state.narrowest_float);
    if (!why.empty())
      mismatch = "output " + std::to_string(i) + " ('" + state.body.outputs[i] + "' of its body), " + why;
  }
  if (mismatch.empty()) return Status::Ok();
  ++state.jit->numerics_mismatches;
  const SessionOptions::NumericsCheck check = NumericsCheckOf(*state.jit, ctx.options);
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

// A cluster runs on the session's GPU if it has one and the cluster is placed there (see
// runtime/placement.h), else on the CPU.
StatusOr<std::shared_ptr<const Backend>> ChooseBackend(const KernelContext& ctx, Jit& jit) {
  if (ctx.gpu && PlacedOnGpu(ctx.node)) return GpuBackend(*ctx.gpu, ctx.options, jit.process_options(), &jit);
  return CpuBackend(ctx.options, jit.process_options());
}

Status Compute(KernelContext& ctx) {
  const auto call_start = Clock::now();
  const auto& state = *static_cast<const ClusterState*>(ctx.state);
  Jit& jit = *state.jit;
  const int64_t runs = ++state.runs;
  if (state.megamorphic) {
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  const SessionOptions* options = ctx.options;
  std::call_once(state.backend_once, [&] {
    state.backend = ChooseBackend(ctx, jit);
    // On a GPU with the JIT level off, each op runs as a kernel of its own: the unfused
    // baseline (clustering takes every op placed on a GPU, whatever the level).
    const JitLevel level = options ? options->jit_level : JitLevel::kDefault;
    state.fuse = !(state.backend.ok() && (*state.backend)->schedule() == Schedule::kGpu &&
                   (level == JitLevel::kOff || level == JitLevel::kDefault));
    if (state.backend.ok())
      state.target_key = "#" + std::to_string(jit.Intern((*state.backend)->target() + (state.fuse ? "" : " unfused"))) + "|";
  });
  if (!state.backend.ok()) return ctx.Error(state.backend.status().message());
  // Inputs a GPU kernel made are on the device alone: the signature reads the values that
  // decide shapes, and a compile in the background copies every input.
  const bool async = AsyncOf(jit, options);
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (OnDeviceOnly(ctx.inputs[i]) && (state.body.value_inputs[i] || async))
      GJ_RETURN_IF_ERROR(ctx.gpu->CopyToHost(ctx.inputs[i], ctx.tracer, state.name + "/input_" + std::to_string(i) + "/to_host"));
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
  report.disk = jit.DiskCacheFor(options);
  bool hit = false;
  std::shared_ptr<const KernelCache::Entry> entry;
  if (async) {
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
    entry = jit.cache().GetIfCompiled(
        signature, make_compile, [&jit](std::function<void()> task) { jit.CompileInBackground(std::move(task)); }, &hit);
  } else {
    entry = jit.cache().Get(signature, [&] { return Compile(state, ctx.inputs, report); }, &hit);
  }
  if (hit && !report.dump_dir.empty() && !std::filesystem::exists(report.dump_dir)) {
    // Compiled before (the kernel cache is the process's): compiled again for the dump.
    CompileReporting dump = report;
    dump.disk = nullptr;
    (void)Compile(state, ctx.inputs, dump);
  }
  if (!hit) {
    // TensorFlow's rule: more than 10 compiles at fewer than 50 runs per compile.
    const int64_t compiles = ++state.compiles;
    if (compiles > 10 && runs < 50 * compiles && !state.megamorphic.exchange(true))
      std::fprintf(stderr, "graphjit: cluster %s is megamorphic (%lld compiles in %lld runs); it runs op by op from now on\n",
                   state.name.c_str(), static_cast<long long>(compiles), static_cast<long long>(runs));
  }
  if (!entry) {  // being compiled in the background
    ++jit.async_runs;
    return RunReference(ctx, state);
  }
  if (!entry->kernel) {
    if (entry->out_of_memory) return ctx.Error("cluster " + state.name + ": " + entry->failure);
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
    ++jit.internal_errors;
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
  if (NumericsCheckOf(jit, options) != SessionOptions::NumericsCheck::kOff) return CheckNumerics(ctx, state, report);
  if (hit) {
    ++jit.hit_calls;
    jit.hit_overhead_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - call_start - in_kernels).count();
  }
  return Status::Ok();
}

}  // namespace

OpDef MakeClusterKernel(Jit* jit, OpDef registered) {
  jit->set_reference(registered);
  registered.prepare = [jit](const Node& node) { return Prepare(jit, node); };
  registered.compute = Compute;
  return registered;
}

}  // namespace graphjit
