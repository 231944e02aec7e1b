#include "jit/compile_policy.h"

namespace graphjit {

CompilePolicyOptions CompilePolicyOptionsOf(const SessionOptions* session, const SessionOptions& process) {
  CompilePolicyOptions o;
  o.async = (session && session->jit_async) || process.jit_async;
  o.strict = session && session->jit_strict;
  o.check_numerics = session && session->jit_check_numerics != SessionOptions::NumericsCheck::kOff ? session->jit_check_numerics
                                                                                                   : process.jit_check_numerics;
  return o;
}

bool FusesOps(bool on_gpu, JitLevel level) { return !(on_gpu && (level == JitLevel::kOff || level == JitLevel::kDefault)); }

CompileFailure ClassifyCompileFailure(const Status& status) {
  switch (status.code()) {
    case Code::kUnimplemented:
    case Code::kFailedPrecondition: return CompileFailure::kUnsupported;
    case Code::kResourceExhausted: return CompileFailure::kOutOfMemory;
    default: return CompileFailure::kInternal;
  }
}

bool IsMegamorphic(int64_t compiles, int64_t runs) { return compiles > 10 && runs < 50 * compiles; }

namespace {

CallAction RunOpByOp(std::string message, LogSeverity severity) {
  CallAction a;
  a.kind = CallAction::Kind::kRunOpByOp;
  a.fell_back = true;
  a.message = std::move(message);
  a.severity = severity;
  return a;
}

CallAction Fail(std::string error) {
  CallAction a;
  a.kind = CallAction::Kind::kFail;
  a.error = std::move(error);
  return a;
}

}  // namespace

CallAction DecideCall(const std::string& cluster, const CompileOutcome& outcome, bool strict) {
  using Kind = CompileOutcome::Kind;
  switch (outcome.kind) {
    case Kind::kCompiled: return CallAction{};
    case Kind::kPending: {
      CallAction a;
      a.kind = CallAction::Kind::kRunOpByOp;  // not a fallback: a later call runs the kernel
      return a;
    }
    case Kind::kFailed: {
      // No memory for its constants: every run of it fails, as an unfused run would.
      if (outcome.failure == CompileFailure::kOutOfMemory) return Fail("cluster " + cluster + ": " + outcome.why);
      const bool internal = outcome.failure == CompileFailure::kInternal;
      if (strict)
        return Fail("cluster " + cluster + " " + (internal ? "internal compiler error" : "cannot be compiled") +
                    " (--jit_strict): " + outcome.why);
      if (internal)
        return RunOpByOp("internal compiler error in cluster " + cluster + " (it runs op by op): " + outcome.why,
                         LogSeverity::kError);
      return RunOpByOp("cluster " + cluster + " runs op by op: " + outcome.why, LogSeverity::kWarning);
    }
    case Kind::kDoesNotFit: {
      CallAction a = strict ? Fail("cluster " + cluster + ": internal compiler error (--jit_strict): " + outcome.why)
                            : RunOpByOp("internal compiler error in cluster " + cluster +
                                            " (it runs op by op): its cached kernel does not fit it: " + outcome.why,
                                        LogSeverity::kError);
      a.internal_error = true;
      return a;
    }
  }
  return CallAction{};
}

std::string MegamorphicRule::CountCompile(const std::string& cluster, int64_t runs) {
  const int64_t compiles = ++compiles_;
  if (!IsMegamorphic(compiles, runs) || megamorphic_.exchange(true)) return "";
  return "cluster " + cluster + " is megamorphic (" + std::to_string(compiles) + " compiles in " + std::to_string(runs) +
         " runs); it runs op by op from now on";
}

}  // namespace graphjit
