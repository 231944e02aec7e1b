// `graphjit aot`: compiles a graph ahead of time, as tfcompile does, into DIR/<Class>.o (its
// kernels and constants) and DIR/<Class>.h (a class with typed argument and result
// accessors and Run()), which need only graphjit's small AOT runtime (aot/) at run time.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace graphjit {

struct AotArgs {
  std::string model;
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  std::vector<std::string> fetches;
  std::string out;
  std::string class_name = "Model";
  std::string cpu, features;
};

void AddAotCommand(CLI::App& app, AotArgs* args);
int AotCommand(const AotArgs& args);

}  // namespace graphjit
