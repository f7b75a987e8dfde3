#include "runtime/manager/heap_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace myop::runtime {

namespace {

class GlibcHeap final : public Heap {
 public:
  std::size_t free_bytes() override {
#if defined(__GLIBC__)
    return mallinfo2().fordblks;
#else
    return 0;  // another libc: nothing known, so no trim
#endif
  }

  std::size_t resident_bytes() override {
    // statm: size resident shared text lib data dt, in pages.
    std::ifstream statm("/proc/self/statm");
    std::size_t size = 0;
    std::size_t resident = 0;
    if (!(statm >> size >> resident)) return 0;
    return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  }

  void trim() override {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }
};

}  // namespace

std::shared_ptr<Heap> process_heap() { return std::make_shared<GlibcHeap>(); }

HeapTrimmer::HeapTrimmer(HeapTrimmerOptions options) : options_(std::move(options)) {
  if (!options_.heap) options_.heap = process_heap();
  if (options_.registry) {
    trims_total_ = &prometheus::BuildCounter()
                        .Name(options_.metrics_prefix + "_trims_total")
                        .Help(
                            "Times the heap's free pages were given back to the kernel (malloc_trim), after "
                            "its free bytes grew by the trimmer's threshold")
                        .Register(*options_.registry)
                        .Add({});
    released_total_ = &prometheus::BuildCounter()
                           .Name(options_.metrics_prefix + "_trim_released_bytes_total")
                           .Help("Resident bytes the trims gave back (RSS before minus after each trim)")
                           .Register(*options_.registry)
                           .Add({});
    free_gauge_ = &prometheus::BuildGauge()
                       .Name(options_.metrics_prefix + "_free_bytes")
                       .Help("Bytes malloc holds free (resident or not) at the trimmer's last look")
                       .Register(*options_.registry)
                       .Add({});
  }
}

bool HeapTrimmer::check() {
  const std::size_t free_now = options_.heap->free_bytes();
  if (free_gauge_ != nullptr) free_gauge_->Set(static_cast<double>(free_now));
  if (free_now < lowest_free_) lowest_free_ = free_now;
  if (free_now - lowest_free_ < options_.min_growth) return false;
  const std::size_t before = options_.heap->resident_bytes();
  options_.heap->trim();
  const std::size_t after = options_.heap->resident_bytes();
  lowest_free_ = free_now;
  ++trims_;
  if (trims_total_ != nullptr) trims_total_->Increment();
  if (released_total_ != nullptr && before > after)
    released_total_->Increment(static_cast<double>(before - after));
  return true;
}

std::shared_ptr<PeriodicRunner> make_heap_trimmer(HeapTrimmerOptions options) {
  if (options.period <= Duration::zero()) return nullptr;
  PeriodicRunnerOptions schedule;
  schedule.name = "heap trimmer";
  schedule.first_delay = options.period;
  schedule.period = options.period;
  schedule.clock = options.clock;
  auto trimmer = std::make_shared<HeapTrimmer>(std::move(options));
  return std::make_shared<PeriodicRunner>(schedule, [trimmer](const std::stop_token&) {
    trimmer->check();
    return StepResult::ok();
  });
}

}  // namespace myop::runtime
