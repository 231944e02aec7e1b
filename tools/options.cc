#include "tools/options.h"

#include <cstdio>
#include <cstdlib>

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
  if (!jit.empty()) ParseJitLevel(jit, &options.jit_level);
  return options;
}

}  // namespace graphjit
