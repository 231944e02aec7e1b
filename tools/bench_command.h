// `graphjit bench`: times a model under several JIT configurations, interleaved, and
// puts each next to the streaming bandwidth measured in the same run.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "tools/inputs.h"

namespace graphjit {

struct BenchArgs {
  std::string model;
  InputArgs inputs;
  std::string config;
  std::string jit = "off,on";
  int iters = 50;
  std::string threads = "1";  // a list: "1,2" times every configuration at 1 and at 2 threads
  std::string json;
  std::string device;  // cpu, gpu, gpu-emu (default: GRAPHJIT_FLAGS', else cpu)
};

void AddBenchCommand(CLI::App& app, BenchArgs* args);
int BenchCommand(const BenchArgs& args);

}  // namespace graphjit
