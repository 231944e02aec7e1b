// A leveled logger, as XLA's LOG and VLOG: the library's diagnostics (warnings, errors,
// notes and verbose traces) go through it, one line per message on stderr, each with a
// prefix that says its severity:
//
//   GJ_LOG(WARNING) << "cluster " << name << " runs op by op: " << why;
//   GJ_VLOG(1) << "compiled " << name;  // only at --v=1 and above
//
// A line is "graphjit: " followed by "warning: " or "error: " for those severities, then
// the message; an INFO line (and a verbose one) has no word of its own, so the notes the
// library has always printed read as they did. A message is written whole, in one write
// under a lock: lines of concurrent threads never interleave.
//
// The verbose level is the process's: `--v=N` in GRAPHJIT_FLAGS (read at first use), or
// what SetVerboseLevel sets. A program's own output (a command's results, an example's
// printing) is not a log and does not go through here.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace graphjit {

enum class LogSeverity { kInfo, kWarning, kError };

// The line a message is written as, without its newline.
std::string FormatLogLine(LogSeverity severity, std::string_view message);

// Writes the message's line, and a newline, to stderr in one write.
void Log(LogSeverity severity, std::string_view message);

// GJ_VLOG(n) messages are written while n <= the verbose level. It starts as the last
// `--v=N` of GRAPHJIT_FLAGS (0 without one, or with one that is not a number: ApplyFlags
// reports that), read when it is first asked for.
int VerboseLevel();
void SetVerboseLevel(int level);

// N of `--v=N`: true and `*level` set if `value` is a non-negative integer.
bool ParseVerboseLevel(std::string_view value, int* level);
// N of the last `--v=N` in `flags` (GRAPHJIT_FLAGS' syntax: flags separated by white
// space) whose N is a number; `fallback` if there is none.
int VerboseLevelOfFlags(std::string_view flags, int fallback);

namespace logging_internal {

// One message: collected by its stream, written when the statement ends.
class LogMessage {
 public:
  explicit LogMessage(LogSeverity severity) : severity_(severity) {}
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage() { Log(severity_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  const LogSeverity severity_;
  std::ostringstream stream_;
};

// Turns a stream into void, so GJ_VLOG is one expression that an `if` without braces
// around it cannot take an `else` from.
struct Voidify {
  void operator&(std::ostream&) {}
};

inline constexpr LogSeverity INFO = LogSeverity::kInfo;
inline constexpr LogSeverity WARNING = LogSeverity::kWarning;
inline constexpr LogSeverity ERROR = LogSeverity::kError;

}  // namespace logging_internal
}  // namespace graphjit

// A message of severity INFO, WARNING or ERROR.
#define GJ_LOG(severity) ::graphjit::logging_internal::LogMessage(::graphjit::logging_internal::severity).stream()
// A message of a severity chosen at run time (a LogSeverity value).
#define GJ_LOG_AT(severity) ::graphjit::logging_internal::LogMessage(severity).stream()
// Whether verbose messages of `level` are written.
#define GJ_VLOG_IS_ON(level) (::graphjit::VerboseLevel() >= (level))
// A verbose message: written (as INFO) only at --v=level and above; the stream's operands
// are not evaluated below it.
#define GJ_VLOG(level) !GJ_VLOG_IS_ON(level) ? (void)0 : ::graphjit::logging_internal::Voidify() & GJ_LOG(INFO)
