#pragma once

/// \file heap_optional.h
/// \brief An optional value kept on the heap, for struct fields that are nearly always
/// unset: empty, it takes the size of a pointer instead of the value's.

#include <memory>
#include <optional>
#include <utility>

namespace ampdelta {

/// \brief std::optional's interface over a heap allocation. A snapshot holds one `add`
/// per file, a million of them for a large table; its rarely set fields (deletion
/// vector, tags) would otherwise make up a third of each. Copies are deep. Thread-
/// compatible.
template <typename T>
class HeapOptional {
 public:
  using value_type = T;

  HeapOptional() = default;
  HeapOptional(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): as optional
  HeapOptional(const T& value)     // NOLINT(google-explicit-constructor)
      : value_(std::make_unique<T>(value)) {}
  HeapOptional(T&& value)  // NOLINT(google-explicit-constructor)
      : value_(std::make_unique<T>(std::move(value))) {}
  HeapOptional(const std::optional<T>& value)  // NOLINT(google-explicit-constructor)
      : value_(value ? std::make_unique<T>(*value) : nullptr) {}
  HeapOptional(std::optional<T>&& value)  // NOLINT(google-explicit-constructor)
      : value_(value ? std::make_unique<T>(std::move(*value)) : nullptr) {}
  HeapOptional(const HeapOptional& other)
      : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  ~HeapOptional() = default;

  HeapOptional& operator=(const HeapOptional& other) {
    if (this != &other)
      value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(std::nullopt_t) {
    value_.reset();
    return *this;
  }
  HeapOptional& operator=(const T& value) {
    value_ = std::make_unique<T>(value);
    return *this;
  }
  HeapOptional& operator=(T&& value) {
    value_ = std::make_unique<T>(std::move(value));
    return *this;
  }
  HeapOptional& operator=(const std::optional<T>& value) {
    value_ = value ? std::make_unique<T>(*value) : nullptr;
    return *this;
  }

  template <typename... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *value_;
  }
  void reset() { value_.reset(); }

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return value_ != nullptr; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }
  /// \brief Return the value; it must be set (unlike std::optional, nothing is thrown).
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  template <typename U>
  T value_or(U&& fallback) const {
    return value_ ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }
  /// \brief Return a std::optional copy.
  operator std::optional<T>() const {  // NOLINT(google-explicit-constructor)
    return value_ ? std::optional<T>(*value_) : std::nullopt;
  }

  friend bool operator==(const HeapOptional& a, const HeapOptional& b) {
    if (!a.value_ || !b.value_) return !a.value_ && !b.value_;
    return *a.value_ == *b.value_;
  }
  friend bool operator==(const HeapOptional& a, std::nullopt_t) { return !a.value_; }
  friend bool operator==(const HeapOptional& a, const T& b) {
    return a.value_ && *a.value_ == b;
  }
  friend bool operator==(const HeapOptional& a, const std::optional<T>& b) {
    if (!a.value_ || !b) return !a.value_ && !b;
    return *a.value_ == *b;
  }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace ampdelta
