// The compile policy of a `_JitCluster` kernel (internal to jit/): when a call's signature
// is compiled (now, or in the background while the call runs op by op: --jit_async),
// whether a cluster's ops are fused, when a cluster stops compiling (TensorFlow's
// megamorphic rule), what a failed compile was (an unsupported cluster, a compiler bug, a
// device out of memory), and what a call does with its compile's outcome: run the kernel,
// run op by op with one message per cluster, or fail (--jit_strict, or no memory).
//
// Decisions only: nothing here compiles or runs anything, so each is tested on its own
// (tests/unit/jit/compile_policy_test.cc). The compiler (jit/cluster_compiler.h) makes the
// kernels; the cluster kernel (jit/cluster_kernel.h) asks this unit what to do.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ir/logging.h"
#include "ir/status.h"
#include "runtime/session_options.h"

namespace graphjit {

// What the policy reads from a call's options: the session's, else the process's
// (GRAPHJIT_FLAGS) where a session may leave an option to the process.
struct CompilePolicyOptions {
  // A new signature is compiled on the background thread while its calls run op by op
  // (the session's or the process's --jit_async).
  bool async = false;
  // A cluster that cannot be compiled is the run's error (the session's --jit_strict).
  bool strict = false;
  // The numerics guard (the session's --jit_check_numerics, else the process's).
  SessionOptions::NumericsCheck check_numerics = SessionOptions::NumericsCheck::kOff;
};
CompilePolicyOptions CompilePolicyOptionsOf(const SessionOptions* session, const SessionOptions& process);

// Whether a cluster's ops are fused into kernels: on a GPU with the JIT level off (or left
// at its default) each op is a kernel of its own, the unfused baseline (clustering takes
// every op placed on a GPU, whatever the level).
bool FusesOps(bool on_gpu, JitLevel level);

// What a failed compile was, from its status: Unimplemented, an unsupported cluster;
// FailedPrecondition, code for a CPU this one is not (--jit_cpu), also unsupported;
// ResourceExhausted, its constants do not fit in the device's memory; anything else is a
// compiler bug.
enum class CompileFailure { kUnsupported, kInternal, kOutOfMemory };
CompileFailure ClassifyCompileFailure(const Status& status);

// TensorFlow's rule: a cluster compiled more than 10 times at fewer than 50 runs per
// compile is megamorphic, and runs op by op from then on.
bool IsMegamorphic(int64_t compiles, int64_t runs);

// What became of a call's signature.
struct CompileOutcome {
  enum class Kind {
    kPending,     // being compiled in the background
    kCompiled,    // a kernel that fits the call
    kFailed,      // the compile failed (see `failure`)
    kDoesNotFit,  // a cached kernel that is not for this call: a signature that left out
                  // what the code depends on, a compiler bug
  };
  Kind kind = Kind::kCompiled;
  CompileFailure failure = CompileFailure::kUnsupported;  // kFailed: what it was
  std::string why;                                        // kFailed, kDoesNotFit: the message
};

// What a call does with its outcome.
struct CallAction {
  enum class Kind { kRunKernel, kRunOpByOp, kFail };
  Kind kind = Kind::kRunKernel;
  // kRunOpByOp: the cluster counts as one that fell back (JitStats::fallback); not while its
  // signature compiles in the background.
  bool fell_back = false;
  // Counted as an internal error now (a failed compile counted itself when it failed).
  bool internal_error = false;
  std::string error;  // kFail: the run's error, without the node's name
  // kRunOpByOp: said once per cluster, at this severity (empty: nothing to say).
  std::string message;
  LogSeverity severity = LogSeverity::kInfo;
};
CallAction DecideCall(const std::string& cluster, const CompileOutcome& outcome, bool strict);

// The megamorphic rule over one cluster's compiles, shared by its concurrent calls.
class MegamorphicRule {
 public:
  // The cluster runs op by op without looking for a kernel.
  bool megamorphic() const { return megamorphic_.load(); }
  // Counts a compile started by the cluster's `runs`-th run. When this compile makes the
  // cluster megamorphic (once), the message that says so; else empty.
  std::string CountCompile(const std::string& cluster, int64_t runs);

 private:
  std::atomic<int64_t> compiles_{0};
  std::atomic<bool> megamorphic_{false};
};

}  // namespace graphjit
