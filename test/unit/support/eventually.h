#pragma once
// Waits for a condition that another thread makes true, polling every millisecond. The limit only
// turns a hang into a failure; it is not a timing assertion.
#include <chrono>
#include <thread>

namespace myop::testing {

template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace myop::testing
