// Run-time tracing: one complete event per kernel, written in the Chrome trace-event
// format that TensorFlow's timeline uses (chrome://tracing, Perfetto).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ir/status.h"

namespace graphjit {

struct TraceEvent {
  std::string name;  // node name
  std::string op;
  int64_t start_us = 0;  // since the tracer was created
  int64_t duration_us = 0;
  int tid = 0;                // the row: a host thread (CurrentThreadId) or kGpuStreamRow
  int64_t bytes = 0;          // read and written by a kernel, or copied; 0 for other events
  std::string host_memory{};  // a copy's host side: "pinned", "staged" or "pageable"
};

// The row of what ran on a GPU stream (kernels, library calls, copies), timed by the
// stream's events.
constexpr int kGpuStreamRow = 1000;

class Tracer {
 public:
  Tracer() : origin_(std::chrono::steady_clock::now()) {}
  int64_t NowMicros() const;
  void Add(TraceEvent event);
  std::vector<TraceEvent> events() const;
  // {"traceEvents": [{"name", "cat", "ph": "X", "ts", "dur", "pid", "tid", "args": {"op", "bytes", "host_memory" of a copy}},
  // ..., and per row its name: {"ph": "M", "name": "thread_name", "tid", "args": {"name"}}]}
  Status WriteChromeTrace(const std::string& path) const;

 private:
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;
};

// A small stable id for the calling thread (0, 1, 2, ... in order of first use).
int CurrentThreadId();

}  // namespace graphjit
