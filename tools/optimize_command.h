// `graphjit optimize`: run the graph optimizations offline and write the result.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace graphjit {

struct OptimizeArgs {
  std::string model;
  std::string output;
  std::vector<std::string> fetches;
  std::string disable;  // A,B
  std::string config;
  std::string dump_to;
  std::vector<std::string> passes;  // --pass: these only, in order
  bool split = false;               // --split-input-file
  bool verify = false;
  // specialize_inputs: the body inputs' values (_arg_i=FILE.npy) or shapes (_arg_i=d0,d1,...).
  std::vector<std::string> feeds, shapes;
};

void AddOptimizeCommand(CLI::App& app, OptimizeArgs* args);
// Returns the process exit status: 0 ok, 2 bad input.
int OptimizeCommand(const OptimizeArgs& args);

}  // namespace graphjit
