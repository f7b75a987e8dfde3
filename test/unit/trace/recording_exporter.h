#pragma once
// Test double of trace::SpanExporter: keeps every batch it is given, answers what the test scripts,
// and can hold exports at a gate to play a collector that does not answer.
#include <condition_variable>
#include <mutex>
#include <vector>

#include "trace/batch_processor.h"

namespace myop::testing {

class RecordingExporter final : public trace::SpanExporter {
 public:
  trace::ExportResult export_spans(const std::vector<trace::SpanData>& spans) override {
    std::unique_lock lock(mutex_);
    ++calls_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !held_ || cancelled_; });
    if (cancelled_) return trace::ExportResult::retryable_failure;
    batches_.push_back(spans);
    return answer_;
  }
  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    changed_.notify_all();
  }

  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release() {
    std::lock_guard lock(mutex_);
    held_ = false;
    changed_.notify_all();
  }
  void answer(trace::ExportResult result) {
    std::lock_guard lock(mutex_);
    answer_ = result;
  }
  // Waits (bounded, only to turn a hang into a failure) until at least `count` exports began.
  bool wait_for_calls(int count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return calls_ >= count; });
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  std::vector<std::vector<trace::SpanData>> batches() {
    std::lock_guard lock(mutex_);
    return batches_;
  }
  std::vector<trace::SpanData> spans() {
    std::lock_guard lock(mutex_);
    std::vector<trace::SpanData> all;
    for (const auto& batch : batches_) all.insert(all.end(), batch.begin(), batch.end());
    return all;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  bool cancelled_ = false;
  int calls_ = 0;
  trace::ExportResult answer_ = trace::ExportResult::success;
  std::vector<std::vector<trace::SpanData>> batches_;
};

}  // namespace myop::testing
