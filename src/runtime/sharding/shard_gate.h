#pragma once
// Which shard slots this replica may write in now, and what is writing in them.
//
// Every piece of work that may write an object (a reconcile, an orphan deletion) takes a ticket for
// the object's namespace first, and holds it until it has finished writing. A ticket is refused
// unless the namespace's slot is active. deactivate() makes the slot refuse new tickets and waits
// until the tickets taken before have been given back: after it returns, nothing of this replica
// writes in that slot, so its lease may be handed to another replica (runtime/sharding/shard_coordinator.h).
// enter() and deactivate() decide under one lock, so no ticket slips in between the two.
//
// Writes need more than a ticket taken once: a process paused (SIGSTOP, a stalled VM) past its
// membership deadline may wake in the middle of a reconcile. The coordinator moves the gate's write
// deadline forward after every renewal of its membership; may_write() and enter() refuse after it, on
// the gate's clock, and the cached writer asks may_write() before every request.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "runtime/clock.h"
#include "runtime/sharding/shard_ring.h"

namespace myop::runtime {

class ShardGate {
 public:
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)), slot_(other.slot_) {}
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() {
      if (gate_) gate_->leave(slot_);
    }
    int slot() const { return slot_; }

   private:
    friend class ShardGate;
    Ticket(ShardGate* gate, int slot) : gate_(gate), slot_(slot) {}
    ShardGate* gate_;
    int slot_;
  };

  explicit ShardGate(int slot_count = kShardSlots,
                     const std::shared_ptr<const base::Clock>& clock = base::system_clock());

  // A ticket for writing objects of `namespace_name`; nullopt when its slot is not active here.
  std::optional<Ticket> enter(std::string_view namespace_name);
  // A ticket of `slot` itself, for work that belongs to one replica rather than to a namespace (the
  // storage migration, runtime/migration/storage_migration.h, is the work of slot 0's owner).
  std::optional<Ticket> enter_slot(int slot);

  // Writes are allowed until `deadline` (none before the first call).
  void extend_deadline(TimePoint deadline);
  // Whether a write of an object of `namespace_name` may be sent now: its slot active, the deadline
  // not passed.
  bool may_write(std::string_view namespace_name) const;

  void activate(int slot);
  // Refuses new tickets for `slot`, then waits until every ticket of it is back. Returns false if
  // `stop` came first (the slot stays refused; tickets still out finish on their own).
  bool deactivate(int slot, std::stop_token stop = {});
  // Refuses every ticket at once, waiting for nothing (membership lost: stop writing now).
  void close();

  // The slot of a namespace, or of any other unit of work named the same way (a fleet member,
  // runtime/fleet/fleet.h).
  int slot_of(std::string_view namespace_name) const;
  bool active(int slot) const;
  std::vector<int> active_slots() const;
  int in_flight(int slot) const;
  int slot_count() const { return static_cast<int>(slots_.size()); }

 private:
  struct Slot {
    bool active = false;
    int in_flight = 0;
  };
  void leave(int slot);

  std::shared_ptr<const base::Clock> clock_;
  mutable std::mutex mutex_;
  std::condition_variable_any drained_;
  TimePoint deadline_{};
  std::vector<Slot> slots_;
  bool closed_ = false;
};

}  // namespace myop::runtime
