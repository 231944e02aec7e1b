// jit/compile_policy: the JIT's decisions on their own, with nothing compiled: which
// options apply, when a cluster's ops are fused, what a failed compile was, TensorFlow's
// megamorphic rule, and what a call does with its compile's outcome.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "jit/compile_policy.h"

namespace graphjit {
namespace {

using Check = SessionOptions::NumericsCheck;

TEST(CompilePolicy, OptionsTakeTheSessionsThenTheProcesss) {
  SessionOptions process, session;
  CompilePolicyOptions o = CompilePolicyOptionsOf(nullptr, process);
  EXPECT_FALSE(o.async);
  EXPECT_FALSE(o.strict);
  EXPECT_EQ(o.check_numerics, Check::kOff);

  process.jit_async = true;
  process.jit_check_numerics = Check::kWarn;
  process.jit_strict = true;  // strict is a session's option only
  o = CompilePolicyOptionsOf(&session, process);
  EXPECT_TRUE(o.async);
  EXPECT_FALSE(o.strict);
  EXPECT_EQ(o.check_numerics, Check::kWarn);
  EXPECT_FALSE(CompilePolicyOptionsOf(nullptr, process).strict);

  session.jit_strict = true;
  session.jit_check_numerics = Check::kFail;
  o = CompilePolicyOptionsOf(&session, SessionOptions());
  EXPECT_FALSE(o.async);
  EXPECT_TRUE(o.strict);
  EXPECT_EQ(o.check_numerics, Check::kFail);

  session.jit_async = true;
  EXPECT_TRUE(CompilePolicyOptionsOf(&session, SessionOptions()).async);
}

TEST(CompilePolicy, OpsAreFusedExceptOnAGpuWithTheJitOff) {
  for (JitLevel level : {JitLevel::kOff, JitLevel::kDefault, JitLevel::kOn1, JitLevel::kOn2})
    EXPECT_TRUE(FusesOps(/*on_gpu=*/false, level)) << JitLevelName(level);
  EXPECT_FALSE(FusesOps(true, JitLevel::kOff));
  EXPECT_FALSE(FusesOps(true, JitLevel::kDefault));
  EXPECT_TRUE(FusesOps(true, JitLevel::kOn1));
  EXPECT_TRUE(FusesOps(true, JitLevel::kOn2));
}

TEST(CompilePolicy, FailuresAreClassifiedByTheirCode) {
  EXPECT_EQ(ClassifyCompileFailure(Unimplemented("no emitter")), CompileFailure::kUnsupported);
  EXPECT_EQ(ClassifyCompileFailure(FailedPrecondition("the code is for a CPU with xop")), CompileFailure::kUnsupported);
  EXPECT_EQ(ClassifyCompileFailure(ResourceExhausted("constants")), CompileFailure::kOutOfMemory);
  EXPECT_EQ(ClassifyCompileFailure(Internal("bug")), CompileFailure::kInternal);
  EXPECT_EQ(ClassifyCompileFailure(InvalidArgument("bad MLIR")), CompileFailure::kInternal);
  EXPECT_EQ(ClassifyCompileFailure(NotFound("symbol")), CompileFailure::kInternal);
}

TEST(CompilePolicy, TensorFlowsMegamorphicRule) {
  EXPECT_FALSE(IsMegamorphic(10, 10));  // 10 compiles are allowed, however few the runs
  EXPECT_TRUE(IsMegamorphic(11, 11));   // the 11th at fewer than 50 runs per compile
  EXPECT_TRUE(IsMegamorphic(11, 549));
  EXPECT_FALSE(IsMegamorphic(11, 550));  // 50 runs per compile
  EXPECT_FALSE(IsMegamorphic(20, 5000));
  EXPECT_TRUE(IsMegamorphic(100, 4999));
}

TEST(CompilePolicy, MegamorphicRuleSaysSoOnce) {
  MegamorphicRule rule;
  for (int i = 1; i <= 10; ++i) {
    EXPECT_EQ(rule.CountCompile("cluster_3", i), "") << i;
    EXPECT_FALSE(rule.megamorphic());
  }
  EXPECT_EQ(rule.CountCompile("cluster_3", 11),
            "cluster cluster_3 is megamorphic (11 compiles in 11 runs); it runs op by op from now on");
  EXPECT_TRUE(rule.megamorphic());
  EXPECT_EQ(rule.CountCompile("cluster_3", 12), "");
  EXPECT_TRUE(rule.megamorphic());
}

TEST(CompilePolicy, ManyRunsPerCompileStayCompiled) {
  MegamorphicRule rule;
  for (int i = 1; i <= 40; ++i) EXPECT_EQ(rule.CountCompile("c", 100 * i), "");
  EXPECT_FALSE(rule.megamorphic());
}

TEST(CompilePolicy, ConcurrentCompilesMakeOneMessage) {
  MegamorphicRule rule;
  std::atomic<int> said{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i)
        if (!rule.CountCompile("c", 12).empty()) ++said;
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(said.load(), 1);
  EXPECT_TRUE(rule.megamorphic());
}

CompileOutcome Outcome(CompileOutcome::Kind kind, CompileFailure failure = CompileFailure::kUnsupported, std::string why = "") {
  CompileOutcome o;
  o.kind = kind;
  o.failure = failure;
  o.why = std::move(why);
  return o;
}

TEST(CompilePolicy, ACompiledKernelRuns) {
  for (bool strict : {false, true}) {
    const CallAction a = DecideCall("cluster_0", Outcome(CompileOutcome::Kind::kCompiled), strict);
    EXPECT_EQ(a.kind, CallAction::Kind::kRunKernel);
    EXPECT_FALSE(a.fell_back);
    EXPECT_FALSE(a.internal_error);
    EXPECT_EQ(a.message, "");
  }
}

TEST(CompilePolicy, APendingCompileRunsOpByOpWithoutFallingBack) {
  for (bool strict : {false, true}) {
    const CallAction a = DecideCall("cluster_0", Outcome(CompileOutcome::Kind::kPending), strict);
    EXPECT_EQ(a.kind, CallAction::Kind::kRunOpByOp);
    EXPECT_FALSE(a.fell_back);
    EXPECT_EQ(a.message, "");
  }
}

TEST(CompilePolicy, AnUnsupportedClusterFallsBackWithAWarning) {
  const CallAction a =
      DecideCall("cluster_0", Outcome(CompileOutcome::Kind::kFailed, CompileFailure::kUnsupported, "no emitter for Foo"), false);
  EXPECT_EQ(a.kind, CallAction::Kind::kRunOpByOp);
  EXPECT_TRUE(a.fell_back);
  EXPECT_FALSE(a.internal_error);  // counted where it failed, if at all
  EXPECT_EQ(a.severity, LogSeverity::kWarning);
  EXPECT_EQ(a.message, "cluster cluster_0 runs op by op: no emitter for Foo");
}

TEST(CompilePolicy, AnInternalErrorFallsBackWithAnError) {
  const CallAction a =
      DecideCall("cluster_1", Outcome(CompileOutcome::Kind::kFailed, CompileFailure::kInternal, "bad MLIR"), false);
  EXPECT_EQ(a.kind, CallAction::Kind::kRunOpByOp);
  EXPECT_TRUE(a.fell_back);
  EXPECT_FALSE(a.internal_error);
  EXPECT_EQ(a.severity, LogSeverity::kError);
  EXPECT_EQ(a.message, "internal compiler error in cluster cluster_1 (it runs op by op): bad MLIR");
}

TEST(CompilePolicy, StrictModeMakesAFailureTheRunsError) {
  CallAction a = DecideCall("cluster_0", Outcome(CompileOutcome::Kind::kFailed, CompileFailure::kUnsupported, "why"), true);
  EXPECT_EQ(a.kind, CallAction::Kind::kFail);
  EXPECT_EQ(a.error, "cluster cluster_0 cannot be compiled (--jit_strict): why");
  EXPECT_FALSE(a.fell_back);
  a = DecideCall("cluster_0", Outcome(CompileOutcome::Kind::kFailed, CompileFailure::kInternal, "why"), true);
  EXPECT_EQ(a.kind, CallAction::Kind::kFail);
  EXPECT_EQ(a.error, "cluster cluster_0 internal compiler error (--jit_strict): why");
}

TEST(CompilePolicy, OutOfMemoryIsAlwaysTheRunsError) {
  for (bool strict : {false, true}) {
    const CallAction a =
        DecideCall("cluster_2", Outcome(CompileOutcome::Kind::kFailed, CompileFailure::kOutOfMemory, "constants: 8 GiB"), strict);
    EXPECT_EQ(a.kind, CallAction::Kind::kFail);
    EXPECT_EQ(a.error, "cluster cluster_2: constants: 8 GiB");
    EXPECT_FALSE(a.fell_back);
  }
}

TEST(CompilePolicy, AKernelThatDoesNotFitIsAnInternalError) {
  const CompileOutcome misfit = Outcome(CompileOutcome::Kind::kDoesNotFit, CompileFailure::kUnsupported, "input 0 is 8 bytes");
  CallAction a = DecideCall("cluster_0", misfit, false);
  EXPECT_EQ(a.kind, CallAction::Kind::kRunOpByOp);
  EXPECT_TRUE(a.fell_back);
  EXPECT_TRUE(a.internal_error);
  EXPECT_EQ(a.severity, LogSeverity::kError);
  EXPECT_EQ(a.message,
            "internal compiler error in cluster cluster_0 (it runs op by op): its cached kernel does not fit it: input 0 "
            "is 8 bytes");
  a = DecideCall("cluster_0", misfit, true);
  EXPECT_EQ(a.kind, CallAction::Kind::kFail);
  EXPECT_TRUE(a.internal_error);
  EXPECT_EQ(a.error, "cluster cluster_0: internal compiler error (--jit_strict): input 0 is 8 bytes");
}

}  // namespace
}  // namespace graphjit
