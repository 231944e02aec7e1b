#include "cuda_emulator/ptxas.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <unordered_map>

namespace cuemu {

std::string FindPtxas() {
  if (const char* env = std::getenv("CUEMU_PTXAS")) {
    std::string v = env;
    return v == "off" ? "" : v;
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      std::string candidate = (dir.empty() ? "." : dir) + "/ptxas";
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return "/usr/local/cuda/bin/ptxas";
  return "";
}

namespace {

void ParseResources(const std::string& log, PtxasResult* result) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream lines(log);
  std::string line, current;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, entry) || std::regex_search(line, m, props)) {
      current = m[1];
    } else if (!current.empty() && std::regex_search(line, m, frame)) {
      KernelResources& k = result->kernels[current];
      k.stack_bytes = std::stoi(m[1]);
      k.spill_store_bytes = std::stoi(m[2]);
      k.spill_load_bytes = std::stoi(m[3]);
    }
    if (!current.empty() && std::regex_search(line, m, used)) {
      KernelResources& k = result->kernels[current];
      k.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) k.shared_bytes = std::stoi(m[1]);
    }
  }
}

}  // namespace

PtxasResult RunPtxas(const std::string& ptx, const std::string& arch) {
  static std::mutex mu;
  static std::unordered_map<std::string, PtxasResult> cache;
  const std::string key = arch + '\n' + ptx;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  PtxasResult result;
  const std::string ptxas = FindPtxas();
  if (ptxas.empty()) return result;
  char path[] = "/tmp/cuemu-XXXXXX.ptx";
  int fd = mkstemps(path, 4);
  if (fd < 0) return result;
  {
    std::ofstream out(path);
    out << ptx;
  }
  close(fd);
  std::string command = "'" + ptxas + "' -arch=" + arch + " -v -o /dev/null '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::remove(path);
    return result;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.log.append(buffer, n);
  int status = pclose(pipe);
  std::remove(path);
  result.ran = true;
  result.accepted = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // Messages name the temporary file: say "<module>" instead.
  for (size_t at; (at = result.log.find(path)) != std::string::npos;)
    result.log.replace(at, std::string(path).size(), "<module>");
  ParseResources(result.log, &result);
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = result;
  return result;
}

}  // namespace cuemu
