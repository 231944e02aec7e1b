// ir/logging: the lines messages are written as, the verbose level that filters GJ_VLOG
// (set directly and read from GRAPHJIT_FLAGS' syntax), and whole lines from concurrent
// threads.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ir/logging.h"

namespace graphjit {
namespace {

// Sets the verbose level for one test and puts the previous one back.
class VerboseLevelFor {
 public:
  explicit VerboseLevelFor(int level) : previous_(VerboseLevel()) { SetVerboseLevel(level); }
  ~VerboseLevelFor() { SetVerboseLevel(previous_); }

 private:
  const int previous_;
};

TEST(Logging, EachSeverityHasItsPrefix) {
  EXPECT_EQ(FormatLogLine(LogSeverity::kInfo, "compiled cluster_0"), "graphjit: compiled cluster_0");
  EXPECT_EQ(FormatLogLine(LogSeverity::kWarning, "cluster cluster_0 runs op by op: why"),
            "graphjit: warning: cluster cluster_0 runs op by op: why");
  EXPECT_EQ(FormatLogLine(LogSeverity::kError, "internal compiler error"), "graphjit: error: internal compiler error");
  EXPECT_EQ(FormatLogLine(LogSeverity::kInfo, ""), "graphjit: ");
}

TEST(Logging, WritesOneLineToStderr) {
  testing::internal::CaptureStderr();
  GJ_LOG(WARNING) << "cannot write " << "f.txt";
  GJ_LOG(ERROR) << 3 << " kernels";
  GJ_LOG(INFO) << "a note";
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "graphjit: warning: cannot write f.txt\ngraphjit: error: 3 kernels\ngraphjit: a note\n");
}

TEST(Logging, VerboseLevelFilters) {
  VerboseLevelFor level(1);
  int evaluated = 0;
  auto count = [&] { return ++evaluated; };
  testing::internal::CaptureStderr();
  GJ_VLOG(1) << "level one " << count();
  GJ_VLOG(2) << "level two " << count();
  GJ_VLOG(0) << "level zero";
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "graphjit: level one 1\ngraphjit: level zero\n");
  EXPECT_EQ(evaluated, 1) << "a message below the level is not evaluated";
  EXPECT_TRUE(GJ_VLOG_IS_ON(1));
  EXPECT_FALSE(GJ_VLOG_IS_ON(2));
}

TEST(Logging, NothingVerboseAtLevelZero) {
  VerboseLevelFor level(0);
  testing::internal::CaptureStderr();
  GJ_VLOG(1) << "hidden";
  GJ_LOG(INFO) << "shown";
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "graphjit: shown\n");
}

TEST(Logging, VlogTakesNoElse) {
  VerboseLevelFor level(0);
  bool else_taken = false;
  testing::internal::CaptureStderr();
  if (true)
    GJ_VLOG(1) << "hidden";
  else
    else_taken = true;
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(else_taken);
}

TEST(Logging, VerboseLevelOfFlags) {
  EXPECT_EQ(VerboseLevelOfFlags("", 0), 0);
  EXPECT_EQ(VerboseLevelOfFlags("--v=2", 0), 2);
  EXPECT_EQ(VerboseLevelOfFlags("  --jit_verbose --v=1\t--dump_to=/tmp/x --v=3 ", 0), 3);
  EXPECT_EQ(VerboseLevelOfFlags("--v=x --vv=4 --v= --v=-1", 5), 5);
  EXPECT_EQ(VerboseLevelOfFlags("--v=1 --v=bad", 0), 1);
  EXPECT_EQ(VerboseLevelOfFlags("--dump_to=--v=4", 0), 0);
  int level = -1;
  EXPECT_TRUE(ParseVerboseLevel("0", &level));
  EXPECT_EQ(level, 0);
  EXPECT_TRUE(ParseVerboseLevel("12", &level));
  EXPECT_EQ(level, 12);
  EXPECT_FALSE(ParseVerboseLevel("", &level));
  EXPECT_FALSE(ParseVerboseLevel("1x", &level));
  EXPECT_FALSE(ParseVerboseLevel("-1", &level));
  EXPECT_FALSE(ParseVerboseLevel("99999999999", &level));
}

// Lines written by many threads at once come out whole, each on its own line.
TEST(Logging, ConcurrentLinesStayWhole) {
  constexpr int kThreads = 8, kLines = 200;
  testing::internal::CaptureStderr();
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([t] {
        for (int i = 0; i < kLines; ++i) GJ_LOG(WARNING) << "thread " << t << " line " << i << " end";
      });
    for (std::thread& thread : threads) thread.join();
  }
  std::istringstream out(testing::internal::GetCapturedStderr());
  int lines = 0;
  for (std::string line; std::getline(out, line); ++lines) {
    ASSERT_EQ(line.rfind("graphjit: warning: thread ", 0), 0u) << line;
    ASSERT_EQ(line.substr(line.size() - 4), " end") << line;
  }
  EXPECT_EQ(lines, kThreads * kLines);
}

}  // namespace
}  // namespace graphjit
