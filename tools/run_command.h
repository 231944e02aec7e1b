// `graphjit run`: load a model, feed it, run it, print and save what it fetched.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/inputs.h"

namespace graphjit {

struct RunArgs {
  std::string model;
  InputArgs inputs;
  std::string out_dir;
  std::string config;
  std::string jit;
  int threads = 0;
  int repeat = 1;
  std::string trace;
  bool optimize = false;     // --optimize: graph optimizations on, whatever the config says
  bool no_optimize = false;  // --no-optimize: off
  bool stats = false;        // --stats: the JIT's counters as the last line of stdout
  std::string device;        // --device: cpu, gpu, gpu-emu (default: GRAPHJIT_FLAGS', else cpu)
};

void AddRunCommand(CLI::App& app, RunArgs* args);
// Returns the process exit status: 0 ok, 1 run-time error, 2 bad input.
int RunCommand(const RunArgs& args);

}  // namespace graphjit
