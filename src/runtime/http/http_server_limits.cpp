#include "runtime/http/http_server_limits.h"

#include <utility>

namespace myop::runtime {

std::string_view rejection_label(Rejection rejection) {
  switch (rejection) {
    case Rejection::ConnectionLimit:
      return "connection_limit";
    case Rejection::ClientConnectionLimit:
      return "client_connection_limit";
    case Rejection::BufferBudget:
      return "buffer_budget";
    case Rejection::BodyTooLarge:
      return "body_too_large";
    case Rejection::HeaderTooLarge:
      return "header_too_large";
    case Rejection::Deadline:
      return "deadline";
  }
  return "unknown";
}

BodyPlan plan_body(std::optional<std::uint64_t> content_length, bool chunked, std::size_t limit) {
  if (content_length) {
    if (*content_length > limit) return {.too_large = true};
    return {.reserve = static_cast<std::size_t>(*content_length)};
  }
  if (chunked) return {.reserve = limit};
  return {};  // no body
}

RequestBudget::Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

RequestBudget::Reservation& RequestBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void RequestBudget::Reservation::release() {
  if (budget_ != nullptr && bytes_ != 0) budget_->give_back(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

std::optional<RequestBudget::Reservation> RequestBudget::reserve(std::size_t bytes) {
  if (bytes == 0) return Reservation();
  std::lock_guard lock(mutex_);
  if (bytes > capacity_ - in_use_) return std::nullopt;
  in_use_ += bytes;
  return Reservation(this, bytes);
}

std::size_t RequestBudget::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void RequestBudget::give_back(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  in_use_ -= bytes;
}

}  // namespace myop::runtime
