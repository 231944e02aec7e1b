#include "runtime/trace.h"

#include <atomic>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

namespace graphjit {

int64_t Tracer::NowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - origin_).count();
}

void Tracer::Add(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(event));
}

std::vector<TraceEvent> Tracer::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

Status Tracer::WriteChromeTrace(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  std::set<int> rows;
  for (const TraceEvent& e : this->events()) {
    rows.insert(e.tid);
    nlohmann::json args = {{"op", e.op}, {"bytes", e.bytes}};
    if (!e.host_memory.empty()) args["host_memory"] = e.host_memory;
    events.push_back({{"name", e.name},
                      {"cat", "kernel"},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.duration_us},
                      {"pid", 0},
                      {"tid", e.tid},
                      {"args", args}});
  }
  for (int row : rows)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", row},
                      {"args", {{"name", row == kGpuStreamRow ? "GPU stream" : "host thread " + std::to_string(row)}}}});
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  std::ofstream out(path, std::ios::trunc);
  out << doc.dump(1) << "\n";
  out.close();
  if (!out) return InvalidArgument("cannot write trace file '" + path + "'");
  return Status::Ok();
}

int CurrentThreadId() {
  static std::atomic<int> next{0};
  thread_local int id = next.fetch_add(1);
  return id;
}

}  // namespace graphjit
