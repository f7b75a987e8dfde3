#pragma once
// A value or an error, returned across module boundaries instead of thrown (as absl::StatusOr or
// std::expected). The convention of the layers:
//
//   - an API call returns kube::Result<T> = Result<T, kube::Error> (kube/errors.h): the error keeps
//     the reason (404, 409, 410, ...) until the caller that decides what to do about it;
//   - anything else that can fail for a reason the environment causes (a bind address in use, a
//     certificate folder that cannot be read, a failing health check) returns
//     Result<void, std::string> or Result<T, std::string>: a sentence a person can act on.
//
// Construction is implicit from the value and from the error, so `return value;` and
// `return error;` both work. `return base::fail(what);` makes the error from anything E can be
// made of (a string literal for std::string), and says which when T and E are the same type.
//
// Access to the wrong alternative is a programmer error and throws std::bad_variant_access (or
// std::bad_optional_access for Result<void, E>), which is loud on purpose.
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace myop::base {

// An error on its way into a Result: `return base::fail("why");`.
template <typename E>
struct Failure {
  E error;
};

template <typename E>
Failure<std::decay_t<E>> fail(E&& error) {
  return {std::forward<E>(error)};
}

template <typename T, typename E>
class [[nodiscard]] Result {
 public:
  Result(T value) : content_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  // Not when T is E: `return fail(error);` then.
  template <typename Error = E, typename = std::enable_if_t<!std::is_same_v<T, Error>>>
  Result(E error) : content_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit by design
  template <typename F, typename = std::enable_if_t<std::is_constructible_v<E, F&&>>>
  Result(Failure<F> failure) : content_(std::in_place_index<1>, std::move(failure.error)) {}  // NOLINT

  bool ok() const { return content_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(content_); }
  const T& value() const& { return std::get<0>(content_); }
  T&& value() && { return std::get<0>(std::move(content_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const E& error() const& { return std::get<1>(content_); }
  E&& error() && { return std::get<1>(std::move(content_)); }

 private:
  std::variant<T, E> content_;
};

// Success carries nothing: `return {};`.
template <typename E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  template <typename F, typename = std::enable_if_t<std::is_constructible_v<E, F&&>>>
  Result(Failure<F> failure) : error_(std::move(failure.error)) {}  // NOLINT: implicit by design

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const E& error() const& { return error_.value(); }
  E&& error() && { return std::move(error_).value(); }

 private:
  std::optional<E> error_;
};

}  // namespace myop::base
