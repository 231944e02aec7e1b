#include "ir/logging.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace graphjit {

namespace {

std::atomic<int>& Level() {
  static std::atomic<int> level{[] {
    const char* flags = std::getenv("GRAPHJIT_FLAGS");
    return flags ? VerboseLevelOfFlags(flags, 0) : 0;
  }()};
  return level;
}

}  // namespace

std::string FormatLogLine(LogSeverity severity, std::string_view message) {
  std::string line = "graphjit: ";
  if (severity == LogSeverity::kWarning) line += "warning: ";
  if (severity == LogSeverity::kError) line += "error: ";
  line += message;
  return line;
}

void Log(LogSeverity severity, std::string_view message) {
  static std::mutex mu;
  const std::string line = FormatLogLine(severity, message) + "\n";
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

int VerboseLevel() { return Level().load(std::memory_order_relaxed); }

void SetVerboseLevel(int level) { Level().store(level, std::memory_order_relaxed); }

bool ParseVerboseLevel(std::string_view value, int* level) {
  if (value.empty() || value.size() > 9) return false;
  int n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  *level = n;
  return true;
}

int VerboseLevelOfFlags(std::string_view flags, int fallback) {
  int level = fallback;
  constexpr std::string_view kSpace = " \t\n";
  for (size_t pos = flags.find_first_not_of(kSpace); pos != std::string_view::npos; pos = flags.find_first_not_of(kSpace, pos)) {
    const size_t end = std::min(flags.find_first_of(kSpace, pos), flags.size());
    const std::string_view flag = flags.substr(pos, end - pos);
    pos = end;
    constexpr std::string_view kFlag = "--v=";
    int parsed = 0;
    if (flag.substr(0, kFlag.size()) == kFlag && ParseVerboseLevel(flag.substr(kFlag.size()), &parsed)) level = parsed;
  }
  return level;
}

}  // namespace graphjit
