// The compiling `_JitCluster` kernel: it wires the cluster's compiler
// (jit/cluster_compiler.h), which makes kernels, to the compile policy
// (jit/compile_policy.h), which says what a call does, and to the numerics guard
// (jit/numerics_guard.h).
#include "jit/cluster_kernel.h"

#include <chrono>
#include <filesystem>

#include "ir/logging.h"
#include "jit/cluster_compiler.h"
#include "jit/compile_policy.h"
#include "jit/numerics_guard.h"
#include "runtime/cuda_device.h"
#include "runtime/session_options.h"

namespace graphjit {

namespace {

using Clock = std::chrono::steady_clock;

// What the JIT keeps per `_JitCluster` node.
struct ClusterState : ClusterCounters {
  explicit ClusterState(Jit* jit) : ClusterCounters(jit) {}
  std::shared_ptr<const void> body_state;  // the reference kernel's (op by op)
  std::shared_ptr<ClusterCompiler> compiler;
  // Shared by the cluster's concurrent calls.
  mutable MegamorphicRule megamorphic;
  mutable std::once_flag warned, numerics_reported;
};

StatusOr<std::shared_ptr<const void>> Prepare(Jit* jit, const Node& node) {
  auto state = std::make_shared<ClusterState>(jit);
  GJ_ASSIGN_OR_RETURN(state->body_state, jit->reference().prepare(node));
  GJ_ASSIGN_OR_RETURN(state->compiler, ClusterCompiler::Make(jit, node));
  jit->Track(state);
  return std::shared_ptr<const void>(state);
}

// The cluster's body op by op, into `outputs` (default: the node's own).
Status RunReference(KernelContext& ctx, const ClusterState& state, std::vector<Tensor>* outputs = nullptr) {
  KernelContext reference{
      ctx.node,      ctx.inputs,   ctx.output_dtypes,      ctx.output_shapes, outputs ? *outputs : ctx.outputs,
      ctx.allocator, ctx.intra_op, state.body_state.get(), ctx.options,       outputs ? nullptr : ctx.tracer};
  return state.jit->reference().compute(reference);
}

// The guard: the cluster's outputs (already in ctx.outputs) against its body run op by op
// on the same inputs. A cluster's first mismatch is reported, naming the output and the
// element, with its kernel's stages written to a directory (compiled once more, with a
// dump); under kFail every mismatch is the run's error.
Status CheckNumerics(KernelContext& ctx, const ClusterState& state, const CompileReporting& report,
                     SessionOptions::NumericsCheck check) {
  const ClusterCompiler& compiler = *state.compiler;
  std::vector<Tensor> want(ctx.outputs.size());
  GJ_RETURN_IF_ERROR(RunReference(ctx, state, &want));
  for (size_t i = 0; i < ctx.outputs.size(); ++i)
    if (OnDeviceOnly(ctx.outputs[i]))
      GJ_RETURN_IF_ERROR(ctx.gpu->CopyToHost(ctx.outputs[i], nullptr, compiler.name() + "/output_" + std::to_string(i)));
  ++state.jit->numerics_checked;
  const std::string mismatch = FirstOutputMismatch(ctx.outputs, want, compiler.body().outputs, compiler.narrowest_float());
  if (mismatch.empty()) return Status::Ok();
  ++state.jit->numerics_mismatches;
  const bool fail = check == SessionOptions::NumericsCheck::kFail;
  std::call_once(state.numerics_reported, [&] {
    CompileReporting dump = report;
    dump.dump_dir = NumericsDumpDir(ctx.options, compiler.name());
    dump.tracer = nullptr;
    dump.disk = nullptr;  // compiled again, for its stages
    (void)compiler.Compile(ctx.inputs, dump);
    GJ_LOG_AT(fail ? LogSeverity::kError : LogSeverity::kWarning)
        << "cluster " << compiler.name() << " differs from op by op: " << mismatch << "; its kernel's stages are in "
        << dump.dump_dir;
  });
  if (fail) return ctx.Error("--jit_check_numerics=fail: cluster " + compiler.name() + " differs from op by op: " + mismatch);
  return Status::Ok();
}

// Where the call's compiles report (the dump folder is its signature's).
CompileReporting ReportingOf(KernelContext& ctx, Jit& jit, const ClusterCompiler& compiler, const std::string& signature) {
  CompileReporting report;
  if (ctx.options) report.dump_dir = compiler.DumpDir(ctx.options->dump_to, signature);
  report.tracer = ctx.tracer;
  report.verbose = (ctx.options && ctx.options->jit_verbose) || GJ_VLOG_IS_ON(1);
  report.disk = jit.DiskCacheFor(ctx.options);
  return report;
}

// Inputs a GPU kernel made are on the device alone: the signature reads the values that
// decide shapes, and a compile in the background copies every input.
Status InputsToHost(KernelContext& ctx, const ClusterCompiler& compiler, bool async) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (OnDeviceOnly(ctx.inputs[i]) && (compiler.body().value_inputs[i] || async))
      GJ_RETURN_IF_ERROR(
          ctx.gpu->CopyToHost(ctx.inputs[i], ctx.tracer, compiler.name() + "/input_" + std::to_string(i) + "/to_host"));
  return Status::Ok();
}

// What became of the call's compile: `kernel` is set when it fits the call. A kernel runs
// only on a call it was made for: another cluster's would read and write past the call's
// tensors.
CompileOutcome OutcomeOf(const KernelCache::Entry* entry, const KernelContext& ctx, const ClusterExecutable** kernel) {
  CompileOutcome outcome;
  if (!entry) {
    outcome.kind = CompileOutcome::Kind::kPending;
    return outcome;
  }
  if (!entry->kernel) {
    outcome.kind = CompileOutcome::Kind::kFailed;
    outcome.failure = entry->out_of_memory ? CompileFailure::kOutOfMemory
                      : entry->internal    ? CompileFailure::kInternal
                                           : CompileFailure::kUnsupported;
    outcome.why = entry->failure;
    return outcome;
  }
  const auto* compiled = static_cast<const ClusterExecutable*>(entry->kernel.get());
  if (Status fits = CheckCall(compiled->program(), ctx); !fits.ok()) {
    outcome.kind = CompileOutcome::Kind::kDoesNotFit;
    outcome.why = fits.message();
    return outcome;
  }
  *kernel = compiled;
  return outcome;
}

// A call that does not run a kernel: op by op (said once per cluster where the policy has
// something to say), or the run's error.
Status RunWithoutKernel(KernelContext& ctx, const ClusterState& state, const CallAction& action, bool pending) {
  if (action.internal_error) ++state.jit->internal_errors;
  if (action.kind == CallAction::Kind::kFail) return ctx.Error(action.error);
  if (pending) {
    ++state.jit->async_runs;
    GJ_VLOG(2) << state.compiler->name() << ": runs op by op while its kernel compiles in the background";
  }
  if (!action.message.empty()) std::call_once(state.warned, [&] { GJ_LOG_AT(action.severity) << action.message; });
  if (action.fell_back) state.fell_back = true;
  return RunReference(ctx, state);
}

Status Compute(KernelContext& ctx) {
  const auto call_start = Clock::now();
  const auto& state = *static_cast<const ClusterState*>(ctx.state);
  Jit& jit = *state.jit;
  ClusterCompiler& compiler = *state.compiler;
  const int64_t runs = ++state.runs;
  if (state.megamorphic.megamorphic()) {
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  if (Status backend = compiler.ChooseBackend(ctx); !backend.ok()) return ctx.Error(backend.message());
  const CompilePolicyOptions policy = CompilePolicyOptionsOf(ctx.options, jit.process_options());
  GJ_RETURN_IF_ERROR(InputsToHost(ctx, compiler, policy.async));
  const std::string signature = compiler.Signature(ctx.inputs);
  const CompileReporting report = ReportingOf(ctx, jit, compiler, signature);
  bool hit = false;
  std::shared_ptr<const KernelCache::Entry> entry = policy.async ? compiler.GetInBackground(signature, ctx.inputs, report, &hit)
                                                                 : compiler.GetNow(signature, ctx.inputs, report, &hit);
  if (hit && !report.dump_dir.empty() && !std::filesystem::exists(report.dump_dir)) {
    // Compiled before (the kernel cache is the process's): compiled again for the dump.
    CompileReporting dump = report;
    dump.disk = nullptr;
    (void)compiler.Compile(ctx.inputs, dump);
  }
  if (!hit) {
    const std::string said = state.megamorphic.CountCompile(compiler.name(), runs);
    if (!said.empty()) GJ_LOG(INFO) << said;
  }
  const ClusterExecutable* kernel = nullptr;
  const CompileOutcome outcome = OutcomeOf(entry.get(), ctx, &kernel);
  const CallAction action = DecideCall(compiler.name(), outcome, policy.strict);
  if (action.kind != CallAction::Kind::kRunKernel)
    return RunWithoutKernel(ctx, state, action, outcome.kind == CompileOutcome::Kind::kPending);
  Clock::duration in_kernels{0};
  GJ_RETURN_IF_ERROR(kernel->Run(ctx, compiler.name(), &in_kernels));
  if (policy.check_numerics != SessionOptions::NumericsCheck::kOff)
    return CheckNumerics(ctx, state, report, policy.check_numerics);
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
