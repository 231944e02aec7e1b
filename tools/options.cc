#include "tools/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "jit/jit.h"
#include "passes/passes.h"

namespace graphjit {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "graphjit: %s\n", message.c_str());
  return code;
}

StatusOr<SessionOptions> LoadSessionOptions(const std::string& config, const std::string& jit) {
  SessionOptions options;
  if (!config.empty()) {
    GJ_ASSIGN_OR_RETURN(options, SessionOptions::FromConfigFile(config));
  }
  if (const char* env = std::getenv("GRAPHJIT_FLAGS")) GJ_RETURN_IF_ERROR(ApplyFlags(env, &options));
  GJ_RETURN_IF_ERROR(CheckPassNames(options.disabled_passes));
  if (Status s = CheckJitTarget(options); !s.ok()) return InvalidArgument("GRAPHJIT_FLAGS: " + s.message());
  if (!jit.empty()) ParseJitLevel(jit, &options.jit_level);
  return options;
}

Status CheckPassNames(const std::vector<std::string>& names) {
  const std::vector<std::string> known = DefaultPipeline(SessionOptions()).names();
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return InvalidArgument("no graph pass named '" + name + "' (the passes are: " + list + ")");
  }
  return Status::Ok();
}

std::string CheckDevice(const std::string& value) {
  auto device = ParseDevice(value);
  return device.ok() ? "" : device.status().message();
}

void SetDevice(const std::string& value, SessionOptions* options) {
  const Device device = ParseDevice(value).value();  // checked by the parser
  options->device = device.kind;
  options->gpu_index = device.index;
}

}  // namespace graphjit
