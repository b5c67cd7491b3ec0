// Errors as values, shared by the compiler and the generated code's runtime.
//
// Library code in zoc never exits and never throws across its API: a function that can fail
// returns Expected<T> (a value or an Error) or Status (nothing or an Error), and only `main`
// decides what to print and which exit code to use. This header is dependency-free C++17 so
// that the generated folders, which need only CUDA and cuDNN, can carry a copy of it.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace zoc {

// A failure with a message written for the user: it says what was wrong and where
// (file, layer, tensor name), in the user's terms.
struct Error {
  std::string message;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

// A value of type T or an Error. Check ok() before taking the value.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error, for operations that produce nothing.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  static Status success() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    assert(!ok());
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

}  // namespace zoc

// Propagates the error of a failed zoc::Status (or of a failed zoc::Expected<T>, whose value is
// then discarded) from the enclosing function.
#define ZOC_TRY(status_expr)                                   \
  do {                                                         \
    const auto& zoc_try_result_ = (status_expr);               \
    if (!zoc_try_result_.ok()) return zoc_try_result_.error(); \
  } while (0)

// `ZOC_ASSIGN_OR_RETURN(auto buffer, DeviceBuffer::allocate(n, "x"));` declares (or assigns)
// `lhs` from the value of a zoc::Expected<T>, or returns its error. Use once per line.
#define ZOC_ASSIGN_OR_RETURN(lhs, expected_expr) \
  ZOC_ASSIGN_OR_RETURN_IMPL_(ZOC_CONCAT_(zoc_expected_, __LINE__), lhs, expected_expr)
#define ZOC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expected_expr) \
  auto tmp = (expected_expr);                               \
  if (!tmp.ok()) return tmp.error();                        \
  lhs = std::move(tmp).value()
#define ZOC_CONCAT_(a, b) ZOC_CONCAT_IMPL_(a, b)
#define ZOC_CONCAT_IMPL_(a, b) a##b
