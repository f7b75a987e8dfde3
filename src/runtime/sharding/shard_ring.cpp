#include "runtime/sharding/shard_ring.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>
#include <tuple>

namespace myop::runtime {

namespace {

void check_slot_count(int slot_count) {
  if (slot_count < 1 || slot_count > (1 << 16) || !std::has_single_bit(static_cast<unsigned>(slot_count))) {
    throw std::invalid_argument("shard slot count must be a power of two between 1 and 65536, not " +
                                std::to_string(slot_count));
  }
}

int slot_bits(int slot_count) { return std::countr_zero(static_cast<unsigned>(slot_count)); }

// splitmix64's finalizer: FNV-1a alone spreads short, similar texts poorly in the high bits.
std::uint64_t mix(std::uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ULL;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebULL;
  value ^= value >> 31;
  return value;
}

std::uint64_t pair_score(std::uint64_t member_hash, int slot) {
  return mix(member_hash ^ mix(static_cast<std::uint64_t>(slot) + 0x9e3779b97f4a7c15ULL));
}

}  // namespace

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  }
  return hash;
}

int shard_slot(std::string_view value, int slot_count) {
  check_slot_count(slot_count);
  const int bits = slot_bits(slot_count);
  return bits == 0 ? 0 : static_cast<int>(fnv1a64(value) >> (64 - bits));
}

std::uint64_t shard_slot_start(int slot, int slot_count) {
  check_slot_count(slot_count);
  if (slot < 0 || slot >= slot_count) throw std::out_of_range("shard slot " + std::to_string(slot));
  const int bits = slot_bits(slot_count);
  return bits == 0 ? 0 : static_cast<std::uint64_t>(slot) << (64 - bits);
}

std::string shard_bound_text(int slot_boundary, int slot_count) {
  check_slot_count(slot_count);
  if (slot_boundary == slot_count) return "0x10000000000000000";
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx",
                static_cast<unsigned long long>(shard_slot_start(slot_boundary, slot_count)));
  return text;
}

std::string shard_selector(std::vector<int> slots, int slot_count, std::string_view field) {
  check_slot_count(slot_count);
  std::sort(slots.begin(), slots.end());
  std::string selector;
  for (std::size_t i = 0; i < slots.size();) {
    std::size_t j = i + 1;
    while (j < slots.size() && slots[j] == slots[j - 1] + 1) ++j;
    if (!selector.empty()) selector += "||";
    selector += "shardRange(";
    selector += field;
    selector += ", '" + shard_bound_text(slots[i], slot_count) + "', '" +
                shard_bound_text(slots[j - 1] + 1, slot_count) + "')";
    i = j;
  }
  return selector;
}

std::vector<std::string> assign_slots(std::vector<std::string> members, int slot_count) {
  check_slot_count(slot_count);
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  std::vector<std::string> owners(static_cast<std::size_t>(slot_count));
  if (members.empty()) return owners;

  std::vector<std::uint64_t> member_hashes;
  member_hashes.reserve(members.size());
  for (const auto& member : members) member_hashes.push_back(mix(fnv1a64(member)));

  // Shares: slot_count / n each, one more for the first slot_count % n members by their own hash.
  const auto count = members.size();
  std::vector<std::size_t> by_hash(count);
  for (std::size_t i = 0; i < count; ++i) by_hash[i] = i;
  std::sort(by_hash.begin(), by_hash.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(member_hashes[a], members[a]) > std::tie(member_hashes[b], members[b]);
  });
  std::vector<std::size_t> share(count, static_cast<std::size_t>(slot_count) / count);
  for (std::size_t rank = 0; rank < static_cast<std::size_t>(slot_count) % count; ++rank)
    ++share[by_hash[rank]];

  struct Pair {
    std::uint64_t score;
    std::size_t member;
    int slot;
  };
  std::vector<Pair> pairs;
  pairs.reserve(count * static_cast<std::size_t>(slot_count));
  for (std::size_t member = 0; member < count; ++member) {
    for (int slot = 0; slot < slot_count; ++slot)
      pairs.push_back({pair_score(member_hashes[member], slot), member, slot});
  }
  // Best score first; ties (practically never) by name, then slot, so every replica breaks them alike.
  std::sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.member != b.member) return members[a.member] < members[b.member];
    return a.slot < b.slot;
  });
  std::vector<std::size_t> taken(count, 0);
  int left = slot_count;
  for (const auto& pair : pairs) {
    auto& owner = owners[static_cast<std::size_t>(pair.slot)];
    if (!owner.empty() || taken[pair.member] == share[pair.member]) continue;
    owner = members[pair.member];
    ++taken[pair.member];
    if (--left == 0) break;
  }
  return owners;
}

std::vector<int> slots_of(const std::vector<std::string>& assignment, std::string_view member) {
  std::vector<int> slots;
  for (std::size_t slot = 0; slot < assignment.size(); ++slot) {
    if (assignment[slot] == member) slots.push_back(static_cast<int>(slot));
  }
  return slots;
}

}  // namespace myop::runtime
