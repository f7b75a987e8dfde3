#pragma once
// Finished spans -> a bounded queue -> one exporter thread that sends them in batches.
//
// Guarantees (test/unit/trace/batch_processor_test.cpp):
// - submit() never blocks on the exporter: it takes a mutex that the exporter thread holds only to
//   move spans in or out of the queue, never while it sends. A reconcile is never slowed by a slow
//   or absent collector.
// - The queue holds at most max_queue_size spans. A span submitted to a full queue is dropped and
//   counted (myoperator_trace_spans_dropped_total{reason="queue_full"}), as the OpenTelemetry SDKs'
//   BatchSpanProcessor does.
// - A batch is sent when max_export_batch_size spans wait, or schedule_delay after the oldest
//   waiting batch began, whichever is first.
// - A batch whose export fails is retried max_export_attempts - 1 times after retry_delay when the
//   failure is retryable (no connection, 429, 502, 503, 504); then its spans are dropped and counted
//   (reason="export_failed"). Nothing is kept for later: a collector that is down loses spans, never
//   memory.
// - shutdown() stops taking spans, sends what waits until its deadline, then cancels the export in
//   flight; spans left are dropped and counted (reason="shutdown"). The destructor shuts down with
//   no wait.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "trace/span_data.h"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
}  // namespace prometheus

namespace myop::trace {

enum class ExportResult { success, retryable_failure, permanent_failure };

// Sends one batch. Called on the processor's thread only, one batch at a time.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual ExportResult export_spans(const std::vector<SpanData>& spans) = 0;
  // Called from another thread at shutdown: abandon the export in flight, if any, soon.
  virtual void cancel() {}
};

struct BatchOptions {
  std::size_t max_queue_size = 2048;
  std::size_t max_export_batch_size = 512;
  std::chrono::milliseconds schedule_delay{5000};
  int max_export_attempts = 2;
  std::chrono::milliseconds retry_delay{1000};
  // The schedule delay, the retry delay and the shutdown deadline run on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

// Counts of spans by what became of them; the same numbers as the dropped counter's labels.
struct BatchCounts {
  std::uint64_t exported = 0;
  std::uint64_t dropped_queue_full = 0;
  std::uint64_t dropped_export_failed = 0;
  std::uint64_t dropped_shutdown = 0;
};

class BatchSpanProcessor {
 public:
  // `registry` may be null (no metric); otherwise myoperator_trace_spans_dropped_total{reason} is
  // registered there.
  BatchSpanProcessor(std::shared_ptr<SpanExporter> exporter, BatchOptions options,
                     prometheus::Registry* registry);
  ~BatchSpanProcessor();
  BatchSpanProcessor(const BatchSpanProcessor&) = delete;
  BatchSpanProcessor& operator=(const BatchSpanProcessor&) = delete;

  void submit(SpanData span);
  // Returns true when every span was sent (or dropped for failing) before `timeout`.
  bool shutdown(std::chrono::milliseconds timeout);
  BatchCounts counts() const;

 private:
  void run();
  void export_batch(const std::vector<SpanData>& batch);
  void count_dropped(std::uint64_t BatchCounts::*field, prometheus::Counter* counter, std::size_t spans);

  const std::shared_ptr<SpanExporter> exporter_;
  BatchOptions options_;
  prometheus::Counter* dropped_queue_full_ = nullptr;
  prometheus::Counter* dropped_export_failed_ = nullptr;
  prometheus::Counter* dropped_shutdown_ = nullptr;

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;      // the exporter thread: spans, shutdown
  std::condition_variable_any finished_;  // shutdown(): the exporter thread is done
  std::deque<SpanData> queue_;
  bool stopping_ = false;
  bool done_ = false;
  BatchCounts counts_;
  std::thread thread_;
};

}  // namespace myop::trace
