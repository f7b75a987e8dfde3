#include "runtime/sharding/shard_gate.h"

#include <stdexcept>
#include <string>

namespace myop::runtime {

ShardGate::ShardGate(int slot_count, const std::shared_ptr<const base::Clock>& clock)
    : clock_(clock ? clock : base::system_clock()), slots_(static_cast<std::size_t>(slot_count)) {
  if (slot_count < 1) throw std::invalid_argument("ShardGate needs at least one slot");
}

void ShardGate::extend_deadline(TimePoint deadline) {
  std::lock_guard lock(mutex_);
  if (deadline > deadline_) deadline_ = deadline;
}

bool ShardGate::may_write(std::string_view namespace_name) const {
  const int slot = shard_slot(namespace_name, slot_count());
  const TimePoint now = clock_->now();
  std::lock_guard lock(mutex_);
  return !closed_ && slots_[static_cast<std::size_t>(slot)].active && now < deadline_;
}

std::optional<ShardGate::Ticket> ShardGate::enter(std::string_view namespace_name) {
  return enter_slot(shard_slot(namespace_name, slot_count()));
}

std::optional<ShardGate::Ticket> ShardGate::enter_slot(int slot) {
  const TimePoint now = clock_->now();
  std::lock_guard lock(mutex_);
  auto& state = slots_.at(static_cast<std::size_t>(slot));
  if (closed_ || !state.active || now >= deadline_) return std::nullopt;
  ++state.in_flight;
  return Ticket(this, slot);
}

void ShardGate::leave(int slot) {
  {
    std::lock_guard lock(mutex_);
    --slots_[static_cast<std::size_t>(slot)].in_flight;
  }
  drained_.notify_all();
}

int ShardGate::slot_of(std::string_view namespace_name) const {
  return shard_slot(namespace_name, slot_count());
}

void ShardGate::activate(int slot) {
  std::lock_guard lock(mutex_);
  if (!closed_) slots_.at(static_cast<std::size_t>(slot)).active = true;
}

bool ShardGate::deactivate(int slot, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  auto& state = slots_.at(static_cast<std::size_t>(slot));
  state.active = false;
  return drained_.wait(lock, stop, [&state] { return state.in_flight == 0; });
}

void ShardGate::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (auto& state : slots_) state.active = false;
}

bool ShardGate::active(int slot) const {
  std::lock_guard lock(mutex_);
  return !closed_ && slots_.at(static_cast<std::size_t>(slot)).active;
}

std::vector<int> ShardGate::active_slots() const {
  std::lock_guard lock(mutex_);
  std::vector<int> active;
  if (closed_) return active;
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    if (slots_[slot].active) active.push_back(static_cast<int>(slot));
  }
  return active;
}

int ShardGate::in_flight(int slot) const {
  std::lock_guard lock(mutex_);
  return slots_.at(static_cast<std::size_t>(slot)).in_flight;
}

}  // namespace myop::runtime
