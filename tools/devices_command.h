// `graphjit devices`: the devices graphjit can compile for on this machine, and for a
// GPU device that cannot be used, why.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "runtime/session_options.h"

namespace graphjit {

struct DevicesArgs {
  std::string device;  // only this one (cpu, gpu, gpu-emu); empty: all
};

void AddDevicesCommand(CLI::App& app, DevicesArgs* args);
int DevicesCommand(const DevicesArgs& args);

// The CPU, in one line: its model name and hardware threads, the code the JIT makes for it
// (the session's --jit_cpu, --jit_cpu_features and --prefer_vector_width, else the host's)
// and what the reference kernels were compiled for. `graphjit devices` and `bench` print it.
std::string DescribeCpu(const SessionOptions& options);

// For `run` and `bench`: opens the CUDA driver of options.device, if it is a GPU, and
// says on stderr which device that is. An error if the driver cannot be opened.
Status OpenSessionDevice(const SessionOptions& options);

}  // namespace graphjit
