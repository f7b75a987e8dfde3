#pragma once
// The runtime's names for time, which are base's (base/clock.h): every component that waits takes a
// base::Clock in its options, defaulting to base::system_clock(), so unit tests drive time by hand.
#include "base/clock.h"

namespace myop::runtime {

using base::Duration;
using base::TimePoint;
using base::to_seconds;

}  // namespace myop::runtime
