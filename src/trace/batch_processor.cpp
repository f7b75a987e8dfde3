#include "trace/batch_processor.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <algorithm>

namespace myop::trace {

BatchSpanProcessor::BatchSpanProcessor(std::shared_ptr<SpanExporter> exporter, BatchOptions options,
                                       prometheus::Registry* registry)
    : exporter_(std::move(exporter)), options_(std::move(options)) {
  if (!options_.clock) options_.clock = base::system_clock();
  if (registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("myoperator_trace_spans_dropped_total")
                       .Help(
                           "Trace spans dropped instead of exported: queue_full (the batch queue was full), "
                           "export_failed (the collector refused them or could not be reached), shutdown "
                           "(still queued at the shutdown deadline)")
                       .Register(*registry);
    dropped_queue_full_ = &family.Add({{"reason", "queue_full"}});
    dropped_export_failed_ = &family.Add({{"reason", "export_failed"}});
    dropped_shutdown_ = &family.Add({{"reason", "shutdown"}});
  }
  thread_ = std::thread([this] { run(); });
}

BatchSpanProcessor::~BatchSpanProcessor() { shutdown(std::chrono::milliseconds(0)); }

void BatchSpanProcessor::submit(SpanData span) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && queue_.size() < options_.max_queue_size) {
      queue_.push_back(std::move(span));
      if (queue_.size() < options_.max_export_batch_size) return;
    } else {
      ++counts_.dropped_queue_full;
      if (dropped_queue_full_ != nullptr) dropped_queue_full_->Increment();
      return;
    }
  }
  wake_.notify_one();  // a full batch waits
}

BatchCounts BatchSpanProcessor::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void BatchSpanProcessor::count_dropped(std::uint64_t BatchCounts::*field, prometheus::Counter* counter,
                                       std::size_t spans) {
  {
    std::lock_guard lock(mutex_);
    counts_.*field += spans;
  }
  if (counter != nullptr) counter->Increment(static_cast<double>(spans));
}

void BatchSpanProcessor::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    // A batch leaves when it is full, when the oldest span has waited schedule_delay, or at shutdown.
    options_.clock->wait_for(wake_, lock, {}, options_.schedule_delay,
                             [this] { return stopping_ || queue_.size() >= options_.max_export_batch_size; });
    if (queue_.empty()) {
      if (stopping_) break;
      continue;
    }
    const std::size_t size = std::min(queue_.size(), options_.max_export_batch_size);
    std::vector<SpanData> batch(std::make_move_iterator(queue_.begin()),
                                std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(size)));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(size));
    lock.unlock();
    export_batch(batch);
    lock.lock();
  }
  done_ = true;
  lock.unlock();
  finished_.notify_all();
}

void BatchSpanProcessor::export_batch(const std::vector<SpanData>& batch) {
  for (int attempt = 1;; ++attempt) {
    const ExportResult result = exporter_->export_spans(batch);
    if (result == ExportResult::success) {
      std::lock_guard lock(mutex_);
      counts_.exported += batch.size();
      return;
    }
    std::unique_lock lock(mutex_);
    const bool retry =
        result == ExportResult::retryable_failure && attempt < options_.max_export_attempts && !stopping_ &&
        !options_.clock->wait_for(wake_, lock, {}, options_.retry_delay, [this] { return stopping_; });
    if (!retry) {
      lock.unlock();
      count_dropped(&BatchCounts::dropped_export_failed, dropped_export_failed_, batch.size());
      return;
    }
  }
}

bool BatchSpanProcessor::shutdown(std::chrono::milliseconds timeout) {
  {
    std::unique_lock lock(mutex_);
    if (!thread_.joinable()) return true;
    stopping_ = true;
    wake_.notify_all();
    options_.clock->wait_for(finished_, lock, {}, timeout, [this] { return done_; });
    if (!done_) {
      // Past the deadline: what still waits is dropped, and the export in flight is abandoned.
      const std::size_t left = queue_.size();
      queue_.clear();
      counts_.dropped_shutdown += left;
      if (dropped_shutdown_ != nullptr) dropped_shutdown_->Increment(static_cast<double>(left));
    }
  }
  exporter_->cancel();
  thread_.join();
  std::lock_guard lock(mutex_);
  return counts_.dropped_shutdown == 0;
}

}  // namespace myop::trace
