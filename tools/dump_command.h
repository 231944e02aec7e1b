// `graphjit dump`: runs a model once with the JIT on and writes what it compiled, per
// cluster: the specialized body, the fusion plan, the MLIR, the LLVM IR and the asm.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "tools/inputs.h"

namespace graphjit {

struct DumpArgs {
  std::string model;
  InputArgs inputs;
  std::string to;
  std::string config;
  std::string jit = "on";
  std::string device;    // cpu, gpu, gpu-emu
  std::string gpu_arch;  // sm_80, sm_90
};

void AddDumpCommand(CLI::App& app, DumpArgs* args);
int DumpCommand(const DumpArgs& args);

}  // namespace graphjit
