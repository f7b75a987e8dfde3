#pragma once
// Gives the heap's free pages back to the kernel after a storm.
//
// glibc's malloc returns memory to the kernel only from the top of each arena's heap; what a storm
// frees below the top (the parsed objects of a create storm, the events of a rollout, a relist's
// second copy of the state) stays resident, free but counted in RSS, until something trims it. A
// process that peaked once then keeps its peak. malloc_trim(0) (glibc 2.8 and later) releases every
// free page of every arena (MADV_DONTNEED), not only the top.
//
// The trimmer looks at the allocator every `period`: when the free bytes of the arenas grew by
// `min_growth` or more since the last trim (a storm freed that much), it trims. Free bytes stay free
// after a trim (the chunks are still malloc's, their pages gone), so the comparison is against the
// lowest value seen since the last trim (zero before the first): memory reused and freed again is
// resident again and counts. A steady process checks (microseconds with two arenas) and does not trim.
//
// Metrics, `metrics_prefix` + : `_trims_total` (counter), `_trim_released_bytes_total` (counter: RSS
// before minus after each trim), `_free_bytes` (gauge: the arenas' free bytes at the last check).
// Tests: test/unit/runtime/manager/heap_trimmer_test.cpp.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "runtime/clock.h"
#include "runtime/manager/periodic_runner.h"

namespace prometheus {
class Counter;
class Gauge;
class Registry;
}  // namespace prometheus

namespace myop::runtime {

// What the trimmer asks of the allocator; tests give a fake one.
class Heap {
 public:
  virtual ~Heap() = default;
  // Bytes held by the allocator and free (mallinfo2's fordblks: free chunks and arena tops).
  virtual std::size_t free_bytes() = 0;
  // The process's resident set in bytes (0 when unknown).
  virtual std::size_t resident_bytes() = 0;
  virtual void trim() = 0;
};

// glibc's malloc (mallinfo2, malloc_trim) and /proc/self/statm.
std::shared_ptr<Heap> process_heap();

struct HeapTrimmerOptions {
  // 0: no trimmer (make_heap_trimmer returns null).
  Duration period = std::chrono::seconds(10);
  std::size_t min_growth = std::size_t{4} << 20U;
  std::shared_ptr<Heap> heap;  // null: process_heap()
  std::shared_ptr<prometheus::Registry> registry;
  std::string metrics_prefix = "heap";
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

class HeapTrimmer {
 public:
  explicit HeapTrimmer(HeapTrimmerOptions options);

  // One look: trims when the free bytes grew by min_growth since the last trim; true when it did.
  bool check();
  std::size_t trims() const { return trims_; }

 private:
  HeapTrimmerOptions options_;
  std::size_t lowest_free_ = 0;  // the lowest free bytes seen since the last trim
  std::size_t trims_ = 0;
  prometheus::Counter* trims_total_ = nullptr;
  prometheus::Counter* released_total_ = nullptr;
  prometheus::Gauge* free_gauge_ = nullptr;
};

// A runnable (every replica, leader or not) that calls check() every period; null when period is 0.
std::shared_ptr<PeriodicRunner> make_heap_trimmer(HeapTrimmerOptions options);

}  // namespace myop::runtime
