#pragma once
// metav1.MicroTime: RFC 3339 in UTC with microseconds, e.g. 2026-11-29T19:58:06.123456Z.
// Lease acquireTime/renewTime and events.k8s.io eventTime/lastObservedTime use it.
#include <chrono>
#include <string>

namespace myop::runtime {

std::string format_micro_time(std::chrono::system_clock::time_point time);

}  // namespace myop::runtime
