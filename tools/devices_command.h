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

// For `run` and `bench`: opens the CUDA driver of options.device, if it is a GPU, and
// says on stderr which device that is. An error if the driver cannot be opened.
Status OpenSessionDevice(const SessionOptions& options);

}  // namespace graphjit
