#pragma once
// The arithmetic of sharding: which slot a namespace falls in, the API server's shard selector for a
// set of slots, and which live member owns which slot. Pure functions; docs/sharding.md has the
// protocol that uses them (runtime/sharding/shard_coordinator.h).
//
// - The hash is the API server's: 64-bit FNV-1a of the field's value (KEP-5866, ShardedListAndWatch),
//   so a slot asked for with `shardSelector` and a slot filtered on the client hold the same objects.
// - The 64-bit space is cut into kShardSlots equal slots; slot i is [i * 2^64/S, (i+1) * 2^64/S).
//   The count is part of the protocol (every replica must cut alike), so it is a constant.
// - assign_slots() is rendezvous hashing with bounded loads: every (member, slot) pair gets a score,
//   pairs are taken best first, and a member takes slots until it has its share (S/n, rounded up for
//   the first S mod n members in score order). Every replica computes the same table from the same
//   live set; a member joining or leaving moves few slots besides its own share
//   (test/unit/runtime/sharding/shard_ring_test.cpp measures how few).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace myop::runtime {

inline constexpr int kShardSlots = 16;
// The field the API server hashes: the namespace keeps a MyResource, its Deployments and its
// tenant's fair share in one replica.
inline constexpr std::string_view kShardField = "object.metadata.namespace";

// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211).
std::uint64_t fnv1a64(std::string_view text);

// The slot of a hashed value, in [0, slot_count). slot_count is a power of two.
int shard_slot(std::string_view value, int slot_count = kShardSlots);

// The hash range of a slot, [start, end); end is 2^64 for the last slot, so it is written as text.
std::uint64_t shard_slot_start(int slot, int slot_count = kShardSlots);
// "0x" and 16 hex digits, or "0x10000000000000000" for the end of the space.
std::string shard_bound_text(int slot_boundary, int slot_count = kShardSlots);

// The shardSelector asking for `slots` (any order, no duplicates): adjacent slots are merged into one
// shardRange, ranges are joined with "||". Empty when `slots` is empty.
std::string shard_selector(std::vector<int> slots, int slot_count = kShardSlots,
                           std::string_view field = kShardField);

// Owner of every slot (index = slot) among `members`; all "" when there are none. Order and duplicates
// in `members` do not matter.
std::vector<std::string> assign_slots(std::vector<std::string> members, int slot_count = kShardSlots);

// The slots `member` owns in `assignment`, ascending.
std::vector<int> slots_of(const std::vector<std::string>& assignment, std::string_view member);

}  // namespace myop::runtime
