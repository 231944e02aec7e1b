// What every subcommand shares: session options from the usual places, and failing
// with one line on stderr.
#pragma once

#include <string>
#include <vector>

#include "runtime/session_options.h"

namespace graphjit {

constexpr int kExitRunError = 1;
constexpr int kExitBadInput = 2;

// Prints "graphjit: MESSAGE" on stderr and returns `code`.
int Fail(int code, const std::string& message);

// Session options with graphjit's precedence: `config` (a text ConfigProto, if given),
// then GRAPHJIT_FLAGS, then `jit` (the command line's --jit, if given).
// Fails on names that are not graph passes (GRAPHJIT_FLAGS' --disable_pass).
StatusOr<SessionOptions> LoadSessionOptions(const std::string& config, const std::string& jit);

// InvalidArgument, listing the passes, if a name is not one of the graph passes.
Status CheckPassNames(const std::vector<std::string>& names);

// --device's values: cpu, gpu, gpu-emu, gpu:N, gpu-emu:N (the driver's GPU N).
std::string CheckDevice(const std::string& value);  // "" if valid, else why not (for CLI11's check)
// Sets the session's device (and GPU number) from a --device value CheckDevice accepted.
void SetDevice(const std::string& value, SessionOptions* options);

}  // namespace graphjit
