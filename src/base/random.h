#pragma once
// The calling thread's pseudo-random generator: jitter, identifiers, trace ids. Not for secrets.
#include <random>

namespace myop::base {

// The thread's std::mt19937_64, seeded from std::random_device on the thread's first call. Held on the
// heap, made on first use: a thread_local engine (2.5 KiB) would sit in the static TLS block of every
// thread of the process, which glibc zeroes when the thread starts, so a thread that never draws a
// number (an HTTP server's, the signal watcher) would still pay for it in resident memory.
std::mt19937_64& thread_random();

}  // namespace myop::base
