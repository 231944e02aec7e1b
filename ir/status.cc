#include "ir/status.h"

namespace graphjit {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kUnimplemented: return "UNIMPLEMENTED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

}  // namespace graphjit
