// Status and StatusOr: the error type at library and API boundaries.
//
// Bad user input (a corrupt checkpoint, a malformed config, a bad request) becomes a Status with a
// message that names what was wrong and where; it never aborts the process. Broken internal
// invariants use CHECK (core/check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/check.h"

namespace deepinfer {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kDataLoss,
  kOutOfRange,
  kUnimplemented,
  kResourceExhausted,
  kInternal
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// The text of an errno value, e.g. "No such file or directory" for ENOENT.
std::string ErrnoMessage(int err);

// A value or an error. Accessing the value of an error is a CHECK failure.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    CHECK(!status_.ok()) << "StatusOr built from an OK status without a value";
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    CHECK(ok()) << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T&& value() && {
    CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace deepinfer

// Propagate an error Status from an expression returning Status.
#define DI_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::deepinfer::Status di_status_ = (expr); \
    if (!di_status_.ok()) return di_status_; \
  } while (0)

#define DI_CONCAT_INNER(a, b) a##b
#define DI_CONCAT(a, b) DI_CONCAT_INNER(a, b)
// DI_ASSIGN_OR_RETURN(auto x, Foo()): x = value of Foo(), or return its error.
#define DI_ASSIGN_OR_RETURN(lhs, expr) \
  DI_ASSIGN_OR_RETURN_IMPL(DI_CONCAT(di_or_, __LINE__), lhs, expr)
#define DI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
