// Session configuration, mirroring TensorFlow's ConfigProto.
#pragma once

#include <string>

#include "ir/proto/config.pb.h"
#include "ir/status.h"

namespace graphjit {

enum class JitLevel { kDefault = 0, kOff = -1, kOn1 = 1, kOn2 = 2 };

const char* JitLevelName(JitLevel level);
// "off", "on" (= ON_1), "on_1", "on_2", "default".
bool ParseJitLevel(const std::string& text, JitLevel* out);

struct SessionOptions {
  int intra_op_threads = 0;  // 0: one per core
  int inter_op_threads = 0;  // 0: one per core
  JitLevel jit_level = JitLevel::kDefault;
  bool cpu_global_jit = false;
  tensorflow::RewriterConfig rewrite_options;

  static SessionOptions FromConfigProto(const tensorflow::ConfigProto& config);
  // Reads a text-format ConfigProto.
  static StatusOr<SessionOptions> FromConfigFile(const std::string& path);
  tensorflow::ConfigProto ToConfigProto() const;
};

// Applies GRAPHJIT_FLAGS-style flags ("--jit_level=on_2 ..."), as TF_XLA_FLAGS does for
// TensorFlow. Unknown flags are an error, so a typo does not go unnoticed.
Status ApplyFlags(const std::string& flags, SessionOptions* options);

}  // namespace graphjit
