// `graphjit clusters`: what clustering does to a model, and why.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace graphjit {

struct ClustersArgs {
  std::string model;
  std::string jit = "on";
  std::string config;
  std::string dot, json;
  bool no_optimize = false;
  bool list_ops = false;
};

void AddClustersCommand(CLI::App& app, ClustersArgs* args);
int ClustersCommand(const ClustersArgs& args);

}  // namespace graphjit
