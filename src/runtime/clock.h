#pragma once
// The runtime's names for time, which are base's (base/clock.h). A component of the runtime that waits
// for time to pass (a period, a backoff, a deadline of its own) takes a base::Clock in its options,
// defaulting to base::system_clock(), so unit tests drive time by hand; socket deadlines are Asio's.
#include "base/clock.h"

namespace myop::runtime {

using base::Duration;
using base::TimePoint;
using base::to_seconds;

}  // namespace myop::runtime
