// Status and StatusOr: how every fallible function in graphjit reports failure.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace graphjit {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // the model, a file or a flag is wrong (bad GraphDef, bad attr, bad .npy)
  kNotFound,            // a named file, node or tensor does not exist
  kUnimplemented,       // valid TensorFlow, but not supported by graphjit (unknown op, dtype)
  kFailedPrecondition,  // a run-time problem with the data: missing feed, shape mismatch
  kResourceExhausted,   // an allocation that cannot be satisfied
  kInternal,            // a bug in graphjit
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Returns a copy whose message starts with `prefix: `.
  Status WithContext(const std::string& prefix) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(Code::kUnimplemented, std::move(m)); }
inline Status FailedPrecondition(std::string m) { return Status(Code::kFailedPrecondition, std::move(m)); }
inline Status ResourceExhausted(std::string m) { return Status(Code::kResourceExhausted, std::move(m)); }
inline Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

#define GJ_CONCAT_INNER(a, b) a##b
#define GJ_CONCAT(a, b) GJ_CONCAT_INNER(a, b)

#define GJ_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::graphjit::Status gj_status_ = (expr);  \
    if (!gj_status_.ok()) return gj_status_; \
  } while (0)

#define GJ_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define GJ_ASSIGN_OR_RETURN(lhs, expr) GJ_ASSIGN_OR_RETURN_IMPL(GJ_CONCAT(gj_statusor_, __LINE__), lhs, expr)

}  // namespace graphjit
