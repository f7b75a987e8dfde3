// The heap trimmer: when it trims (a fake heap), on its period (the fake clock), and what a trim of
// glibc's heap gives back (the real allocator, in the plain build only: the sanitizers bring their
// own allocators, which glibc's mallinfo2 and malloc_trim do not see).
#include "runtime/manager/heap_trimmer.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <prometheus/registry.h>

#include "support/eventually.h"
#include "support/fake_clock.h"
#include "support/metrics_reader.h"

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;
using myop::runtime::testing::metric_value;
using myop::testing::FakeClock;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20U;

// Free bytes set by the test; a trim gives back every free byte not given back yet.
class FakeHeap final : public Heap {
 public:
  std::size_t free_bytes() override { return free_.load(); }
  std::size_t resident_bytes() override { return resident_.load(); }
  void trim() override {
    ++trims_;
    resident_ -= free_.load() - released_;
    released_ = free_.load();
  }
  // The process freed memory.
  void freed(std::size_t bytes) { free_ += bytes; }
  // Reused pages are resident again.
  void reused(std::size_t bytes) {
    free_ -= bytes;
    released_ = released_ > bytes ? released_ - bytes : 0;
  }
  int trims() const { return trims_.load(); }

 private:
  std::atomic<std::size_t> free_{0};
  std::atomic<std::size_t> resident_{100 * kMiB};
  std::size_t released_ = 0;
  std::atomic<int> trims_{0};
};

}  // namespace

TEST_CASE("heap trimmer: trims when the free bytes grew by the threshold since the last trim",
          "[runtime][heap]") {
  auto heap = std::make_shared<FakeHeap>();
  auto registry = std::make_shared<prometheus::Registry>();
  HeapTrimmerOptions options;
  options.heap = heap;
  options.min_growth = 4 * kMiB;
  options.registry = registry;
  options.metrics_prefix = "test_heap";
  HeapTrimmer trimmer(options);

  heap->freed(3 * kMiB);
  CHECK_FALSE(trimmer.check());  // 3 MiB free: below the threshold
  CHECK(metric_value(*registry, "test_heap_free_bytes") == 3.0 * kMiB);
  heap->freed(2 * kMiB);
  CHECK(trimmer.check());  // 5 MiB freed since the start
  CHECK(heap->trims() == 1);
  CHECK(metric_value(*registry, "test_heap_trims_total") == 1.0);
  CHECK(metric_value(*registry, "test_heap_trim_released_bytes_total") == 5.0 * kMiB);

  // Free bytes stay free after a trim: no second trim for the same bytes.
  CHECK_FALSE(trimmer.check());
  CHECK_FALSE(trimmer.check());

  // 3 MiB reused and freed again, then 2 MiB more: 5 MiB resident and free again since the lowest.
  heap->reused(3 * kMiB);
  CHECK_FALSE(trimmer.check());
  heap->freed(3 * kMiB);
  CHECK_FALSE(trimmer.check());  // 3 MiB above the lowest (2 MiB)
  heap->freed(2 * kMiB);
  CHECK(trimmer.check());  // 5 MiB above it
  CHECK(heap->trims() == 2);
  CHECK(metric_value(*registry, "test_heap_trim_released_bytes_total") == 10.0 * kMiB);
}

TEST_CASE("heap trimmer: looks every period on its own thread; period 0 is no trimmer", "[runtime][heap]") {
  HeapTrimmerOptions off;
  off.period = 0s;
  CHECK(make_heap_trimmer(off) == nullptr);

  auto clock = std::make_shared<FakeClock>();
  auto heap = std::make_shared<FakeHeap>();
  HeapTrimmerOptions options;
  options.heap = heap;
  options.clock = clock;
  options.period = 10s;
  options.min_growth = kMiB;
  auto runner = make_heap_trimmer(options);
  REQUIRE(runner != nullptr);
  CHECK_FALSE(runner->needs_leader_election());
  const auto start = clock->now();
  heap->freed(2 * kMiB);
  runner->start();
  REQUIRE(clock->await_deadline(start + 10s));
  CHECK(heap->trims() == 0);
  clock->advance(10s);
  REQUIRE(myop::testing::eventually([&] { return heap->trims() == 1; }));
  REQUIRE(clock->await_deadline(start + 20s));
  heap->freed(2 * kMiB);
  clock->advance(10s);
  REQUIRE(myop::testing::eventually([&] { return heap->trims() == 2; }));
  runner->stop();
}

// ASan and TSan replace malloc: glibc's arenas, which this test looks at, are not the ones in use.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MYOP_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MYOP_SANITIZER_ALLOCATOR 1
#endif
#endif

#ifndef MYOP_SANITIZER_ALLOCATOR
TEST_CASE("heap trimmer: a trim of glibc's heap gives back pages freed below the top", "[runtime][heap]") {
  auto heap = process_heap();
  // 32 MiB in blocks of 32 KiB (below the mmap threshold: from the arena), each touched; every fourth
  // stays, so the 96 KiB holes between them cannot merge into the arena's top, which is all free()
  // gives back.
  constexpr std::size_t kBlock = 32 * 1024;
  std::vector<char*> blocks;
  for (int block = 0; block < 1024; ++block) {
    auto* bytes = static_cast<char*>(std::malloc(kBlock));  // NOLINT(cppcoreguidelines-no-malloc)
    REQUIRE(bytes != nullptr);
    std::memset(bytes, 1, kBlock);
    blocks.push_back(bytes);
  }
  for (std::size_t block = 0; block < blocks.size(); ++block) {
    if (block % 4 != 3) std::free(blocks[block]);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  CHECK(heap->free_bytes() >= 24 * kMiB);
  const std::size_t before = heap->resident_bytes();
  heap->trim();
  const std::size_t after = heap->resident_bytes();
  for (std::size_t block = 3; block < blocks.size(); block += 4)
    std::free(blocks[block]);  // NOLINT(cppcoreguidelines-no-malloc)
  INFO("resident before " << before << " after " << after);
  CHECK(before >= after + 16 * kMiB);
}
#endif
