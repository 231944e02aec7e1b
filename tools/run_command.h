// `graphjit run`: load a model, feed it, run it, print and save what it fetched.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace graphjit {

struct RunArgs {
  std::string model;
  std::vector<std::string> feeds;   // NAME=FILE.npy
  std::vector<std::string> fetches;
  std::string out_dir;
  std::string config;
  std::string jit;
  int threads = 0;
  int repeat = 1;
  bool random_feeds = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  std::string trace;
  bool optimize = false;     // --optimize: graph optimizations on, whatever the config says
  bool no_optimize = false;  // --no-optimize: off
  bool stats = false;        // --stats: the JIT's counters as the last line of stdout
};

void AddRunCommand(CLI::App& app, RunArgs* args);
// Returns the process exit status: 0 ok, 1 run-time error, 2 bad input.
int RunCommand(const RunArgs& args);

}  // namespace graphjit
